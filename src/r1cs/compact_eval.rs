//! a = A·w, b = B·w and c = C·w evaluated from a compact witness straight into their compact
//! form: the host's evaluation for a prover that takes both compact (the cuda backend, on a
//! card the constraints do not fit).
//!
//! Why: evaluated the plain way, a 32GiB partition's witness is first expanded (4.2 GB
//! written, then read at random), a, b and c are written whole (12.9 GB) and read again to
//! be made compact, and most terms multiply a coefficient by a variable that is 0 or 1.
//! Here the witness is read in place ([`WitnessLookup`]: a few tens of MB of bits and
//! counts), a term of a bit adds its coefficient or nothing, only the wide variables (about
//! 1.3% of a PoRep witness) are multiplied, and each row is sorted as it is computed: only
//! the wide values of a, b and c are written, at their chunk's start
//! ([`CompactVector::pack`]), about a fifth of the bytes. The result is the layout
//! [`CompactVector::of`] makes of the whole vectors, value for value.

use std::mem::MaybeUninit;

use blstrs::Scalar as Fr;
use ff::Field;
use rayon::prelude::*;

use super::{R1cs, INPUT_BIT};
use crate::compact_witness::{Variable, WitnessLookup};
use crate::host_abc::compact::CompactVector;

impl R1cs {
    /// `M·w` for matrix `which`, written compact into `out` (one slot per row: each chunk of
    /// `chunk_rows` has its wide values at its start, the other rows not written), in
    /// parallel over chunks on the current rayon pool; returns the layout.
    pub(super) fn evaluate_compact_rows(
        &self,
        which: usize,
        inputs: &[Fr],
        witness: &WitnessLookup<'_>,
        out: &mut [MaybeUninit<Fr>],
        chunk_rows: usize,
    ) -> CompactVector {
        let (row_ptr, entries) = self.matrix(which);
        assert_eq!(out.len() + 1, row_ptr.len(), "one value per row");
        CompactVector::pack(
            out.len(),
            chunk_rows,
            out.par_chunks_mut(chunk_rows),
            |_, row, _| {
                let span = row_ptr[row] as usize..row_ptr[row + 1] as usize;
                self.row_value(&entries[span], inputs, witness)
            },
            |chunk, k, value| {
                chunk[k].write(value);
            },
        )
    }

    /// One row's combination of the witness.
    #[inline(always)]
    fn row_value(&self, entries: &[u64], inputs: &[Fr], witness: &WitnessLookup<'_>) -> Fr {
        let mut acc = Fr::ZERO;
        for &e in entries {
            let column = e & 0xffff_ffff;
            let id = (e >> 32) as u32;
            let x = if column & INPUT_BIT != 0 {
                &inputs[(column ^ INPUT_BIT) as usize]
            } else {
                match witness.get(column as usize) {
                    Variable::Zero => continue,
                    // The coefficient itself (one and minus one among them).
                    Variable::One => {
                        acc += self.coeffs[id as usize];
                        continue;
                    }
                    Variable::Wide(x) => x,
                }
            };
            if Some(id) == self.one {
                acc += x;
            } else if Some(id) == self.minus_one {
                acc -= x;
            } else {
                acc += *x * self.coeffs[id as usize];
            }
        }
        acc
    }
}
