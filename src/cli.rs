//! Command line: every flag of every command, checked once into the settings of the module
//! that does the work, and the short function that runs each command.
//!
//! Nothing here proves, parses C1 files or draws. Output to stdout goes through [`print`],
//! so `cuzk status | head` ends quietly when the pipe closes, as ripgrep does.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};

use crate::backend::gpu::GpuSelection;
use crate::backend::BackendChoice;
use crate::c1::{self, parse_sector_size, SectorSizeName};
use crate::pipeline::{self, RunSettings};
use crate::proof_kind::{CircuitId, ProofKind};
use crate::spool::SpoolLayout;
use crate::{circuits, params};
use crate::{damocles, prometheus, reference, status, waterfall};

/// Batch prover for Filecoin PoRep commit phase 2: C1 files in, verified proofs out.
#[derive(Debug, Parser)]
#[command(
    name = "cuzk",
    version,
    long_version = crate::build_info::long_version(),
    about,
    long_about = None
)]
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
    #[command(
        after_help = "Which sector a C1 file is: a lotus sector name s-t0<miner>-<sector>.json (lotus writes s-t0 on \
mainnet too; s-f0<miner>-<sector>.json is taken as well) says both. A file named anything else (lotus-bench's commit2 input, say) takes its sector number from the wrapper's \
SectorNum and its miner from --miner-addr or --miner-id; without either it fails with a hint. The replica id is \
recomputed from them before any proving, so a wrong miner or sector fails at once."
    )]
    ProveDir(ProveDirArgs),
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
}

/// Arguments of `cuzk completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: CompletionShell,
}

/// The shells `cuzk completions` writes for: those lotus and curio ship completions for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompletionShell {
    /// bash (bash-completion).
    Bash,
    /// zsh.
    Zsh,
    /// fish.
    Fish,
}

// By hand for the reason given at `Synthesis`: the short form of the help says it all.
impl clap::ValueEnum for CompletionShell {
    fn value_variants<'a>() -> &'a [Self] {
        &[
            CompletionShell::Bash,
            CompletionShell::Zsh,
            CompletionShell::Fish,
        ]
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(match self {
            CompletionShell::Bash => "bash",
            CompletionShell::Zsh => "zsh",
            CompletionShell::Fish => "fish",
        }))
    }
}

/// Arguments of `cuzk damocles-c2`.
#[derive(Debug, Args)]
#[command(after_help = "In damocles-worker's configuration:

  [[processors.c2]]
  bin = \"/usr/local/bin/cuzk\"
  args = [\"damocles-c2\", \"--params\", \"/var/tmp/filecoin-proof-parameters\"]
  envs = { CUDA_VISIBLE_DEVICES = \"0\" }

stdout carries protocol lines only; progress and logs go to stderr.")]
pub struct DamoclesC2Args {
    /// Where the processor keeps its private spool (a fresh directory inside, removed at
    /// exit; C1 files of requests in flight live there) [default: $TMPDIR, else /tmp].
    #[arg(long, value_name = "DIR")]
    pub tmp_dir: Option<PathBuf>,
    /// Append the timeline here, for `cuzk waterfall` [default: inside the private spool,
    /// removed at exit].
    #[arg(long, value_name = "FILE")]
    pub timeline: Option<PathBuf>,
    /// Tries of a request that failed for a fault of this machine (a GPU or driver fault,
    /// parameters that could not be loaded), before it is answered with the error: damocles
    /// takes every error as final.
    #[arg(long, value_name = "N", default_value_t = damocles::ProcessorSettings::DEFAULT_ATTEMPTS)]
    pub attempts: u32,
    /// Seconds a run that could not go on waits before its requests are tried again.
    #[arg(long, value_name = "SECS", default_value_t = damocles::ProcessorSettings::DEFAULT_RETRY_PAUSE_SECS)]
    pub retry_pause_secs: f64,
    /// How much runs at once.
    #[command(flatten)]
    pub tuning: TuningArgs,
    /// The run's own metrics.
    #[command(flatten)]
    pub metrics: MetricsArgs,
}

/// Arguments of the hidden `cuzk processor STAGE`.
#[derive(Debug, Args)]
pub struct ProcessorArgs {
    /// The damocles stage: c2 or snap_prove.
    #[arg(value_parser = ["c2", "snap_prove"])]
    pub stage: String,
    /// As for `damocles-c2`.
    #[command(flatten)]
    pub c2: DamoclesC2Args,
}

/// Arguments of `cuzk prove-dir`.
#[derive(Debug, Args)]
pub struct ProveDirArgs {
    /// The inbox: C1 files (lotus-bench wrapper or bare SealCommitPhase1Output JSON).
    pub inbox: PathBuf,
    /// Where proofs go [default: ../outbox beside the inbox].
    #[arg(long, value_name = "DIR")]
    pub outbox: Option<PathBuf>,
    /// Where unprovable C1 files go, with a reason [default: ../failed].
    #[arg(long, value_name = "DIR")]
    pub failed: Option<PathBuf>,
    /// Where claimed C1 files wait while being proved [default: ../work].
    #[arg(long, value_name = "DIR")]
    pub work: Option<PathBuf>,
    /// Where C1 files go once their proof is written [default: ../done].
    #[arg(long, value_name = "DIR")]
    pub done: Option<PathBuf>,
    /// The timeline CSV, appended to [default: ../timeline.csv].
    #[arg(long, value_name = "FILE")]
    pub timeline: Option<PathBuf>,
    /// Exit once the inbox is drained instead of watching it.
    #[arg(long)]
    pub once: bool,
    /// Miner actor id for files whose name is not a lotus sector name s-t0<miner>-<sector>.
    #[arg(long, value_name = "ID")]
    pub miner_id: Option<u64>,
    /// The same as --miner-id, as a miner ID address like lotus-bench's: t01000 or f01000.
    #[arg(long, value_name = "ADDR", value_parser = c1::parse_miner_address, conflicts_with = "miner_id")]
    pub miner_addr: Option<u64>,
    /// How much runs at once.
    #[command(flatten)]
    pub tuning: TuningArgs,
    /// The run's own metrics.
    #[command(flatten)]
    pub metrics: MetricsArgs,
    /// Seconds between inbox rescans (file-system events also wake the scan).
    #[arg(long, value_name = "SECS", default_value_t = RunSettings::DEFAULT_POLL_SECS)]
    pub poll_secs: f64,
    /// Files modified more recently than this many seconds are left for a later scan.
    #[arg(long, value_name = "SECS", default_value_t = RunSettings::DEFAULT_SETTLE_SECS)]
    pub settle_secs: f64,
    /// A file whose JSON ends early is waited for this long after its last change, then
    /// failed as truncated.
    #[arg(long, value_name = "SECS", default_value_t = RunSettings::DEFAULT_INCOMPLETE_GRACE_SECS)]
    pub incomplete_grace_secs: f64,
    /// Largest C1 file accepted, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = c1::DEFAULT_MAX_C1_BYTES)]
    pub max_c1_bytes: u64,
    /// Seconds without a heartbeat after which another host's or container's claims are
    /// taken over (a dead process of this boot and pid namespace is taken over at once).
    #[arg(long, value_name = "SECS", default_value_t = RunSettings::DEFAULT_LEASE_SECS)]
    pub lease_secs: f64,
    /// When a test-size sector (2KiB, 8MiB, 512MiB) has no parameters, generate INSECURE
    /// random ones instead of stopping (2KiB: about 18 minutes on 2 cores).
    #[arg(long)]
    pub gen_test_params: bool,
    /// A claimed file that took the prover down (killed for memory, a driver fault) this
    /// many times while it was the only file in flight is moved to failed/ instead of being
    /// tried again (files in flight together at a crash are proved alone to tell).
    #[arg(long, value_name = "N", default_value_t = RunSettings::DEFAULT_MAX_ATTEMPTS)]
    pub max_attempts: u32,
    /// Also take benchmark shape files made by `cuzk bench` (synthetic data of a real
    /// sector's shape): they are timed, and their results go to outbox/<job>.benchmark.json,
    /// never written as proofs. Without it such files are failed.
    #[arg(long)]
    pub benchmark: bool,
}

/// `--synthesis`: how partitions are synthesized.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Synthesis {
    /// Pre-compiled constraints, and the witness computed natively where cuzk can.
    Native,
    /// Record each circuit shape's constraints once, then compute only the witness.
    Precompiled,
    /// Build every constraint for every partition.
    Full,
}

// By hand rather than derived: a derived ValueEnum gives each value its doc as help, and
// clap then lays out every command's help in its long form; the flag's help says it all.
impl clap::ValueEnum for Synthesis {
    fn value_variants<'a>() -> &'a [Self] {
        &[Synthesis::Native, Synthesis::Precompiled, Synthesis::Full]
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(match self {
            Synthesis::Native => "native",
            Synthesis::Precompiled => "precompiled",
            Synthesis::Full => "full",
        }))
    }
}

/// How much of the machine a run uses: shared by `prove-dir` and `bench`.
#[derive(Debug, Args)]
pub struct TuningArgs {
    /// Partitions synthesized at once [default: one per core with the cuda backend, whose
    /// GPU evaluates the constraints; a quarter of the cores with the others].
    #[arg(long, value_name = "N")]
    pub synth_jobs: Option<usize>,
    /// What proves the partitions: auto (cuda if built and a GPU is there, else the CPU),
    /// cuda (cuzk's own, parameters resident on the GPU), supraseal, ec-gpu or cpu.
    #[arg(long, value_name = "BACKEND", value_enum, default_value_t = BackendChoice::Auto)]
    pub backend: BackendChoice,
    /// GPUs to prove on: all, none (CPU), or indices like 0,1. Indices count among the GPUs
    /// this process sees: CUDA renumbers those left by CUDA_VISIBLE_DEVICES from 0, so with
    /// CUDA_VISIBLE_DEVICES=2,3 `--gpus 0` is physical GPU 2. BELLMAN_NO_GPU (any value but 0)
    /// turns GPUs off, as in bellperson.
    #[arg(long, value_name = "LIST", default_value_t = GpuSelection::All)]
    pub gpus: GpuSelection,
    /// Prover threads per GPU; two let one partition's CPU-side work overlap another's
    /// kernels on the same GPU (measured 1.3x on an H200). Fewer start on a GPU whose free
    /// memory does not hold them for a 32GiB sector (~30 GiB each, plus the bases they keep).
    #[arg(long, value_name = "N", default_value_t = RunSettings::DEFAULT_PROVERS_PER_GPU)]
    pub provers_per_gpu: usize,
    /// Stop with exit 2 before claiming anything if the run would prove on the CPU (no GPU
    /// found, a build without CUDA, BELLMAN_NO_GPU, --gpus none): a CPU proof of a 32GiB
    /// sector takes hours.
    #[arg(long)]
    pub require_gpu: bool,
    /// Synthesized partitions that may wait for the prover.
    #[arg(long, value_name = "N", default_value_t = RunSettings::DEFAULT_QUEUE_DEPTH)]
    pub queue_depth: usize,
    /// Memory budget for parameters and partitions in flight, like 200GiB or 180GB
    /// [default: the memory available now (cgroup limits included), minus 5% or 2 GiB].
    #[arg(long, value_name = "BYTES", value_parser = crate::memory::parse_bytes)]
    pub max_memory: Option<u64>,
    /// GPU memory the cuda backend may take on each GPU, like 16GiB [default: its free
    /// memory]. Parameters that do not fit stay in pinned host memory and stream to the GPU
    /// at each proof, as on a card smaller than them.
    #[arg(long, value_name = "BYTES", value_parser = crate::memory::parse_bytes)]
    pub gpu_memory: Option<u64>,
    /// How partitions are synthesized: `precompiled` records each circuit shape's
    /// constraints once (kept beside the parameters) and then computes only the witness,
    /// with the circuit's gadgets; `native` does the same but computes the SHA-256 work of
    /// the witness natively (the timeline says which ran); `full` builds every constraint
    /// for every partition.
    #[arg(long, value_name = "HOW", value_enum, default_value_t = Synthesis::Native)]
    pub synthesis: Synthesis,
    /// Threads that evaluate pre-compiled constraints, shared by every partition
    /// [default: half the cores, at least 1].
    #[arg(long, value_name = "N")]
    pub synthesis_threads: Option<usize>,
    /// CPUs kept for SupraSeal's host threads (its preprocessing and the G2 multiexp), so
    /// they stop competing with synthesis; cuzk's own threads get the others, and the
    /// defaults above count only those. 0 shares every CPU. Linux only: cuzk restarts itself
    /// once to size SupraSeal's thread pool.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub prover_cpus: usize,
    /// A prover whose calls fail this many times in a row stops, its GPU taken to be broken
    /// (the run says which; when the last prover stops, the run ends with exit 2). A failed
    /// partition's file goes back to the inbox to be proved alone; only a fault that follows
    /// the file fails it.
    #[arg(long, value_name = "N", default_value_t = crate::pipeline::DEFAULT_MAX_DEVICE_FAULTS)]
    pub max_device_faults: u32,
}

impl TuningArgs {
    /// Applies `--prover-cpus` (see [`crate::backend::gpu::cpu_split`]): before anything else a run does,
    /// since it may restart the process.
    fn split_cpus(&self) -> Result<()> {
        if let Some(split) = crate::backend::gpu::cpu_split::apply(self.prover_cpus)? {
            eprintln!("cuzk: note: CPUs split: {split}");
        }
        Ok(())
    }
}

/// Where a run keeps its own metrics: shared by `prove-dir` and `damocles-c2`.
#[derive(Debug, Args)]
pub struct MetricsArgs {
    /// Keep the run's own metrics in FILE as it goes, in node_exporter's textfile format (name
    /// it *.prom in its --collector.textfile.directory): proofs and failures, jobs and
    /// partitions in flight, memory in use, seconds per proof.
    #[arg(long, value_name = "FILE")]
    pub metrics_textfile: Option<PathBuf>,
    /// The `spool` label of those metrics, which tells two runs on one host apart [default:
    /// prove-dir: the spool directory; damocles-c2: the file's name without .prom].
    #[arg(long, value_name = "NAME", requires = "metrics_textfile")]
    pub metrics_label: Option<String>,
}

impl MetricsArgs {
    /// Where the metrics go, labelled `--metrics-label` or else `default_label` of the file.
    fn to_target(
        &self,
        default_label: impl FnOnce(&Path) -> String,
    ) -> Option<prometheus::run::MetricsTextfile> {
        let path = self.metrics_textfile.clone()?;
        let spool_label = self
            .metrics_label
            .clone()
            .unwrap_or_else(|| default_label(&path));
        Some(prometheus::run::MetricsTextfile { path, spool_label })
    }
}

/// Arguments of `cuzk bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Sector size to size the machine for: 2KiB, 8MiB, 512MiB, 32GiB or 64GiB.
    #[arg(long, value_parser = parse_sector_size)]
    pub sector_size: u64,
    /// Shape sectors to prove.
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub sectors: u64,
    /// SnapDeals update proofs (ProveReplicaUpdate2: 16 partitions at 32GiB) instead of C2s.
    #[arg(long)]
    pub update: bool,
    /// Benchmark directory: synthetic parameters in params/ (32GiB: 47 GB), one spool per
    /// run in runs/.
    #[arg(long, value_name = "DIR", default_value = crate::bench::DEFAULT_DIR)]
    pub dir: PathBuf,
    /// Only write the synthetic parameters and the shape C1 files, to time another prover on
    /// them (their parameters directory goes in FIL_PROOFS_PARAMETER_CACHE).
    #[arg(long)]
    pub prepare_only: bool,
    /// How much runs at once.
    #[command(flatten)]
    pub tuning: TuningArgs,
}

/// Arguments of `cuzk status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// The spool directory (the one holding inbox/), or the inbox itself.
    pub spool: PathBuf,
    /// The timeline [default: timeline.csv in the spool directory].
    #[arg(long, value_name = "FILE")]
    pub timeline: Option<PathBuf>,
    /// Seconds without a heartbeat after which a run's claims count as orphaned.
    #[arg(long, value_name = "SECS", default_value_t = RunSettings::DEFAULT_LEASE_SECS)]
    pub lease_secs: f64,
    /// Print JSON for scripts.
    #[arg(long)]
    pub json: bool,
    /// Print metrics in Prometheus' text format: proofs done and failed, files waiting, the
    /// last run's seconds per proof and prover busy share.
    #[arg(long, conflicts_with = "json")]
    pub prometheus: bool,
    /// Write the Prometheus metrics to FILE atomically, for node_exporter's textfile
    /// collector (name it *.prom in its --collector.textfile.directory); prints nothing else
    /// unless --prometheus or --json asks.
    #[arg(long, value_name = "FILE")]
    pub textfile: Option<PathBuf>,
}

/// Arguments of `cuzk waterfall`.
#[derive(Debug, Args)]
pub struct WaterfallArgs {
    /// The timeline CSV written by `cuzk prove-dir`.
    pub timeline: PathBuf,
    /// Show the run with this id instead of the last one in the file.
    #[arg(long, value_name = "ID", conflicts_with = "all")]
    pub run: Option<String>,
    /// Show every run in the file, one after another, each on its own time axis.
    #[arg(long)]
    pub all: bool,
    /// Width of the drawing in columns [default: $COLUMNS, else 100; at least 20].
    #[arg(long, value_name = "N")]
    pub width: Option<usize>,
    /// One row per partition instead of one per job.
    #[arg(long)]
    pub partitions: bool,
    /// List the prover lanes' idle gaps at least this long, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 1000.0)]
    pub gap_ms: f64,
    /// Also write the waterfall as a standalone SVG image to FILE.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Print the computed metrics as JSON instead of drawing them.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `cuzk reference`.
#[derive(Debug, Args)]
pub struct ReferenceArgs {
    /// Miner actor id for files without a lotus sector name.
    #[arg(long, value_name = "ID")]
    pub miner_id: Option<u64>,
    /// The same as --miner-id, as a miner ID address: t01000 or f01000.
    #[arg(long, value_name = "ADDR", value_parser = c1::parse_miner_address, conflicts_with = "miner_id")]
    pub miner_addr: Option<u64>,
    /// C1 files to prove.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
}

/// `cuzk params ...`
#[derive(Debug, Subcommand)]
pub enum ParamsCommand {
    /// Generate INSECURE random parameters for a test sector size (2KiB, 8MiB, 512MiB).
    Gen(ParamsSizeArgs),
    /// Print where the parameter files for a sector size are expected.
    Path(ParamsSizeArgs),
    /// Record a sector size's constraints beside its parameters now, so the first run does
    /// not (prove-dir records them on first use otherwise; 32GiB: two to three minutes, 9 GB).
    Constraints(ParamsSizeArgs),
    /// Check the parameter cache against the digests in filecoin-proofs' parameters.json:
    /// ok, missing, corrupt, generated (by cuzk, intact) or unofficial, per file. Hashes
    /// every file: minutes for a 32GiB set.
    Check(ParamsCheckArgs),
}

/// Arguments of `cuzk params check`.
#[derive(Debug, Args)]
#[command(
    after_help = "Exit status: 0 when nothing is missing, damaged or of unknown origin; 1 otherwise.
A file with an official name and another digest is either damaged or generated; cuzk params gen \
records what it generates beside it (<file>.cuzk-generated.json), so only such files are told apart."
)]
pub struct ParamsCheckArgs {
    /// Only the files for this sector size (2KiB, 8MiB, 512MiB, 32GiB, 64GiB); the PoRep
    /// .params and .vk of the size must be there [default: every parameter file in the cache].
    #[arg(long, value_name = "SIZE", value_parser = parse_sector_size)]
    pub sector_size: Option<u64>,
}

/// The circuit argument of `cuzk params gen`, `path` and `constraints`.
#[derive(Debug, Args)]
pub struct ParamsSizeArgs {
    /// Sector size: 2KiB, 8MiB or 512MiB for `gen`; also 32GiB and 64GiB for `path` and
    /// `constraints`.
    #[arg(long, value_parser = parse_sector_size, default_value = "2KiB")]
    pub sector_size: u64,
    /// The SnapDeals update circuit's parameters (ProveReplicaUpdate2), not PoRep's.
    #[arg(long)]
    pub update: bool,
}

impl ParamsSizeArgs {
    /// The circuit named.
    pub fn circuit(&self) -> CircuitId {
        if self.update {
            CircuitId::update(self.sector_size)
        } else {
            CircuitId::seal(self.sector_size)
        }
    }
}

/// Runs the command line `cli`; the returned code is the process exit code.
pub fn run(cli: Cli) -> Result<u8> {
    crate::test_sizes::apply_from_env()?;
    if let Some(dir) = &cli.params {
        params::use_params_dir(dir);
    }
    match cli.command {
        Command::ProveDir(args) => prove_dir(args),
        Command::Waterfall(args) => draw_waterfall(args),
        Command::Status(args) => show_status(args),
        Command::Reference(args) => run_reference(args),
        Command::Bench(args) => run_bench(args),
        Command::Params(ParamsCommand::Gen(args)) => params_gen(args),
        Command::Params(ParamsCommand::Path(args)) => params_path(args),
        Command::Params(ParamsCommand::Constraints(args)) => params_constraints(args),
        Command::Params(ParamsCommand::Check(args)) => params_check(args),
        Command::DamoclesC2(args) => serve_damocles(damocles::Stage::C2, args),
        Command::DamoclesSnap(args) => serve_damocles(damocles::Stage::SnapProve, args),
        Command::Processor(ProcessorArgs { stage, c2: args }) => {
            let stage = damocles::Stage::from_name(&stage)
                .with_context(|| format!("damocles stage {stage:?} is not served by cuzk"))?;
            serve_damocles(stage, args)
        }
        Command::Completions(args) => print_completions(args),
    }
}

/// The top-level entry point for `cuzk completions`: the script for the shell on stdout.
fn print_completions(args: CompletionsArgs) -> Result<u8> {
    use clap::CommandFactory;
    let shell = match args.shell {
        CompletionShell::Bash => clap_complete::Shell::Bash,
        CompletionShell::Zsh => clap_complete::Shell::Zsh,
        CompletionShell::Fish => clap_complete::Shell::Fish,
    };
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "cuzk", &mut script);
    print(&String::from_utf8_lossy(&script))?;
    Ok(0)
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

fn seconds(flag: &str, value: f64) -> Result<Duration> {
    Duration::try_from_secs_f64(value)
        .with_context(|| format!("--{flag} {value} is not a number of seconds"))
}

impl ProveDirArgs {
    /// Checks the flags and fills in the defaults.
    pub fn to_settings(&self) -> Result<RunSettings> {
        let mut layout = SpoolLayout::beside(&self.inbox);
        let or = |flag: &Option<PathBuf>, default: PathBuf| flag.clone().unwrap_or(default);
        layout.outbox = or(&self.outbox, layout.outbox);
        layout.failed = or(&self.failed, layout.failed);
        layout.work = or(&self.work, layout.work);
        layout.done = or(&self.done, layout.done);
        let settings = self.tuning.to_settings(layout)?;
        Ok(RunSettings {
            timeline: or(&self.timeline, settings.timeline.clone()),
            once: self.once,
            miner_id: self.miner_id.or(self.miner_addr),
            poll: seconds("poll-secs", self.poll_secs)?.max(Duration::from_millis(50)),
            settle: seconds("settle-secs", self.settle_secs)?,
            incomplete_grace: seconds("incomplete-grace-secs", self.incomplete_grace_secs)?,
            max_c1_bytes: self.max_c1_bytes,
            lease: seconds("lease-secs", self.lease_secs)?,
            gen_test_params: self.gen_test_params,
            max_attempts: self.max_attempts.max(1),
            benchmark: self.benchmark,
            metrics: self
                .metrics
                .to_target(|_| prometheus::spool_label(&crate::spool::spool_dir_of(&self.inbox))),
            ..settings
        })
    }
}

impl TuningArgs {
    /// Settings for a run on `layout` with these flags and every other default.
    pub fn to_settings(&self, layout: SpoolLayout) -> Result<RunSettings> {
        let defaults = RunSettings::new(layout);
        anyhow::ensure!(
            self.synth_jobs != Some(0),
            "--synth-jobs must be at least 1"
        );
        Ok(RunSettings {
            synth_jobs: self.synth_jobs.or(defaults.synth_jobs),
            backend: self.backend,
            gpus: self.gpus.clone(),
            provers_per_gpu: self.provers_per_gpu,
            require_gpu: self.require_gpu,
            queue_depth: self.queue_depth,
            max_memory: self.max_memory,
            gpu_memory: self.gpu_memory,
            is_precompiled: self.synthesis != Synthesis::Full,
            is_native_witness: self.synthesis == Synthesis::Native,
            synthesis_threads: self.synthesis_threads.unwrap_or(defaults.synthesis_threads),
            prover_cpus: self.prover_cpus,
            max_device_faults: self.max_device_faults.max(1),
            ..defaults
        })
    }
}

/// The top-level entry point for `cuzk prove-dir`: 0 when every job was proved, 1 when some
/// failed (they are in `failed/`) or, with `--once`, when files were left in the inbox
/// unclaimed; an error when the run itself could not go on.
fn prove_dir(args: ProveDirArgs) -> Result<u8> {
    args.tuning.split_cpus()?;
    let settings = args.to_settings()?;
    let summary = pipeline::run(&settings)?;
    if !settings.once {
        return Ok(if summary.failed > 0 { 1 } else { 0 });
    }
    // A drain that leaves files behind did not do its job, even if it proved the rest.
    if summary.skipped > 0 {
        eprintln!(
            "cuzk: {} file(s) in {} could not be claimed, so they were not proved (the reasons are above); they are still there",
            summary.skipped,
            settings.layout.inbox.display()
        );
    }
    note_temporary_files(&settings.layout.inbox);
    Ok(if summary.failed > 0 || summary.skipped > 0 {
        1
    } else {
        0
    })
}

/// After a `--once` run: says so if the inbox still holds names cuzk never takes (dotfiles,
/// `.part`, `.tmp`), which a writer that died leaves behind.
fn note_temporary_files(inbox: &Path) {
    let Ok(entries) = std::fs::read_dir(inbox) else {
        return;
    };
    let temporary: Vec<String> = entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| crate::spool::is_temporary_name(name))
        .collect();
    if let Some(first) = temporary.first() {
        eprintln!(
            "cuzk: note: {} file(s) with temporary names left alone in {} (first: {first}); cuzk takes a file once its writer renames it to its final name",
            temporary.len(),
            inbox.display()
        );
    }
}

/// The top-level entry point for `cuzk damocles-c2` and `cuzk damocles-snap` (and `cuzk
/// processor c2|snap_prove`).
fn serve_damocles(stage: damocles::Stage, args: DamoclesC2Args) -> Result<u8> {
    // damocles' cpuset and NUMA node first: every thread started later inherits them, and
    // `--prover-cpus` then splits the CPUs damocles gave.
    let placement = damocles::placement::Placement::from_env()?;
    if !placement.is_empty() {
        let applied = placement.apply()?;
        eprintln!(
            "cuzk damocles-{}: note: damocles' processor settings: {applied}",
            match stage {
                damocles::Stage::C2 => "c2",
                damocles::Stage::SnapProve => "snap",
            }
        );
    }
    // It may restart the process, which must happen before stdout is rearranged.
    args.tuning.split_cpus()?;
    // First, before anything can print: stdout becomes the protocol's alone.
    let output = damocles::protocol_stdout()?;
    let tmp_dir = args.tmp_dir.unwrap_or_else(std::env::temp_dir);
    let layout = SpoolLayout::beside(&tmp_dir.join("inbox"));
    let settings = damocles::ProcessorSettings {
        stage,
        run: RunSettings {
            metrics: args
                .metrics
                .to_target(prometheus::run::label_from_file_name),
            ..args.tuning.to_settings(layout)?
        },
        tmp_dir,
        timeline: args.timeline,
        attempts: args.attempts.max(1),
        retry_pause: seconds("retry-pause-secs", args.retry_pause_secs)?,
    };
    let input = Box::new(std::io::BufReader::new(std::io::stdin()));
    damocles::serve(input, Box::new(output), &settings)
}

/// The top-level entry point for `cuzk status`.
fn show_status(args: StatusArgs) -> Result<u8> {
    let lease = seconds("lease-secs", args.lease_secs)?;
    if args.prometheus || args.textfile.is_some() {
        let metrics = prometheus::collect(&args.spool, args.timeline.as_deref(), lease)?;
        let text = prometheus::render(&metrics);
        if let Some(path) = &args.textfile {
            prometheus::write_textfile(path, &text)?;
        }
        if args.prometheus {
            print(&text)?;
        }
        if !args.json {
            return Ok(0);
        }
    }
    let status = status::inspect_spool(&args.spool, args.timeline.as_deref(), lease)?;
    if args.json {
        print(&format!("{}\n", serde_json::to_string_pretty(&status)?))?;
    } else {
        print(&status::render(&status))?;
    }
    Ok(0)
}

/// The top-level entry point for `cuzk waterfall`.
fn draw_waterfall(args: WaterfallArgs) -> Result<u8> {
    if !(args.gap_ms.is_finite() && args.gap_ms >= 0.0) {
        anyhow::bail!(
            "--gap-ms wants a non-negative number of milliseconds, not {}",
            args.gap_ms
        );
    }
    let request = waterfall::Request {
        selection: match (args.run, args.all) {
            (Some(id), _) => waterfall::Selection::Run(id),
            (None, true) => waterfall::Selection::All,
            (None, false) => waterfall::Selection::Last,
        },
        per_partition: args.partitions,
        gap_s: args.gap_ms / 1000.0,
        width: resolve_width(args.width),
        svg: args.svg,
        is_json: args.json,
    };
    print(&waterfall::draw(&args.timeline, &request)?)?;
    Ok(0)
}

/// `--width`, else `$COLUMNS`, else 100; narrower than 20 columns cannot hold a row.
fn resolve_width(flag: Option<usize>) -> usize {
    flag.or_else(|| std::env::var("COLUMNS").ok()?.trim().parse().ok())
        .unwrap_or(100)
        .max(20)
}

/// The top-level entry point for `cuzk reference`.
fn run_reference(args: ReferenceArgs) -> Result<u8> {
    let miner_id = args.miner_id.or(args.miner_addr);
    reference::run(&args.files, miner_id, &mut |line| print(line))
}

/// The top-level entry point for `cuzk bench`.
fn run_bench(args: BenchArgs) -> Result<u8> {
    args.tuning.split_cpus()?;
    let layout = SpoolLayout::beside(&args.dir.join("inbox"));
    let plan = crate::bench::BenchPlan {
        sector_size: args.sector_size,
        kind: if args.update {
            ProofKind::Update
        } else {
            ProofKind::Seal
        },
        sectors: args.sectors.max(1),
        dir: args.dir,
        run: args.tuning.to_settings(layout)?,
        is_prepare_only: args.prepare_only,
    };
    let report = crate::bench::run(&plan)?;
    let circuit = CircuitId {
        kind: plan.kind,
        sector_size: plan.sector_size,
    };
    print(&crate::bench::render(&report, circuit))?;
    Ok(0)
}

/// The top-level entry point for `cuzk params gen`.
fn params_gen(args: ParamsSizeArgs) -> Result<u8> {
    let size = SectorSizeName(args.sector_size);
    let circuit = args.circuit();
    let (params_path, vk_path) = circuits::param_paths(circuit)?;
    if params_path.is_file() && vk_path.is_file() {
        eprintln!(
            "parameters for {circuit} already present: {}",
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
        "generating INSECURE random Groth16 parameters for {} into {}\n\
         these are for tests and private networks only: the chain rejects proofs made with them.\n\
         this takes a while (2KiB: about 3 minutes on 2 cores, 2 GB of memory)",
        match circuit.kind {
            ProofKind::Seal => format!("{size} sectors"),
            ProofKind::Update => format!("{size} sector updates"),
        },
        params::params_dir().display()
    );
    let started = Instant::now();
    let progress = Spinner::start(format!("generating {circuit} parameters"));
    let result = circuits::generate_params(circuit);
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
fn params_path(args: ParamsSizeArgs) -> Result<u8> {
    let (params_path, vk_path) = circuits::param_paths(args.circuit())?;
    print(&format!(
        "{}\n{}\n",
        params_path.display(),
        vk_path.display()
    ))?;
    Ok(0)
}

/// The top-level entry point for `cuzk params constraints`.
fn params_constraints(args: ParamsSizeArgs) -> Result<u8> {
    let circuit = args.circuit();
    let (params_path, _) = circuits::param_paths(circuit)?;
    let file = crate::r1cs::r1cs_path(&params_path)?;
    // Recording a 32GiB circuit takes minutes; a whole file of this circuit is kept as it is.
    if file.is_file() {
        let loaded = crate::r1cs::R1cs::load(&file)
            .and_then(|r1cs| crate::params::check_recorded(&r1cs, &file, &params_path));
        match loaded {
            Ok(()) => {
                eprintln!("{circuit} constraints already recorded: {}", file.display());
                return Ok(0);
            }
            Err(err) => eprintln!("{err:#}"),
        }
    }
    let started = Instant::now();
    let progress = Spinner::start(format!("recording the {circuit} circuit's constraints"));
    let recorded = circuits::record_constraints(circuit);
    progress.finish();
    let r1cs = recorded?;
    if !r1cs.save(&file)? {
        eprintln!(
            "{} is there already and was left as it is (another run may have it mapped); delete it first to record it again",
            file.display()
        );
        return Ok(0);
    }
    eprintln!(
        "recorded {} constraints ({}) in {:.0} s: {}",
        r1cs.counts().constraints,
        crate::memory::show_bytes(r1cs.memory_bytes()),
        started.elapsed().as_secs_f64(),
        file.display()
    );
    Ok(0)
}

/// The top-level entry point for `cuzk params check`: 0 when every file is whole and
/// official (or generated by cuzk and intact), 1 when one is missing, damaged or of unknown
/// origin.
fn params_check(args: ParamsCheckArgs) -> Result<u8> {
    let dir = params::params_dir();
    let required: Vec<String> = match args.sector_size {
        Some(size) => {
            let (params_path, vk_path) = crate::porep::param_paths(size)?;
            [params_path, vk_path]
                .iter()
                .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
                .collect()
        }
        None => Vec::new(),
    };
    anyhow::ensure!(
        dir.is_dir(),
        "{}: no parameter cache there (hint: fetch parameters with `lotus fetch-params 32GiB` or `curio fetch-params 32GiB`, or point --params at the cache)",
        dir.display()
    );
    let manifest = params::check::official_manifest();
    let request = params::check::CheckRequest {
        dir: &dir,
        manifest: &manifest,
        sector_size: args.sector_size,
        required: &required,
    };
    let mut progress = HashProgress::default();
    let checks = params::check::check_cache(&request, &mut |name, done, total| {
        progress.show(name, done, total)
    })
    .with_context(|| format!("listing {}", dir.display()))?;
    progress.finish();
    let mut out = format!(
        "{}: checked against filecoin-proofs' parameters.json\n",
        dir.display()
    );
    for check in &checks {
        let size = check
            .sector_size
            .map(|s| format!(" ({})", SectorSizeName(s)))
            .unwrap_or_default();
        out += &format!("{}{size}: {}\n", check.name, check.verdict.describe());
    }
    let problems = checks.iter().filter(|c| c.verdict.is_problem()).count();
    if checks.is_empty() {
        out += "no parameter files found (hint: `lotus fetch-params 32GiB` or `curio fetch-params 32GiB` fetch them)\n";
    } else {
        out += &format!(
            "{} file(s), {problems} missing, damaged or of unknown origin\n",
            checks.len()
        );
    }
    print(&out)?;
    Ok(if problems > 0 || checks.is_empty() {
        1
    } else {
        0
    })
}

/// Shows hashing progress on stderr: a bar on a terminal, else a line every ten seconds.
#[derive(Default)]
struct HashProgress {
    bar: Option<(String, indicatif::ProgressBar)>,
    last_line: Option<Instant>,
}

impl HashProgress {
    fn show(&mut self, name: &str, done: u64, total: u64) {
        if std::io::stderr().is_terminal() {
            let is_same = self.bar.as_ref().is_some_and(|(shown, _)| shown == name);
            if !is_same {
                self.finish();
                let bar = indicatif::ProgressBar::new(total).with_message(name.to_owned());
                bar.set_style(
                    indicatif::ProgressStyle::with_template(
                        "hashing {msg} {bar:30} {bytes}/{total_bytes} ({eta})",
                    )
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
                );
                self.bar = Some((name.to_owned(), bar));
            }
            if let Some((_, bar)) = &self.bar {
                bar.set_position(done);
            }
            return;
        }
        let is_due = self
            .last_line
            .is_none_or(|at| at.elapsed() >= Duration::from_secs(10));
        if is_due || done == total {
            self.last_line = Some(Instant::now());
            eprintln!(
                "hashing {name}: {:.1} of {:.1} GB ({:.0}%)",
                done as f64 / 1e9,
                total as f64 / 1e9,
                100.0 * done as f64 / total.max(1) as f64
            );
        }
    }

    fn finish(&mut self) {
        if let Some((_, bar)) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
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
