//! Host evaluation at the prover: a partition that waited for its prover as its witness alone
//! ([`Evaluation::AtProver`](crate::footprint::Evaluation::AtProver)) gets its a = A·w,
//! b = B·w and c = C·w here, on the prover's thread with every core, right before its proof.
//!
//! Its reservation grows first to what the evaluation will hold, out of the room the budget
//! keeps for the provers ([`crate::memory::MemoryBudget::keep_for_provers`]), so at most the
//! partitions at a prover hold a, b and c: the partition's full bytes, or where the witness
//! stays compact and a, b and c are written compact into a lent set, that set, the witness
//! and the vectors' layouts ([`SynthesizedPartition::compact_evaluation_bytes`]). A prover
//! evaluates the partition it takes after a batch while the batch is proved
//! ([`evaluate_beside`]), so on a GPU the evaluation overlaps the kernels instead of idling
//! them.
//!
//! Where the prover lends host memory for a, b and c (the cuda backend's pinned sets,
//! [`crate::host_abc`]), they are written there, and the set's bytes go back to it with the
//! set: the budget counts them while the set is idle too.
//!
//! It is also the fallback of a partition left to the GPU's evaluation
//! ([`Evaluation::OnGpu`](crate::footprint::Evaluation::OnGpu)) whose prover cannot take
//! its constraints (their upload failed: out of memory, a PoSt holding the card): it is
//! evaluated here the same way, within the budget, a `CPU_FALLBACK` row says so, and the
//! set is noted in [`RefusedOnGpu`] so that its later partitions are planned for the host.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::backend::{Prover, ProverParams};
use crate::event::{EventKind, EventSink, WorkerName};
use crate::host_abc::{LendsAbc, LentAbc};
use crate::memory::Reservation;
use crate::synth::SynthesizedPartition;

use super::job::SynthesizedMsg;

/// The parameter sets whose pre-compiled constraints a GPU refused: the feeder plans their
/// partitions for the host from then on (on every GPU: the budget's room is planned per
/// set, not per device).
#[derive(Clone, Debug, Default)]
pub struct RefusedOnGpu(Arc<Mutex<HashSet<PathBuf>>>);

impl RefusedOnGpu {
    /// Notes that a GPU refused the constraints of the set at `params_path`.
    pub fn note(&self, params_path: &Path) {
        let mut sets = self.0.lock().unwrap_or_else(|e| e.into_inner());
        sets.insert(params_path.to_owned());
    }

    /// True once a GPU refused the constraints of the set at `params_path`.
    pub fn contains(&self, params_path: &Path) -> bool {
        let sets = self.0.lock().unwrap_or_else(|e| e.into_inner());
        sets.contains(params_path)
    }
}

/// Makes `msg`, left to the GPU's evaluation, due for the host's instead ([`is_due`]) when
/// `prover` cannot take its constraints, and says so.
pub fn fall_back_if_refused(
    msg: &mut SynthesizedMsg,
    prover: &mut Prover,
    params: &ProverParams,
    worker: &WorkerName,
    events: &EventSink,
    refused: &RefusedOnGpu,
) {
    if msg.evaluated_bytes.is_some() {
        return;
    }
    let Some(matrices) = msg.synthesized.deferred.clone() else {
        return;
    };
    let Err(reason) = prover.take_constraints(params, &matrices) else {
        return;
    };
    refused.note(&msg.job.params_path);
    let bytes = msg
        .job
        .footprint()
        .map_or(msg.memory.bytes(), |f| f.partition_bytes);
    msg.evaluated_bytes = Some(bytes);
    events.emit(EventKind::CpuFallback {
        job: msg.job.name().to_owned(),
        partition: msg.partition,
        worker: worker.clone(),
        reason: format!(
            "the pre-compiled constraints are not on the GPU ({reason}); this partition's a, b and c are evaluated on the host within the memory budget, and the set's next partitions are planned for the host"
        ),
    });
}

/// True when `msg` waits for its a, b and c to be evaluated here.
pub fn is_due(msg: &SynthesizedMsg) -> bool {
    msg.evaluated_bytes.is_some() && msg.synthesized.deferred.is_some()
}

/// Evaluates `msg`'s a, b and c on the host if they are due ([`is_due`]), growing its
/// reservation first. A partition whose job was cancelled while it waited for memory is
/// left as it is (its prover drops it unproved).
pub fn evaluate(
    msg: &mut SynthesizedMsg,
    worker: &WorkerName,
    events: &EventSink,
    lender: Option<&dyn LendsAbc>,
) {
    let Some(bytes) = msg.evaluated_bytes.filter(|_| is_due(msg)) else {
        return;
    };
    let job = msg.job.clone();
    events.emit(EventKind::HostEvaluationStarted {
        job: job.name().to_owned(),
        partition: msg.partition,
        worker: worker.clone(),
    });
    // A lent set comes with the reservation of its bytes (but the first time): the
    // partition grows by the rest only, and the set goes back with its share.
    let rows = msg.synthesized.deferred.as_ref().map_or(0, |m| m.rows());
    if let Some(lender) = lender {
        lender.make_ahead(rows, msg.memory.budget());
    }
    let mut lent = lender.and_then(|lender| lender.lend(rows));
    let held = lent.as_mut().and_then(LentAbc::take_reservation);
    let had_reservation = held.is_some();
    if let Some(held) = held {
        msg.memory.absorb(held);
    }
    // A set made for a larger circuit is counted whole.
    let spare = lent.as_ref().map_or(0, LentAbc::spare_bytes);
    let keeps_compact = lender.is_some_and(|lender| lender.takes_compact_witness());
    let peak = bytes_at_prover(&msg.synthesized, bytes, lent.as_ref(), keeps_compact);
    let waited = msg.memory.grow_to(peak + spare, || job.is_cancelled());
    if let Some(set) = lent
        .as_mut()
        .filter(|_| waited.is_some() || had_reservation)
    {
        set.hold(msg.memory.split_off(set.bytes()));
    }
    let Some(waited) = waited else {
        return;
    };
    let started = Instant::now();
    if keeps_compact {
        msg.synthesized.evaluate_deferred_keeping_compact(lent);
    } else {
        msg.synthesized.evaluate_deferred_into(lent);
    }
    msg.evaluated_bytes = None;
    events.emit(EventKind::HostEvaluationFinished {
        job: job.name().to_owned(),
        partition: msg.partition,
        worker: worker.clone(),
        memory_wait_ms: waited.as_secs_f64() * 1e3,
        ms: started.elapsed().as_secs_f64() * 1e3,
        bytes: msg.memory.bytes(),
    });
    if keeps_compact {
        shrink_to_what_is_held(&msg.synthesized, &mut msg.memory);
    }
}

/// The bytes `partition` holds at most while it is evaluated, a lent set's included: its
/// full bytes (`full`: a, b and c over the domain and the witness whole), or, where the
/// evaluation keeps the witness compact and writes a, b and c compact into `lent`, that
/// set, the witness it holds and the vectors' layouts (a 32GiB partition holds 4.2 GB less:
/// its witness is never expanded).
fn bytes_at_prover(
    partition: &SynthesizedPartition,
    full: u64,
    lent: Option<&LentAbc>,
    keeps_compact: bool,
) -> u64 {
    lent.filter(|_| keeps_compact)
        .and_then(|set| {
            let held = partition.compact_evaluation_bytes(set.rows())?;
            // The set's rows (a set made for a larger circuit adds its spare bytes after).
            Some((held + set.bytes() - set.spare_bytes()).min(full))
        })
        .unwrap_or(full)
}

/// After the evaluation for a prover that takes the compact witness (the cuda backend's,
/// which expands it on the GPU), `partition` holds less than its peak: the witness went back
/// to its compact form (4.1 GB less for a 32GiB partition) and a, b and c are the rows, not
/// the domain; those in a lent set are held by the set's own reservation. `memory` gives the
/// rest back. (A prover that takes the partition whole, the CPU's, grows it to the peak again
/// while it proves: its reservation stays.)
fn shrink_to_what_is_held(partition: &SynthesizedPartition, memory: &mut Reservation) {
    if partition.compact_aux.is_none() {
        return;
    }
    let lent = partition.lent_abc.as_ref().map_or(0, LentAbc::bytes);
    memory.shrink_to(partition.bytes_in_flight().saturating_sub(lent));
}

/// What a call is given of the partition its prover takes after it ([`evaluate_beside`]).
pub enum NextPartition<'a> {
    /// Free to use: a prover that uploads the next witness ahead takes it into its call and
    /// puts it back.
    Free(&'a mut Option<SynthesizedMsg>),
    /// Being evaluated beside the call: where the prover asked for it, a copy of its witness
    /// ([`SynthesizedPartition::witness_copy`]) and the parameter file it is proved with, for
    /// a prover that shares its pass over streamed bases with it.
    Evaluating(Option<Box<(PathBuf, SynthesizedPartition)>>),
}

/// Runs `prove` while `next` (the partition the prover takes after) is evaluated beside it,
/// when it is due; returns what `prove` returned. `prove` is given `next` when it is free
/// to use; of one being evaluated, a copy of its witness where `copy_witness` asks for one
/// (and its witness is compact: tens of MB at 32GiB, where whole it would be gigabytes).
pub fn evaluate_beside<T>(
    next: &mut Option<SynthesizedMsg>,
    worker: &WorkerName,
    events: &EventSink,
    lender: Option<&dyn LendsAbc>,
    copy_witness: bool,
    prove: impl FnOnce(NextPartition<'_>) -> T,
) -> T {
    match next {
        Some(msg) if is_due(msg) => {
            let witness = copy_witness
                .then(|| msg.synthesized.witness_copy())
                .flatten()
                .map(|copy| Box::new((msg.job.params_path.clone(), copy)));
            std::thread::scope(|scope| {
                let evaluating = std::thread::Builder::new()
                    .name(format!("{worker}-evaluate"))
                    .spawn_scoped(scope, || evaluate(msg, worker, events, lender));
                match evaluating {
                    Ok(evaluating) => {
                        let proved = prove(NextPartition::Evaluating(witness));
                        // A panic in the evaluation leaves the partition due: it is evaluated
                        // again, or fails, on the prover's own thread.
                        let _ = evaluating.join();
                        proved
                    }
                    // No thread to spare: it is evaluated before its own proof instead.
                    Err(_) => prove(NextPartition::Evaluating(None)),
                }
            })
        }
        _ => prove(NextPartition::Free(next)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host_abc::compact::{CompactVector, CHUNK_ROWS};
    use crate::host_abc::heap::HeapLender;
    use crate::memory::MemoryBudget;
    use crate::synth::tests::BitsCircuit;

    /// A partition of a witness of bits, synthesized over recorded constraints with its a,
    /// b and c deferred and its witness held compact.
    fn compact_partition() -> SynthesizedPartition {
        let circuit = BitsCircuit {
            value: Some(0x00ff_00ff_00ff_00ff),
        };
        let r1cs = Arc::new(crate::r1cs::R1cs::record(circuit.clone()).expect("record"));
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .expect("pool");
        let mut partition = r1cs
            .synthesize(circuit, &pool, Default::default(), true)
            .expect("deferred");
        assert!(partition.compact_witness(), "a witness of bits");
        partition
    }

    #[test]
    fn a_partition_kept_compact_gives_back_what_its_evaluation_no_longer_holds() {
        let lender = HeapLender {
            most: 1,
            ..HeapLender::default()
        };
        let budget = MemoryBudget::new(1 << 30, None);
        let mut partition = compact_partition();
        let rows = partition.num_constraints();
        // The peak: a, b and c over the domain and the witness whole.
        let peak = 32 * (3 * rows.next_power_of_two() + 2 * partition.aux_len()) as u64;
        let mut memory = budget.try_reserve(peak).expect("room");
        let mut set = lender.lend(rows).expect("a set");
        set.hold(memory.split_off(set.bytes()));
        partition.evaluate_deferred_keeping_compact(Some(set));
        assert!(partition.compact_aux.is_some() && partition.lent_abc.is_some());

        shrink_to_what_is_held(&partition, &mut memory);
        let set_bytes = 3 * 32 * rows as u64;
        assert_eq!(
            memory.bytes(),
            partition.bytes_in_flight() - set_bytes,
            "the partition holds its compact witness, the set its own"
        );
        assert!(memory.bytes() + set_bytes < peak);
        assert_eq!(budget.in_use(), memory.bytes() + set_bytes);
    }

    /// A lender like the cuda backend's: its prover takes the witness compact.
    struct CompactLender(HeapLender);

    impl LendsAbc for CompactLender {
        fn lend(&self, rows: usize) -> Option<LentAbc> {
            self.0.lend(rows)
        }

        fn takes_compact_witness(&self) -> bool {
            true
        }
    }

    #[test]
    fn a_partition_evaluated_compact_grows_by_what_it_will_hold_not_its_full_peak() {
        let mut partition = compact_partition();
        let rows = partition.num_constraints();
        let full = 32
            * (3 * rows.next_power_of_two()
                + partition.input_assignment.len()
                + partition.aux_len()) as u64;
        let lender = CompactLender(HeapLender {
            most: 1,
            ..HeapLender::default()
        });
        let set = lender.lend(rows).expect("a set");
        let set_bytes = 3 * 32 * rows as u64;
        let grown = bytes_at_prover(&partition, full, Some(&set), true);
        let before = partition.bytes_in_flight();
        assert_eq!(
            grown,
            before + set_bytes + 3 * CompactVector::bytes_for(rows, CHUNK_ROWS)
        );
        assert!(
            grown + 32 * partition.aux_len() as u64 <= full,
            "no room counted for a witness expanded"
        );
        // The whole way, or a prover that takes the witness whole: the full peak.
        assert_eq!(bytes_at_prover(&partition, full, Some(&set), false), full);
        assert_eq!(bytes_at_prover(&partition, full, None, true), full);
        let other = HeapLender {
            most: 1,
            ..HeapLender::default()
        }
        .lend(rows + 64)
        .expect("a set for other rows");
        assert_eq!(bytes_at_prover(&partition, full, Some(&other), true), full);

        // Never under-counted: what the evaluation leaves it holding, the set and the
        // layouts included, is within what it grew to.
        partition.evaluate_deferred_keeping_compact(Some(set));
        assert!(partition.compact_abc.is_some() && partition.lent_abc.is_some());
        assert!(
            partition.bytes_in_flight() <= grown,
            "{} held after, {grown} counted",
            partition.bytes_in_flight()
        );
    }
}
