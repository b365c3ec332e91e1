//! Every flag of every command and its default, in one room: the clap argument structs, the
//! defaults only the command line knows as named constants, and the help that names a
//! default computed elsewhere built from that room's own constant.
//!
//! A run's defaults are [`RunSettings`]' constants (tests and damocles build settings
//! without a command line), `damocles`' are [`ProcessorSettings`]', the parameter cache's
//! are [`crate::params`]'; the flags here read them, so each is stated once. The flags are
//! checked into settings by the `settings` room beside this one, and nothing here runs.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use crate::backend::gpu::GpuSelection;
use crate::backend::BackendChoice;
use crate::c1::{self, parse_sector_size};
use crate::damocles::ProcessorSettings;
use crate::memory::{MARGIN_PERCENT, MIN_MARGIN_BYTES};
use crate::pipeline::{
    RunSettings, Synthesis, DEFAULT_MAX_DEVICE_FAULTS, DEFAULT_SYNTHESIS_THREADS_RULE,
    DEFAULT_SYNTH_JOBS_RULE,
};

/// Shape sectors `cuzk bench` proves (`--sectors`).
pub const DEFAULT_BENCH_SECTORS: u64 = 3;
/// Idle gaps of a prover lane `cuzk waterfall` lists, in milliseconds (`--gap-ms`).
pub const DEFAULT_GAP_MS: f64 = 1000.0;
/// Columns of a waterfall when neither `--width` nor `$COLUMNS` says.
pub const DEFAULT_WIDTH: usize = 100;
/// The narrowest waterfall: fewer columns cannot hold a row.
pub const MIN_WIDTH: usize = 20;
/// The sector size of `cuzk params gen`, `path` and `constraints` (`--sector-size`).
pub const DEFAULT_PARAMS_SECTOR_SIZE: &str = "2KiB";

/// `--params`' help: where the cache is unless the flag says.
pub fn params_help() -> String {
    format!(
        "Groth16 parameter cache directory [env: {}, default: {}]",
        crate::params::PARAMS_ENV,
        crate::params::DEFAULT_PARAMS_DIR
    )
}

/// `--synth-jobs`' help.
fn synth_jobs_help() -> String {
    format!("Partitions synthesized at once [default: {DEFAULT_SYNTH_JOBS_RULE}]")
}

/// `--synthesis-threads`' help.
fn synthesis_threads_help() -> String {
    format!(
        "Threads that evaluate pre-compiled constraints, shared by every partition \
         [default: {DEFAULT_SYNTHESIS_THREADS_RULE}]"
    )
}

/// `--max-memory`'s help.
fn max_memory_help() -> String {
    format!(
        "Memory budget for parameters and partitions in flight, like 200GiB or 180GB \
         [default: the memory available now (cgroup limits included), minus {MARGIN_PERCENT}% \
         or {} GiB]",
        MIN_MARGIN_BYTES >> 30
    )
}

/// `--width`'s help.
fn width_help() -> String {
    format!(
        "Width of the drawing in columns [default: $COLUMNS, else {DEFAULT_WIDTH}; at least \
         {MIN_WIDTH}]"
    )
}

/// Arguments of `cuzk completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: CompletionShell,
}

/// Arguments of `cuzk man`.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write one page per command into DIR (for example /usr/local/share/man/man1) instead
    /// of cuzk.1 to stdout.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
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

// By hand, for the reason given at `Synthesis`' impl below: the short help says it all.
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
    #[arg(long, value_name = "DIR", env = "CUZK_TMP_DIR")]
    pub tmp_dir: Option<PathBuf>,
    /// Append the timeline here, for `cuzk waterfall` [default: inside the private spool,
    /// removed at exit].
    #[arg(long, value_name = "FILE", env = "CUZK_TIMELINE")]
    pub timeline: Option<PathBuf>,
    /// Tries of a request that failed for a fault of this machine (a GPU or driver fault,
    /// parameters that could not be loaded), before it is answered with the error: damocles
    /// takes every error as final.
    #[arg(long, value_name = "N", default_value_t = ProcessorSettings::DEFAULT_ATTEMPTS, env = "CUZK_ATTEMPTS")]
    pub attempts: u32,
    /// Seconds a run that could not go on waits before its requests are tried again.
    #[arg(long, value_name = "SECS", default_value_t = ProcessorSettings::DEFAULT_RETRY_PAUSE_SECS, env = "CUZK_RETRY_PAUSE_SECS")]
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
    #[arg(long, value_name = "DIR", env = "CUZK_OUTBOX")]
    pub outbox: Option<PathBuf>,
    /// Where unprovable C1 files go, with a reason [default: ../failed].
    #[arg(long, value_name = "DIR", env = "CUZK_FAILED")]
    pub failed: Option<PathBuf>,
    /// Where claimed C1 files wait while being proved [default: ../work].
    #[arg(long, value_name = "DIR", env = "CUZK_WORK")]
    pub work: Option<PathBuf>,
    /// Where C1 files go once their proof is written [default: ../done].
    #[arg(long, value_name = "DIR", env = "CUZK_DONE")]
    pub done: Option<PathBuf>,
    /// The timeline CSV, appended to [default: ../timeline.csv].
    #[arg(long, value_name = "FILE", env = "CUZK_TIMELINE")]
    pub timeline: Option<PathBuf>,
    /// Exit once the inbox is drained instead of watching it.
    #[arg(long, env = "CUZK_ONCE", value_parser = clap::builder::BoolishValueParser::new())]
    pub once: bool,
    /// Miner actor id for files whose name is not a lotus sector name s-t0<miner>-<sector>.
    #[arg(long, value_name = "ID", env = "CUZK_MINER_ID")]
    pub miner_id: Option<u64>,
    /// The same as --miner-id, as a miner ID address like lotus-bench's: t01000 or f01000.
    #[arg(long, value_name = "ADDR", value_parser = c1::parse_miner_address, conflicts_with = "miner_id", env = "CUZK_MINER_ADDR")]
    pub miner_addr: Option<u64>,
    /// How much runs at once.
    #[command(flatten)]
    pub tuning: TuningArgs,
    /// The run's own metrics.
    #[command(flatten)]
    pub metrics: MetricsArgs,
    /// How the inbox is watched and its files taken.
    #[command(flatten)]
    pub watch: WatchArgs,
    /// Also take benchmark shape files made by `cuzk bench` (synthetic data of a real
    /// sector's shape): they are timed, and their results go to outbox/<job>.benchmark.json,
    /// never written as proofs. Without it such files are failed.
    #[arg(long, env = "CUZK_BENCHMARK", value_parser = clap::builder::BoolishValueParser::new())]
    pub benchmark: bool,
}

/// Arguments of `cuzk serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The spool: requests are written into SPOOL/inbox and proofs read from SPOOL/outbox;
    /// C1 files dropped into SPOOL/inbox are proved beside them.
    pub spool: PathBuf,
    /// Where to listen: host:port, or unix:///path/to.sock. Beyond loopback anyone who
    /// reaches it can submit proofs (there is no authentication).
    #[arg(long, value_name = "ADDR", default_value = crate::serve::DEFAULT_LISTEN, env = "CUZK_LISTEN")]
    pub listen: String,
    /// How much runs at once.
    #[command(flatten)]
    pub tuning: TuningArgs,
    /// The run's own metrics [default: SPOOL/metrics.prom, which GetMetrics returns].
    #[command(flatten)]
    pub metrics: MetricsArgs,
    /// How the inbox is watched and its files taken.
    #[command(flatten)]
    pub watch: WatchArgs,
}

/// The flags of a run that watches a spool's inbox: `prove-dir`'s and `serve`'s.
#[derive(Debug, Args)]
pub struct WatchArgs {
    /// Seconds between inbox rescans (file-system events also wake the scan).
    #[arg(long, value_name = "SECS", default_value_t = RunSettings::DEFAULT_POLL_SECS, env = "CUZK_POLL_SECS")]
    pub poll_secs: f64,
    /// Files modified more recently than this many seconds are left for a later scan.
    #[arg(long, value_name = "SECS", default_value_t = RunSettings::DEFAULT_SETTLE_SECS, env = "CUZK_SETTLE_SECS")]
    pub settle_secs: f64,
    /// A file whose JSON ends early is waited for this long after its last change, then
    /// failed as truncated.
    #[arg(long, value_name = "SECS", default_value_t = RunSettings::DEFAULT_INCOMPLETE_GRACE_SECS, env = "CUZK_INCOMPLETE_GRACE_SECS")]
    pub incomplete_grace_secs: f64,
    /// Largest input file accepted, a request's included, in bytes (a 64GiB sector's C1 in
    /// the lotus-bench wrapper is 52 MB).
    #[arg(long, value_name = "BYTES", default_value_t = c1::DEFAULT_MAX_C1_BYTES, env = "CUZK_MAX_C1_BYTES")]
    pub max_c1_bytes: u64,
    /// Seconds without a heartbeat after which another host's or container's claims are
    /// taken over (a dead process of this boot and pid namespace is taken over at once).
    #[arg(long, value_name = "SECS", default_value_t = RunSettings::DEFAULT_LEASE_SECS, env = "CUZK_LEASE_SECS")]
    pub lease_secs: f64,
    /// When a test-size sector (2KiB, 8MiB, 512MiB) has no parameters, generate INSECURE
    /// random ones instead of stopping the run or refusing the request (2KiB: about 3
    /// minutes on 2 cores).
    #[arg(long, env = "CUZK_GEN_TEST_PARAMS", value_parser = clap::builder::BoolishValueParser::new())]
    pub gen_test_params: bool,
    /// A claimed file that took the prover down (killed for memory, a driver fault) this
    /// many times while it was the only file in flight is moved to failed/ instead of being
    /// tried again (files in flight together at a crash are proved alone to tell).
    #[arg(long, value_name = "N", default_value_t = RunSettings::DEFAULT_MAX_ATTEMPTS, env = "CUZK_MAX_ATTEMPTS")]
    pub max_attempts: u32,
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
    /// Partitions synthesized at once [default: [`DEFAULT_SYNTH_JOBS_RULE`]].
    #[arg(long, value_name = "N", help = synth_jobs_help(), env = "CUZK_SYNTH_JOBS")]
    pub synth_jobs: Option<usize>,
    /// What proves the partitions: auto (cuda if built and a GPU is there, else the CPU),
    /// cuda (cuzk's own, parameters resident on the GPU), supraseal, ec-gpu or cpu.
    #[arg(long, value_name = "BACKEND", value_enum, default_value_t = RunSettings::DEFAULT_BACKEND, env = "CUZK_BACKEND")]
    pub backend: BackendChoice,
    /// GPUs to prove on: all, none (CPU), or indices like 0,1. Indices count among the GPUs
    /// this process sees: CUDA renumbers those left by CUDA_VISIBLE_DEVICES from 0, so with
    /// CUDA_VISIBLE_DEVICES=2,3 `--gpus 0` is physical GPU 2. BELLMAN_NO_GPU (any value but 0)
    /// turns GPUs off, as in bellperson.
    #[arg(long, value_name = "LIST", default_value_t = RunSettings::DEFAULT_GPUS, env = "CUZK_GPUS")]
    pub gpus: GpuSelection,
    /// Prover threads per GPU; two let one partition's CPU-side work overlap another's
    /// kernels on the same GPU (measured 1.3x on an H200). Fewer start on a GPU whose free
    /// memory does not hold them for a 32GiB sector (~30 GiB each, plus the bases they keep).
    #[arg(long, value_name = "N", default_value_t = RunSettings::DEFAULT_PROVERS_PER_GPU, env = "CUZK_PROVERS_PER_GPU")]
    pub provers_per_gpu: usize,
    /// Stop with exit 2 before claiming anything if the run would prove on the CPU (no GPU
    /// found, a build without CUDA, BELLMAN_NO_GPU, --gpus none): a CPU proof of a 32GiB
    /// sector takes hours.
    #[arg(long, env = "CUZK_REQUIRE_GPU", value_parser = clap::builder::BoolishValueParser::new())]
    pub require_gpu: bool,
    /// Synthesized partitions that may wait for the prover (for the cuda backend at least
    /// one less than its batch, CUZK_CUDA_BATCH, 10 by default).
    #[arg(long, value_name = "N", default_value_t = RunSettings::DEFAULT_QUEUE_DEPTH, env = "CUZK_QUEUE_DEPTH")]
    pub queue_depth: usize,
    /// Memory budget for parameters and partitions in flight [default: the memory available
    /// now, minus [`crate::memory::default_margin`]].
    #[arg(long, value_name = "BYTES", value_parser = crate::memory::parse_bytes, help = max_memory_help(), env = "CUZK_MAX_MEMORY")]
    pub max_memory: Option<u64>,
    /// GPU memory the cuda backend may take on each GPU, like 16GiB [default: its free
    /// memory]. Parameters that do not fit stay in pinned host memory and stream to the GPU
    /// at each proof, as on a card smaller than them.
    #[arg(long, value_name = "BYTES", value_parser = crate::memory::parse_bytes, env = "CUZK_GPU_MEMORY")]
    pub gpu_memory: Option<u64>,
    /// How partitions are synthesized: `precompiled` records each circuit shape's
    /// constraints once (kept beside the parameters) and then computes only the witness,
    /// with the circuit's gadgets; `native` does the same but computes the witness's
    /// SHA-256 and Poseidon work natively (the timeline says which ran); `full` builds every
    /// constraint for every partition.
    #[arg(long, value_name = "HOW", value_enum, default_value_t = RunSettings::DEFAULT_SYNTHESIS, env = "CUZK_SYNTHESIS")]
    pub synthesis: Synthesis,
    /// Threads that evaluate pre-compiled constraints, shared by every partition [default:
    /// [`DEFAULT_SYNTHESIS_THREADS_RULE`]].
    #[arg(long, value_name = "N", help = synthesis_threads_help(), env = "CUZK_SYNTHESIS_THREADS")]
    pub synthesis_threads: Option<usize>,
    /// CPUs kept for SupraSeal's host threads (its preprocessing and the G2 multiexp), so
    /// they stop competing with synthesis; cuzk's own threads get the others, and the
    /// defaults above count only those. 0 shares every CPU. Linux only: cuzk restarts itself
    /// once to size SupraSeal's thread pool.
    #[arg(long, value_name = "N", default_value_t = RunSettings::DEFAULT_PROVER_CPUS, env = "CUZK_PROVER_CPUS")]
    pub prover_cpus: usize,
    /// A prover whose calls fail this many times in a row stops, its GPU taken to be broken
    /// (the run says which; when the last prover stops, the run ends with exit 2). A failed
    /// partition's file goes back to the inbox to be proved alone; only a fault that follows
    /// the file fails it.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_DEVICE_FAULTS, env = "CUZK_MAX_DEVICE_FAULTS")]
    pub max_device_faults: u32,
    /// The most a prover's call may take per partition before the prover is taken to be hung
    /// (a kernel or the driver that never answers): its files go back to the inbox and it
    /// stops, as one whose device is lost. Once a circuit's calls are measured, a call gets
    /// ten times the slowest per partition, at least a minute, at most this. GPU provers
    /// default to 1800 s; CPU provers are watched only when it is given.
    #[arg(long, value_name = "SECS", value_parser = parse_positive_secs, env = "CUZK_CALL_DEADLINE_SECS")]
    pub call_deadline_secs: Option<f64>,
}

/// Where a run keeps its own metrics: shared by `prove-dir` and `damocles-c2`.
#[derive(Debug, Args)]
pub struct MetricsArgs {
    /// Keep the run's own metrics in FILE as it goes, in node_exporter's textfile format (name
    /// it *.prom in its --collector.textfile.directory): proofs and failures, jobs and
    /// partitions in flight, memory in use, seconds per proof.
    #[arg(long, value_name = "FILE", env = "CUZK_METRICS_TEXTFILE")]
    pub metrics_textfile: Option<PathBuf>,
    /// The `spool` label of those metrics, which tells two runs on one host apart [default:
    /// prove-dir: the spool directory; damocles-c2: the file's name without .prom].
    #[arg(
        long,
        value_name = "NAME",
        requires = "metrics_textfile",
        env = "CUZK_METRICS_LABEL"
    )]
    pub metrics_label: Option<String>,
}

/// Arguments of `cuzk bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Sector size to size the machine for: 2KiB, 8MiB, 512MiB, 32GiB or 64GiB.
    #[arg(long, value_parser = parse_sector_size)]
    pub sector_size: u64,
    /// Shape sectors to prove.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_BENCH_SECTORS)]
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
    /// Prove with H's bases in coset evaluation form, as after `cuzk params coset-h` (random
    /// points written beside the shape parameters, as large as the H query); without it the
    /// run proves with the file's own H query.
    #[arg(long)]
    pub coset_h: bool,
    /// Print the report as JSON for scripts (seconds per sector, steady state, memory).
    #[arg(long)]
    pub json: bool,
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
    /// Width of the drawing in columns [default: `$COLUMNS`, else [`DEFAULT_WIDTH`]; at
    /// least [`MIN_WIDTH`]].
    #[arg(long, value_name = "N", help = width_help())]
    pub width: Option<usize>,
    /// One row per partition instead of one per job.
    #[arg(long)]
    pub partitions: bool,
    /// List the prover lanes' idle gaps at least this long, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = DEFAULT_GAP_MS)]
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
    /// Derive a sector size's H query in coset evaluation form beside its parameters (a
    /// transform over points: minutes for 2KiB on a few cores, hours for 32GiB; `gen` makes
    /// it at once). No longer faster: the quotient takes six transforms with the parameters'
    /// own H query as well; a file derived earlier still serves, with the same proofs.
    CosetH(ParamsSizeArgs),
    /// Check the parameter cache against the digests in filecoin-proofs' parameters.json:
    /// ok, missing, corrupt, generated (by cuzk, intact) or unofficial, per file. Hashes
    /// every file: minutes for a 32GiB set.
    Check(ParamsCheckArgs),
    /// Remove recorded constraints and coset H queries no current circuit uses (an older
    /// format, changed parameters, parameters that are gone: 9 and 13 GB at 32GiB), never one
    /// a run has open.
    Prune(ParamsPruneArgs),
}

/// Arguments of `cuzk params prune`.
#[derive(Debug, Args)]
pub struct ParamsPruneArgs {
    /// Say what would be removed, removing nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Print JSON for scripts: every derived file with its verdict.
    #[arg(long)]
    pub json: bool,
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
    /// Print JSON for scripts: every file with its verdict (`ok`, `missing`, `corrupt`,
    /// `generated`, `unofficial_or_corrupt`, `unofficial`); the exit code is the same.
    #[arg(long)]
    pub json: bool,
}

/// The circuit argument of `cuzk params gen`, `path`, `constraints` and `coset-h`.
#[derive(Debug, Args)]
pub struct ParamsSizeArgs {
    /// Sector size: 2KiB, 8MiB or 512MiB for `gen`; also 32GiB and 64GiB for `path`,
    /// `constraints` and `coset-h`.
    #[arg(long, value_parser = parse_sector_size, default_value = DEFAULT_PARAMS_SECTOR_SIZE)]
    pub sector_size: u64,
    /// The SnapDeals update circuit's parameters (ProveReplicaUpdate2), not PoRep's.
    #[arg(long)]
    pub update: bool,
}

/// A number of seconds above zero (`--call-deadline-secs`).
fn parse_positive_secs(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(secs) if secs.is_finite() && secs > 0.0 => Ok(secs),
        _ => Err(format!("{text:?} is not a number of seconds above zero")),
    }
}
