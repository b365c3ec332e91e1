//! Jobs: a claimed input file bound to its sector, what each stage hands the next, and the typed
//! reasons a job fails.
//!
//! A [`Job`] is shared by its partitions as they move through synthesis and the provers; the
//! finisher alone decides its fate (proved, failed, handed back) from the [`Outcome`]s it gets.
//! [`JobError`] says which [`JobStage`] failed and why; [`JobError::is_run_fault`] tells a fault
//! of the run (the outbox, the parameters) from a fault of the C1 file.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Instant, SystemTime};

use anyhow::{Context, Result};
use bellperson::groth16::Proof;
use blstrs::Bls12;

use crate::backend::ProveError;
use crate::c1::{ParseC1Error, ResolveIdentityError};
use crate::event::{EventKind, EventSink, JobStage};
use crate::footprint::{Evaluation, Footprint};
use crate::memory::Reservation;
use crate::params::LoadParamsError;
use crate::sector::{BindSectorError, Sector};
use crate::spool::{AttemptRecord, C1Digest, ClaimedJob, FailureRecord, FinishJobError, Spool};
use crate::synth::{SynthesizedPartition, WitnessPath};

static NEXT_JOB_ID: AtomicU64 = AtomicU64::new(0);

/// A job in flight: a claimed C1 file bound to its sector.
pub struct Job {
    /// Distinguishes jobs even if a file name comes back later in the run.
    pub id: u64,
    /// The claimed C1 file.
    pub claimed: ClaimedJob,
    /// Its sector and circuits.
    pub sector: Sector,
    /// Its parameter file, as intake resolved it: every stage proves with this one.
    pub params_path: PathBuf,
    /// The digest of the C1 file's bytes, recorded with its proof.
    pub c1_digest: C1Digest,
    /// What its parameters and partitions occupy; known once the parameter file exists
    /// (test parameters may still be generated when the job is admitted).
    footprint: OnceLock<Footprint>,
    /// When the job was claimed.
    pub claimed_at: Instant,
    /// Milliseconds spent reading and binding the file.
    pub parse_ms: f64,
    /// What earlier runs and tries did with the file, as this run started it: whether it is
    /// proved alone in flight, the device faults it met.
    pub attempt: AttemptRecord,
    /// Set when the job failed or was abandoned: its remaining partitions are skipped.
    cancelled: AtomicBool,
}

impl Job {
    /// A new job for `claimed`, bound to `sector`, proved with the parameters at
    /// `params_path`; `c1_digest` is its C1 file's, `attempt` its record as this run started it.
    pub fn new(
        claimed: ClaimedJob,
        sector: Sector,
        params_path: PathBuf,
        c1_digest: C1Digest,
        claimed_at: Instant,
        attempt: AttemptRecord,
    ) -> Job {
        Job {
            id: NEXT_JOB_ID.fetch_add(1, Ordering::Relaxed),
            claimed,
            sector,
            params_path,
            c1_digest,
            footprint: OnceLock::new(),
            parse_ms: claimed_at.elapsed().as_secs_f64() * 1e3,
            claimed_at,
            attempt,
            cancelled: AtomicBool::new(false),
        }
    }

    /// The job's name (the C1 file name without `.json`).
    pub fn name(&self) -> &str {
        &self.claimed.name
    }

    /// Partitions to prove.
    pub fn partition_count(&self) -> usize {
        self.sector.circuits.partition_count()
    }

    /// What its parameters and partitions occupy, once known.
    pub fn footprint(&self) -> Option<Footprint> {
        self.footprint.get().copied()
    }

    /// Records the footprint read from its parameter file; the first one read stays.
    pub fn set_footprint(&self, footprint: Footprint) {
        let _ = self.footprint.set(footprint);
    }

    /// Stops the job's remaining partitions: nothing is synthesized or proved for a job whose
    /// outcome is already decided.
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::SeqCst);
    }

    /// True once the job was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::SeqCst)
    }

    /// True when the job is proved alone in flight (see [`crate::spool::AttemptRecord`]).
    pub fn is_solo(&self) -> bool {
        self.attempt.is_solo
    }

    /// True when its partitions go through the gadgets in full (witness and a, b, c on the
    /// host, nothing pre-compiled, nothing native, nothing evaluated on the GPU): its last
    /// proof was rejected, and verification is the only run-time check of the faster paths.
    pub fn proves_in_full(&self) -> bool {
        self.attempt.rejections > 0
    }
}

/// How a partition was made: what a rejected proof names, since verification is the only
/// run-time check of the native witness, the recorded constraints and the GPU's evaluation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartitionPath {
    /// How its witness was computed.
    pub witness: WitnessPath,
    /// Whether it was a witness-only pass over recorded constraints.
    pub is_precompiled: bool,
    /// Where its a, b and c were computed.
    pub evaluation: Evaluation,
}

impl std::fmt::Display for PartitionPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if !self.is_precompiled {
            return f.write_str("the gadgets in full (witness and a, b, c on the host)");
        }
        let witness = match self.witness {
            WitnessPath::Native => "native witness",
            WitnessPath::Gadget => "gadget witness",
        };
        let evaluation = match self.evaluation {
            Evaluation::InSynthesis => "in synthesis",
            Evaluation::OnGpu => "on the GPU",
            Evaluation::AtProver => "by the prover's thread",
        };
        write!(
            f,
            "{witness} over the recorded constraints, a, b and c evaluated {evaluation}"
        )
    }
}

/// A synthesized partition on its way to a prover.
pub struct SynthesizedMsg {
    /// Its job.
    pub job: Arc<Job>,
    /// Its index.
    pub partition: usize,
    /// The witness and A/B/C evaluations.
    pub synthesized: SynthesizedPartition,
    /// How it was made.
    pub path: PartitionPath,
    /// Milliseconds synthesis took.
    pub synth_ms: f64,
    /// The partition's bytes in the memory budget, given back once its prover is done.
    pub memory: Reservation,
    /// Set when its a, b and c are evaluated by the prover's thread right before the proof
    /// (see [`super::evaluation`]): the bytes it holds then.
    pub evaluated_bytes: Option<u64>,
}

/// What happened to a partition or a job, for the finisher.
pub enum Outcome {
    /// A partition was proved.
    Proved {
        /// Its job.
        job: Arc<Job>,
        /// Its index.
        partition: usize,
        /// The partition's Groth16 proof.
        proof: Box<Proof<Bls12>>,
        /// The prover that made it.
        prover: String,
        /// How the partition was made.
        path: PartitionPath,
        /// Milliseconds of synthesis.
        synth_ms: f64,
        /// Milliseconds of proving.
        prove_ms: f64,
    },
    /// A stage failed the job.
    Failed {
        /// The job.
        job: Arc<Job>,
        /// What failed.
        error: JobError,
    },
    /// The run stops before the job could be started in full: hand its file back.
    Abandoned {
        /// The job.
        job: Arc<Job>,
    },
    /// A partition failed on its prover, and the device may be to blame: hand the file back
    /// to be proved alone, and count the fault apart from crashes; or, when it kept failing
    /// alone where nothing shows whose fault it is, set it aside.
    DeviceFault {
        /// The job.
        job: Arc<Job>,
        /// The partition.
        partition: usize,
        /// The prover it failed on.
        prover: String,
        /// What the prover said.
        error: ProveError,
        /// Set the file aside instead of handing it back
        /// ([`super::device_faults::Verdict::SetAside`]).
        is_set_aside: bool,
    },
}

/// Why a job failed, by stage. Each variant keeps the error of the stage it came from.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// The spool entry is not a C1 file, or its result exists already.
    #[error("{0}")]
    Spool(String),
    /// A proof of the job's name reached the outbox first (another file of the same name).
    #[error(transparent)]
    AlreadyProved(FinishJobError),
    /// The file is not a readable C1 file.
    #[error(transparent)]
    Parse(#[from] ParseC1Error),
    /// The file's miner or sector is unknown.
    #[error(transparent)]
    Identity(#[from] ResolveIdentityError),
    /// The file does not bind to its sector's circuits.
    #[error(transparent)]
    Bind(#[from] BindSectorError),
    /// The parameters could not be loaded; a fault of the run, not of the file.
    #[error(transparent)]
    Params(#[from] LoadParamsError),
    /// A partition could not be synthesized.
    #[error("synthesizing partition {partition}: {error}")]
    Synthesis {
        /// The partition.
        partition: usize,
        /// What went wrong.
        error: SynthesisFailure,
    },
    /// A partition could not be proved.
    #[error("proving partition {partition}: {error}")]
    Prove {
        /// The partition.
        partition: usize,
        /// What the backend said.
        error: ProveError,
    },
    /// A partition failed on its prover again when its file was proved alone, where the
    /// device had proved other files or another device failed it too: the fault follows
    /// the file.
    #[error("proving partition {partition}: {error}; it failed before ({faults} time(s), on {provers}) and again on {prover} when proved alone, {why}, so the fault follows this file, not the device (hint: the C1 file's data makes the prover fail; check it against lotus' C1 output for the sector, then move it back to the inbox to retry)")]
    ProveFollowsFile {
        /// The partition.
        partition: usize,
        /// What the backend said this time (boxed: this variant is the error's largest).
        error: Box<ProveError>,
        /// Device faults the file met before.
        faults: u32,
        /// The provers they happened on.
        provers: String,
        /// The prover it failed on this time.
        prover: String,
        /// Why the device is not to blame.
        why: &'static str,
    },
    /// The assembled proof did not pass its check, or the check could not run.
    #[error(transparent)]
    Verify(#[from] VerifyFailure),
    /// The proof could not be written to the outbox; a fault of the run, not of the file.
    #[error("{0:#}")]
    Write(anyhow::Error),
    /// Another run took the claim over and proves the file: neither the file's fault nor
    /// the run's; the job is dropped.
    #[error(transparent)]
    ClaimTaken(FinishJobError),
    /// The job took the prover down too many times.
    #[error("{0}")]
    Crash(String),
    /// The program that asked for the proof withdrew it ([`super::RunRequests::withdraw`]).
    #[error("{0}")]
    Withdrawn(String),
}

/// Why a partition's synthesis failed.
#[derive(Debug, thiserror::Error)]
pub enum SynthesisFailure {
    /// The circuit could not be synthesized.
    #[error("{0:#}")]
    Circuit(anyhow::Error),
    /// Synthesis panicked (storage-proofs asserts on some malformed inputs).
    #[error("{0}")]
    Panicked(String),
}

/// Why an assembled proof was not written.
#[derive(Debug, thiserror::Error)]
pub enum VerifyFailure {
    /// The partition proofs could not be encoded.
    #[error("encoding the proof: {0}")]
    Encode(std::io::Error),
    /// `verify_seal` (or `verify_empty_sector_update_proof`) rejected the proof twice: once
    /// as made on the fast paths, once with the gadgets in full (a first rejection hands the
    /// file back for that try).
    #[error("the proof for {sector} did not pass {check}, it was not written: made with {made_with}{}; (hint: the gadgets in full are the reference path, so parameters in {} that do not belong to the verifying key beside them, or a device that computes wrong; check the parameters with `cuzk params check`, and prove the file on another GPU or with --backend cpu by moving it back to the inbox)", .earlier.as_ref().map(|e| format!("; its try before, made with {e}, was rejected too")).unwrap_or_default(), .params_dir.display())]
    Rejected {
        /// The sector, `s-t0<miner>-<sector>`.
        sector: String,
        /// The check that rejected it.
        check: &'static str,
        /// How its partitions were made, and on which provers.
        made_with: String,
        /// The same of the try before, when that one was rejected too.
        earlier: Option<String>,
        /// The parameter cache the proof was made with.
        params_dir: std::path::PathBuf,
    },
    /// `verify_seal` could not run.
    #[error("{0:#}")]
    Check(anyhow::Error),
}

impl JobError {
    /// The stage that failed.
    pub fn stage(&self) -> JobStage {
        match self {
            JobError::Spool(_) | JobError::AlreadyProved(_) => JobStage::Spool,
            JobError::Parse(_) => JobStage::Parse,
            JobError::Identity(_) => JobStage::Identity,
            JobError::Bind(_) => JobStage::Bind,
            JobError::Params(_) => JobStage::Params,
            JobError::Synthesis { .. } => JobStage::Synthesis,
            JobError::Prove { .. } | JobError::ProveFollowsFile { .. } => JobStage::Prove,
            JobError::Verify(_) => JobStage::Verify,
            JobError::Write(_) | JobError::ClaimTaken(_) => JobStage::Write,
            JobError::Crash(_) => JobStage::Crash,
            JobError::Withdrawn(_) => JobStage::Withdrawn,
        }
    }

    /// True when the run, not the C1 file, is at fault: the file goes back to the inbox and
    /// the run stops instead of failing every job after it.
    pub fn is_run_fault(&self) -> bool {
        matches!(self, JobError::Write(_) | JobError::Params(_))
    }
}

/// Moves a failed job's C1 file to `failed/` with its reason and reports it. If even that
/// fails, the file stays in `work/` for the next run: nothing is lost.
pub fn quarantine(
    spool: &Spool,
    events: &EventSink,
    run_id: &str,
    claimed: &ClaimedJob,
    error: &JobError,
) -> Result<()> {
    let message = format!("{error:#}");
    let record = FailureRecord {
        job: &claimed.name,
        c1_file: &claimed.file_name,
        stage: error.stage(),
        message: &message,
        run_id,
        failed_at: humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
    };
    let moved = spool.quarantine(claimed, &record);
    events.emit(EventKind::JobFailed {
        job: claimed.name.clone(),
        stage: error.stage(),
        message,
    });
    moved.map(|_| ()).with_context(|| {
        format!(
            "{}: could not move the failed job to {}; it stays in {}",
            claimed.name,
            spool.layout().failed.display(),
            spool.layout().work.display()
        )
    })
}
