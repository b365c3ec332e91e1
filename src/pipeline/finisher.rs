//! The finisher: collects each job's partition proofs, assembles them, checks them with
//! `verify_seal` and writes them to the outbox; or fails the job, or hands its file back.
//!
//! Once a job is admitted, the finisher alone decides its fate, so a C1 file is moved exactly
//! once. The first failure of a job decides it: the job is cancelled (its other partitions
//! are skipped) and later outcomes of it are ignored. A fault of the prover's device hands
//! the file back to the inbox with the fault counted in its attempt record
//! ([`super::device_faults`]); so does a first proof that verification rejects, for a try
//! alone through the gadgets in full (verification is the only run-time check of the native
//! witness, the recorded constraints and the GPU's evaluation), and only a second rejection
//! fails the file. Each decision wakes the feeder, which waits for the jobs in
//! flight before it ends a draining run (a file handed back is claimed again).

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use bellperson::groth16::Proof;
use blstrs::Bls12;
use crossbeam_channel::{Receiver, Sender};
use serde::Serialize;

use crate::c1::SectorSizeName;
use crate::commcid;
use crate::event::{EventKind, EventSink, JobStage};
use crate::params;
use crate::sector::Commitments;
use crate::spool::{FinishJobError, Spool};

use super::job::{quarantine, Job, JobError, Outcome, PartitionPath, VerifyFailure};
use super::stop::Halt;
use crate::backend::ProveError;

/// Counts kept by the finisher.
#[derive(Debug, Default)]
pub struct FinishCounts {
    /// Proofs written.
    pub proved: usize,
    /// Jobs failed.
    pub failed: usize,
    /// C1 files set aside.
    pub set_aside: usize,
}

/// A job whose partitions are still arriving.
struct PendingJob {
    proofs: Vec<Option<Proof<Bls12>>>,
    provers: Vec<String>,
    /// How its partitions were made, each way once.
    paths: Vec<PartitionPath>,
    synth_ms: f64,
    prove_ms: f64,
}

/// The finisher thread's loop; ends when every sender of `rx` is gone. `wake` tells the
/// feeder each time a job is decided.
pub fn finish_jobs(
    rx: Receiver<Outcome>,
    spool: Spool,
    events: EventSink,
    run_id: String,
    halt: Halt,
    wake: Sender<()>,
) -> FinishCounts {
    let mut pending: HashMap<u64, PendingJob> = HashMap::new();
    let mut decided: HashSet<u64> = HashSet::new();
    let mut counts = FinishCounts::default();
    for outcome in rx {
        let _ = wake.try_send(());
        let (job, result) = match outcome {
            Outcome::Failed { job, error } => (job, Err(error)),
            Outcome::Abandoned { job } => {
                if decided.insert(job.id) {
                    pending.remove(&job.id);
                    hand_back(&spool, &events, &job, "the run stopped before proving it");
                }
                continue;
            }
            Outcome::DeviceFault {
                job,
                partition,
                prover,
                error,
                is_set_aside,
            } => {
                if decided.insert(job.id) {
                    pending.remove(&job.id);
                    job.cancel();
                    if is_set_aside {
                        counts.set_aside += 1;
                        set_aside(&spool, &events, &run_id, &job, partition, &prover, &error);
                    } else {
                        hand_back_for_retry(&spool, &events, &job, partition, &prover, &error);
                    }
                }
                continue;
            }
            Outcome::Proved {
                job,
                partition,
                proof,
                prover,
                path,
                synth_ms,
                prove_ms,
            } => {
                if decided.contains(&job.id) {
                    continue;
                }
                let entry = pending.entry(job.id).or_insert_with(|| PendingJob {
                    proofs: vec![None; job.partition_count()],
                    provers: Vec::new(),
                    paths: Vec::new(),
                    synth_ms: 0.0,
                    prove_ms: 0.0,
                });
                entry.proofs[partition] = Some(*proof);
                if !entry.provers.contains(&prover) {
                    entry.provers.push(prover);
                }
                if !entry.paths.contains(&path) {
                    entry.paths.push(path);
                }
                entry.synth_ms += synth_ms;
                entry.prove_ms += prove_ms;
                if entry.proofs.iter().any(Option::is_none) {
                    continue;
                }
                let Some(done) = pending.remove(&job.id) else {
                    continue;
                };
                let result = if job.sector.is_benchmark {
                    write_benchmark(&spool, &events, &run_id, &job, done)
                } else {
                    write_proof(&spool, &events, &run_id, &job, done)
                };
                (job, result)
            }
        };
        if !decided.insert(job.id) {
            continue;
        }
        pending.remove(&job.id);
        match result {
            Ok(()) => counts.proved += 1,
            Err(error @ JobError::ClaimTaken(_)) => {
                // The other run has the file and proves it; nothing of it is left here.
                job.cancel();
                events.emit(EventKind::ClaimTaken {
                    job: job.name().to_owned(),
                    reason: format!("{error:#}"),
                });
            }
            Err(JobError::Verify(VerifyFailure::Rejected { made_with, .. }))
                if job.attempt.rejections == 0 =>
            {
                // Verification is the only run-time check of the fast paths: a first
                // rejection tries the file again, alone, through the gadgets in full.
                job.cancel();
                hand_back_after_rejection(&spool, &events, &job, &made_with);
            }
            Err(error) if error.is_run_fault() => {
                // The outbox or the parameters failed, not the C1 file: hand it back and stop
                // the run rather than fail every job after it.
                job.cancel();
                hand_back(&spool, &events, &job, &format!("{error:#}"));
                halt.set(RunFaultError::new(&spool, error));
            }
            Err(error) => {
                job.cancel();
                counts.failed += 1;
                if let Err(err) = quarantine(&spool, &events, &run_id, &job.claimed, &error) {
                    log::error!("{err:#}");
                }
            }
        }
    }
    counts
}

/// A job failed for a fault of the run, not of its file: the run stops with this.
#[derive(Debug, thiserror::Error)]
pub enum RunFaultError {
    /// The outbox could not be written.
    #[error("cannot write results: {error} (hint: free space or fix permissions on {}, then run again; unproved C1 files are kept)", .outbox.display())]
    Write {
        /// The job's failure.
        error: JobError,
        /// The outbox.
        outbox: PathBuf,
    },
    /// Another fault of the run (the parameters could not be loaded).
    #[error(transparent)]
    Other(JobError),
}

impl RunFaultError {
    /// The run's fault behind `error`, with the fix where it is known.
    fn new(spool: &Spool, error: JobError) -> RunFaultError {
        match error {
            JobError::Write(_) => RunFaultError::Write {
                error,
                outbox: spool.layout().outbox.clone(),
            },
            _ => RunFaultError::Other(error),
        }
    }
}

/// Puts a job's file back in the inbox for a later run, and says so.
fn hand_back(spool: &Spool, events: &EventSink, job: &Job, why: &str) {
    let kept = match spool.hand_back(&job.claimed) {
        Ok(_) => "handed back to the inbox".to_owned(),
        Err(err) => format!("left in {} ({err:#})", job.claimed.path.display()),
    };
    events.emit(EventKind::FileDeferred {
        job: job.claimed.name.clone(),
        reason: format!("not proved, C1 file {kept}: {why}"),
    });
}

/// Puts a job's file back in the inbox after a fault of `prover`'s device, the fault counted
/// in its attempt record, and says so: its next try is the only file in flight.
fn hand_back_for_retry(
    spool: &Spool,
    events: &EventSink,
    job: &Job,
    partition: usize,
    prover: &str,
    error: &ProveError,
) {
    let faults = match spool.note_device_fault(&job.claimed, prover) {
        Ok(record) => record.device_faults.to_string(),
        Err(err) => {
            log::warn!("{}: {err:#}", job.name());
            "uncounted".to_owned()
        }
    };
    let kept = match spool.hand_back_for_retry(&job.claimed) {
        Ok(_) => "handed back to the inbox".to_owned(),
        Err(err) => format!("left in {} ({err:#})", job.claimed.path.display()),
    };
    events.emit(EventKind::FileDeferred {
        job: job.claimed.name.clone(),
        reason: format!(
            "not proved, C1 file {kept} after a fault on {prover} that may be the device's (partition {partition}: {error}); device faults of this file: {faults}; its next try is the only file in flight"
        ),
    });
}

/// Moves a job's file to `set-aside/` after it kept failing alone on `prover`
/// ([`super::device_faults`]), and says so.
fn set_aside(
    spool: &Spool,
    events: &EventSink,
    run_id: &str,
    job: &Job,
    partition: usize,
    prover: &str,
    error: &ProveError,
) {
    let dir = spool.layout().set_aside.display().to_string();
    let reason = format!(
        "failed alone on {prover} {} times (the last: partition {partition}: {error}), and {prover} has proved nothing in this run to show that it works, so neither the file nor the device can be blamed; set aside in {dir} rather than stop the run for one file (hint: check the device with nvidia-smi and the kernel log's Xid errors, then move the file back into the inbox to prove it again, here or on another machine)",
        job.attempt.device_faults + 1
    );
    let record = crate::spool::SetAsideRecord {
        job: job.name(),
        c1_file: &job.claimed.file_name,
        reason: &reason,
        run_id,
        set_aside_at: humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
    };
    let reason = match spool.set_aside(&job.claimed, &record) {
        Ok(_) => reason,
        Err(err) => {
            log::error!("{}: {err:#}", job.name());
            format!(
                "{reason}; but it could not be moved there and stays in {}",
                job.claimed.path.display()
            )
        }
    };
    events.emit(EventKind::FileSetAside {
        job: job.claimed.name.clone(),
        reason,
    });
}

/// Puts a job's file back in the inbox after verification rejected its proof (made as
/// `made_with` says), the rejection counted in its attempt record, and says so: its next try
/// is the only file in flight and goes through the gadgets in full.
fn hand_back_after_rejection(spool: &Spool, events: &EventSink, job: &Job, made_with: &str) {
    if let Err(err) = spool.note_rejected_proof(&job.claimed, made_with) {
        // Uncounted, the next try would be the same as this one, and fail the file.
        log::warn!("{}: {err:#}", job.name());
    }
    let kept = match spool.hand_back_for_retry(&job.claimed) {
        Ok(_) => "handed back to the inbox".to_owned(),
        Err(err) => format!("left in {} ({err:#})", job.claimed.path.display()),
    };
    events.emit(EventKind::FileDeferred {
        job: job.claimed.name.clone(),
        reason: format!(
            "not proved, C1 file {kept}: its proof did not pass {} (made with {made_with}); its next try is the only file in flight and goes through the gadgets in full, and only a second rejection fails it",
            job.sector.check_name()
        ),
    });
}

/// `verified_with` for a proof made with parameters generated on this machine: it verifies
/// against their verifying key, which no one else has.
fn local_keys_verifier(check: &str) -> String {
    format!("filecoin-proofs {check} against locally generated INSECURE test keys (not the network's: the chain rejects this proof)")
}

/// What `outbox/<job>.json` says about a proof. The proof is there twice: base64, and hex
/// as lotus-bench prints it; `<job>.proof` beside it holds the raw bytes.
#[derive(Serialize)]
struct ProofRecord<'a> {
    job: &'a str,
    c1_file: &'a str,
    /// BLAKE3 of the C1 file's bytes ([`crate::spool::DIGEST_FIELD`]): a resumed claim is
    /// retired onto this proof only if its own bytes match.
    c1_blake3: &'a str,
    /// `c2` (PoRep commit phase 2) or `update` (SnapDeals' ProveReplicaUpdate2).
    proof_kind: &'static str,
    /// Unknown for an update input that does not say (its proof does not depend on it).
    #[serde(skip_serializing_if = "Option::is_none")]
    miner_id: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sector_num: Option<u64>,
    sector_size: u64,
    sector_size_name: String,
    registered_proof: String,
    #[serde(flatten)]
    commitments: CommitmentFields,
    partitions: usize,
    proof_len: usize,
    proof_base64: String,
    proof_hex: String,
    verified_with: String,
    provers: Vec<String>,
    run_id: &'a str,
    finished_at: String,
    timings_ms: JobTimings,
}

/// The commitments a proof was checked against: hex, as in the input's byte arrays, and as
/// lotus prints them (`lotus-miner sectors status`).
#[derive(Serialize)]
#[serde(untagged)]
enum CommitmentFields {
    Seal {
        comm_r: String,
        comm_d: String,
        comm_r_cid: String,
        comm_d_cid: String,
    },
    Update {
        comm_r_old: String,
        comm_r_new: String,
        comm_d_new: String,
        comm_r_old_cid: String,
        comm_r_new_cid: String,
        comm_d_new_cid: String,
    },
}

impl CommitmentFields {
    fn of(commitments: &Commitments) -> CommitmentFields {
        match commitments {
            Commitments::Seal { comm_r, comm_d, .. } => CommitmentFields::Seal {
                comm_r: hex::encode(comm_r),
                comm_d: hex::encode(comm_d),
                comm_r_cid: commcid::sealed_cid(comm_r),
                comm_d_cid: commcid::unsealed_cid(comm_d),
            },
            Commitments::Update {
                comm_r_old,
                comm_r_new,
                comm_d_new,
                ..
            } => CommitmentFields::Update {
                comm_r_old: hex::encode(comm_r_old),
                comm_r_new: hex::encode(comm_r_new),
                comm_d_new: hex::encode(comm_d_new),
                comm_r_old_cid: commcid::sealed_cid(comm_r_old),
                comm_r_new_cid: commcid::sealed_cid(comm_r_new),
                comm_d_new_cid: commcid::unsealed_cid(comm_d_new),
            },
        }
    }
}

/// Per-stage milliseconds of one job.
#[derive(Serialize)]
struct JobTimings {
    parse: f64,
    synthesis: f64,
    prove: f64,
    verify: f64,
    total: f64,
}

impl JobTimings {
    /// The timings of `job`, finished now, its partitions in `done`.
    fn of(job: &Job, done: &PendingJob, verify_ms: f64) -> JobTimings {
        JobTimings {
            parse: job.parse_ms,
            synthesis: done.synth_ms,
            prove: done.prove_ms,
            verify: verify_ms,
            total: job.claimed_at.elapsed().as_secs_f64() * 1e3,
        }
    }
}

/// What `outbox/<job>.benchmark.json` says about a benchmark shape job.
#[derive(Serialize)]
struct BenchmarkRecord<'a> {
    job: &'a str,
    c1_file: &'a str,
    benchmark: &'static str,
    sector_size: u64,
    sector_size_name: String,
    partitions: usize,
    provers: Vec<String>,
    run_id: &'a str,
    finished_at: String,
    timings_ms: JobTimings,
}

/// Records a benchmark shape job's timings; its proof is random and never written.
fn write_benchmark(
    spool: &Spool,
    events: &EventSink,
    run_id: &str,
    job: &Arc<Job>,
    done: PendingJob,
) -> Result<(), JobError> {
    let timings_ms = JobTimings::of(job, &done, 0.0);
    let record = BenchmarkRecord {
        job: job.name(),
        c1_file: &job.claimed.file_name,
        benchmark: "synthetic input in the shape of a real sector: these are timings, there is no proof (it could not verify)",
        sector_size: job.sector.sector_size(),
        sector_size_name: SectorSizeName(job.sector.sector_size()).to_string(),
        partitions: done.proofs.len(),
        provers: done.provers,
        run_id,
        finished_at: humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
        timings_ms,
    };
    let path = spool
        .finish_benchmark(&job.claimed, &record)
        .map_err(finish_error)?;
    events.emit(EventKind::ProofWritten {
        job: job.name().to_owned(),
        path: path.display().to_string(),
    });
    Ok(())
}

fn finish_error(err: FinishJobError) -> JobError {
    match err {
        FinishJobError::AlreadyProved { .. } => JobError::AlreadyProved(err),
        FinishJobError::ClaimTaken { .. } => JobError::ClaimTaken(err),
        FinishJobError::Io(err) => JobError::Write(err),
    }
}

/// Assembles the partition proofs in order, checks them with `verify_seal` and writes them.
fn write_proof(
    spool: &Spool,
    events: &EventSink,
    run_id: &str,
    job: &Arc<Job>,
    done: PendingJob,
) -> Result<(), JobError> {
    let name = job.name().to_owned();
    let mut bytes = Vec::with_capacity(192 * done.proofs.len());
    for proof in done.proofs.iter().flatten() {
        proof.write(&mut bytes).map_err(VerifyFailure::Encode)?;
    }
    spool.note_attempt_stage(&job.claimed, JobStage::Verify, None);
    events.emit(EventKind::VerifyStarted { job: name.clone() });
    let started = Instant::now();
    let verified = job.sector.verify(&bytes);
    let verify_ms = started.elapsed().as_secs_f64() * 1e3;
    events.emit(EventKind::VerifyFinished {
        job: name.clone(),
        is_valid: matches!(verified, Ok(true)),
    });
    match verified {
        Ok(true) => {}
        Ok(false) => {
            let paths: Vec<String> = done.paths.iter().map(ToString::to_string).collect();
            return Err(VerifyFailure::Rejected {
                sector: job.sector.label(),
                check: job.sector.check_name(),
                made_with: format!("{} on {}", paths.join("; "), done.provers.join(", ")),
                earlier: job.attempt.rejected_with.last().cloned(),
                params_dir: params::params_dir(),
            }
            .into());
        }
        Err(err) => return Err(VerifyFailure::Check(err).into()),
    }
    use base64::Engine;
    let record = ProofRecord {
        job: &name,
        c1_file: &job.claimed.file_name,
        c1_blake3: job.c1_digest.as_str(),
        proof_kind: job.sector.kind().as_str(),
        miner_id: job.sector.identity().map(|i| i.miner_id),
        sector_num: job.sector.identity().map(|i| i.sector_num),
        sector_size: job.sector.sector_size(),
        sector_size_name: SectorSizeName(job.sector.sector_size()).to_string(),
        registered_proof: job.sector.registered_proof_name(),
        commitments: CommitmentFields::of(&job.sector.commitments),
        partitions: done.proofs.len(),
        proof_len: bytes.len(),
        proof_base64: base64::engine::general_purpose::STANDARD.encode(&bytes),
        proof_hex: hex::encode(&bytes),
        verified_with: if params::check::is_generated(&job.params_path) {
            local_keys_verifier(job.sector.check_name())
        } else {
            format!("filecoin-proofs {}", job.sector.check_name())
        },
        provers: done.provers.clone(),
        run_id,
        finished_at: humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
        timings_ms: JobTimings::of(job, &done, verify_ms),
    };
    let path = spool
        .finish(&job.claimed, &bytes, &record)
        .map_err(finish_error)?;
    events.emit(EventKind::ProofWritten {
        job: name,
        path: path.display().to_string(),
    });
    Ok(())
}
