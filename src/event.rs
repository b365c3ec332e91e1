//! Events: the one interface between the pipeline and whatever watches it.
//!
//! The pipeline stamps each [`Event`] when it happens and sends it down a channel; the
//! reporter thread turns events into timeline rows, progress and the final summary. Nothing
//! else flows from the pipeline to its consumers.

use std::time::{Instant, SystemTime};

use crossbeam_channel::Sender;

use crate::prove::ProveTimings;

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
    /// The C1 file parsed and matched its sector.
    JobParsed {
        /// The job.
        job: String,
        /// `s-t0<miner>-<sector>`.
        sector: String,
        /// Sector size in bytes.
        sector_size: u64,
        /// Partitions to prove.
        partitions: usize,
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
    /// A prover took the partition off the queue.
    ProverPickedUp {
        /// The job.
        job: String,
        /// The partition.
        partition: usize,
        /// The prover (`gpu-0`, `cpu-0`).
        worker: String,
    },
    /// A prover began loading a parameter file.
    ParamsLoadStarted {
        /// The prover.
        worker: String,
        /// The parameter file.
        path: String,
    },
    /// A prover finished loading a parameter file.
    ParamsLoadFinished {
        /// The prover.
        worker: String,
        /// The parameter file.
        path: String,
    },
    /// Insecure test parameters are being generated because `--gen-test-params` was given.
    ParamsGenerating {
        /// The parameter file being made.
        path: String,
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
        /// Time per prover step.
        timings: ProveTimings,
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
    /// The job failed and its C1 file went to `failed/`.
    JobFailed {
        /// The job.
        job: String,
        /// The stage that failed (`parse`, `identity`, `synthesis`, ...).
        stage: String,
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
}
