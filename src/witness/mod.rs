//! Native witnesses: a partition's witness computed without running the circuit's gadgets
//! where they are slow, written in exactly the order and form the circuit allocates it.
//!
//! The pre-compiled path (`r1cs`) needs only a partition's witness; running the circuit to
//! get it allocates every bit of every SHA-256 compression through the constraint-system
//! API, which is most of a PoRep partition's time. Here those values are computed with u32
//! arithmetic ([`sha256`]), Poseidon with field arithmetic mirroring neptune's circuit
//! ([`poseidon`]), and appended to a [`sink`] in the circuit's order, while the rest (the
//! insertions ordering Merkle children, the encoding) runs the real gadgets on the same sink.
//! The update circuit's witness ([`update`]) is made the same way.
//! A witness that does not have the recorded circuit's counts is never used: the caller
//! falls back to the gadget path and says so.

mod bits;
pub mod check;
pub mod porep;
mod poseidon;
mod sha256;
pub mod sink;
pub mod update;

use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Context, Result};
use blstrs::Scalar as Fr;
use rayon::prelude::*;

use crate::synth::thread_cpu_ms;
use sink::Sink;

/// A partition's assignments: public inputs (the constant one first) and aux variables.
pub struct Witness {
    /// Public inputs, starting with the constant one.
    pub inputs: Vec<Fr>,
    /// Private (auxiliary) variables.
    pub aux: Vec<Fr>,
}

/// Asks the kernel to back `v`'s unused capacity with huge pages (transparent huge pages in
/// `madvise` mode, many distributions' default): a partition's witness is gigabytes written
/// once, and with 4 KiB pages every page is a fault. Only a hint; nothing changes if the
/// kernel says no.
pub(crate) fn advise_huge_pages<T>(v: &mut Vec<T>) {
    const PAGE: usize = 4096;
    let spare = v.spare_capacity_mut();
    let start = spare.as_mut_ptr() as usize;
    let end = start + std::mem::size_of_val(spare);
    let (first, last) = (start.div_ceil(PAGE) * PAGE, end / PAGE * PAGE);
    if last > first {
        // SAFETY: the range lies inside `v`'s allocation, which stays where it is while the
        // call runs; MADV_HUGEPAGE changes how pages are backed, never their contents.
        unsafe {
            libc::madvise(
                first as *mut libc::c_void,
                last - first,
                libc::MADV_HUGEPAGE,
            );
        }
    }
}

/// What [`challenges_in_parallel`] made.
pub(crate) struct Challenges {
    /// The prologue's aux values, then every challenge's.
    pub aux: Vec<Fr>,
    /// The challenges' public inputs, in order.
    pub inputs: Vec<Fr>,
    /// CPU milliseconds of the challenges, summed over the pool's threads.
    pub cpu_ms: f64,
}

/// Appends the challenges' aux values to the prologue's `aux`, each challenge computed by
/// `challenge` on its own sink, in parallel on `pool`. With `expected_aux` (the recorded
/// circuit's count) every challenge writes straight into its share of one vector, which holds
/// at least `capacity` values: the challenges must have the same variables, and each must
/// fill its share exactly. Without it each grows its own and they are joined.
pub(crate) fn challenges_in_parallel<P: Sync>(
    mut aux: Vec<Fr>,
    proofs: &[P],
    pool: &rayon::ThreadPool,
    expected_aux: Option<usize>,
    capacity: usize,
    challenge: impl Fn(&mut Sink<'_>, usize, &P) -> Result<()> + Sync,
) -> Result<Challenges> {
    let cpu_us = AtomicU64::new(0);
    let timed = |i: usize, sink: &mut Sink<'_>, proof: &P| {
        let started = thread_cpu_ms();
        let result = challenge(sink, i, proof).with_context(|| format!("challenge {i}"));
        cpu_us.fetch_add(
            ((thread_cpu_ms() - started) * 1e3) as u64,
            Ordering::Relaxed,
        );
        result
    };
    // Indices of the challenges' public inputs start at 0 in their sinks: only values are kept.
    let inputs: Vec<Vec<Fr>> = match expected_aux {
        Some(expected_aux) => {
            let prologue = aux.len();
            let per = expected_aux
                .checked_sub(prologue)
                .filter(|rest| !proofs.is_empty() && rest % proofs.len() == 0)
                .map(|rest| rest / proofs.len())
                .with_context(|| {
                    format!(
                        "{expected_aux} aux variables do not split into a prologue of {prologue} and {} equal challenges",
                        proofs.len()
                    )
                })?;
            aux.reserve_exact(capacity.max(expected_aux) - prologue);
            advise_huge_pages(&mut aux);
            let slots = &mut aux.spare_capacity_mut()[..expected_aux - prologue];
            let inputs = pool.install(|| {
                slots
                    .par_chunks_mut(per)
                    .zip(proofs.par_iter())
                    .enumerate()
                    .map(|(i, (slots, proof))| {
                        let mut sink = Sink::in_slots(prologue + i * per, 0, slots);
                        timed(i, &mut sink, proof)?;
                        anyhow::ensure!(
                            sink.filled_exactly(),
                            "challenge {i} has {} aux variables, not {per}",
                            sink.aux_len()
                        );
                        Ok(std::mem::take(&mut sink.inputs))
                    })
                    .collect::<Result<_>>()
            })?;
            // SAFETY: the slots from `prologue` to `expected_aux` are the chunks above, and
            // every chunk was filled exactly (or this returned early).
            unsafe { aux.set_len(expected_aux) };
            inputs
        }
        None => {
            let challenges: Vec<(Vec<Fr>, Vec<Fr>)> = pool.install(|| {
                proofs
                    .par_iter()
                    .enumerate()
                    .map(|(i, proof)| {
                        // Aux indices inside this sink start at 0 too.
                        let mut sink = Sink::new(0, 0, 1 << 20);
                        timed(i, &mut sink, proof)?;
                        Ok((sink.take_aux(), std::mem::take(&mut sink.inputs)))
                    })
                    .collect::<Result<_>>()
            })?;
            challenges
                .into_iter()
                .map(|(challenge_aux, inputs)| {
                    aux.extend_from_slice(&challenge_aux);
                    inputs
                })
                .collect()
        }
    };
    Ok(Challenges {
        aux,
        inputs: inputs.into_iter().flatten().collect(),
        cpu_ms: cpu_us.into_inner() as f64 / 1e3,
    })
}
