//! The settings of a `prove-dir` run, checked and with every default filled in; the command
//! line makes them (see `cli`), tests build them directly.

use std::path::PathBuf;
use std::time::Duration;

use crate::backend::gpu::GpuSelection;
use crate::backend::BackendChoice;
use crate::spool::SpoolLayout;

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
    /// Synthesis workers.
    pub synth_jobs: usize,
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
    /// Runs a claimed file may take down (killed, crashed) before it is quarantined.
    pub max_attempts: u32,
    /// Accept benchmark shape files (synthetic data): timed, never written as proofs.
    pub benchmark: bool,
    /// Synthesize with pre-compiled constraints (a witness-only pass) once they are ready.
    pub is_precompiled: bool,
    /// Threads that evaluate pre-compiled constraints, shared by all partitions.
    pub synthesis_threads: usize,
    /// CPUs kept for SupraSeal's host threads by `--prover-cpus` (0: every CPU shared); see
    /// [`crate::backend::gpu::cpu_split`].
    pub prover_cpus: usize,
}
