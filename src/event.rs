//! Events: the one interface between the pipeline and whatever watches it.
//!
//! The pipeline stamps each [`Event`] when it happens and sends it down a channel; the
//! reporter thread turns events into timeline rows, progress and the final summary. Nothing
//! else flows from the pipeline to its consumers.
//!
//! This module is also the one definition of what an event is called: [`EventName`] is the
//! name written to the timeline and read back by `cuzk waterfall` and `cuzk status`, and
//! [`JobStage`] names the step a job failed in, in the timeline and in `failed/<job>.error.json`.
//! How each event's fields are laid out in a timeline row is `timeline`'s business.

use std::fmt;
use std::time::{Instant, SystemTime};

use crossbeam_channel::Sender;

use crate::proof_kind::ProofKind;
use crate::synth::SynthesisProfile;

/// The worker name of parameter loads started ahead of the provers (while the first
/// partitions are synthesized): not a prover lane, and every prover waits on it.
pub const PRELOAD_WORKER: &str = "params";

/// Something that happened during a run.
#[derive(Clone, Debug, PartialEq)]
pub enum EventKind {
    /// The run began; `settings` summarizes its configuration.
    RunStarted {
        /// How the run was configured, for the timeline.
        settings: String,
    },
    /// A C1 file was claimed from the inbox (or resumed from the work directory).
    JobClaimed {
        /// The job (the C1 file's name without `.json`).
        job: String,
        /// True when the claim was left over from an earlier run.
        is_resumed: bool,
    },
    /// The input file parsed and bound to its circuits.
    JobParsed {
        /// The job.
        job: String,
        /// `s-t0<miner>-<sector>` (`unnamed sector` for an update input that does not say).
        sector: String,
        /// Sector size in bytes.
        sector_size: u64,
        /// A C2 or an update.
        kind: ProofKind,
        /// Partitions to prove.
        partitions: usize,
        /// A benchmark shape file: timed like a real one, never written as a proof.
        is_benchmark: bool,
    },
    /// A partition's synthesis began.
    SynthStarted {
        /// The job.
        job: String,
        /// The partition.
        partition: usize,
        /// The synthesis worker.
        worker: String,
    },
    /// A partition's synthesis ended.
    SynthFinished {
        /// The job.
        job: String,
        /// The partition.
        partition: usize,
        /// The synthesis worker.
        worker: String,
        /// Constraints in the partition.
        constraints: usize,
        /// True when it took the witness-only pass over pre-compiled constraints.
        is_precompiled: bool,
        /// True when a, b and c were left to the prover's GPU: the partition is its witness.
        is_deferred: bool,
        /// Where the synthesis spent its time.
        profile: SynthesisProfile,
    },
    /// The synthesized partition entered the prover's queue (the send returned).
    PartitionQueued {
        /// The job.
        job: String,
        /// The partition.
        partition: usize,
        /// The synthesis worker that sent it.
        worker: String,
    },
    /// A partition waits to start: its bytes would exceed the memory budget now.
    MemoryWait {
        /// The job.
        job: String,
        /// The partition.
        partition: usize,
        /// Bytes the partition needs.
        needed_bytes: u64,
        /// Bytes reserved by parameters and other partitions.
        in_use_bytes: u64,
        /// The budget (`--max-memory`).
        budget_bytes: u64,
    },
    /// A prover took the partition off the queue.
    ProverPickedUp {
        /// The job.
        job: String,
        /// The partition.
        partition: usize,
        /// The prover (`gpu-0`, `cpu-0`).
        worker: String,
    },
    /// Insecure test parameters are being generated because `--gen-test-params` was given.
    ParamsGenerating {
        /// The parameter file being made.
        path: String,
    },
    /// A prover (or [`PRELOAD_WORKER`]) began loading a parameter file.
    ParamsLoadStarted {
        /// The prover, or [`PRELOAD_WORKER`].
        worker: String,
        /// The parameter file.
        path: String,
    },
    /// The parameter file is loaded.
    ParamsLoadFinished {
        /// The prover, or [`PRELOAD_WORKER`].
        worker: String,
        /// The parameter file.
        path: String,
    },
    /// A circuit shape's pre-compiled constraints are ready for the partitions after.
    ConstraintsReady {
        /// The R1CS file.
        path: String,
        /// True when recorded in this run (and saved), false when loaded.
        is_recorded: bool,
        /// Bytes of the matrices.
        bytes: u64,
        /// Milliseconds it took.
        ms: f64,
    },
    /// Pre-compiled constraints for a circuit shape cannot be had in this run (they failed to
    /// load or record, or do not fit the memory budget): its partitions are synthesized in
    /// full, the slower way.
    FullSynthesis {
        /// The R1CS file that was wanted.
        path: String,
        /// Why it cannot be used.
        reason: String,
    },
    /// A step of a partition's proof failed on the prover's GPU and was done again on the CPU.
    CpuFallback {
        /// The job.
        job: String,
        /// The partition.
        partition: usize,
        /// The prover.
        worker: String,
        /// Which step failed, and why.
        reason: String,
    },
    /// A partition failed on its prover in a way the device, not the file, may be to blame
    /// for (a CUDA error, a batch that failed as a unit): its file goes back to the inbox, to
    /// be proved alone, and the fault is counted apart from crashes.
    DeviceFault {
        /// The job.
        job: String,
        /// The partition.
        partition: usize,
        /// The prover.
        worker: String,
        /// What the prover said.
        message: String,
    },
    /// A prover stopped after `--max-device-faults` faulty calls in a row: its device is
    /// taken to be broken. The run goes on with the others, or stops if it was the last.
    ProverStopped {
        /// The prover.
        worker: String,
        /// Faulty calls in a row.
        faults: u32,
        /// What the last one said.
        message: String,
    },
    /// A GPU prover found bellperson's priority lock taken (a WindowPoSt or WinningPoSt is
    /// on the GPU) and waits, starting no GPU work, until it is free.
    PriorityWaitStarted {
        /// The prover.
        worker: String,
        /// The lock file.
        path: String,
    },
    /// The priority lock is free again; the prover goes on.
    PriorityWaitFinished {
        /// The prover.
        worker: String,
        /// Milliseconds it waited.
        waited_ms: f64,
    },
    /// Groth16 proving of a partition began.
    ProveStarted {
        /// The job.
        job: String,
        /// The partition.
        partition: usize,
        /// The prover.
        worker: String,
    },
    /// Groth16 proving of a partition ended.
    ProveFinished {
        /// The job.
        job: String,
        /// The partition.
        partition: usize,
        /// The prover.
        worker: String,
        /// Time per prover step; `None` only when read from a timeline that lacks them.
        timings: Option<ProveTimings>,
    },
    /// How much of the last period a GPU ran kernels, as its driver counts it (NVML's GPU
    /// utilization, what `nvidia-smi` shows); see [`crate::backend::gpu::activity`].
    GpuBusy {
        /// The GPU's index among those this process sees (`gpu-N`'s N).
        gpu: usize,
        /// Percentage of the period during which one or more kernels was executing.
        busy_pct: f64,
        /// The period's length in milliseconds; it ended when the event was stamped (an idle
        /// stretch is sent after it ends, stamped with its end).
        period_ms: f64,
    },
    /// The assembled proof is being checked with `verify_seal`.
    VerifyStarted {
        /// The job.
        job: String,
    },
    /// The check finished.
    VerifyFinished {
        /// The job.
        job: String,
        /// Whether the proof verified.
        is_valid: bool,
    },
    /// The proof is durably in the outbox.
    ProofWritten {
        /// The job.
        job: String,
        /// The proof file.
        path: String,
    },
    /// A resumed claim's name had a result in the outbox proved from other C1 bytes (lotus ran
    /// C1 again for the sector): the result was kept aside and the file is proved again.
    ResultSuperseded {
        /// The job.
        job: String,
        /// Where the earlier proof is kept (`outbox/superseded/...`).
        kept_as: String,
    },
    /// The job failed and its C1 file went to `failed/`.
    JobFailed {
        /// The job.
        job: String,
        /// The stage that failed.
        stage: JobStage,
        /// What went wrong.
        message: String,
    },
    /// A file looked unfinished and was left in the inbox for a later scan.
    FileDeferred {
        /// The file's name.
        job: String,
        /// Why.
        reason: String,
    },
    /// An inbox file could not be claimed (its name is not UTF-8, the rename was refused);
    /// it stays in the inbox and is tried again at the next scan.
    FileSkipped {
        /// The job the file would have been.
        job: String,
        /// Why it could not be claimed.
        reason: String,
    },
    /// SIGINT or SIGTERM: no new files are claimed; work in flight finishes.
    StopRequested,
    /// The run ended.
    RunFinished {
        /// Proofs written.
        proved: usize,
        /// Jobs failed.
        failed: usize,
    },
}

/// The name of an event in a timeline: one per [`EventKind`] variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EventName {
    /// [`EventKind::RunStarted`].
    RunStart,
    /// [`EventKind::JobClaimed`].
    Claim,
    /// [`EventKind::JobParsed`].
    Parsed,
    /// [`EventKind::SynthStarted`].
    SynthStart,
    /// [`EventKind::SynthFinished`].
    SynthEnd,
    /// [`EventKind::PartitionQueued`].
    ChanSend,
    /// [`EventKind::MemoryWait`].
    MemoryWait,
    /// [`EventKind::ProverPickedUp`].
    GpuPickup,
    /// [`EventKind::ParamsGenerating`].
    ParamsGen,
    /// [`EventKind::ParamsLoadStarted`].
    ParamsStart,
    /// [`EventKind::ParamsLoadFinished`].
    ParamsEnd,
    /// [`EventKind::ConstraintsReady`].
    ConstraintsReady,
    /// [`EventKind::FullSynthesis`].
    FullSynth,
    /// [`EventKind::PriorityWaitStarted`].
    PriorityWaitStart,
    /// [`EventKind::PriorityWaitFinished`].
    PriorityWaitEnd,
    /// [`EventKind::ProveStarted`].
    GpuStart,
    /// [`EventKind::ProveFinished`].
    GpuEnd,
    /// [`EventKind::CpuFallback`].
    CpuFallback,
    /// [`EventKind::DeviceFault`].
    DeviceFault,
    /// [`EventKind::ProverStopped`].
    ProverStopped,
    /// [`EventKind::GpuBusy`].
    GpuBusy,
    /// [`EventKind::VerifyStarted`].
    VerifyStart,
    /// [`EventKind::VerifyFinished`].
    VerifyEnd,
    /// [`EventKind::ProofWritten`].
    Done,
    /// [`EventKind::ResultSuperseded`].
    Superseded,
    /// [`EventKind::JobFailed`].
    Failed,
    /// [`EventKind::FileDeferred`].
    Deferred,
    /// [`EventKind::FileSkipped`].
    Skipped,
    /// [`EventKind::StopRequested`].
    Stop,
    /// [`EventKind::RunFinished`].
    RunEnd,
}

impl EventName {
    /// Every name, in pipeline order.
    pub const ALL: [EventName; 30] = [
        EventName::RunStart,
        EventName::Claim,
        EventName::Parsed,
        EventName::SynthStart,
        EventName::SynthEnd,
        EventName::ChanSend,
        EventName::MemoryWait,
        EventName::GpuPickup,
        EventName::ParamsGen,
        EventName::ParamsStart,
        EventName::ParamsEnd,
        EventName::ConstraintsReady,
        EventName::FullSynth,
        EventName::PriorityWaitStart,
        EventName::PriorityWaitEnd,
        EventName::GpuStart,
        EventName::GpuEnd,
        EventName::CpuFallback,
        EventName::DeviceFault,
        EventName::ProverStopped,
        EventName::GpuBusy,
        EventName::VerifyStart,
        EventName::VerifyEnd,
        EventName::Done,
        EventName::Superseded,
        EventName::Failed,
        EventName::Deferred,
        EventName::Skipped,
        EventName::Stop,
        EventName::RunEnd,
    ];

    /// The name as written in the timeline's `event` column.
    pub fn as_str(self) -> &'static str {
        match self {
            EventName::RunStart => "RUN_START",
            EventName::Claim => "CLAIM",
            EventName::Parsed => "PARSED",
            EventName::SynthStart => "SYNTH_START",
            EventName::SynthEnd => "SYNTH_END",
            EventName::ChanSend => "CHAN_SEND",
            EventName::MemoryWait => "MEMORY_WAIT",
            EventName::GpuPickup => "GPU_PICKUP",
            EventName::ParamsGen => "PARAMS_GEN",
            EventName::ParamsStart => "PARAMS_START",
            EventName::ParamsEnd => "PARAMS_END",
            EventName::ConstraintsReady => "CONSTRAINTS_READY",
            EventName::FullSynth => "FULL_SYNTH",
            EventName::PriorityWaitStart => "PRIORITY_WAIT_START",
            EventName::PriorityWaitEnd => "PRIORITY_WAIT_END",
            EventName::GpuStart => "GPU_START",
            EventName::GpuEnd => "GPU_END",
            EventName::CpuFallback => "CPU_FALLBACK",
            EventName::DeviceFault => "DEVICE_FAULT",
            EventName::ProverStopped => "PROVER_STOPPED",
            EventName::GpuBusy => "GPU_BUSY",
            EventName::VerifyStart => "VERIFY_START",
            EventName::VerifyEnd => "VERIFY_END",
            EventName::Done => "DONE",
            EventName::Superseded => "SUPERSEDED",
            EventName::Failed => "FAILED",
            EventName::Deferred => "DEFERRED",
            EventName::Skipped => "SKIPPED",
            EventName::Stop => "STOP",
            EventName::RunEnd => "RUN_END",
        }
    }

    /// The name for a timeline's `event` column, if it is one.
    pub fn parse(text: &str) -> Option<EventName> {
        EventName::ALL
            .into_iter()
            .find(|name| name.as_str() == text)
    }
}

impl fmt::Display for EventName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl EventKind {
    /// The event's name in the timeline.
    pub fn name(&self) -> EventName {
        match self {
            EventKind::RunStarted { .. } => EventName::RunStart,
            EventKind::JobClaimed { .. } => EventName::Claim,
            EventKind::JobParsed { .. } => EventName::Parsed,
            EventKind::SynthStarted { .. } => EventName::SynthStart,
            EventKind::SynthFinished { .. } => EventName::SynthEnd,
            EventKind::PartitionQueued { .. } => EventName::ChanSend,
            EventKind::MemoryWait { .. } => EventName::MemoryWait,
            EventKind::ProverPickedUp { .. } => EventName::GpuPickup,
            EventKind::ParamsGenerating { .. } => EventName::ParamsGen,
            EventKind::ParamsLoadStarted { .. } => EventName::ParamsStart,
            EventKind::ParamsLoadFinished { .. } => EventName::ParamsEnd,
            EventKind::ConstraintsReady { .. } => EventName::ConstraintsReady,
            EventKind::FullSynthesis { .. } => EventName::FullSynth,
            EventKind::CpuFallback { .. } => EventName::CpuFallback,
            EventKind::DeviceFault { .. } => EventName::DeviceFault,
            EventKind::ProverStopped { .. } => EventName::ProverStopped,
            EventKind::PriorityWaitStarted { .. } => EventName::PriorityWaitStart,
            EventKind::PriorityWaitFinished { .. } => EventName::PriorityWaitEnd,
            EventKind::ProveStarted { .. } => EventName::GpuStart,
            EventKind::ProveFinished { .. } => EventName::GpuEnd,
            EventKind::GpuBusy { .. } => EventName::GpuBusy,
            EventKind::VerifyStarted { .. } => EventName::VerifyStart,
            EventKind::VerifyFinished { .. } => EventName::VerifyEnd,
            EventKind::ProofWritten { .. } => EventName::Done,
            EventKind::ResultSuperseded { .. } => EventName::Superseded,
            EventKind::JobFailed { .. } => EventName::Failed,
            EventKind::FileDeferred { .. } => EventName::Deferred,
            EventKind::FileSkipped { .. } => EventName::Skipped,
            EventKind::StopRequested => EventName::Stop,
            EventKind::RunFinished { .. } => EventName::RunEnd,
        }
    }

    /// The job the event is about, if it is about one.
    pub fn job(&self) -> Option<&str> {
        match self {
            EventKind::JobClaimed { job, .. }
            | EventKind::JobParsed { job, .. }
            | EventKind::SynthStarted { job, .. }
            | EventKind::SynthFinished { job, .. }
            | EventKind::PartitionQueued { job, .. }
            | EventKind::MemoryWait { job, .. }
            | EventKind::ProverPickedUp { job, .. }
            | EventKind::ProveStarted { job, .. }
            | EventKind::ProveFinished { job, .. }
            | EventKind::CpuFallback { job, .. }
            | EventKind::DeviceFault { job, .. }
            | EventKind::VerifyStarted { job }
            | EventKind::VerifyFinished { job, .. }
            | EventKind::ProofWritten { job, .. }
            | EventKind::ResultSuperseded { job, .. }
            | EventKind::JobFailed { job, .. }
            | EventKind::FileDeferred { job, .. }
            | EventKind::FileSkipped { job, .. } => Some(job),
            EventKind::RunStarted { .. }
            | EventKind::ParamsGenerating { .. }
            | EventKind::ParamsLoadStarted { .. }
            | EventKind::ParamsLoadFinished { .. }
            | EventKind::ConstraintsReady { .. }
            | EventKind::FullSynthesis { .. }
            | EventKind::PriorityWaitStarted { .. }
            | EventKind::PriorityWaitFinished { .. }
            | EventKind::GpuBusy { .. }
            | EventKind::ProverStopped { .. }
            | EventKind::StopRequested
            | EventKind::RunFinished { .. } => None,
        }
    }
}

/// The step of a job's journey that failed: named in the timeline's `FAILED` rows and in
/// `failed/<job>.error.json`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum JobStage {
    /// The spool: the entry is not a C1 file, or its result already exists.
    Spool,
    /// Reading and parsing the C1 file.
    Parse,
    /// Finding the miner and sector the file belongs to.
    Identity,
    /// Binding the file to its sector's circuits (replica id, shapes).
    Bind,
    /// Finding or loading the Groth16 parameters.
    Params,
    /// Synthesizing a partition.
    Synthesis,
    /// Proving a partition.
    Prove,
    /// Checking the assembled proof with `verify_seal`.
    Verify,
    /// Writing the proof to the outbox.
    Write,
    /// The job took the prover down (killed for memory, a driver fault) too many times.
    Crash,
}

impl JobStage {
    /// Every stage, in the order a job meets them.
    pub const ALL: [JobStage; 10] = [
        JobStage::Spool,
        JobStage::Parse,
        JobStage::Identity,
        JobStage::Bind,
        JobStage::Params,
        JobStage::Synthesis,
        JobStage::Prove,
        JobStage::Verify,
        JobStage::Write,
        JobStage::Crash,
    ];

    /// The stage's name in timelines and failure records.
    pub fn as_str(self) -> &'static str {
        match self {
            JobStage::Spool => "spool",
            JobStage::Parse => "parse",
            JobStage::Identity => "identity",
            JobStage::Bind => "bind",
            JobStage::Params => "params",
            JobStage::Synthesis => "synthesis",
            JobStage::Prove => "prove",
            JobStage::Verify => "verify",
            JobStage::Write => "write",
            JobStage::Crash => "crash",
        }
    }

    /// The stage with this name, if there is one.
    pub fn parse(text: &str) -> Option<JobStage> {
        JobStage::ALL
            .into_iter()
            .find(|stage| stage.as_str() == text)
    }
}

impl fmt::Display for JobStage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for JobStage {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// Milliseconds spent in each step of one proof, for the timeline.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ProveTimings {
    /// Host-to-GPU copies of the partition (a, b, c and the witness), where a backend
    /// times them apart from the steps (the cuda backend); 0 elsewhere.
    pub upload_ms: f64,
    /// iFFT, coset FFT, `a*b - c`, division by Z and coset iFFT: the quotient `h` (on a GPU,
    /// with the upload of `a`, `b`, `c`).
    pub fft_ms: f64,
    /// The G1 multiexps: `H`, `L`, `A` and `B_g1`.
    pub msm_g1_ms: f64,
    /// `msm_g1_ms` one multiexp at a time (`H`, `L`, `A`, `B_g1`), where a backend times
    /// them apart (the cuda backend); all 0 elsewhere.
    pub msm_g1_split_ms: [f64; 4],
    /// `a = A·w`, `b = B·w`, `c = C·w` evaluated on the GPU from the pre-compiled
    /// constraints (the cuda backend, where the GPU keeps them); 0 elsewhere.
    pub evaluate_ms: f64,
    /// The G2 multiexp for `B`.
    pub msm_g2_ms: f64,
    /// Scalar conversions and the final combination on the CPU.
    pub cpu_tail_ms: f64,
    /// A backend that proves whole partitions in one call (SupraSeal): the call, not split
    /// into steps.
    pub gpu_call_ms: f64,
}

impl std::fmt::Display for ProveTimings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "fft {:.0} ms, G1 multiexps {:.0} ms, G2 multiexp {:.0} ms, CPU {:.0} ms",
            self.fft_ms, self.msm_g1_ms, self.msm_g2_ms, self.cpu_tail_ms
        )?;
        if self.gpu_call_ms > 0.0 {
            write!(f, ", one GPU call {:.0} ms", self.gpu_call_ms)?;
        }
        if self.upload_ms > 0.0 {
            write!(f, ", upload {:.0} ms", self.upload_ms)?;
        }
        if self.evaluate_ms > 0.0 {
            write!(f, ", constraints evaluated {:.0} ms", self.evaluate_ms)?;
        }
        Ok(())
    }
}

/// An [`EventKind`] stamped with when it happened.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// Milliseconds since the run started.
    pub elapsed_ms: f64,
    /// Wall-clock time.
    pub wall: SystemTime,
    /// What happened.
    pub kind: EventKind,
}

/// Where the pipeline sends events; cheap to clone, one per thread.
#[derive(Clone)]
pub struct EventSink {
    tx: Sender<Event>,
    started: Instant,
}

impl EventSink {
    /// A sink whose clock starts now.
    pub fn new(tx: Sender<Event>) -> EventSink {
        EventSink {
            tx,
            started: Instant::now(),
        }
    }

    /// Stamps and sends `kind`. A closed channel means the reporter is gone (the run is
    /// ending), so the event is dropped rather than failing the work that emitted it.
    pub fn emit(&self, kind: EventKind) {
        let _ = self.tx.send(Event {
            elapsed_ms: self.started.elapsed().as_secs_f64() * 1e3,
            wall: SystemTime::now(),
            kind,
        });
    }

    /// Sends `kind` as having happened at `at`, an instant already past: for an event that
    /// closes a period it reports late (see [`EventKind::GpuBusy`]).
    pub fn emit_at(&self, at: Instant, kind: EventKind) {
        let ago = at.elapsed();
        let _ = self.tx.send(Event {
            elapsed_ms: at.saturating_duration_since(self.started).as_secs_f64() * 1e3,
            wall: SystemTime::now()
                .checked_sub(ago)
                .unwrap_or(SystemTime::UNIX_EPOCH),
            kind,
        });
    }
}

/// One example of every event, in [`EventName::ALL`] order, for tests that must cover them all.
#[cfg(test)]
pub(crate) fn one_of_each() -> Vec<EventKind> {
    let job = || "s-t01000-1".to_owned();
    let worker = || "gpu-0".to_owned();
    EventName::ALL
        .into_iter()
        .map(|name| match name {
            EventName::RunStart => EventKind::RunStarted {
                settings: "cuzk=0.1.0;provers=gpu-0".into(),
            },
            EventName::Claim => EventKind::JobClaimed {
                job: job(),
                is_resumed: true,
            },
            EventName::Parsed => EventKind::JobParsed {
                job: job(),
                sector: "s-t01000-1".into(),
                sector_size: 32 << 30,
                kind: ProofKind::Update,
                partitions: 10,
                is_benchmark: true,
            },
            EventName::SynthStart => EventKind::SynthStarted {
                job: job(),
                partition: 3,
                worker: "synth-1".into(),
            },
            EventName::SynthEnd => EventKind::SynthFinished {
                job: job(),
                partition: 3,
                worker: "synth-1".into(),
                constraints: 130_278_869,
                is_precompiled: true,
                is_deferred: true,
                profile: SynthesisProfile {
                    witness_ms: 25_000.5, // the timeline keeps 0.1 ms
                    witness_cpu_ms: 24_000.5,
                    evaluate_ms: 0.0,
                    evaluate_cpu_ms: 0.0,
                    compact_ms: 1_500.5,
                    compact_cpu_ms: 1_400.5,
                    bytes: 92_000_000,
                    witness_path: crate::synth::WitnessPath::Native,
                },
            },
            EventName::ChanSend => EventKind::PartitionQueued {
                job: job(),
                partition: 3,
                worker: "synth-1".into(),
            },
            EventName::MemoryWait => EventKind::MemoryWait {
                job: job(),
                partition: 4,
                needed_bytes: 17 << 30,
                in_use_bytes: 80 << 30,
                budget_bytes: 90 << 30,
            },
            EventName::GpuPickup => EventKind::ProverPickedUp {
                job: job(),
                partition: 3,
                worker: worker(),
            },
            EventName::ParamsGen => EventKind::ParamsGenerating {
                path: "/p/v28.params".into(),
            },
            EventName::ParamsStart => EventKind::ParamsLoadStarted {
                worker: PRELOAD_WORKER.into(),
                path: "/p/v28.params".into(),
            },
            EventName::ParamsEnd => EventKind::ParamsLoadFinished {
                worker: worker(),
                path: "/p/v28.params".into(),
            },
            EventName::ConstraintsReady => EventKind::ConstraintsReady {
                path: "/p/cuzk-r1cs-v1-v28.r1cs".into(),
                is_recorded: true,
                bytes: 9 << 30,
                ms: 61_000.5,
            },
            EventName::FullSynth => EventKind::FullSynthesis {
                path: "/p/cuzk-r1cs-v1-v28.r1cs".into(),
                reason: "does not fit the memory budget now: 9 GiB (hint: raise --max-memory)"
                    .into(),
            },
            EventName::PriorityWaitStart => EventKind::PriorityWaitStarted {
                worker: worker(),
                path: "/tmp/bellman.priority.lock".into(),
            },
            EventName::PriorityWaitEnd => EventKind::PriorityWaitFinished {
                worker: worker(),
                waited_ms: 4_200.5, // the timeline keeps 0.1 ms
            },
            EventName::GpuStart => EventKind::ProveStarted {
                job: job(),
                partition: 3,
                worker: worker(),
            },
            EventName::GpuEnd => EventKind::ProveFinished {
                job: job(),
                partition: 3,
                worker: worker(),
                timings: Some(ProveTimings {
                    fft_ms: 1.5,
                    msm_g1_ms: 20.0,
                    msm_g2_ms: 7.5, // the timeline keeps 0.1 ms
                    cpu_tail_ms: 0.5,
                    gpu_call_ms: 12.5,
                    upload_ms: 3.5,
                    msm_g1_split_ms: [10.5, 4.5, 3.0, 2.0],
                    evaluate_ms: 0.5,
                }),
            },
            EventName::CpuFallback => EventKind::CpuFallback {
                job: job(),
                partition: 3,
                worker: worker(),
                reason: "GPU quotient failed, done again on the CPU: out of memory".into(),
            },
            EventName::DeviceFault => EventKind::DeviceFault {
                job: job(),
                partition: 3,
                worker: worker(),
                message: "CUDA error 2: out of memory; a, b".into(),
            },
            EventName::ProverStopped => EventKind::ProverStopped {
                worker: worker(),
                faults: 3,
                message: "CUDA error 999: unknown error; last=x".into(),
            },
            EventName::GpuBusy => EventKind::GpuBusy {
                gpu: 1,
                busy_pct: 46.5,     // the timeline keeps 0.1 %
                period_ms: 1_000.5, // and 0.1 ms
            },
            EventName::VerifyStart => EventKind::VerifyStarted { job: job() },
            EventName::VerifyEnd => EventKind::VerifyFinished {
                job: job(),
                is_valid: true,
            },
            EventName::Done => EventKind::ProofWritten {
                job: job(),
                path: "/o/s-t01000-1.proof".into(),
            },
            EventName::Superseded => EventKind::ResultSuperseded {
                job: job(),
                kept_as: "/o/superseded/s-t01000-1.c1-0123456789abcdef.proof".into(),
            },
            EventName::Failed => EventKind::JobFailed {
                job: "s-t01000-2".into(),
                stage: JobStage::Verify,
                message: "did not verify: a, b; c=d".into(),
            },
            EventName::Deferred => EventKind::FileDeferred {
                job: "s-t01000-3".into(),
                reason: "JSON ends early".into(),
            },
            EventName::Skipped => EventKind::FileSkipped {
                job: "s-t01000-\u{fffd}".into(),
                reason: "claiming it: Operation not permitted (os error 1)".into(),
            },
            EventName::Stop => EventKind::StopRequested,
            EventName::RunEnd => EventKind::RunFinished {
                proved: 1,
                failed: 1,
            },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_has_its_event() {
        let events = one_of_each();
        assert_eq!(events.len(), EventName::ALL.len());
        for (event, name) in events.iter().zip(EventName::ALL) {
            assert_eq!(event.name(), name);
        }
    }

    #[test]
    fn names_and_stages_parse_back() {
        for name in EventName::ALL {
            assert_eq!(EventName::parse(name.as_str()), Some(name));
        }
        for stage in JobStage::ALL {
            assert_eq!(JobStage::parse(stage.as_str()), Some(stage));
        }
        assert_eq!(EventName::parse("GPU_WARMUP"), None);
        assert_eq!(JobStage::parse("lunch"), None);
    }
}
