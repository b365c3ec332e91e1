//! SupraSeal's own host buffers: what one call of its prover allocates on the host beside
//! the SRS (counted as the parameter set) and the partitions it is handed (counted per
//! partition), as plain arithmetic for the memory budget.
//!
//! Read from supra_seal's `c2/cuda/groth16_cuda.cu` (`generate_groth16_proofs_c`) and
//! `groth16_split_msm.cu` (`split_vectors`): each call splits the L, A and B multiexps into
//! a batch addition of the points whose scalar is 0 or 1 (on the GPU, driven by bit
//! vectors) and a "tail" multiexp of the rest, for which it copies, on the host,
//!
//! - per partition and per L, A, B: a bit vector of one bit per point (`bit_vector`);
//! - once per call: the merged masks, one bit per point (`tail_msm_*_mask`);
//! - per partition: the tail's scalars, 32 bytes each (`tail_msm_scalars`), for every point
//!   whose scalar is neither 0 nor 1 in any partition of the batch (all inputs go there too);
//! - once per call: the tail's bases (`tail_msm_*_bases`): 96 bytes per G1 point, and the B
//!   tail once more in G2 (192 bytes).
//!
//! The tail's size depends on the witness, known only when the partition is synthesized, so
//! the budget charges an estimate: [`ESTIMATED_TAIL_SHARE`] of each point set, per GPU
//! partition in a call. [`TailCounts::of`] counts it exactly for partitions at hand (what the
//! test suite checks the estimate against). The CPU multiexp of B in G2 and sppark's staging
//! are not counted (buckets of a few hundred MB); at 32GiB the figures await a measurement on
//! the GPU machine (BENCHMARKS.md).

use crate::compact_witness::is_wide;
use crate::params::load::{ParamsLayout, G1_BYTES, G2_BYTES};
use crate::synth::SynthesizedPartition;

/// The share of L, A and B points charged as the tail: SHA-256 and bit decompositions make
/// most of PoRep's witness 0 or 1, the Poseidon and Merkle values do not. Real 2KiB sectors
/// need 4.6% at most (B; the same positions in every partition, so two partitions to a call
/// need no more); twice that and some, for larger sectors' circuits, until the 32GiB figure
/// is measured (the test suite asserts the estimate covers the 2KiB sectors).
pub const ESTIMATED_TAIL_SHARE: f64 = 0.10;

/// Bytes of one scalar.
const SCALAR_BYTES: u64 = 32;

/// Points of a call's tail multiexps: L, A (inputs included) and B.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TailCounts {
    /// L points whose scalar is neither 0 nor 1 in some partition.
    pub l: u64,
    /// A points: every input, and the aux in A's density whose scalar is neither 0 nor 1.
    pub a: u64,
    /// B points: the inputs in B's density, and its aux whose scalar is neither 0 nor 1.
    pub b: u64,
}

impl TailCounts {
    /// The tail of a call proving `batch` together, as SupraSeal counts it (merged over the
    /// batch).
    pub fn of(batch: &[&SynthesizedPartition]) -> TailCounts {
        let Some(first) = batch.first() else {
            return TailCounts::default();
        };
        let aux = first.aux_assignment.len();
        let is_tail = |i: usize| {
            batch
                .iter()
                .any(|p| p.aux_assignment.get(i).is_some_and(is_wide))
        };
        let (mut l, mut a, mut b) = (0u64, first.input_assignment.len() as u64, 0u64);
        b += first.b_input_density.get_total_density() as u64;
        for i in 0..aux {
            if !is_tail(i) {
                continue;
            }
            l += 1;
            a += u64::from(first.a_aux_density.bv.get(i).is_some_and(|bit| *bit));
            b += u64::from(first.b_aux_density.bv.get(i).is_some_and(|bit| *bit));
        }
        TailCounts { l, a, b }
    }

    /// The estimate for a circuit of `layout`: [`ESTIMATED_TAIL_SHARE`] of each point set.
    pub fn estimate(layout: &ParamsLayout) -> TailCounts {
        let share = |n: u64| (n as f64 * ESTIMATED_TAIL_SHARE).ceil() as u64;
        TailCounts {
            l: share(layout.l),
            a: share(layout.a),
            b: share(layout.b),
        }
    }

    /// The share of `layout`'s points this tail holds, the largest of L, A and B.
    pub fn share_of(&self, layout: &ParamsLayout) -> f64 {
        let share = |tail: u64, all: u64| tail as f64 / all.max(1) as f64;
        share(self.l, layout.l)
            .max(share(self.a, layout.a))
            .max(share(self.b, layout.b))
    }
}

/// Host bytes one SupraSeal call proving `batch` partitions of `layout`'s circuit allocates
/// beyond the SRS and the partitions, with a tail of `tail` points.
pub fn call_bytes(layout: &ParamsLayout, batch: u64, tail: TailCounts) -> u64 {
    let bit_words = |points: u64| points.div_ceil(64) * 8;
    let bits = bit_words(layout.l) + bit_words(layout.a) + bit_words(layout.b);
    let scalars = (tail.l + tail.a + tail.b) * SCALAR_BYTES;
    let bases = (tail.l + tail.a + tail.b) * G1_BYTES + tail.b * G2_BYTES;
    batch * (bits + scalars) + bits + bases
}

/// The budget's charge for one SupraSeal call of `batch` partitions of `layout`'s circuit.
pub fn estimated_call_bytes(layout: &ParamsLayout, batch: u64) -> u64 {
    call_bytes(layout, batch.max(1), TailCounts::estimate(layout))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::cuda::residency::tests::layout_32gib;

    #[test]
    fn a_call_charges_its_bit_vectors_and_its_tail() {
        let layout = layout_32gib();
        let none = call_bytes(&layout, 1, TailCounts::default());
        // Bit vectors and masks alone: two bits per point, about 73 MB at 32GiB.
        assert!((70e6..80e6).contains(&(none as f64)), "{none}");
        let all = TailCounts {
            l: layout.l,
            a: layout.a,
            b: layout.b,
        };
        // Every scalar wide (the worst case): scalars 9.4 GB, bases 34.5 GB.
        let worst = call_bytes(&layout, 1, all) as f64;
        assert!((43.5e9..44.5e9).contains(&worst), "{worst}");
        // A pair of partitions per call copies the bases once and the scalars twice.
        let pair = call_bytes(&layout, 2, all) as f64;
        assert!((pair - worst - 9.4e9).abs() < 0.2e9, "{pair}");
        let estimate = estimated_call_bytes(&layout, 1) as f64;
        assert!((4.3e9..4.6e9).contains(&estimate), "{estimate}");
    }
}
