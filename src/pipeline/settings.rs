//! The settings of a `prove-dir` run, checked and with every default filled in; the command
//! line makes them (see `cli`), tests build them directly.
//!
//! Every default is stated here once: [`RunSettings::new`] fills them in, and the command
//! line's `[default: ...]` values are these constants.

use std::path::PathBuf;
use std::time::Duration;

use crate::backend::gpu::GpuSelection;
use crate::backend::{BackendChoice, ParamsKind};
use crate::c1::DEFAULT_MAX_C1_BYTES;
use crate::prometheus::run::MetricsTextfile;
use crate::spool::{spool_dir_of, SpoolLayout};

/// How a run is configured.
#[derive(Clone, Debug)]
pub struct RunSettings {
    /// The spool's directories.
    pub layout: SpoolLayout,
    /// The timeline file.
    pub timeline: PathBuf,
    /// Exit when the inbox is drained.
    pub once: bool,
    /// Default miner id.
    pub miner_id: Option<u64>,
    /// Synthesis workers (`--synth-jobs`); `None` chooses them for the backend
    /// ([`RunSettings::synth_jobs_for`]).
    pub synth_jobs: Option<usize>,
    /// What proves the partitions.
    pub backend: BackendChoice,
    /// GPUs to prove on.
    pub gpus: GpuSelection,
    /// Prover threads per GPU (fewer where a GPU's free memory holds fewer).
    pub provers_per_gpu: usize,
    /// Stop before claiming anything rather than prove on the CPU (`--require-gpu`).
    pub require_gpu: bool,
    /// Channel depth between synthesis and the prover.
    pub queue_depth: usize,
    /// Rescan interval.
    pub poll: Duration,
    /// Minimum age of a file before it is claimed.
    pub settle: Duration,
    /// How long an incomplete file is waited for.
    pub incomplete_grace: Duration,
    /// Largest C1 file accepted.
    pub max_c1_bytes: u64,
    /// How long another host's silent claims are left alone.
    pub lease: Duration,
    /// Generate missing test-size parameters.
    pub gen_test_params: bool,
    /// The memory budget in bytes; `None`: what is available now, minus a margin.
    pub max_memory: Option<u64>,
    /// GPU memory the cuda backend may take per GPU (`--gpu-memory`); `None`: its free memory.
    pub gpu_memory: Option<u64>,
    /// Runs a claimed file may take down (killed, crashed) while alone in flight before it is
    /// quarantined.
    pub max_attempts: u32,
    /// Faulty calls in a row after which a prover stops, its device taken to be broken
    /// (`--max-device-faults`).
    pub max_device_faults: u32,
    /// The most a prover's call may take per partition before the prover is taken to be hung
    /// (`--call-deadline-secs`; see [`super::deadline`]); `None`: GPU provers get
    /// [`super::deadline::DEFAULT_CALL_DEADLINE`] and CPU provers are not watched.
    pub call_deadline: Option<std::time::Duration>,
    /// Accept benchmark shape files (synthetic data): timed, never written as proofs.
    pub benchmark: bool,
    /// Synthesize with pre-compiled constraints (a witness-only pass) once they are ready.
    pub is_precompiled: bool,
    /// With pre-compiled constraints, compute the witness natively where cuzk can
    /// (`witness`); otherwise with the circuit's gadgets.
    pub is_native_witness: bool,
    /// Threads that evaluate pre-compiled constraints, shared by all partitions.
    pub synthesis_threads: usize,
    /// CPUs kept for SupraSeal's host threads by `--prover-cpus` (0: every CPU shared); see
    /// [`crate::backend::gpu::cpu_split`].
    pub prover_cpus: usize,
    /// Where the run keeps its own metrics as it goes (`--metrics-textfile`); `None`: nowhere.
    pub metrics: Option<MetricsTextfile>,
}

impl RunSettings {
    /// Seconds between inbox rescans (`--poll-secs`).
    pub const DEFAULT_POLL_SECS: f64 = 5.0;
    /// How old a file must be before it is claimed (`--settle-secs`).
    pub const DEFAULT_SETTLE_SECS: f64 = 1.0;
    /// How long a file whose JSON ends early is waited for (`--incomplete-grace-secs`).
    pub const DEFAULT_INCOMPLETE_GRACE_SECS: f64 = 120.0;
    /// How long another host's silent claims are left alone (`--lease-secs`).
    pub const DEFAULT_LEASE_SECS: f64 = 600.0;
    /// Runs a file may take down before it is quarantined (`--max-attempts`).
    pub const DEFAULT_MAX_ATTEMPTS: u32 = 3;
    /// Prover threads per GPU (`--provers-per-gpu`).
    pub const DEFAULT_PROVERS_PER_GPU: usize = 2;
    /// Synthesized partitions that may wait for a prover (`--queue-depth`).
    pub const DEFAULT_QUEUE_DEPTH: usize = 1;
    /// What proves the partitions (`--backend`).
    pub const DEFAULT_BACKEND: BackendChoice = BackendChoice::Auto;
    /// GPUs to prove on (`--gpus`).
    pub const DEFAULT_GPUS: GpuSelection = GpuSelection::All;
    /// How partitions are synthesized (`--synthesis`).
    pub const DEFAULT_SYNTHESIS: Synthesis = Synthesis::Native;
    /// CPUs kept for SupraSeal's host threads (`--prover-cpus`): none, every CPU shared.
    pub const DEFAULT_PROVER_CPUS: usize = 0;

    /// Settings for a run on `layout` with every default: the timeline beside the inbox, a
    /// watching run, the backend and GPUs chosen automatically, and the CPU shares below.
    pub fn new(layout: SpoolLayout) -> RunSettings {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        RunSettings {
            timeline: spool_dir_of(&layout.inbox).join("timeline.csv"),
            layout,
            once: false,
            miner_id: None,
            synth_jobs: None,
            backend: Self::DEFAULT_BACKEND,
            gpus: Self::DEFAULT_GPUS,
            provers_per_gpu: Self::DEFAULT_PROVERS_PER_GPU,
            require_gpu: false,
            queue_depth: Self::DEFAULT_QUEUE_DEPTH,
            poll: Duration::from_secs_f64(Self::DEFAULT_POLL_SECS),
            settle: Duration::from_secs_f64(Self::DEFAULT_SETTLE_SECS),
            incomplete_grace: Duration::from_secs_f64(Self::DEFAULT_INCOMPLETE_GRACE_SECS),
            max_c1_bytes: DEFAULT_MAX_C1_BYTES,
            lease: Duration::from_secs_f64(Self::DEFAULT_LEASE_SECS),
            gen_test_params: false,
            max_memory: None,
            gpu_memory: None,
            max_attempts: Self::DEFAULT_MAX_ATTEMPTS,
            max_device_faults: super::device_faults::DEFAULT_MAX_DEVICE_FAULTS,
            call_deadline: None,
            benchmark: false,
            is_precompiled: Self::DEFAULT_SYNTHESIS.is_precompiled(),
            is_native_witness: Self::DEFAULT_SYNTHESIS.is_native_witness(),
            synthesis_threads: default_synthesis_threads(cores),
            prover_cpus: Self::DEFAULT_PROVER_CPUS,
            metrics: None,
        }
    }
}

/// How partitions are synthesized (`--synthesis`); a run keeps it as
/// [`RunSettings::is_precompiled`] and [`RunSettings::is_native_witness`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Synthesis {
    /// Pre-compiled constraints, and the witness computed natively where cuzk can.
    Native,
    /// Record each circuit shape's constraints once, then compute only the witness.
    Precompiled,
    /// Build every constraint for every partition.
    Full,
}

impl Synthesis {
    /// Whether partitions are synthesized with pre-compiled constraints once they are ready.
    pub fn is_precompiled(self) -> bool {
        self != Synthesis::Full
    }

    /// Whether the witness is computed natively where cuzk can.
    pub fn is_native_witness(self) -> bool {
        self == Synthesis::Native
    }
}

impl RunSettings {
    /// Partitions synthesized at once for provers that need `kind` of parameters: as set,
    /// else [`default_synth_jobs`] on this machine's cores.
    pub fn synth_jobs_for(&self, kind: ParamsKind) -> usize {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        self.synth_jobs
            .unwrap_or_else(|| default_synth_jobs(cores, kind))
    }
}

/// `default_synth_jobs` below in words, for `--synth-jobs`' help.
pub const DEFAULT_SYNTH_JOBS_RULE: &str = "one per core with the cuda backend, whose GPU \
     evaluates the constraints; a quarter of the cores with the others";

/// Partitions synthesized at once on `cores` CPUs for provers that need `kind`. With the
/// cuda backend, a partition's synthesis is mostly one thread (its witness; the GPU
/// evaluates the constraints), so one per core, and the memory budget caps how many are
/// in flight. Elsewhere a quarter of the cores, since each partition's evaluation of its
/// constraints is itself parallel. At least 1.
pub fn default_synth_jobs(cores: usize, kind: ParamsKind) -> usize {
    match kind {
        ParamsKind::Resident { .. } => cores.max(1),
        ParamsKind::Groth16 { .. } | ParamsKind::Supraseal { .. } => (cores / 4).max(1),
    }
}

/// `default_synthesis_threads` below in words, for `--synthesis-threads`' help.
pub const DEFAULT_SYNTHESIS_THREADS_RULE: &str = "half the cores, at least 1";

/// Threads evaluating pre-compiled constraints on `cores` CPUs: half of them, at least 1.
pub fn default_synthesis_threads(cores: usize) -> usize {
    (cores / 2).max(1)
}
