//! Command line: the [`Cli`] parser and [`run`], which hands each command to its own short
//! entry point.
//!
//! Each room below owns one part: [`flags`] every flag and its default, `settings` the
//! flags checked once into the settings of the module that does the work (a bad value is a
//! [`CheckFlagsError`]), and one room per
//! command (`prove_dir`, `serve`, `damocles`, `status`, `waterfall`, `reference`, `bench`,
//! `params`, `completions`). Nothing here proves, parses C1 files or draws. Output to stdout goes
//! through [`print()`], so `cuzk status | head` ends quietly when the pipe closes, as ripgrep
//! does.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};

pub mod flags;

mod bench;
mod completions;
mod damocles;
mod params;
mod progress;
mod prove_dir;
mod reference;
mod serve;
mod settings;
mod status;
mod waterfall;

pub use settings::CheckFlagsError;

use flags::{
    BenchArgs, CompletionsArgs, DamoclesC2Args, ManArgs, ParamsCommand, ProcessorArgs,
    ProveDirArgs, ReferenceArgs, ServeArgs, StatusArgs, WaterfallArgs,
};

/// The command line: PoRep commit phase 2 and SnapDeals update proofs, inputs in, verified
/// proofs out (its help shows the crate's description).
#[derive(Debug, Parser)]
#[command(
    name = "cuzk",
    version,
    long_version = crate::build_info::long_version(),
    about,
    long_about = None,
    arg_required_else_help = true
)]
pub struct Cli {
    /// Groth16 parameter cache directory, from the environment or else the default; the
    /// help names both from [`crate::params`]' own constants.
    #[arg(long, global = true, value_name = "DIR", help = flags::params_help())]
    pub params: Option<PathBuf>,

    /// How messages are written to stderr: text lines (`cuzk: note: ...`) or one JSON
    /// object per line for a log shipper. RUST_LOG picks which (unset: cuzk's notes and
    /// every warning).
    #[arg(long, global = true, value_name = "FORMAT", value_enum, env = "CUZK_LOG_FORMAT", default_value_t = crate::logging::LogFormat::Text)]
    pub log_format: crate::logging::LogFormat,

    /// The log's level where RUST_LOG is unset: error, warn, info, debug or trace (as
    /// Curio's engine takes it) [default: cuzk's notes and every warning].
    #[arg(long, global = true, value_name = "LEVEL", env = "CUZK_LOG_LEVEL")]
    pub log_level: Option<String>,

    /// Without a command: serve as Curio's engine, with its config [default:
    /// /data/zk/cuzk.toml] ([daemon] listen, [srs] param_cache, [memory] total_budget,
    /// [gpus] devices, [synthesis] threads, [logging], and cuzk's own [cuzk] spool).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Without a command: serve as Curio's engine, listening here (host:port or
    /// unix:///path) instead of the config's [daemon] listen.
    #[arg(long = "listen", value_name = "ADDR")]
    pub engine_listen: Option<String>,

    /// The command to run.
    #[command(subcommand)]
    pub command: Option<Command>,
}

impl Cli {
    /// True for Curio's engine invocation: no command, a config or an address.
    fn is_engine(&self) -> bool {
        self.command.is_none() && (self.config.is_some() || self.engine_listen.is_some())
    }

    /// The log's format and level filter: the flags, or for Curio's engine invocation what
    /// its config says where the flags say nothing.
    pub fn logging(&self) -> (crate::logging::LogFormat, Option<String>) {
        if !self.is_engine() {
            return (self.log_format, self.log_level.clone());
        }
        let (level, is_json) = serve::config_logging(self.config.as_ref());
        let format = if is_json {
            crate::logging::LogFormat::Json
        } else {
            self.log_format
        };
        (format, self.log_level.clone().or(level))
    }
}

/// cuzk's commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Prove every C1 file that lands in an inbox directory.
    #[command(
        after_help = "Which sector a C1 file is: a lotus sector name s-t0<miner>-<sector>.json (lotus writes s-t0 on \
mainnet too; s-f0<miner>-<sector>.json is taken as well) says both. A file named anything else (lotus-bench's commit2 input, say) takes its sector number from the wrapper's \
SectorNum and its miner from --miner-addr or --miner-id; without either it fails with a hint. The replica id is \
recomputed from them before any proving, so a wrong miner or sector fails at once."
    )]
    ProveDir(ProveDirArgs),
    /// Serve Curio's cuzk.v1.ProvingEngine gRPC API over a spool: Curio's PoRep and
    /// SnapDeals proofs ([Cuzk] Address = "127.0.0.1:9820" in its config), proved by the same
    /// pipeline and written to the spool before they are answered.
    #[command(after_help = "In Curio's configuration layer:

  [Cuzk]
  Address = \"127.0.0.1:9820\"
  MaxPending = 4

Every accepted request is a file in SPOOL/inbox before it is acknowledged, so a restart loses \
none; AwaitProof finds finished proofs in SPOOL/outbox after a restart. Curio's engine \
invocation, cuzk --config /data/zk/cuzk.toml, serves the same way.")]
    Serve(ServeArgs),
    /// Show what a spool holds and how its last run went.
    Status(StatusArgs),
    /// Draw a timeline CSV as an ASCII waterfall with per-job and prover statistics.
    Waterfall(WaterfallArgs),
    /// Prove C1 files with filecoin-proofs' own seal_commit_phase2 (update inputs with its
    /// own update prover), one at a time, for comparison.
    Reference(ReferenceArgs),
    /// Size and time this machine for a sector size on synthetic inputs of the real shape
    /// (no parameters to fetch; nothing it makes is a proof).
    Bench(BenchArgs),
    /// Manage Groth16 parameters.
    #[command(subcommand)]
    Params(ParamsCommand),
    /// Serve damocles-worker as its external C2 processor: requests as JSON lines on stdin,
    /// one answer line each on stdout, proved by cuzk's pipeline.
    #[command(name = "damocles-c2")]
    DamoclesC2(DamoclesC2Args),
    /// Serve damocles-worker as its external snap_prove processor: SnapDeals update proofs
    /// (ProveReplicaUpdate2), requests and answers as for damocles-c2.
    #[command(
        name = "damocles-snap",
        after_help = "In damocles-worker's configuration:

  [[processors.snap_prove]]
  bin = \"/usr/local/bin/cuzk\"
  args = [\"damocles-snap\", \"--params\", \"/var/tmp/filecoin-proof-parameters\"]
  envs = { CUDA_VISIBLE_DEVICES = \"0\" }

stdout carries protocol lines only; progress and logs go to stderr."
    )]
    DamoclesSnap(DamoclesC2Args),
    /// `cuzk processor c2` and `cuzk processor snap_prove`: what damocles-worker runs when
    /// its processor has no `args`; the same as `cuzk damocles-c2` and `cuzk damocles-snap`.
    #[command(hide = true)]
    Processor(ProcessorArgs),
    /// Print a shell completion script: bash, zsh or fish.
    #[command(after_help = "Install it where the shell looks, for example:

  cuzk completions bash > /etc/bash_completion.d/cuzk
  cuzk completions zsh > /usr/local/share/zsh/site-functions/_cuzk
  cuzk completions fish > ~/.config/fish/completions/cuzk.fish")]
    Completions(CompletionsArgs),
    /// Print the manual page, or write one per command into a directory.
    #[command(after_help = "Install them where man looks:

  cuzk man --dir /usr/local/share/man/man1 && mandb -q")]
    Man(ManArgs),
}

/// Runs the command line `cli`; the returned code is the process exit code.
pub fn run(cli: Cli) -> Result<u8> {
    crate::test_sizes::apply_from_env()?;
    if let Some(dir) = &cli.params {
        crate::params::use_params_dir(dir);
    }
    let is_engine = cli.is_engine();
    let Some(command) = cli.command else {
        if is_engine {
            return serve::serve_curio(cli.config, cli.engine_listen, cli.params.is_some());
        }
        anyhow::bail!("a command is required (see cuzk --help)");
    };
    if cli.config.is_some() || cli.engine_listen.is_some() {
        anyhow::bail!("--config and --listen before a command are Curio's engine invocation, which takes no command (hint: cuzk serve --listen ADDR SPOOL)");
    }
    match command {
        Command::ProveDir(args) => prove_dir::prove_dir(args),
        Command::Serve(args) => serve::serve(args),
        Command::Waterfall(args) => waterfall::draw_waterfall(args),
        Command::Status(args) => status::show_status(args),
        Command::Reference(args) => reference::run_reference(args),
        Command::Bench(args) => bench::run_bench(args),
        Command::Params(ParamsCommand::Gen(args)) => params::generate(args),
        Command::Params(ParamsCommand::Path(args)) => params::show_paths(args),
        Command::Params(ParamsCommand::Constraints(args)) => params::record_constraints(args),
        Command::Params(ParamsCommand::CosetH(args)) => params::derive_coset_h(args),
        Command::Params(ParamsCommand::Check(args)) => params::check(args),
        Command::Params(ParamsCommand::Prune(args)) => params::prune(args),
        Command::DamoclesC2(args) => damocles::serve(crate::damocles::Stage::C2, args),
        Command::DamoclesSnap(args) => damocles::serve(crate::damocles::Stage::SnapProve, args),
        Command::Processor(args) => damocles::serve_processor(args),
        Command::Completions(args) => completions::print_completions(args),
        Command::Man(args) => completions::print_man(args),
    }
}

/// Writes `text` to stdout. A closed pipe (`cuzk status | head`) is not an error: the
/// reader has what it wanted.
pub fn print(text: &str) -> Result<()> {
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.context("writing to stdout"),
    }
}
