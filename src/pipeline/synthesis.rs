//! Synthesis: the bounded CPU pool that turns partitions into synthesized partitions and
//! queues them for the provers.
//!
//! A [`SynthesisSlot`] is taken by the feeder before a partition is started and given back
//! only once the synthesized partition was accepted by the provers' queue, so at most
//! `--synth-jobs` partitions are being synthesized or waiting to be queued, and the feeder
//! never starts work the pool cannot take soon. Giving a slot back wakes the feeder.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use anyhow::{Context, Result};
use crossbeam_channel::Sender;

use crate::event::{EventKind, EventSink, JobStage, WorkerName};
use crate::footprint::Evaluation;
use crate::memory::Reservation;
use crate::r1cs::R1cs;
use crate::sector::SynthesisPlan;
use crate::spool::Spool;
use crate::synth::{thread_cpu_ms, Capacity};

use super::constraints::ConstraintSets;
use super::fault_injection;
use super::job::{Job, JobError, Outcome, PartitionPath, SynthesisFailure, SynthesizedMsg};
use crate::util::panic_message;

/// Counts the partitions in synthesis; wakes the feeder when one is done.
#[derive(Clone)]
pub struct SynthesisSlots {
    state: Arc<(Mutex<usize>, Condvar)>,
    size: usize,
    wake: Sender<()>,
}

/// One partition's place in the pool; given back when dropped.
pub struct SynthesisSlot {
    slots: SynthesisSlots,
}

impl Drop for SynthesisSlot {
    fn drop(&mut self) {
        let (count, changed) = &*self.slots.state;
        let mut taken = count.lock().unwrap_or_else(|e| e.into_inner());
        *taken -= 1;
        changed.notify_all();
        let _ = self.slots.wake.try_send(());
    }
}

impl SynthesisSlots {
    /// `size` slots; `wake` gets a message each time one is given back.
    pub fn new(size: usize, wake: Sender<()>) -> SynthesisSlots {
        SynthesisSlots {
            state: Arc::new((Mutex::new(0), Condvar::new())),
            size,
            wake,
        }
    }

    /// True when a slot is free.
    pub fn has_room(&self) -> bool {
        let (count, _) = &*self.state;
        *count.lock().unwrap_or_else(|e| e.into_inner()) < self.size
    }

    /// A slot if one is free, without waiting.
    pub fn try_take(&self) -> Option<SynthesisSlot> {
        let (count, _) = &*self.state;
        let mut taken = count.lock().unwrap_or_else(|e| e.into_inner());
        (*taken < self.size).then(|| {
            *taken += 1;
            SynthesisSlot {
                slots: self.clone(),
            }
        })
    }

    /// Waits until every slot is back, i.e. every synthesis task has ended.
    pub fn wait_all_back(&self) {
        let (count, changed) = &*self.state;
        let mut taken = count.lock().unwrap_or_else(|e| e.into_inner());
        while *taken > 0 {
            taken = changed.wait(taken).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// The synthesis pool and the channels it feeds.
pub struct SynthesisPool {
    pool: rayon::ThreadPool,
    constraints: Arc<ConstraintSets>,
    spool: Spool,
    events: EventSink,
    synthesized_tx: Sender<SynthesizedMsg>,
    outcome_tx: Sender<Outcome>,
}

impl SynthesisPool {
    /// A pool of `threads` synthesis workers (`synth-N`).
    pub fn new(
        threads: usize,
        constraints: Arc<ConstraintSets>,
        spool: Spool,
        events: EventSink,
        synthesized_tx: Sender<SynthesizedMsg>,
        outcome_tx: Sender<Outcome>,
    ) -> Result<SynthesisPool> {
        Ok(SynthesisPool {
            pool: rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .thread_name(|i| WorkerName::Synthesis(i).to_string())
                .build()
                .context("starting the synthesis pool")?,
            constraints,
            spool,
            events,
            synthesized_tx,
            outcome_tx,
        })
    }

    /// Synthesizes `partition` of `job` on the pool, holding `slot` until it is queued and
    /// `memory` until its prover is done with it.
    pub fn start(&self, task: PartitionTask, slot: SynthesisSlot) {
        let (constraints, spool, events, synthesized_tx, outcome_tx) = (
            self.constraints.clone(),
            self.spool.clone(),
            self.events.clone(),
            self.synthesized_tx.clone(),
            self.outcome_tx.clone(),
        );
        self.pool.spawn(move || {
            let links = TaskLinks {
                constraints: &constraints,
                spool: &spool,
                events: &events,
                synthesized_tx: &synthesized_tx,
                outcome_tx: &outcome_tx,
            };
            synthesize_and_queue(task, &links);
            // Only now may another partition be synthesized in this one's place.
            drop(slot);
        });
    }
}

/// A partition to synthesize, with its memory already reserved.
pub struct PartitionTask {
    /// Its job.
    pub job: Arc<Job>,
    /// Its index.
    pub partition: usize,
    /// Its bytes in the budget.
    pub memory: Reservation,
    /// Vector lengths, from the parameter file's counts.
    pub capacity: Capacity,
    /// The shape's pre-compiled constraints, when ready: a witness-only pass.
    pub r1cs: Option<Arc<R1cs>>,
    /// Where its a, b and c are computed: here, or left to the prover (on its GPU, or by
    /// its thread on the host right before the proof).
    pub evaluation: Evaluation,
    /// The bytes it holds once evaluated at its prover ([`Evaluation::AtProver`]).
    pub evaluated_bytes: u64,
}

/// What a synthesis task reports to and sends on.
struct TaskLinks<'a> {
    constraints: &'a ConstraintSets,
    spool: &'a Spool,
    events: &'a EventSink,
    synthesized_tx: &'a Sender<SynthesizedMsg>,
    outcome_tx: &'a Sender<Outcome>,
}

fn synthesize_and_queue(task: PartitionTask, links: &TaskLinks<'_>) {
    let TaskLinks {
        constraints,
        spool,
        events,
        synthesized_tx,
        outcome_tx,
    } = *links;
    let PartitionTask {
        job,
        partition,
        memory,
        capacity,
        r1cs,
        evaluation,
        evaluated_bytes,
    } = task;
    // A sibling failed while this partition waited: its work would be thrown away.
    if job.is_cancelled() {
        return;
    }
    spool.note_attempt_stage(&job.claimed, JobStage::Synthesis, Some(partition));
    let worker = WorkerName::Synthesis(rayon::current_thread_index().unwrap_or(0));
    let name = job.name().to_owned();
    let started = Instant::now();
    events.emit(EventKind::SynthStarted {
        job: name.clone(),
        partition,
        worker: worker.clone(),
    });
    let result = catch_unwind(AssertUnwindSafe(|| {
        let plan = SynthesisPlan {
            capacity,
            precompiled: r1cs.as_ref().map(|r1cs| (r1cs, constraints.pool())),
            defer_evaluation: evaluation.is_deferred(),
            native_witness: constraints.is_native_witness(),
        };
        job.sector.circuits.synthesize_partition(partition, &plan)
    }));
    // The job is lost: its siblings stop here rather than after the finisher hears of it.
    let failed = |error: SynthesisFailure| {
        job.cancel();
        Outcome::Failed {
            job: job.clone(),
            error: JobError::Synthesis { partition, error },
        }
    };
    let mut synthesized = match result {
        Ok(Ok(synthesized)) => synthesized,
        Ok(Err(err)) => {
            let _ = outcome_tx.send(failed(SynthesisFailure::Circuit(err)));
            return;
        }
        Err(panic) => {
            let message = panic_message(panic.as_ref());
            let _ = outcome_tx.send(failed(SynthesisFailure::Panicked(message)));
            return;
        }
    };
    let path = PartitionPath {
        witness: synthesized.profile.witness_path,
        is_precompiled: r1cs.is_some(),
        evaluation,
    };
    fault_injection::spoil_witness(&mut synthesized, &path);
    // A witness of bits waits for the GPU, and goes to it, as bits: the budget gets the
    // rest back now.
    let mut memory = memory;
    let (compact_started, compact_cpu) = (Instant::now(), thread_cpu_ms());
    if synthesized.compact_witness() {
        let profile = &mut synthesized.profile;
        profile.compact_ms = compact_started.elapsed().as_secs_f64() * 1e3;
        profile.compact_cpu_ms = thread_cpu_ms() - compact_cpu;
        memory.shrink_to(synthesized.bytes_in_flight());
    }
    events.emit(EventKind::SynthFinished {
        job: name.clone(),
        partition,
        worker: worker.clone(),
        constraints: synthesized.num_constraints(),
        is_precompiled: r1cs.is_some(),
        is_deferred: synthesized.deferred.is_some(),
        profile: synthesized.profile,
    });
    let msg = SynthesizedMsg {
        job: job.clone(),
        partition,
        synthesized,
        path,
        synth_ms: started.elapsed().as_secs_f64() * 1e3,
        memory,
        evaluated_bytes: (evaluation == Evaluation::AtProver).then_some(evaluated_bytes),
    };
    if let Err(unsent) = synthesized_tx.send(msg) {
        // Every prover stopped (their devices failed, and the run halts): the file is
        // handed back, not failed.
        job.cancel();
        let _ = outcome_tx.send(Outcome::Abandoned {
            job: unsent.into_inner().job,
        });
        return;
    }
    events.emit(EventKind::PartitionQueued {
        job: name,
        partition,
        worker,
    });
}
