//! Compact witnesses: a partition's aux variables as the bits they mostly are.
//!
//! A PoRep partition's witness is almost all booleans (the bits of its SHA-256 gadgets):
//! at the 32GiB shape, 130M aux variables of which about 1.3% are neither 0 nor 1. Held as
//! field elements they are 4.2 GB per partition in flight, and 4.2 GB to upload. Held here
//! as one bit per variable for the ones, and the other values with their positions, they
//! are 16 MB plus 36 bytes per wide value (about 80 MB), which is what a partition in
//! flight then holds and what goes to the GPU, where it is expanded back
//! (`backend/cuda/groth16.cu`). Any prover that needs the field elements on the host
//! expands it first ([`CompactWitness::expand`]).

use blstrs::Scalar as Fr;
use ff::Field;
use rayon::prelude::*;

/// A scalar other than 0 and 1: stored whole, not as a bit.
pub fn is_wide(scalar: &Fr) -> bool {
    !bool::from(scalar.is_zero()) && *scalar != Fr::ONE
}

// blstrs' `Scalar` is `repr(transparent)` over blst's `blst_fr`, which is `repr(C)` over four
// `u64` limbs in Montgomery form: the layout the GPU reads too.
const _: () = assert!(
    std::mem::size_of::<Fr>() == 32 && std::mem::align_of::<Fr>() == std::mem::align_of::<u64>()
);

/// `value`'s Montgomery limbs: comparing these is several times faster than `Scalar`'s
/// constant-time equality, which matters over a 130M-variable witness.
pub(crate) fn limbs(value: &Fr) -> &[u64; 4] {
    // SAFETY: same size and alignment (asserted above), and every bit pattern is a valid
    // `[u64; 4]`; the borrow keeps `value` alive.
    unsafe { &*(value as *const Fr).cast::<[u64; 4]>() }
}

/// Aux variables stored as bits, with the wide values (neither 0 nor 1) beside them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompactWitness {
    /// Variables.
    pub len: usize,
    /// Bit `i % 64` of word `i / 64` is set when variable `i` is one.
    pub ones: Vec<u64>,
    /// Positions of the wide variables, ascending.
    pub wide_index: Vec<u32>,
    /// Their values, in the same order.
    pub wide_values: Vec<Fr>,
}

/// Past this share of wide values a compact witness saves little.
const MAX_WIDE_SHARE: usize = 8;

impl CompactWitness {
    /// `aux` in compact form; `None` when it would not be smaller by much (more than one
    /// value in [`MAX_WIDE_SHARE`] wide) or has too many variables for 32-bit positions.
    pub fn of(aux: &[Fr]) -> Option<CompactWitness> {
        if u32::try_from(aux.len()).is_err() {
            return None;
        }
        let (one, zero) = (*limbs(&Fr::ONE), [0u64; 4]);
        let mut ones = vec![0u64; aux.len().div_ceil(64)];
        let mut wide_index = Vec::new();
        let mut wide_values = Vec::new();
        for (w, (word, chunk)) in ones.iter_mut().zip(aux.chunks(64)).enumerate() {
            for (bit, value) in chunk.iter().enumerate() {
                let value_limbs = limbs(value);
                if *value_limbs == one {
                    *word |= 1 << bit;
                } else if *value_limbs != zero {
                    if wide_values.len() >= aux.len() / MAX_WIDE_SHARE {
                        return None;
                    }
                    // In range: the length fits 32 bits, checked above.
                    wide_index.push((w * 64 + bit) as u32);
                    wide_values.push(*value);
                }
            }
        }
        Some(CompactWitness {
            len: aux.len(),
            ones,
            wide_index,
            wide_values,
        })
    }

    /// The aux variables as field elements again, on the current rayon pool: at 32GiB it
    /// writes 4.2 GB, which one thread does too slowly for a prover waiting on it.
    pub fn expand(&self) -> Vec<Fr> {
        let mut aux: Vec<Fr> = (0..self.len)
            .into_par_iter()
            .with_min_len(1 << 14)
            .map(|i| match self.ones[i / 64] >> (i % 64) & 1 {
                1 => Fr::ONE,
                _ => Fr::ZERO,
            })
            .collect();
        for (&i, value) in self.wide_index.iter().zip(&self.wide_values) {
            aux[i as usize] = *value;
        }
        aux
    }

    /// Reads it variable by variable without expanding it ([`WitnessLookup`]).
    pub fn lookup(&self) -> WitnessLookup<'_> {
        let words = self.ones.len();
        let mut wide = vec![0u64; words];
        for &i in &self.wide_index {
            wide[i as usize / 64] |= 1 << (i % 64);
        }
        let mut wide_before = Vec::with_capacity(words);
        let mut before = 0u32;
        for word in &wide {
            wide_before.push(before);
            before += word.count_ones();
        }
        WitnessLookup {
            ones: &self.ones,
            wide,
            wide_before,
            values: &self.wide_values,
        }
    }

    /// Bytes it holds.
    pub fn bytes(&self) -> u64 {
        (self.ones.capacity() * 8
            + self.wide_index.capacity() * 4
            + self.wide_values.capacity() * std::mem::size_of::<Fr>()) as u64
    }
}

/// One aux variable of a compact witness, as [`WitnessLookup::get`] reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variable<'a> {
    /// Zero.
    Zero,
    /// One.
    One,
    /// Neither: its value.
    Wide(&'a Fr),
}

/// A compact witness read in place, for the host's evaluation of a, b and c from it
/// (`r1cs::compact_eval`): a bit per variable says one, a second bit wide, and a count per
/// word of 64 finds a wide value. 16 MB of bits and 8 MB of counts at 32GiB stay in the
/// caches far better than the 4.2 GB of field elements the witness expands to.
pub struct WitnessLookup<'a> {
    ones: &'a [u64],
    /// Bit `i % 64` of word `i / 64` is set when variable `i` is wide.
    wide: Vec<u64>,
    /// Per word, the wide variables before it.
    wide_before: Vec<u32>,
    values: &'a [Fr],
}

impl WitnessLookup<'_> {
    /// Variable `i`.
    #[inline(always)]
    pub fn get(&self, i: usize) -> Variable<'_> {
        match read_bits(self.ones, &self.wide, &self.wide_before, i) {
            Bits::Zero => Variable::Zero,
            Bits::One => Variable::One,
            Bits::Wide(k) => Variable::Wide(&self.values[k]),
        }
    }
}

/// Entry `i` of values held as bits, as [`read_bits`] reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Bits {
    Zero,
    One,
    /// Neither: the number of its value among the wide values counted from the same start
    /// as `wide_before`.
    Wide(usize),
}

/// Entry `i` of values held as bits: `ones` and `wide` have a bit per entry, `wide_before`
/// per word of 64 the wide entries before it (in the witness, or in the word's chunk of a
/// compact vector, `host_abc::compact`).
#[inline(always)]
pub(crate) fn read_bits(ones: &[u64], wide: &[u64], wide_before: &[u32], i: usize) -> Bits {
    let (w, bit) = (i / 64, i % 64);
    if wide[w] >> bit & 1 == 1 {
        let below = wide[w] & ((1u64 << bit) - 1);
        Bits::Wide(wide_before[w] as usize + below.count_ones() as usize)
    } else if ones[w] >> bit & 1 == 1 {
        Bits::One
    } else {
        Bits::Zero
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn witness(len: usize, wide_every: usize) -> Vec<Fr> {
        (0..len)
            .map(|i| match i % wide_every {
                0 => Fr::from(i as u64 + 2),
                k if k % 3 == 0 => Fr::ZERO,
                _ => Fr::ONE,
            })
            .collect()
    }

    #[test]
    fn a_mostly_boolean_witness_comes_back_element_for_element() {
        for len in [10, 63, 64, 65, 1000, 4097] {
            let aux = witness(len, 10);
            let compact = CompactWitness::of(&aux).expect("a tenth wide is compacted");
            assert_eq!(compact.expand(), aux, "{len} variables");
            assert_eq!(compact.ones.len(), len.div_ceil(64));
            let wide = aux.iter().filter(|v| is_wide(v)).count();
            assert_eq!(compact.wide_values.len(), wide);
            assert!(compact.wide_index.windows(2).all(|w| w[0] < w[1]));
        }
    }

    #[test]
    fn a_lookup_reads_every_variable_as_the_expanded_witness_holds_it() {
        for (len, wide_every) in [(1, 1), (10, 10), (64, 3), (65, 7), (1000, 9), (4097, 10)] {
            let aux = witness(len, wide_every);
            let Some(compact) = CompactWitness::of(&aux) else {
                assert!(wide_every < MAX_WIDE_SHARE, "{len} / {wide_every}");
                continue;
            };
            let lookup = compact.lookup();
            for (i, value) in aux.iter().enumerate() {
                let read = match lookup.get(i) {
                    Variable::Zero => Fr::ZERO,
                    Variable::One => Fr::ONE,
                    Variable::Wide(v) => {
                        assert!(is_wide(v), "variable {i} read wide");
                        *v
                    }
                };
                assert_eq!(read, *value, "variable {i} of {len}");
            }
        }
    }

    #[test]
    fn a_witness_of_bits_alone_is_a_bit_per_variable() {
        let aux: Vec<Fr> = (0..640).map(|i| Fr::from((i % 2) as u64)).collect();
        let compact = CompactWitness::of(&aux).unwrap();
        assert!(compact.wide_values.is_empty());
        assert_eq!(compact.ones, vec![0xaaaa_aaaa_aaaa_aaaa; 10]);
        assert_eq!(compact.bytes(), 80);
        assert_eq!(compact.expand(), aux);
    }

    #[test]
    fn a_witness_of_wide_values_is_left_whole() {
        let aux = witness(1000, 2);
        assert_eq!(CompactWitness::of(&aux), None);
        assert!(CompactWitness::of(&[]).is_some_and(|c| c.expand().is_empty()));
    }

    #[test]
    fn minus_one_and_two_are_wide_and_one_is_not() {
        assert!(is_wide(&Fr::from(2)));
        assert!(is_wide(&-Fr::ONE));
        assert!(!is_wide(&Fr::ONE));
        assert!(!is_wide(&Fr::ZERO));
        // The limbs are Montgomery's: one is not the integer 1 there.
        assert_ne!(*limbs(&Fr::ONE), [1, 0, 0, 0]);
        assert_eq!(*limbs(&Fr::ZERO), [0; 4]);
        let values = [Fr::ZERO, Fr::ONE, -Fr::ONE, Fr::from(2), Fr::from(u64::MAX)];
        let compact = CompactWitness::of(&[&values[..], &[Fr::ZERO; 40]].concat()).unwrap();
        assert_eq!(compact.ones[0], 0b10);
        assert_eq!(compact.wide_index, vec![2, 3, 4]);
    }
}
