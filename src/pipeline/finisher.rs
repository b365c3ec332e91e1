//! The finisher: collects each job's partition proofs, assembles them, checks them with
//! `verify_seal` and writes them to the outbox, or quarantines the job.

use super::*;

/// Counts kept by the finisher.
#[derive(Debug, Default)]
pub(super) struct FinishCounts {
    pub(super) proved: usize,
    pub(super) failed: usize,
}

/// A job whose partitions are still arriving.
pub(super) struct PendingJob {
    proofs: Vec<Option<Proof<Bls12>>>,
    provers: Vec<String>,
    synth_ms: f64,
    prove_ms: f64,
}

/// The finisher thread: assembles, verifies and writes each job once all its partitions
/// are proved; quarantines a job on its first failure and ignores the rest of it.
pub(super) fn finish_jobs(
    rx: Receiver<Outcome>,
    spool: Spool,
    events: EventSink,
    run_id: String,
    halt: Halt,
) -> FinishCounts {
    let mut pending: HashMap<u64, PendingJob> = HashMap::new();
    let mut failed: HashSet<u64> = HashSet::new();
    let mut counts = FinishCounts::default();
    for outcome in rx {
        let (job, result) = match outcome {
            Outcome::Failed {
                job,
                stage,
                message,
            } => (job, Err((stage, message))),
            Outcome::Proved {
                job,
                partition,
                proof,
                prover,
                synth_ms,
                prove_ms,
            } => {
                if failed.contains(&job.id) {
                    continue;
                }
                let entry = pending.entry(job.id).or_insert_with(|| PendingJob {
                    proofs: vec![None; job.sector.circuits.partition_count()],
                    provers: Vec::new(),
                    synth_ms: 0.0,
                    prove_ms: 0.0,
                });
                entry.proofs[partition] = Some(*proof);
                if !entry.provers.contains(&prover) {
                    entry.provers.push(prover);
                }
                entry.synth_ms += synth_ms;
                entry.prove_ms += prove_ms;
                if entry.proofs.iter().any(Option::is_none) {
                    continue;
                }
                let done = pending.remove(&job.id).expect("entry was just updated");
                let result = write_proof(&spool, &events, &run_id, &job, done);
                (job, result)
            }
        };
        match result {
            Ok(()) => counts.proved += 1,
            Err(("write", message)) => {
                // The outbox cannot take results (disk full, read-only, gone): the C1 file is
                // not at fault. Hand it back and stop the run rather than fail every job.
                failed.insert(job.id);
                let kept = match spool.hand_back(&job.claimed) {
                    Ok(()) => "handed back to the inbox".to_owned(),
                    Err(err) => format!("left in {} ({err:#})", job.claimed.path.display()),
                };
                events.emit(EventKind::FileDeferred {
                    job: job.claimed.name.clone(),
                    reason: format!("proof not written, C1 file {kept}: {message}"),
                });
                halt.set(format!(
                    "cannot write results: {message} (hint: free space or fix permissions on {}, then run again; unproved C1 files are kept)",
                    spool.layout().outbox.display()
                ));
            }
            Err((stage, message)) => {
                if !failed.insert(job.id) {
                    continue;
                }
                pending.remove(&job.id);
                counts.failed += 1;
                if let Err(err) = fail_job(&spool, &events, &run_id, &job.claimed, stage, &message)
                {
                    log::error!("{err:#}");
                }
            }
        }
    }
    counts
}

/// What `outbox/<job>.json` says about a proof.
#[derive(Serialize)]
pub(super) struct ProofRecord<'a> {
    job: &'a str,
    c1_file: &'a str,
    miner_id: u64,
    sector_num: u64,
    sector_size: u64,
    sector_size_name: String,
    registered_proof: String,
    partitions: usize,
    proof_len: usize,
    proof_base64: String,
    verified_with: &'static str,
    provers: Vec<String>,
    run_id: &'a str,
    finished_at: String,
    timings_ms: JobTimings,
}

/// Per-stage milliseconds of one job.
#[derive(Serialize)]
pub(super) struct JobTimings {
    parse: f64,
    synthesis: f64,
    prove: f64,
    verify: f64,
    total: f64,
}

/// Assembles the partition proofs in order, checks them with `verify_seal` and writes them.
pub(super) fn write_proof(
    spool: &Spool,
    events: &EventSink,
    run_id: &str,
    job: &Job,
    done: PendingJob,
) -> Result<(), (&'static str, String)> {
    let name = job.claimed.name.clone();
    let mut bytes = Vec::with_capacity(192 * done.proofs.len());
    for proof in done.proofs.iter().flatten() {
        proof
            .write(&mut bytes)
            .map_err(|e| ("prove", format!("encoding the proof: {e}")))?;
    }
    events.emit(EventKind::VerifyStarted { job: name.clone() });
    let started = Instant::now();
    let verified = job.sector.verify_seal(&bytes);
    let verify_ms = started.elapsed().as_secs_f64() * 1e3;
    events.emit(EventKind::VerifyFinished {
        job: name.clone(),
        is_valid: matches!(verified, Ok(true)),
    });
    match verified {
        Ok(true) => {}
        Ok(false) => {
            return Err((
                "verify",
                format!(
                    "the proof for {} did not pass verify_seal; it was not written (hint: check that the parameters in {} belong to the verifying key beside them, then move the C1 file back to the inbox)",
                    job.sector.identity,
                    params::params_dir().display()
                ),
            ))
        }
        Err(err) => return Err(("verify", format!("{err:#}"))),
    }
    use base64::Engine;
    let record = ProofRecord {
        job: &name,
        c1_file: &job.claimed.file_name,
        miner_id: job.sector.identity.miner_id,
        sector_num: job.sector.identity.sector_num,
        sector_size: job.sector.sector_size,
        sector_size_name: SectorSizeName(job.sector.sector_size).to_string(),
        registered_proof: format!("{:?}", job.sector.registered_proof),
        partitions: done.proofs.len(),
        proof_len: bytes.len(),
        proof_base64: base64::engine::general_purpose::STANDARD.encode(&bytes),
        verified_with: "filecoin-proofs verify_seal",
        provers: done.provers.clone(),
        run_id,
        finished_at: humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
        timings_ms: JobTimings {
            parse: job.parse_ms,
            synthesis: done.synth_ms,
            prove: done.prove_ms,
            verify: verify_ms,
            total: job.claimed_at.elapsed().as_secs_f64() * 1e3,
        },
    };
    let path = spool
        .finish(&job.claimed, &bytes, &record)
        .map_err(|e| ("write", format!("{e:#}")))?;
    events.emit(EventKind::ProofWritten {
        job: name,
        path: path.display().to_string(),
    });
    Ok(())
}
