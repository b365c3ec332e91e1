//! Host evaluation at the prover: a partition that waited for its prover as its witness alone
//! ([`Evaluation::AtProver`](crate::footprint::Evaluation::AtProver)) gets its a = A·w,
//! b = B·w and c = C·w here, on the prover's thread with every core, right before its proof.
//!
//! Its reservation grows to the partition's full bytes first, out of the room the budget
//! keeps for the provers ([`crate::memory::MemoryBudget::keep_for_provers`]), so at most the
//! partitions at a prover hold a, b and c. A prover evaluates the partition it takes after
//! a batch while the batch is proved ([`evaluate_beside`]), so on a GPU the evaluation
//! overlaps the kernels instead of idling them.

use std::time::Instant;

use crate::event::{EventKind, EventSink, WorkerName};

use super::job::SynthesizedMsg;

/// True when `msg` waits for its a, b and c to be evaluated here.
pub fn is_due(msg: &SynthesizedMsg) -> bool {
    msg.evaluated_bytes.is_some() && msg.synthesized.deferred.is_some()
}

/// Evaluates `msg`'s a, b and c on the host if they are due ([`is_due`]), growing its
/// reservation first. A partition whose job was cancelled while it waited for memory is
/// left as it is (its prover drops it unproved).
pub fn evaluate(msg: &mut SynthesizedMsg, worker: &WorkerName, events: &EventSink) {
    let Some(bytes) = msg.evaluated_bytes.filter(|_| is_due(msg)) else {
        return;
    };
    let job = msg.job.clone();
    events.emit(EventKind::HostEvaluationStarted {
        job: job.name().to_owned(),
        partition: msg.partition,
        worker: worker.clone(),
    });
    let Some(waited) = msg.memory.grow_to(bytes, || job.is_cancelled()) else {
        return;
    };
    let started = Instant::now();
    msg.synthesized.evaluate_deferred();
    msg.evaluated_bytes = None;
    events.emit(EventKind::HostEvaluationFinished {
        job: job.name().to_owned(),
        partition: msg.partition,
        worker: worker.clone(),
        memory_wait_ms: waited.as_secs_f64() * 1e3,
        ms: started.elapsed().as_secs_f64() * 1e3,
        bytes: msg.memory.bytes(),
    });
}

/// Runs `prove` while `next` (the partition the prover takes after) is evaluated beside it,
/// when it is due; returns what `prove` returned. `prove` is told whether `next` is free
/// to look at (a prover that uploads the next witness ahead); one being evaluated is not.
pub fn evaluate_beside<T>(
    next: &mut Option<SynthesizedMsg>,
    worker: &WorkerName,
    events: &EventSink,
    prove: impl FnOnce(Option<&SynthesizedMsg>) -> T,
) -> T {
    match next {
        Some(msg) if is_due(msg) => std::thread::scope(|scope| {
            let evaluating = std::thread::Builder::new()
                .name(format!("{worker}-evaluate"))
                .spawn_scoped(scope, || evaluate(msg, worker, events));
            match evaluating {
                Ok(evaluating) => {
                    let proved = prove(None);
                    // A panic in the evaluation leaves the partition due: it is evaluated
                    // again, or fails, on the prover's own thread.
                    let _ = evaluating.join();
                    proved
                }
                // No thread to spare: it is evaluated before its own proof instead.
                Err(_) => prove(None),
            }
        }),
        _ => prove(next.as_ref()),
    }
}
