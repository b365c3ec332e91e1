//! Command line: parses arguments once into checked settings and runs the chosen command.
//!
//! Each command is a short function that hands its settings to the module that does the
//! work; nothing here proves, parses C1 files or draws.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};

use crate::c1::{parse_sector_size, SectorSizeName};
use crate::params;

/// Batch prover for Filecoin PoRep commit phase 2: C1 files in, verified proofs out.
#[derive(Debug, Parser)]
#[command(name = "cuzk", version, about, long_about = None)]
pub struct Cli {
    /// Groth16 parameter cache directory [env: FIL_PROOFS_PARAMETER_CACHE, default:
    /// /var/tmp/filecoin-proof-parameters].
    #[arg(long, global = true, value_name = "DIR")]
    pub params: Option<PathBuf>,

    /// The command to run.
    #[command(subcommand)]
    pub command: Command,
}

/// cuzk's commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Prove every C1 file that lands in an inbox directory.
    ProveDir(crate::pipeline::ProveDirArgs),
    /// Show what a spool holds and how its last run went.
    Status(crate::status::StatusArgs),
    /// Draw a timeline CSV as an ASCII waterfall with per-job and prover statistics.
    Waterfall(crate::waterfall::WaterfallArgs),
    /// Prove C1 files with filecoin-proofs' own seal_commit_phase2, one at a time, for
    /// comparison.
    Reference(crate::reference::ReferenceArgs),
    /// Manage Groth16 parameters.
    #[command(subcommand)]
    Params(ParamsCommand),
}

/// `cuzk params ...`
#[derive(Debug, Subcommand)]
pub enum ParamsCommand {
    /// Generate INSECURE random parameters for a test sector size (2KiB, 8MiB, 512MiB).
    Gen(ParamsGenArgs),
    /// Print where the parameter files for a sector size are expected.
    Path(ParamsGenArgs),
}

/// Arguments of `cuzk params gen` and `cuzk params path`.
#[derive(Debug, Args)]
pub struct ParamsGenArgs {
    /// Sector size: 2KiB, 8MiB or 512MiB.
    #[arg(long, value_parser = parse_sector_size, default_value = "2KiB")]
    pub sector_size: u64,
}

/// Runs the command line `cli`; the returned code is the process exit code.
pub fn run(cli: Cli) -> Result<u8> {
    if let Some(dir) = &cli.params {
        params::use_params_dir(dir);
    }
    match cli.command {
        Command::ProveDir(args) => crate::pipeline::prove_dir(args),
        Command::Waterfall(args) => crate::waterfall::run(args),
        Command::Status(args) => crate::status::run(args),
        Command::Reference(args) => crate::reference::run(args),
        Command::Params(ParamsCommand::Gen(args)) => params_gen(args),
        Command::Params(ParamsCommand::Path(args)) => params_path(args),
    }
}

/// The top-level entry point for `cuzk params gen`.
fn params_gen(args: ParamsGenArgs) -> Result<u8> {
    let size = SectorSizeName(args.sector_size);
    let (params_path, vk_path) = params::param_paths(args.sector_size)?;
    if params_path.is_file() && vk_path.is_file() {
        eprintln!(
            "parameters for {size} already present: {}",
            params_path.display()
        );
        return Ok(0);
    }
    params::is_test_size(args.sector_size)
        .then_some(())
        .with_context(|| {
            format!("refusing to generate parameters for {size} sectors: random parameters make proofs the chain rejects (hint: fetch the official ones with `lotus fetch-params {size}`)")
        })?;
    eprintln!(
        "generating INSECURE random Groth16 parameters for {size} sectors into {}\n\
         these are for tests and private networks only: the chain rejects proofs made with them.\n\
         this takes a while (2KiB: about 18 minutes on 2 cores, 5 GB of memory)",
        params::params_dir().display()
    );
    let started = Instant::now();
    let progress = Spinner::start(format!("generating {size} parameters"));
    let result = params::generate(args.sector_size);
    progress.finish();
    let (params_path, vk_path) = result?;
    eprintln!(
        "wrote {} and {} in {:.0} s",
        params_path.display(),
        vk_path.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(0)
}

/// The top-level entry point for `cuzk params path`.
fn params_path(args: ParamsGenArgs) -> Result<u8> {
    let (params_path, vk_path) = params::param_paths(args.sector_size)?;
    println!("{}", params_path.display());
    println!("{}", vk_path.display());
    Ok(0)
}

/// Shows that a long step is alive: a spinner on a terminal, a line a minute otherwise.
struct Spinner {
    bar: Option<indicatif::ProgressBar>,
    stop: Option<std::sync::mpsc::Sender<()>>,
}

impl Spinner {
    fn start(message: String) -> Spinner {
        if std::io::stderr().is_terminal() {
            let bar = indicatif::ProgressBar::new_spinner().with_message(message);
            bar.enable_steady_tick(Duration::from_millis(200));
            bar.set_style(
                indicatif::ProgressStyle::with_template("{spinner} {msg} [{elapsed_precise}]")
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
            );
            return Spinner {
                bar: Some(bar),
                stop: None,
            };
        }
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let started = Instant::now();
        std::thread::spawn(move || {
            while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                stopped.recv_timeout(Duration::from_secs(60))
            {
                eprintln!("{message}: {:.0} s so far", started.elapsed().as_secs_f64());
            }
        });
        Spinner {
            bar: None,
            stop: Some(stop),
        }
    }

    fn finish(self) {
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
        drop(self.stop);
    }
}
