//! a, b and c held compact in place, for a prover that expands them on its device.
//!
//! Why: where the constraints do not fit on the card, the host evaluates a, b and c and
//! all three cross the bus, 12.9 GB per 32GiB partition, while the GPU waits for a and c.
//! Most of their values are 0 or 1 (on the PoRep circuit: a 49% zero and 18% one, b 49% and
//! 50%, c 80% and 3%), so a bit each says which, and only the other values ("wide") cross
//! whole: about a fifth of the bytes.
//!
//! The layout is made in the vector's own memory, so a prover's pinned set needs no second
//! buffer and the wide values go up from it directly. The rows are cut in chunks of
//! [`CHUNK_ROWS`]; each chunk's wide values are moved, in order, to the chunk's start (a
//! value only ever moves down, so one pass forward does it in place). Beside the vector:
//! - `ones` and `wide`, a bit per row;
//! - `wide_before`, per word of 64 rows, the wide rows of its chunk before that word;
//! - `chunk_wide`, the wide rows of each chunk.
//!
//! Row `i`'s value is then the chunk's packed value number `wide_before[i / 64]` plus the
//! wide bits of its word below `i`, when its wide bit is set; one or zero by its ones bit
//! otherwise.
//!
//! Expanding in place goes the other way: a row's packed value sits at or below the row,
//! so rows written from the top of a chunk down never overwrite a value still to be read.
//! The device does it a tile of rows at a time, every row of a tile read before any is
//! written (`expand_abc_chunks` in `backend/cuda/kernels.cuh`); [`expand_in_tiles`]
//! models that here and is tested against the plain expansion.

use blstrs::Scalar as Fr;
use ff::Field;
use rayon::prelude::*;

use crate::compact_witness::{limbs, read_bits, Bits};

/// Rows per chunk: a multiple of 64, and few enough chunks (128 at 2^27 rows) that one
/// copy per chunk costs the bus nothing against its bytes.
pub const CHUNK_ROWS: usize = 1 << 20;

/// How one vector of `rows` values is held compact in its own memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompactVector {
    /// Rows.
    pub rows: usize,
    /// Rows per chunk, a multiple of 64.
    pub chunk_rows: usize,
    /// Bit `i % 64` of word `i / 64` is set when row `i` is one.
    pub ones: Vec<u64>,
    /// Bit `i % 64` of word `i / 64` is set when row `i` is wide (neither 0 nor 1).
    pub wide: Vec<u64>,
    /// Per word, the wide rows of its chunk before it.
    pub wide_before: Vec<u32>,
    /// Per chunk, its wide rows: the values packed at its start.
    pub chunk_wide: Vec<u32>,
}

impl CompactVector {
    /// Makes `values` compact in place, in chunks of [`CHUNK_ROWS`], on the current rayon
    /// pool.
    pub fn of(values: &mut [Fr]) -> CompactVector {
        Self::with_chunks(values, CHUNK_ROWS)
    }

    /// As [`Self::of`], in chunks of `chunk_rows` (a non-zero multiple of 64).
    pub fn with_chunks(values: &mut [Fr], chunk_rows: usize) -> CompactVector {
        let rows = values.len();
        Self::pack(
            rows,
            chunk_rows,
            values.par_chunks_mut(chunk_rows),
            // Read before the chunk's packed values reach it: a value only moves down.
            |chunk, _, at| chunk[at],
            |chunk, packed, value| chunk[packed] = value,
        )
    }

    /// `rows` values made compact as they are computed: `value(&chunk, row, at)` is row
    /// `row`, the `at`-th of its chunk, read in order; `put(&mut chunk, k, value)` writes
    /// the chunk's `k`-th wide value (at its start). `chunks` are the vector's memory in
    /// chunks of `chunk_rows` (a non-zero multiple of 64), done in parallel on the current
    /// rayon pool. So the host's evaluation writes a, b and c compact straight away
    /// (`r1cs::compact_eval`), and rows it never holds whole cost no memory traffic.
    pub fn pack<C: Send>(
        rows: usize,
        chunk_rows: usize,
        chunks: impl IndexedParallelIterator<Item = C>,
        value: impl Fn(&C, usize, usize) -> Fr + Sync,
        put: impl Fn(&mut C, usize, Fr) + Sync,
    ) -> CompactVector {
        assert!(
            chunk_rows > 0 && chunk_rows.is_multiple_of(64),
            "chunks of whole words"
        );
        let words = rows.div_ceil(64);
        let mut ones = vec![0u64; words];
        let mut wide = vec![0u64; words];
        let mut wide_before = vec![0u32; words];
        let words_per_chunk = chunk_rows / 64;
        let (one, zero) = (*limbs(&Fr::ONE), [0u64; 4]);
        let mut chunk_wide: Vec<u32> = chunks
            .zip(ones.par_chunks_mut(words_per_chunk))
            .zip(wide.par_chunks_mut(words_per_chunk))
            .zip(wide_before.par_chunks_mut(words_per_chunk))
            .enumerate()
            .map(|(c, (((mut chunk, ones), wide), before))| {
                let first = c * chunk_rows;
                let len = chunk_rows.min(rows - first);
                let mut packed = 0usize;
                for (w, word_rows) in (0..len).step_by(64).enumerate() {
                    // At most 2^20 rows in a chunk (`CHUNK_ROWS`); more only in tests.
                    before[w] = packed as u32;
                    for bit in 0..64.min(len - word_rows) {
                        let at = word_rows + bit;
                        let value = value(&chunk, first + at, at);
                        let value_limbs = limbs(&value);
                        if *value_limbs == one {
                            ones[w] |= 1 << bit;
                        } else if *value_limbs != zero {
                            wide[w] |= 1 << bit;
                            // packed <= at: the value moves down or stays.
                            put(&mut chunk, packed, value);
                            packed += 1;
                        }
                    }
                }
                packed as u32
            })
            .collect();
        chunk_wide.shrink_to_fit();
        CompactVector {
            rows,
            chunk_rows,
            ones,
            wide,
            wide_before,
            chunk_wide,
        }
    }

    /// Row `row`'s value, read from `packed`, its chunk's memory (whose start holds the
    /// chunk's wide values).
    fn value(&self, row: usize, packed: &[Fr]) -> Fr {
        match read_bits(&self.ones, &self.wide, &self.wide_before, row) {
            Bits::Zero => Fr::ZERO,
            Bits::One => Fr::ONE,
            Bits::Wide(k) => packed[k],
        }
    }

    /// `values` (made compact by [`Self::of`]) whole again, in place, on the current rayon
    /// pool: each chunk from its top row down.
    pub fn expand(&self, values: &mut [Fr]) {
        assert_eq!(values.len(), self.rows, "the vector it was made of");
        values
            .par_chunks_mut(self.chunk_rows)
            .enumerate()
            .for_each(|(c, chunk)| {
                let first = c * self.chunk_rows;
                for at in (0..chunk.len()).rev() {
                    chunk[at] = self.value(first + at, chunk);
                }
            });
    }

    /// Whether it lays out a vector of `rows` values in chunks the device can take (whole
    /// words).
    pub fn is_layout_of(&self, rows: usize) -> bool {
        self.rows == rows && self.chunk_rows > 0 && self.chunk_rows.is_multiple_of(64)
    }

    /// Bytes held beside a vector of `rows` made compact in chunks of `chunk_rows`: what
    /// [`Self::bytes`] gives of it, known before it is made.
    pub fn bytes_for(rows: usize, chunk_rows: usize) -> u64 {
        let words = rows.div_ceil(64);
        let chunks = rows.div_ceil(chunk_rows.max(1));
        (words * (8 + 8 + 4) + chunks * 4) as u64
    }

    /// Bytes held beside the vector.
    pub fn bytes(&self) -> u64 {
        ((self.ones.capacity() + self.wide.capacity()) * 8
            + (self.wide_before.capacity() + self.chunk_wide.capacity()) * 4) as u64
    }
}

/// The device's expansion (`expand_abc_chunks`), modelled: per chunk, tiles of `tile` rows
/// from the top down, every row of a tile read before any of them is written.
pub fn expand_in_tiles(layout: &CompactVector, values: &mut [Fr], tile: usize) {
    for (c, chunk) in values.chunks_mut(layout.chunk_rows).enumerate() {
        let first = c * layout.chunk_rows;
        let mut top = chunk.len();
        while top > 0 {
            let start = top.saturating_sub(tile);
            let read: Vec<Fr> = (start..top)
                .map(|at| layout.value(first + at, chunk))
                .collect();
            chunk[start..top].copy_from_slice(&read);
            top = start;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows of all kinds: runs of zeros and ones, small and full-width values, equal values
    /// next to each other, a chunk of only wide values and one of only zeros.
    fn vector(rows: usize, seed: u64) -> Vec<Fr> {
        let mut state = seed;
        (0..rows)
            .map(|i| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                match (i / 256, state >> 61) {
                    (3, _) => Fr::from(state | 2),
                    (5, _) => Fr::ZERO,
                    (_, 0..=2) => Fr::ZERO,
                    (_, 3..=4) => Fr::ONE,
                    (_, 5) => Fr::from(i as u64 + 2),
                    _ => -Fr::from(state),
                }
            })
            .collect()
    }

    #[test]
    fn a_compact_vector_expands_to_what_it_was() {
        for (rows, chunk) in [
            (0, 64),
            (1, 64),
            (63, 64),
            (64, 64),
            (1000, 256),
            (1600, 256),
            (3000, 1024),
        ] {
            let original = vector(rows, rows as u64);
            let mut values = original.clone();
            let layout = CompactVector::with_chunks(&mut values, chunk);
            assert_eq!(layout.chunk_wide.len(), rows.div_ceil(chunk));
            let wide = original
                .iter()
                .filter(|v| !bool::from(v.is_zero()) && **v != Fr::ONE)
                .count();
            assert_eq!(
                layout.chunk_wide.iter().map(|&w| w as usize).sum::<usize>(),
                wide
            );
            layout.expand(&mut values);
            assert_eq!(values, original, "{rows} rows in chunks of {chunk}");
        }
    }

    #[test]
    fn each_chunk_holds_its_wide_values_in_order_at_its_start() {
        let original = vector(1600, 7);
        let mut values = original.clone();
        let layout = CompactVector::with_chunks(&mut values, 256);
        for (c, (chunk, packed)) in original.chunks(256).zip(values.chunks(256)).enumerate() {
            let wide: Vec<Fr> = chunk
                .iter()
                .copied()
                .filter(|v| !bool::from(v.is_zero()) && *v != Fr::ONE)
                .collect();
            assert_eq!(layout.chunk_wide[c] as usize, wide.len());
            assert_eq!(&packed[..wide.len()], &wide[..], "chunk {c}");
        }
        // The bits say what each row is, and the counts restart at each chunk.
        for (i, value) in original.iter().enumerate() {
            let (w, bit) = (i / 64, i % 64);
            assert_eq!(layout.ones[w] >> bit & 1 == 1, *value == Fr::ONE, "row {i}");
        }
        assert_eq!(layout.wide_before[4], 0, "row 256 starts chunk 1");
        assert_eq!(
            layout.wide_before[3] + (layout.wide[3]).count_ones(),
            layout.chunk_wide[0]
        );
        assert_eq!(layout.chunk_wide[3], 256, "a chunk of wide values only");
        assert_eq!(layout.chunk_wide[5], 0, "a chunk of zeros only");
    }

    #[test]
    fn the_devices_expansion_by_tiles_from_the_top_gives_the_vector_back() {
        // Tiles that divide the chunk and tiles that do not, down to a single row; a tile
        // read after one below it was written would read an overwritten value.
        for tile in [1, 7, 64, 100, 256, 1024] {
            let original = vector(3000, tile as u64);
            let mut values = original.clone();
            let layout = CompactVector::with_chunks(&mut values, 1024);
            expand_in_tiles(&layout, &mut values, tile);
            assert_eq!(values, original, "tiles of {tile}");
        }
    }

    #[test]
    fn reading_a_tile_from_the_bottom_up_would_overwrite_packed_values() {
        // The order is what makes the in-place expansion safe: rows written from the bottom
        // of a chunk up destroy the packed values of the rows above them.
        let original = vector(1024, 3);
        let mut values = original.clone();
        let layout = CompactVector::with_chunks(&mut values, 1024);
        for at in 0..values.len() {
            values[at] = layout.value(at, &values);
        }
        assert_ne!(values, original);
    }

    /// Bytes that cross the bus (as the device's upload counts them): the bits, the counts
    /// and the wide values.
    fn bus_bytes(layout: &CompactVector) -> u64 {
        let wide: u64 = layout.chunk_wide.iter().map(|&w| u64::from(w)).sum();
        ((layout.ones.len() + layout.wide.len()) * 8 + layout.wide_before.len() * 4) as u64
            + wide * std::mem::size_of::<Fr>() as u64
    }

    #[test]
    fn a_vector_of_bits_crosses_the_bus_in_a_fraction_of_its_bytes() {
        let mut values: Vec<Fr> = (0..1 << 16)
            .map(|i| if i % 3 == 0 { Fr::ONE } else { Fr::ZERO })
            .collect();
        let whole = (values.len() * 32) as u64;
        let layout = CompactVector::of(&mut values);
        assert!(bus_bytes(&layout) * 50 < whole, "{}", bus_bytes(&layout));
    }
}
