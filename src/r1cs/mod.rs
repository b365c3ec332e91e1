//! Pre-compiled constraints: a circuit shape's R1CS recorded once, kept on disk beside its
//! parameters, and the witness-only synthesis that uses it.
//!
//! Every partition of a given proof type has the same constraints; only the witness changes.
//! Full synthesis rebuilds every linear combination of every constraint for every partition.
//! Here the A, B and C matrices are recorded once ([`R1cs::record`]) in a compressed sparse
//! row form, with each distinct coefficient stored once and referred to by a 32-bit id (a
//! PoRep circuit has a few thousand distinct coefficients), together with the query
//! densities. A partition is then synthesized by computing only its witness (a constraint
//! system that allocates and assigns but never builds a linear combination) and evaluating
//! `a = A·w`, `b = B·w`, `c = C·w` as sparse matrix-vector products on a bounded pool of
//! threads. The result is the same [`SynthesizedPartition`] the full path makes. For a prover
//! that takes the witness and a, b and c compact (the cuda backend on a card the constraints
//! do not fit), they are evaluated from the compact witness straight into their compact form
//! (`compact_eval`).
//!
//! The file (`cuzk-r1cs-v1-<parameter file stem>-<circuit identity>.r1cs`, see [`identity`])
//! is little-endian: a header of counts,
//! the coefficients, then for A, B and C the row offsets (u64) and the entries (u64: column in
//! the low 32 bits, inputs flagged by the top bit, coefficient id in the high 32), then the
//! three density bit vectors, and last a BLAKE3 digest of everything before it. It is mapped,
//! not read, so the page cache holds one copy however many runs use it, and it is never
//! replaced once written (see [`R1cs::save`]).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::mem::MaybeUninit;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, ensure, Context, Result};
use bellperson::{Circuit, SynthesisError};
use bitvec::prelude::{BitVec, Lsb0};
use blstrs::Scalar as Fr;
use ec_gpu_gen::multiexp_cpu::DensityTracker;
use ff::{Field, PrimeField};
use rayon::prelude::*;

use crate::atomic_file;
use crate::compact_witness::WitnessLookup;
use crate::host_abc::compact::{CompactVector, CHUNK_ROWS};
use crate::synth::{
    next_witness_id, thread_cpu_ms, Capacity, ConstraintMatrices, SynthesisProfile,
    SynthesizedPartition, WitnessPath,
};
use crate::witness::sink::Sink;
use crate::witness::Witness;
use recorder::Recorder;

mod compact_eval;
mod identity;
mod lanes;
mod recorder;
#[cfg(test)]
mod tests;

pub use identity::{CircuitIdentity, RECORDER_VERSION};
pub use lanes::Units;

/// The file format's magic.
const MAGIC: &[u8; 8] = b"CUZKR1CS";
/// The file format's version, in every file's header and name.
pub const VERSION: u32 = 1;
/// Marks an input column (aux columns are below it).
const INPUT_BIT: u64 = 1 << 31;
/// Rows evaluated per task.
const ROWS_PER_TASK: usize = 1 << 14;

/// Counts in a recorded R1CS.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct R1csCounts {
    /// Public inputs, the constant one included.
    pub inputs: u64,
    /// Aux variables.
    pub aux: u64,
    /// Constraints, the input constraints included.
    pub constraints: u64,
    /// Distinct coefficients.
    pub coeffs: u64,
    /// Non-zero entries of A, B and C.
    pub nnz: [u64; 3],
}

/// A circuit shape's constraints, recorded or loaded.
pub struct R1cs {
    counts: R1csCounts,
    coeffs: Vec<Fr>,
    /// The id of the coefficient one, if present: a plain addition.
    one: Option<u32>,
    /// The id of minus one: a plain subtraction.
    minus_one: Option<u32>,
    storage: Storage,
    densities: [DensityTracker; 3],
}

/// Where the matrices live: recorded in memory, or mapped from the file.
enum Storage {
    Owned([Matrix; 3]),
    Mapped {
        map: memmap2::Mmap,
        /// The file, its shared lock held while it is mapped, so that `cuzk params prune`
        /// leaves it alone (`params::prune`).
        _file: File,
        /// (row offsets start, entries start), in u64 words, for A, B and C.
        sections: [(usize, usize); 3],
    },
}

/// The size of a circuit without its witness: what the Groth16 parameters of a circuit
/// must hold, counted by the same density rules the prover follows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ShapeCounts {
    /// Constraints, the input constraints included (the length of a, b and c).
    pub constraints: u64,
    /// Public inputs, the constant one included.
    pub inputs: u64,
    /// Aux variables.
    pub aux: u64,
    /// Aux variables used by some A combination.
    pub a_aux_density: u64,
    /// Inputs used by some B combination.
    pub b_input_density: u64,
    /// Aux variables used by some B combination.
    pub b_aux_density: u64,
}

impl ShapeCounts {
    /// The FFT domain: constraints rounded up to a power of two.
    pub fn domain(&self) -> u64 {
        self.constraints.next_power_of_two()
    }
}

/// Counts `circuit`'s shape without computing its witness and without keeping its
/// constraints: no value is ever asked for, so a blank circuit (the one parameters are
/// generated from) will do.
pub fn count_shape<C: Circuit<Fr>>(circuit: C) -> Result<ShapeCounts, SynthesisError> {
    let cs = Recorder::run(circuit, false)?;
    Ok(ShapeCounts {
        constraints: cs.constraints,
        inputs: cs.inputs as u64,
        aux: cs.aux as u64,
        a_aux_density: cs.a_aux.get_total_density() as u64,
        b_input_density: cs.b_input.get_total_density() as u64,
        b_aux_density: cs.b_aux.get_total_density() as u64,
    })
}

/// One matrix in compressed sparse rows: row `r`'s entries are
/// `entries[row_ptr[r]..row_ptr[r + 1]]`.
struct Matrix {
    row_ptr: Vec<u64>,
    entries: Vec<u64>,
}

impl Default for Matrix {
    fn default() -> Self {
        Matrix {
            row_ptr: vec![0],
            entries: Vec::new(),
        }
    }
}

impl R1cs {
    /// The counts a parameter file made for this circuit holds: inputs, aux variables, H
    /// bases (the FFT domain less one), A bases (inputs and the A aux density) and B bases
    /// (both B densities).
    pub fn parameter_counts(&self) -> [u64; 5] {
        let counts = self.counts();
        let [a_aux, b_input, b_aux] = self
            .densities
            .each_ref()
            .map(|d| d.get_total_density() as u64);
        [
            counts.inputs,
            counts.aux,
            counts.constraints.next_power_of_two() - 1,
            counts.inputs + a_aux,
            b_input + b_aux,
        ]
    }

    /// The counts.
    pub fn counts(&self) -> R1csCounts {
        self.counts
    }

    /// Bytes the matrices occupy (in memory, or in the page cache when mapped).
    pub fn memory_bytes(&self) -> u64 {
        let rows = 3 * (self.counts.constraints + 1);
        8 * (rows + self.counts.nnz.iter().sum::<u64>()) + 32 * self.counts.coeffs
    }

    fn matrix(&self, which: usize) -> (&[u64], &[u64]) {
        match &self.storage {
            Storage::Owned(m) => (&m[which].row_ptr, &m[which].entries),
            Storage::Mapped { map, sections, .. } => {
                let words = as_words(map);
                let (ptr_at, entries_at) = sections[which];
                let rows = self.counts.constraints as usize + 1;
                let nnz = self.counts.nnz[which] as usize;
                (
                    &words[ptr_at..ptr_at + rows],
                    &words[entries_at..entries_at + nnz],
                )
            }
        }
    }

    /// Records the constraints of `circuit` (values are never asked for: a blank circuit
    /// will do), the input constraints included, as the prover appends them.
    pub fn record<C: Circuit<Fr>>(circuit: C) -> Result<R1cs, SynthesisError> {
        Ok(Recorder::run(circuit, true)?.finish())
    }

    /// [`R1cs::record`] on `threads` threads, each running the circuit `make` builds and
    /// keeping its share of the rows: the same constraints, in a fraction of the time (see
    /// [`lanes`]).
    pub fn record_on_threads<C, F>(make: F, threads: usize) -> Result<R1cs>
    where
        C: Circuit<Fr>,
        F: Fn() -> C + Sync,
    {
        if threads <= 1 {
            return Ok(R1cs::record(make())?);
        }
        lanes::record_in_lanes(|| Ok(make()), threads)
    }

    /// [`R1cs::record`] of a circuit made of alike units (a PoRep partition's challenges) on
    /// `threads` threads, each running the prelude and its share of the units only: the same
    /// constraints, in about the time of the prelude and one share (see [`lanes`]).
    pub fn record_units_on_threads<U: Units>(circuit: &U, threads: usize) -> Result<R1cs> {
        if threads <= 1 {
            return Ok(R1cs::record(circuit.with_units(0..circuit.units())?)?);
        }
        let (r1cs, split) = lanes::record_by_units(circuit, threads)?;
        log::debug!("constraints recorded on {threads} threads, split {split:?}");
        Ok(r1cs)
    }

    /// The threads a recording uses: the cores this process may run on, at most 32 (each
    /// thread runs the whole circuit, so beyond that the shared part dominates).
    pub fn recording_threads() -> usize {
        std::thread::available_parallelism().map_or(1, |n| n.get().min(32))
    }

    /// Writes the R1CS to `path` atomically (see [`atomic_file`]), unless a file is there
    /// already: that one is left as it is, since another process may have it mapped (and a
    /// mapped file replaced on NFS kills its reader with SIGBUS). True when written.
    pub fn save(&self, path: &Path) -> Result<bool> {
        atomic_file::remove_stale_temporaries_of(path);
        atomic_file::write_new_with(path, |file| {
            let mut out = HashingWriter {
                inner: BufWriter::with_capacity(8 << 20, file),
                hasher: blake3::Hasher::new(),
            };
            let c = &self.counts;
            out.write_all(MAGIC)?;
            out.write_all(&VERSION.to_le_bytes())?;
            out.write_all(&0u32.to_le_bytes())?;
            for n in [
                c.inputs,
                c.aux,
                c.constraints,
                c.coeffs,
                c.nnz[0],
                c.nnz[1],
                c.nnz[2],
            ] {
                out.write_all(&n.to_le_bytes())?;
            }
            for coeff in &self.coeffs {
                out.write_all(coeff.to_repr().as_ref())?;
            }
            for which in 0..3 {
                let (row_ptr, entries) = self.matrix(which);
                write_words(&mut out, row_ptr)?;
                write_words(&mut out, entries)?;
            }
            for density in &self.densities {
                write_words(&mut out, &density_words(density))?;
            }
            let digest = out.hasher.finalize();
            let mut inner = out.inner;
            inner.write_all(digest.as_bytes())?;
            inner.flush()?;
            Ok(())
        })
    }

    /// Maps the R1CS at `path` and checks its digest.
    pub fn load(path: &Path) -> Result<R1cs> {
        let file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
        // Held while mapped: `cuzk params prune` removes no file a run maps. A file system
        // without locks (an NFS mount without its lock service) only loses that guard.
        if let Err(err) = file.lock_shared() {
            log::debug!(
                "{}: no shared lock ({err}); read all the same",
                path.display()
            );
        }
        // SAFETY: the file is only ever replaced by rename, never written in place, so the
        // mapped bytes do not change under us.
        let map = unsafe { memmap2::Mmap::map(&file) }
            .with_context(|| format!("mapping {}", path.display()))?;
        ensure!(
            map.len() >= 72 + 32 && map.len() % 8 == 0 && &map[..8] == MAGIC,
            "{}: not a cuzk R1CS file",
            path.display()
        );
        let (body, digest) = map.split_at(map.len() - 32);
        ensure!(
            blake3::Hasher::new()
                .update_rayon(body)
                .finalize()
                .as_bytes()
                == digest,
            "{}: the digest does not match (damaged or incomplete); it will be recorded again",
            path.display()
        );
        let words = as_words(&map);
        let version = u32::from_le_bytes(map[8..12].try_into()?);
        ensure!(
            version == VERSION,
            "{}: R1CS format version {version}, this cuzk reads {VERSION}",
            path.display()
        );
        let n = |i: usize| words[2 + i];
        let counts = R1csCounts {
            inputs: n(0),
            aux: n(1),
            constraints: n(2),
            coeffs: n(3),
            nnz: [n(4), n(5), n(6)],
        };
        let mut at = 9; // words: magic, version+reserved, seven counts
        let coeffs: Vec<Fr> = (0..counts.coeffs as usize)
            .map(|k| {
                let bytes: [u8; 32] = map[(at + 4 * k) * 8..(at + 4 * k + 4) * 8].try_into()?;
                Option::from(Fr::from_repr(bytes)).context("a coefficient is not a field element")
            })
            .collect::<Result<_>>()?;
        at += 4 * counts.coeffs as usize;
        let mut sections = [(0, 0); 3];
        for (which, section) in sections.iter_mut().enumerate() {
            let rows = counts.constraints as usize + 1;
            *section = (at, at + rows);
            at += rows + counts.nnz[which] as usize;
        }
        let lens = [counts.aux, counts.inputs, counts.aux];
        let mut densities: [DensityTracker; 3] = Default::default();
        for (density, len) in densities.iter_mut().zip(lens) {
            let n_words = (len as usize).div_ceil(64);
            ensure!(
                at + n_words <= words.len() - 4,
                "{}: truncated",
                path.display()
            );
            *density = density_from_words(&words[at..at + n_words], len as usize);
            at += n_words;
        }
        ensure!(
            at == words.len() - 4,
            "{}: unexpected length",
            path.display()
        );
        let (one, minus_one) = special_ids(&coeffs);
        Ok(R1cs {
            counts,
            coeffs,
            one,
            minus_one,
            storage: Storage::Mapped {
                map,
                sections,
                _file: file,
            },
            densities,
        })
    }

    /// Synthesizes `circuit` by computing its witness only, then `A·w`, `B·w` and `C·w` on
    /// `pool`; the vectors are allocated to `capacity` up front. With `defer`, the
    /// evaluation is left to the prover: the partition holds only its witness and these
    /// constraints ([`SynthesizedPartition::deferred`]).
    pub fn synthesize<C: Circuit<Fr>>(
        self: &Arc<Self>,
        circuit: C,
        pool: &rayon::ThreadPool,
        capacity: Capacity,
        defer: bool,
    ) -> Result<SynthesizedPartition> {
        let (started, cpu_started) = (Instant::now(), thread_cpu_ms());
        let mut cs = Sink::new(0, 0, capacity.aux.max(self.counts.aux as usize));
        cs.input(Fr::ONE);
        circuit.synthesize(&mut cs)?;
        let profile = SynthesisProfile {
            witness_ms: started.elapsed().as_secs_f64() * 1e3,
            witness_cpu_ms: thread_cpu_ms() - cpu_started,
            witness_path: WitnessPath::Gadget,
            ..SynthesisProfile::default()
        };
        let witness = Witness {
            aux: cs.take_aux(),
            inputs: cs.inputs,
        };
        self.check_witness(&witness)?;
        Ok(self.assemble(witness, profile, pool, capacity, defer))
    }

    /// Fails unless `witness` has this circuit's numbers of inputs and aux variables.
    pub fn check_witness(&self, witness: &Witness) -> Result<()> {
        let (inputs, aux) = (witness.inputs.len() as u64, witness.aux.len() as u64);
        if (inputs, aux) != (self.counts.inputs, self.counts.aux) {
            bail!(
                "the witness has {inputs} inputs and {aux} aux variables, but the recorded constraints have {} and {} (a different circuit version?)",
                self.counts.inputs,
                self.counts.aux
            );
        }
        Ok(())
    }

    /// A partition from a witness of this circuit (see [`R1cs::check_witness`]) computed
    /// as `profile` says: `A·w`, `B·w` and `C·w` evaluated on `pool`, or with `defer` left
    /// to the prover.
    pub fn assemble(
        self: &Arc<Self>,
        witness: Witness,
        mut profile: SynthesisProfile,
        pool: &rayon::ThreadPool,
        capacity: Capacity,
        defer: bool,
    ) -> SynthesizedPartition {
        let [a_aux_density, b_input_density, b_aux_density] = self.densities.clone();
        let mut partition = SynthesizedPartition {
            a_aux_density,
            b_input_density,
            b_aux_density,
            a: Vec::new(),
            b: Vec::new(),
            c: Vec::new(),
            input_assignment: witness.inputs,
            aux_assignment: witness.aux,
            lent_abc: None,
            compact_abc: None,
            compact_aux: None,
            deferred: None,
            profile,
            witness_id: next_witness_id(),
        };
        if defer {
            partition.deferred = Some(self.clone() as Arc<dyn ConstraintMatrices>);
        } else {
            let started = Instant::now();
            let cpu_us = AtomicU64::new(0);
            let (inputs, aux) = (&partition.input_assignment, &partition.aux_assignment);
            let [a, b, c] = pool.install(|| {
                [0, 1, 2]
                    .map(|which| self.evaluate_timed(which, inputs, aux, capacity.abc, &cpu_us))
            });
            (partition.a, partition.b, partition.c) = (a, b, c);
            profile.evaluate_ms = started.elapsed().as_secs_f64() * 1e3;
            profile.evaluate_cpu_ms = cpu_us.into_inner() as f64 / 1e3;
        }
        profile.bytes = SynthesisProfile::bytes_of(&partition);
        partition.profile = profile;
        partition
    }

    /// `M·w` for matrix `which`, in parallel over row blocks, adding the threads' CPU time
    /// to `cpu_us`.
    fn evaluate_timed(
        &self,
        which: usize,
        inputs: &[Fr],
        aux: &[Fr],
        capacity: usize,
        cpu_us: &AtomicU64,
    ) -> Vec<Fr> {
        let rows = self.matrix(which).0.len() - 1;
        // Written in place by the pool's threads, never zeroed first: at 32GiB each vector is
        // 4.2 GB, whose first touch by one thread would cost seconds.
        let mut out: Vec<Fr> = Vec::with_capacity(capacity.max(rows));
        self.evaluate_rows(
            which,
            inputs,
            aux,
            &mut out.spare_capacity_mut()[..rows],
            cpu_us,
        );
        // SAFETY: `evaluate_rows` wrote each of the first `rows` elements of the spare
        // capacity; a panic there never reaches this line (and `Fr` is `Copy`, so nothing
        // written before it needs dropping).
        unsafe { out.set_len(rows) };
        out
    }

    /// Writes `M·w` for matrix `which` into `out` (one value per row, every one written), in
    /// parallel over row blocks, adding the threads' CPU time to `cpu_us`.
    fn evaluate_rows(
        &self,
        which: usize,
        inputs: &[Fr],
        aux: &[Fr],
        out: &mut [MaybeUninit<Fr>],
        cpu_us: &AtomicU64,
    ) {
        let (row_ptr, entries) = self.matrix(which);
        assert_eq!(out.len() + 1, row_ptr.len(), "one value per row");
        out.par_chunks_mut(ROWS_PER_TASK)
            .enumerate()
            .for_each(|(block, values)| {
                let cpu_started = thread_cpu_ms();
                let first = block * ROWS_PER_TASK;
                for (offset, value) in values.iter_mut().enumerate() {
                    let row = first + offset;
                    let span = row_ptr[row] as usize..row_ptr[row + 1] as usize;
                    let mut acc = Fr::ZERO;
                    for &e in &entries[span] {
                        let column = e & 0xffff_ffff;
                        let x = if column & INPUT_BIT != 0 {
                            inputs[(column ^ INPUT_BIT) as usize]
                        } else {
                            aux[column as usize]
                        };
                        let id = Some((e >> 32) as u32);
                        if id == self.one {
                            acc += x;
                        } else if id == self.minus_one {
                            acc -= x;
                        } else {
                            acc += x * self.coeffs[(e >> 32) as usize];
                        }
                    }
                    value.write(acc);
                }
                let spent_us = ((thread_cpu_ms() - cpu_started) * 1e3) as u64;
                cpu_us.fetch_add(spent_us, Ordering::Relaxed);
            });
    }
}

impl ConstraintMatrices for R1cs {
    fn rows(&self) -> usize {
        self.counts.constraints as usize
    }

    fn matrix(&self, which: usize) -> (&[u64], &[u64]) {
        R1cs::matrix(self, which)
    }

    fn coefficients(&self) -> &[Fr] {
        &self.coeffs
    }

    fn evaluate(&self, which: usize, inputs: &[Fr], aux: &[Fr], capacity: usize) -> Vec<Fr> {
        self.evaluate_timed(which, inputs, aux, capacity, &AtomicU64::new(0))
    }

    fn evaluate_into(&self, which: usize, inputs: &[Fr], aux: &[Fr], out: &mut [MaybeUninit<Fr>]) {
        self.evaluate_rows(which, inputs, aux, out, &AtomicU64::new(0));
    }

    fn evaluate_compact(
        &self,
        which: usize,
        inputs: &[Fr],
        witness: &WitnessLookup<'_>,
        out: &mut [MaybeUninit<Fr>],
    ) -> CompactVector {
        self.evaluate_compact_rows(which, inputs, witness, out, CHUNK_ROWS)
    }
}

/// The variable a matrix entry refers to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Column {
    /// Public input `i` (0 is the constant one).
    Input(usize),
    /// Aux variable `i`.
    Aux(usize),
}

/// The variable and coefficient id of a matrix entry (as [`ConstraintMatrices::matrix`]
/// lays them out).
pub fn decode_entry(e: u64) -> (Column, u32) {
    let column = e & 0xffff_ffff;
    let variable = if column & INPUT_BIT != 0 {
        Column::Input((column ^ INPUT_BIT) as usize)
    } else {
        Column::Aux(column as usize)
    };
    (variable, (e >> 32) as u32)
}

fn entry(column: u64, coeff_id: u32) -> u64 {
    column | (u64::from(coeff_id) << 32)
}

fn special_ids(coeffs: &[Fr]) -> (Option<u32>, Option<u32>) {
    let find = |x: Fr| coeffs.iter().position(|c| *c == x).map(|i| i as u32);
    (find(Fr::ONE), find(-Fr::ONE))
}

fn as_words(map: &memmap2::Mmap) -> &[u64] {
    // SAFETY: a mapping starts on a page boundary, so it is 8-byte aligned; the length was
    // checked to be a multiple of 8, and every bit pattern is a valid u64.
    unsafe { std::slice::from_raw_parts(map.as_ptr().cast::<u64>(), map.len() / 8) }
}

fn write_words(out: &mut impl Write, words: &[u64]) -> std::io::Result<()> {
    for chunk in words.chunks(1 << 16) {
        let bytes: Vec<u8> = chunk.iter().flat_map(|w| w.to_le_bytes()).collect();
        out.write_all(&bytes)?;
    }
    Ok(())
}

fn density_words(density: &DensityTracker) -> Vec<u64> {
    density
        .bv
        .as_raw_slice()
        .iter()
        .map(|&w| w as u64)
        .collect()
}

fn density_from_words(words: &[u64], len: usize) -> DensityTracker {
    let mut bv: BitVec<usize, Lsb0> = BitVec::from_vec(words.iter().map(|&w| w as usize).collect());
    bv.truncate(len);
    let total_density = bv.count_ones();
    DensityTracker { bv, total_density }
}

/// Feeds everything written to a digest on its way to the file.
struct HashingWriter<W: Write> {
    inner: W,
    hasher: blake3::Hasher,
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Where the R1CS of the circuit whose parameters are at `params_path` is kept: beside them,
/// named after them and the circuit's identity (read from the `.vk` beside them).
pub fn r1cs_path(params_path: &Path) -> Result<PathBuf> {
    let identity = CircuitIdentity::of_params(params_path)?;
    let stem = params_path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok(params_path.with_file_name(format!(
        "cuzk-r1cs-v{VERSION}-{stem}-{}.r1cs",
        identity.short_hex()
    )))
}

/// A recorded R1CS shared by the partitions that use it.
pub type SharedR1cs = Arc<R1cs>;
