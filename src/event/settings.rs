//! The settings a run records when it starts ([`super::EventKind::RunStarted`]), as data.
//!
//! The timeline writes them as `key=value` pairs in `RUN_START`'s detail (`timeline` owns that
//! layout); older timelines hold fewer keys, and a key that is missing reads as its default.

use super::WorkerName;

/// How a run was configured: what a timeline needs to tell runs apart.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunStartSettings {
    /// The cuzk version that ran (`CARGO_PKG_VERSION`).
    pub version: String,
    /// The prover lanes, in the order they were started.
    pub provers: Vec<WorkerName>,
    /// Partitions synthesized or waiting to be queued at once (`--synth-jobs`).
    pub synth_jobs: usize,
    /// Threads of the synthesis pool.
    pub synthesis_threads: usize,
    /// Cores left to the provers (`--prover-cpus`).
    pub prover_cpus: usize,
    /// Synthesized partitions the prover queue holds (`--queue-depth`).
    pub queue_depth: usize,
    /// The memory budget in bytes (`--max-memory`, or what the machine has).
    pub max_memory_bytes: u64,
    /// True when benchmark shape files were accepted (timed, never written as proofs).
    pub is_benchmark: bool,
    /// The parameter cache directory, as displayed.
    pub params_dir: String,
}
