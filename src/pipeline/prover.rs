//! Prover threads: each owns a prover (the CPU's or one GPU's kernels, or SupraSeal on every
//! GPU), takes synthesized partitions from the shared queue, a batch at a time where the
//! prover takes batches, and proves them with the run's shared parameters. A GPU prover
//! gives way to a PoSt holding bellperson's GPU priority lock before each batch
//! ([`priority_lock`]). A failed partition is judged as [`super::device_faults`] says: its
//! file goes back to the inbox when the device may be to blame, and a prover whose calls keep
//! failing stops (the last one to stop halts the run).

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};

use crate::backend::gpu::priority_lock::{self, PriorityLockError};
use crate::backend::{ProveError, Prover, ProverParams};
use crate::event::{EventKind, EventSink, JobStage, WorkerName};
use crate::host_abc::LendsAbc;
use crate::params::ParamSets;
use crate::spool::Spool;

use super::deadline::{self, Answer, CallDeadlines};
use super::device_faults::{CallFailure, DeviceHealth, ProversStoppedError, Verdict};
use super::evaluation::{self, NextPartition};
use super::fault_injection;
use super::job::{Job, JobError, Outcome, SynthesizedMsg};
use super::stop::Halt;

/// How long a batching prover waits for the rest of a batch once it has one partition: a
/// partition synthesized a moment later is worth more than an idle GPU's lost call.
const BATCH_WAIT: Duration = Duration::from_millis(250);

/// What a prover thread works with.
pub struct ProverLinks {
    /// Where attempts are noted.
    pub spool: Spool,
    /// Synthesized partitions.
    pub rx: Receiver<SynthesizedMsg>,
    /// To the finisher.
    pub outcome_tx: Sender<Outcome>,
    /// Progress.
    pub events: EventSink,
    /// The run's parameters.
    pub params: Arc<ParamSets<ProverParams>>,
    /// Faulty calls in a row after which a prover stops (`--max-device-faults`).
    pub max_device_faults: u32,
    /// Provers still proving: the last to stop halts the run.
    pub live_provers: Arc<AtomicUsize>,
    /// Where the last prover to stop says why the run cannot go on.
    pub halt: Halt,
    /// The sets whose constraints a GPU refused, for the feeder's plan.
    pub refused_on_gpu: evaluation::RefusedOnGpu,
    /// `--call-deadline-secs`, if given ([`deadline`]).
    pub call_deadline: Option<Duration>,
}

/// Proves partitions until the queue is closed and empty, or until the prover's device is
/// taken to be broken.
pub fn prove_partitions(prover: Prover, links: ProverLinks) {
    let worker = WorkerName::parse(prover.name());
    let mut held = None;
    let Some(health) = prove_while_healthy(prover, &links, &mut held) else {
        return;
    };
    let (faults, message) = health.streak();
    links.events.emit(EventKind::ProverStopped {
        worker: worker.clone(),
        faults,
        message: message.to_owned(),
    });
    let is_last = links.live_provers.fetch_sub(1, Ordering::SeqCst) == 1;
    if is_last {
        links.halt.set(ProversStoppedError {
            worker: worker.to_string(),
            faults,
            is_device_lost: health.is_device_lost(),
            message: message.to_owned(),
        });
    }
    // Its partition is handed back with its file; the last prover also takes every partition
    // still coming until the queue closes, so that no file is left without an outcome.
    let abandon = |msg: SynthesizedMsg| {
        msg.job.cancel();
        let _ = links.outcome_tx.send(Outcome::Abandoned { job: msg.job });
    };
    held.into_iter().for_each(abandon);
    if is_last {
        links.rx.iter().for_each(abandon);
    }
}

/// Proves partitions until the queue is closed and empty (`None`), or until the prover's
/// calls failed `--max-device-faults` times in a row (its record); `held` is a partition it
/// had taken and not proved.
fn prove_while_healthy(
    mut prover: Prover,
    links: &ProverLinks,
    held: &mut Option<SynthesizedMsg>,
) -> Option<DeviceHealth> {
    let worker = WorkerName::parse(prover.name());
    let mut health = DeviceHealth::new(links.max_device_faults);
    let mut gate = prover.is_gpu().then(PriorityGate::default);
    let most = match links.call_deadline {
        None if prover.is_gpu() => Some(deadline::DEFAULT_CALL_DEADLINE),
        given => given,
    };
    let mut deadlines = CallDeadlines::new(most);
    // Sets uploaded ahead once already: a failed upload is not retried while idle.
    let mut uploaded_ahead = std::collections::HashSet::new();
    // Set once this prover is handed partitions to evaluate on the host.
    let mut evaluates_at_prover = false;
    let lender = prover.abc_lender();
    loop {
        if held.is_none() {
            *held = links.rx.try_recv().ok();
        }
        // The partition to prove next was waiting for the prover (held from the last call,
        // or queued): synthesis is ahead of it.
        let was_waiting = held.is_some();
        if held.is_none() {
            // Idle until a partition comes: upload the sets loaded meanwhile, so that a
            // device's first partition does not wait for its bases.
            loop {
                match links.rx.recv_timeout(IDLE_POLL) {
                    Ok(msg) => break *held = Some(msg),
                    Err(RecvTimeoutError::Timeout) => {
                        for (path, params) in links.params.loaded() {
                            if uploaded_ahead.insert(path.clone()) {
                                upload(&mut prover, &worker, &path, &params, &links.events);
                            }
                        }
                    }
                    Err(RecvTimeoutError::Disconnected) => return None,
                }
            }
        }
        // The queue closed and empty: done.
        let batch = next_batch(
            &links.rx,
            held,
            prover.batch_size(),
            prover.waits_for_batch().then_some(BATCH_WAIT),
        )?;
        // Before looking ahead: the partitions that come while the batch's parameters load
        // (minutes, at a prover's start) are then there to be evaluated beside its proof.
        get_ready(&mut prover, &batch, links, &worker, lender.as_deref());
        // A prover that uploads ahead, or evaluates on the host, gets the next partition
        // now, if one is coming: its upload or evaluation overlaps this batch's proof. (A
        // partition evaluated beside the last call is no longer due, so once is enough.)
        evaluates_at_prover |= batch.iter().any(evaluation::is_due);
        if held.is_none() && (prover.uploads_ahead() || evaluates_at_prover) {
            *held = lookahead(&links.rx, was_waiting, LOOKAHEAD_WAIT);
        }
        let call = Call {
            worker: &worker,
            links,
            health: &health,
            deadlines: &mut deadlines,
            lender: lender.as_deref(),
        };
        let reads_next = prover.uploads_ahead();
        let proved = evaluation::evaluate_beside(
            held,
            &worker,
            &links.events,
            lender.as_deref(),
            reads_next,
            |next| prove_batch(prover, call, batch, next, gate.as_mut()),
        );
        match proved {
            BatchEnd::NotCalled(returned) => prover = returned,
            BatchEnd::Called(returned, failure) => {
                prover = returned;
                if health.record_call(failure) {
                    return Some(health);
                }
            }
            BatchEnd::Lost(failure) => {
                health.record_call(Some(failure));
                return Some(health);
            }
        }
    }
}

/// Loads `batch`'s parameters and uploads them to the prover's device, as its call would
/// (which then finds them there; a failure is left for the call to report), having first
/// started making the prover's sets for a, b and c where the batch is evaluated on the host:
/// at a prover's start the sets (seconds each at 32GiB) are made while the parameters load,
/// not in the way of its first proofs.
fn get_ready(
    prover: &mut Prover,
    batch: &[SynthesizedMsg],
    links: &ProverLinks,
    worker: &WorkerName,
    lender: Option<&dyn LendsAbc>,
) {
    let Some(first) = batch.first() else {
        return;
    };
    let due = batch.iter().find(|msg| evaluation::is_due(msg));
    if let (Some(lender), Some(due)) = (lender, due) {
        let rows = due.synthesized.deferred.as_ref().map_or(0, |m| m.rows());
        lender.make_all_ahead(rows, due.memory.budget());
    }
    let path = &first.job.params_path;
    if let Ok(params) = links.params.get(path, worker, &links.events) {
        upload(prover, worker, path, &params, &links.events);
    }
}

/// What became of a batch, and of the prover that took it.
enum BatchEnd {
    /// The prover was not called: nothing left to prove, or the parameters failed.
    NotCalled(Prover),
    /// The call answered: what went wrong in it, `None` when nothing did.
    Called(Prover, Option<CallFailure>),
    /// The call took the prover with it ([`deadline`]): its partitions' files went back.
    Lost(CallFailure),
}

/// What one call of a prover works with.
struct Call<'a> {
    worker: &'a WorkerName,
    links: &'a ProverLinks,
    /// The prover's record before this call, to judge its failures by.
    health: &'a DeviceHealth,
    /// Its calls' deadlines, learnt from their cost.
    deadlines: &'a mut CallDeadlines,
    /// Where the host evaluates its partitions' a, b and c, if it lends memory for them.
    lender: Option<&'a dyn LendsAbc>,
}

/// How often an idle prover looks for parameter sets to upload ahead of their partitions.
const IDLE_POLL: Duration = Duration::from_millis(200);

/// Uploads `params` (the set at `path`) to the prover's device if it needs them there: a
/// parameter load in the timeline, the lane's, not proving. A failure is only logged: the
/// proof tries again and fails its partitions with the reason.
fn upload(
    prover: &mut Prover,
    worker: &WorkerName,
    path: &Path,
    params: &ProverParams,
    events: &EventSink,
) {
    let path = path.display().to_string();
    let mut has_started = false;
    let uploaded = prover.upload(params, || {
        has_started = true;
        events.emit(EventKind::ParamsLoadStarted {
            worker: worker.to_owned(),
            path: path.clone(),
        });
    });
    if let Err(err) = uploaded {
        log::warn!("{worker}: {err}");
    }
    if has_started {
        events.emit(EventKind::ParamsLoadFinished {
            worker: worker.to_owned(),
            path,
        });
    }
}

/// A GPU prover's check of bellperson's priority lock before each batch.
#[derive(Default)]
struct PriorityGate {
    /// The lock could not be checked once already: said once, then proving goes on.
    has_failed: bool,
}

impl PriorityGate {
    /// Waits while a PoSt holds the priority lock, recording the wait; holds nothing after.
    fn give_way(&mut self, worker: &WorkerName, events: &EventSink) {
        let path = priority_lock::priority_lock_path();
        let waited = priority_lock::wait_until_free(&path, priority_lock::POLL, || {
            events.emit(EventKind::PriorityWaitStarted {
                worker: worker.to_owned(),
                path: path.display().to_string(),
            })
        });
        match waited {
            Ok(None) => {}
            Ok(Some(waited)) => events.emit(EventKind::PriorityWaitFinished {
                worker: worker.to_owned(),
                waited_ms: waited.as_secs_f64() * 1e3,
            }),
            Err(err) => self.warn(worker, &err),
        }
    }

    fn warn(&mut self, worker: &WorkerName, err: &PriorityLockError) {
        if !self.has_failed {
            self.has_failed = true;
            log::warn!("{worker}: {err}");
        }
    }
}

/// How long a prover that uploads ahead waits for the partition after its batch, when
/// synthesis is ahead of it: the worker that the batch's own `recv` unblocked needs a moment
/// to hand its partition over.
const LOOKAHEAD_WAIT: Duration = Duration::from_millis(10);

/// The partition to prove after this batch, for a prover that uploads its witness meanwhile.
/// When the batch's partition was waiting for the prover (`was_waiting`), synthesis is ahead
/// and a worker is about to deliver, so it waits up to `wait`: a bare `try_recv` would find
/// the queue empty every time, since taking the batch is what let that worker send.
/// Otherwise the prover does not wait for what is not there.
fn lookahead<T>(rx: &Receiver<T>, was_waiting: bool, wait: Duration) -> Option<T> {
    match rx.try_recv() {
        Ok(msg) => Some(msg),
        Err(_) if was_waiting => rx.recv_timeout(wait).ok(),
        Err(_) => None,
    }
}

/// The next partitions to prove together: one, then as many more of the same circuit as the
/// prover takes, waiting up to `wait` for them (none: only those already queued). A
/// partition of another circuit is held for the next batch, and so is one whose a, b and c
/// the host evaluates at the prover (so is the batch's first, alone): a batch of those
/// would hold every one's a, b and c in memory at once. `None` once the queue is closed and
/// empty.
fn next_batch(
    rx: &Receiver<SynthesizedMsg>,
    held: &mut Option<SynthesizedMsg>,
    size: usize,
    wait: Option<Duration>,
) -> Option<Vec<SynthesizedMsg>> {
    let first = match held.take() {
        Some(msg) => msg,
        None => rx.recv().ok()?,
    };
    let shape = first.job.sector.circuit;
    let size = if evaluation::is_due(&first) { 1 } else { size };
    let mut batch = vec![first];
    let deadline = Instant::now() + wait.unwrap_or_default();
    while batch.len() < size {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(msg) if msg.job.sector.circuit == shape && !evaluation::is_due(&msg) => {
                batch.push(msg)
            }
            Ok(msg) => {
                *held = Some(msg);
                break;
            }
            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => break,
        }
    }
    Some(batch)
}

/// Proves a batch and sends each partition's outcome to the finisher. `next`, the partition
/// the prover takes after, goes into the call (its witness may be uploaded meanwhile) and
/// comes back with the prover, unless the call took both; or, while it is evaluated beside
/// the call, the copy of its witness goes in.
fn prove_batch(
    mut prover: Prover,
    call: Call<'_>,
    batch: Vec<SynthesizedMsg>,
    next: NextPartition<'_>,
    gate: Option<&mut PriorityGate>,
) -> BatchEnd {
    let Call {
        worker,
        links,
        health,
        deadlines,
        lender,
    } = call;
    // A partition whose sibling failed is not proved for nothing; dropping it frees its memory.
    let batch: Vec<SynthesizedMsg> = batch
        .into_iter()
        .filter(|m| !m.job.is_cancelled())
        .collect();
    let Some(first) = batch.first() else {
        return BatchEnd::NotCalled(prover);
    };
    for msg in &batch {
        links.events.emit(EventKind::ProverPickedUp {
            job: msg.job.name().to_owned(),
            partition: msg.partition,
            worker: worker.to_owned(),
        });
    }
    // Every partition of a batch is of one circuit, so of one parameter file.
    let circuit = first.job.sector.circuit;
    let params_path = first.job.params_path.clone();
    let params = match links
        .params
        .get(&first.job.params_path, worker, &links.events)
    {
        Ok(params) => params,
        Err(error) => {
            for msg in batch {
                let _ = links.outcome_tx.send(Outcome::Failed {
                    job: msg.job,
                    error: JobError::Params(error.clone()),
                });
            }
            return BatchEnd::NotCalled(prover);
        }
    };
    // A set's first batch on a device uploads it there, unless the prover did while idle.
    upload(
        &mut prover,
        worker,
        &first.job.params_path,
        &params,
        &links.events,
    );
    // The partitions that waited as their witness get a, b and c now, unless the last call
    // evaluated them beside its proof; one whose job was cancelled meanwhile is dropped.
    let mut batch = batch;
    for msg in &mut batch {
        evaluation::fall_back_if_refused(
            msg,
            &mut prover,
            &params,
            worker,
            &links.events,
            &links.refused_on_gpu,
        );
        evaluation::evaluate(msg, worker, &links.events, lender);
    }
    batch.retain(|msg| !msg.job.is_cancelled());
    if batch.is_empty() {
        return BatchEnd::NotCalled(prover);
    }
    // As late as possible before the GPU work, after the parameters (which may take minutes),
    // so a PoSt that started meanwhile is seen.
    if let Some(gate) = gate {
        gate.give_way(worker, &links.events);
    }
    let mut partitions = Vec::with_capacity(batch.len());
    // Each partition's memory is given back when the prover lets it go, at the latest when
    // the call ends.
    let mut memory = Vec::with_capacity(batch.len());
    let mut done = Vec::with_capacity(batch.len());
    for msg in batch {
        links
            .spool
            .note_attempt_stage(&msg.job.claimed, JobStage::Prove, Some(msg.partition));
        links.events.emit(EventKind::ProveStarted {
            job: msg.job.name().to_owned(),
            partition: msg.partition,
            worker: worker.to_owned(),
        });
        partitions.push(msg.synthesized);
        memory.push(Some(msg.memory));
        done.push((msg.job, msg.partition, msg.path, msg.synth_ms));
    }
    let count = partitions.len();
    let injected = fault_injection::fault_for(
        &worker.to_string(),
        health.next_call(),
        done.iter().map(|(job, ..)| job.name()),
    );
    let hangs = fault_injection::hangs(health.next_call());
    let stall = fault_injection::stall(health.next_call());
    let (mut next_slot, next_msg, next_witness) = match next {
        NextPartition::Free(slot) => {
            let msg = slot.take();
            (Some(slot), msg, None)
        }
        NextPartition::Evaluating(witness) => (None, None, witness),
    };
    // The call reads the next partition only where it is of this batch's parameter set (its
    // witness goes up ahead, or its queries share this call's pass over streamed bases).
    let next_witness = next_witness
        .filter(|next| next.0 == params_path)
        .map(|next| next.1);
    let next_job = next_msg.as_ref().map(|msg| msg.job.clone());
    let started = Instant::now();
    // The call owns what the device may read while it runs (the partitions, the next witness,
    // their memory), so a call that never answers keeps them alive.
    let answer = deadline::call_within(
        prover,
        format!("{worker}-call"),
        deadlines.for_call(circuit, count),
        move |prover| {
            if hangs {
                fault_injection::hang();
            }
            if let Some(stall) = stall {
                std::thread::sleep(stall);
            }
            let results = match injected {
                Some(fault) => partitions
                    .iter()
                    .map(|_| {
                        Err(match &fault {
                            ProveError::InjectedLoss(m) => ProveError::InjectedLoss(m.clone()),
                            other => ProveError::Injected(other.to_string()),
                        })
                    })
                    .collect(),
                None => {
                    let next = next_msg
                        .as_ref()
                        .filter(|m| m.job.params_path == params_path)
                        .map(|m| &m.synthesized)
                        .or(next_witness.as_ref());
                    // A partition's memory goes back once the prover lets it go.
                    let mut memory = memory;
                    let results = prover.prove(partitions, &params, next, &mut |k| {
                        if let Some(held) = memory.get_mut(k) {
                            held.take();
                        }
                    });
                    drop(memory);
                    results
                }
            };
            (results, prover.take_cpu_fallbacks(), next_msg)
        },
    );
    let took = started.elapsed();
    let (prover, results, fallbacks) = match answer {
        Answer::Returned(prover, Ok((results, fallbacks, next_msg))) => {
            if let Some(slot) = next_slot.take() {
                *slot = next_msg;
            }
            (prover, results, fallbacks)
        }
        Answer::Returned(prover, Err(panic)) => {
            let results = (0..count)
                .map(|_| Err(ProveError::Panicked(format!("the call panicked: {panic}"))))
                .collect();
            (prover, results, Vec::new())
        }
        Answer::Lost(why) => {
            // The next partition stays with the call: its file goes back too.
            if let Some(job) = next_job {
                job.cancel();
                let _ = links.outcome_tx.send(Outcome::Abandoned { job });
            }
            let mut failure = CallFailure {
                message: why.clone(),
                files: Vec::new(),
                is_set_aside: false,
                is_device_lost: true,
            };
            for (job, partition, ..) in done {
                failure.files.push(job.c1_digest.as_str().to_owned());
                let error = ProveError::CallLost(why.clone());
                let outcome = judged(
                    job,
                    partition,
                    worker,
                    error,
                    Verdict::HandBack,
                    &links.events,
                );
                let _ = links.outcome_tx.send(outcome);
            }
            return BatchEnd::Lost(failure);
        }
    };
    let prove_ms = share_of_call(took.as_secs_f64() * 1e3, results.len());
    // Only provers of one partition per call fall back step by step: the first is the one.
    if let Some((job, partition, ..)) = done.first() {
        for reason in fallbacks {
            links.events.emit(EventKind::CpuFallback {
                job: job.name().to_owned(),
                partition: *partition,
                worker: worker.to_owned(),
                reason,
            });
        }
    }
    let mut failure: Option<CallFailure> = None;
    for ((job, partition, path, synth_ms), result) in done.into_iter().zip(results) {
        let outcome = match result {
            Ok((proof, timings)) => {
                links.events.emit(EventKind::ProveFinished {
                    job: job.name().to_owned(),
                    partition,
                    worker: worker.to_owned(),
                    timings: Some(timings),
                });
                Outcome::Proved {
                    job,
                    partition,
                    proof: Box::new(proof),
                    prover: worker.to_string(),
                    path,
                    synth_ms,
                    prove_ms,
                }
            }
            Err(error) => {
                // A lost device fails every call from now on: nothing to judge the file by.
                let verdict = if error.is_device_lost() {
                    Verdict::HandBack
                } else {
                    health.judge(&job, &worker.to_string())
                };
                let failure = failure.get_or_insert_with(|| CallFailure {
                    message: error.to_string(),
                    files: Vec::new(),
                    is_set_aside: false,
                    is_device_lost: false,
                });
                failure.files.push(job.c1_digest.as_str().to_owned());
                failure.is_set_aside |= verdict == Verdict::SetAside;
                failure.is_device_lost |= error.is_device_lost();
                judged(job, partition, worker, error, verdict, &links.events)
            }
        };
        let _ = links.outcome_tx.send(outcome);
    }
    // Only calls that proved everything teach the deadline what a call costs.
    if failure.is_none() {
        deadlines.record(circuit, count, took);
    }
    BatchEnd::Called(prover, failure)
}

/// The outcome of a partition of `job` that failed on `worker` with `error`, judged as
/// `verdict` ([`device_faults`]): handed back as a device fault, set aside, or failed when
/// the fault follows the file.
fn judged(
    job: Arc<Job>,
    partition: usize,
    worker: &WorkerName,
    error: ProveError,
    verdict: Verdict,
    events: &EventSink,
) -> Outcome {
    match verdict {
        Verdict::HandBack | Verdict::SetAside => {
            events.emit(EventKind::DeviceFault {
                job: job.name().to_owned(),
                partition,
                worker: worker.to_owned(),
                message: error.to_string(),
            });
            Outcome::DeviceFault {
                job: cancelled(job),
                partition,
                prover: worker.to_string(),
                error,
                is_set_aside: verdict == Verdict::SetAside,
            }
        }
        Verdict::FollowsFile(why) => {
            let attempt = &job.attempt;
            let error = JobError::ProveFollowsFile {
                partition,
                error: Box::new(error),
                faults: attempt.device_faults,
                provers: attempt.fault_provers.join(", "),
                prover: worker.to_string(),
                why,
            };
            Outcome::Failed {
                job: cancelled(job),
                error,
            }
        }
    }
}

/// Each partition's share of a call that proved `partitions` at once: a batch's time is
/// charged once, split among its partitions, so a job's proving time does not grow with the
/// batch size.
fn share_of_call(call_ms: f64, partitions: usize) -> f64 {
    call_ms / partitions.max(1) as f64
}

/// The job, cancelled: a failed partition dooms its siblings at once.
fn cancelled(job: Arc<Job>) -> Arc<Job> {
    job.cancel();
    job
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Synthesis ahead of the prover: workers blocked on a full queue of depth one, as
    /// when the GPU sets the pace. Taking a partition is what lets the next worker send.
    fn blocked_workers(partitions: u32) -> Receiver<u32> {
        let (tx, rx) = crossbeam_channel::bounded(1);
        for partition in 0..partitions {
            let tx = tx.clone();
            std::thread::spawn(move || tx.send(partition));
        }
        // Every worker has finished: one partition queued, the rest blocked on sending.
        while !rx.is_full() {
            std::thread::yield_now();
        }
        std::thread::sleep(Duration::from_millis(20));
        rx
    }

    #[test]
    fn a_prover_behind_synthesis_gets_the_partition_a_blocked_worker_hands_over() {
        for _ in 0..20 {
            let rx = blocked_workers(3);
            let first = rx.recv().expect("a queued partition");
            // The queue is empty for a moment; a bare try_recv found nothing here. The wait
            // is long so that a loaded test machine cannot make this fail.
            let next = lookahead(&rx, true, Duration::from_secs(5));
            assert!(
                next.is_some(),
                "after {first}, the blocked worker's partition"
            );
            assert_ne!(next, Some(first));
        }
    }

    #[test]
    fn a_prover_that_waited_for_its_partition_does_not_wait_for_the_next() {
        let (tx, rx) = crossbeam_channel::bounded::<u32>(1);
        let started = Instant::now();
        assert_eq!(lookahead(&rx, false, Duration::from_secs(60)), None);
        assert!(started.elapsed() < Duration::from_secs(30), "no wait");
        let wait = Duration::from_millis(50);
        assert_eq!(
            lookahead(&rx, true, wait),
            None,
            "nothing came within the wait"
        );
        assert!(started.elapsed() >= wait);
        tx.send(7).unwrap();
        assert_eq!(
            lookahead(&rx, false, wait),
            Some(7),
            "a queued one is taken either way"
        );
    }

    #[test]
    fn a_batch_is_charged_once() {
        for batch in [1, 2, 8] {
            let charged: f64 = (0..batch).map(|_| share_of_call(9000.0, batch)).sum();
            assert!((charged - 9000.0).abs() < 1e-6, "{batch}: {charged}");
        }
        assert_eq!(
            share_of_call(5.0, 0),
            5.0,
            "no partition, no division by zero"
        );
    }
}
