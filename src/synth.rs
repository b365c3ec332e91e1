//! Synthesis: runs one partition's circuit through cuzk's own constraint system.
//!
//! This module owns [`SynthesizedPartition`]: the witness (input and aux assignments), the
//! evaluations of A, B and C for every constraint, and the query densities that Groth16 needs.
//! It is the CPU half of a proof, split from the prover so partitions can be synthesized on a
//! bounded pool while the prover works on earlier ones. It knows nothing about PoRep (see
//! `porep`) or about curve arithmetic (see `backend::groth16`).

use std::mem::MaybeUninit;
use std::sync::Arc;

use bellperson::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar as Fr;
use ec_gpu_gen::multiexp_cpu::DensityTracker;
use ff::Field;

use crate::compact_witness::{CompactWitness, WitnessLookup};
use crate::constraint_system::{nameless_constraint_system, NamelessSystem};
use crate::host_abc::compact::{CompactVector, CHUNK_ROWS};
use crate::host_abc::LentAbc;

/// The matrices a GPU keeps to evaluate the constraints: A (0) and B (1). Not C: for a
/// witness that satisfies the circuit, C·w is A·w ∘ B·w row by row, which the GPU computes
/// instead (`evaluate_constraints` in the cuda backend's partition_proof.cuh says why the
/// proof is the same).
pub const GPU_MATRICES: [usize; 2] = [0, 1];

/// A circuit's constraints as sparse matrices, for a prover that evaluates `A·w`, `B·w` and
/// `C·w` where it proves (the cuda backend, on the GPU) instead of on the host. The
/// pre-compiled constraints (`r1cs`) implement it.
pub trait ConstraintMatrices: Send + Sync {
    /// Rows: constraints, the input constraints included.
    fn rows(&self) -> usize;
    /// Matrix `which` (0 for A, 1 for B, 2 for C) in compressed sparse rows: `rows() + 1`
    /// offsets, and entries holding the column in the low 31 bits (bit 31 set for an
    /// input) and the coefficient's id in the high 32.
    fn matrix(&self, which: usize) -> (&[u64], &[u64]);
    /// The distinct coefficients, indexed by id.
    fn coefficients(&self) -> &[Fr];
    /// Bytes a GPU keeps of these: [`GPU_MATRICES`] and the coefficients, as its upload
    /// sends them.
    fn gpu_bytes(&self) -> u64 {
        let matrices: usize = GPU_MATRICES
            .iter()
            .map(|&which| {
                let (row_ptr, entries) = self.matrix(which);
                8 * (row_ptr.len() + entries.len())
            })
            .sum();
        (matrices + 32 * self.coefficients().len()) as u64
    }
    /// `M·w` for matrix `which` on the host, allocated to at least `capacity` entries.
    fn evaluate(&self, which: usize, inputs: &[Fr], aux: &[Fr], capacity: usize) -> Vec<Fr>;
    /// `M·w` for matrix `which` on the host, into `out` (`rows()` values, every one written).
    fn evaluate_into(&self, which: usize, inputs: &[Fr], aux: &[Fr], out: &mut [MaybeUninit<Fr>]);
    /// `M·w` for matrix `which` on the host from a compact witness, written compact into
    /// `out` (`rows()` slots: each chunk's wide values at its start, the other rows not
    /// written); returns the layout, the one [`CompactVector::of`] makes of the whole vector.
    fn evaluate_compact(
        &self,
        which: usize,
        inputs: &[Fr],
        witness: &WitnessLookup<'_>,
        out: &mut [MaybeUninit<Fr>],
    ) -> CompactVector;
}

/// True where `CUZK_HOST_EVALUATION=whole` asks the host to evaluate a, b and c for the
/// cuda backend the way it did before they were evaluated compact (the witness expanded,
/// the vectors written whole and made compact after): for measuring the two side by side.
fn evaluates_whole() -> bool {
    static WHOLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *WHOLE.get_or_init(|| std::env::var("CUZK_HOST_EVALUATION").is_ok_and(|v| v == "whole"))
}

/// Everything the Groth16 prover needs from one partition's circuit.
///
/// The constraint count includes one `x_i * 0 = 0` constraint per public input, appended
/// after synthesis exactly as the parameter generator does, so the evaluation vectors line
/// up with the parameters' polynomials.
pub struct SynthesizedPartition {
    // Densities of the queries: which variables appear (with a non-zero coefficient) in some
    // A or B combination. The parameters omit bases for variables that never appear, so the
    // prover must skip the same ones.
    /// Aux variables used by some A combination.
    pub a_aux_density: DensityTracker,
    /// Input variables used by some B combination.
    pub b_input_density: DensityTracker,
    /// Aux variables used by some B combination.
    pub b_aux_density: DensityTracker,

    // Evaluations of the A, B and C combinations, one entry per constraint.
    /// `A_j(w)` for every constraint `j`.
    pub a: Vec<Fr>,
    /// `B_j(w)` for every constraint `j`.
    pub b: Vec<Fr>,
    /// `C_j(w)` for every constraint `j`.
    pub c: Vec<Fr>,
    /// a, b and c in memory their prover lent, when evaluated there ([`crate::host_abc`]):
    /// `a`, `b` and `c` are then empty. [`Self::abc`] reads either.
    pub lent_abc: Option<LentAbc>,
    /// Set while a, b and c are held compact in their own memory, for a prover that expands
    /// them on its device ([`Self::compact_abc`]): [`Self::abc`] then reads that layout,
    /// not the values, until [`Self::expand_abc`].
    pub compact_abc: Option<Box<[CompactVector; 3]>>,

    // The witness.
    /// Public inputs, starting with the constant one.
    pub input_assignment: Vec<Fr>,
    /// Private (auxiliary) variables; empty while they are held compact.
    pub aux_assignment: Vec<Fr>,
    /// The aux variables as bits and wide values, when compacted for a GPU that expands them
    /// itself ([`Self::compact_witness`]); `aux_assignment` is then empty.
    pub compact_aux: Option<CompactWitness>,

    /// Set when a, b and c were left to the prover: they are then empty, and are these
    /// matrices times the witness. A partition in flight holds only its witness this way.
    pub deferred: Option<Arc<dyn ConstraintMatrices>>,

    /// Where the synthesis spent its time.
    pub profile: SynthesisProfile,

    /// Names this partition's witness, uniquely in the process ([`next_witness_id`]): a GPU
    /// that uploaded it ahead of its proof knows it by this.
    pub witness_id: u64,
}

/// A fresh [`SynthesizedPartition::witness_id`]: never 0, never given twice in a process.
pub fn next_witness_id() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// Where one partition's synthesis spent its time: the pass that runs the circuit (the
/// witness, and for full synthesis the constraints too) and the evaluation of the
/// pre-compiled matrices, each by the clock and in CPU time (all threads), and the bytes
/// of the vectors it made.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SynthesisProfile {
    /// Wall-clock milliseconds of the circuit pass.
    pub witness_ms: f64,
    /// CPU milliseconds of the circuit pass.
    pub witness_cpu_ms: f64,
    /// Wall-clock milliseconds evaluating `A·w`, `B·w`, `C·w` (0 when full or deferred).
    pub evaluate_ms: f64,
    /// CPU milliseconds of that evaluation, summed over the pool's threads.
    pub evaluate_cpu_ms: f64,
    /// Wall-clock milliseconds turning the witness compact (0 when it stayed whole): the
    /// scan, and giving back the whole one.
    pub compact_ms: f64,
    /// CPU milliseconds of that.
    pub compact_cpu_ms: f64,
    /// Bytes of the vectors the partition holds (a, b, c and the witness).
    pub bytes: u64,
    /// How the witness was computed.
    pub witness_path: WitnessPath,
}

/// How a partition's witness was computed; the timeline records it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WitnessPath {
    /// The circuit's gadgets: full synthesis, or the witness-only pass over recorded
    /// constraints.
    #[default]
    Gadget,
    /// Computed natively (`witness`), gadgets only where it has no native code.
    Native,
}

impl WitnessPath {
    /// The name the timeline and reports use.
    pub fn name(self) -> &'static str {
        match self {
            WitnessPath::Gadget => "gadget",
            WitnessPath::Native => "native",
        }
    }
}

impl SynthesisProfile {
    /// The bytes `partition`'s vectors hold.
    pub fn bytes_of(partition: &SynthesizedPartition) -> u64 {
        let scalars = partition.a.capacity()
            + partition.b.capacity()
            + partition.c.capacity()
            + partition.input_assignment.capacity()
            + partition.aux_assignment.capacity();
        let compact = partition
            .compact_aux
            .as_ref()
            .map_or(0, CompactWitness::bytes);
        let lent = partition.lent_abc.as_ref().map_or(0, LentAbc::bytes);
        let compact_abc = partition
            .compact_abc
            .iter()
            .flat_map(|vectors| vectors.iter())
            .map(CompactVector::bytes)
            .sum::<u64>();
        (scalars * std::mem::size_of::<Fr>()) as u64 + compact + lent + compact_abc
    }
}

/// CPU time this thread has used, in milliseconds (0 where the clock cannot be read).
pub fn thread_cpu_ms() -> f64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid timespec for the call to fill.
    let read = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    if read != 0 {
        return 0.0;
    }
    now.tv_sec as f64 * 1e3 + now.tv_nsec as f64 / 1e6
}

impl SynthesizedPartition {
    /// Number of constraints, the input constraints included.
    pub fn num_constraints(&self) -> usize {
        match &self.deferred {
            Some(matrices) => matrices.rows(),
            None => self.abc()[0].len(),
        }
    }

    /// Bytes the partition holds while it waits for its prover: its vectors and its three
    /// densities (a bit per variable each tracks).
    pub fn bytes_in_flight(&self) -> u64 {
        let densities: usize = [
            &self.a_aux_density,
            &self.b_input_density,
            &self.b_aux_density,
        ]
        .iter()
        .map(|density| density.bv.len().div_ceil(8))
        .sum();
        self.profile.bytes + densities as u64
    }

    /// Aux variables, whether held whole or compact.
    pub fn aux_len(&self) -> usize {
        match &self.compact_aux {
            Some(compact) => compact.len,
            None => self.aux_assignment.len(),
        }
    }

    /// Holds the aux variables compact where that is much smaller (a witness of bits) and
    /// a, b and c are left to the GPU, whose prover expands them on the device; else leaves
    /// them whole. Returns whether it compacted them.
    pub fn compact_witness(&mut self) -> bool {
        if self.deferred.is_none() || self.compact_aux.is_some() {
            return false;
        }
        let Some(compact) = CompactWitness::of(&self.aux_assignment) else {
            return false;
        };
        self.compact_aux = Some(compact);
        self.aux_assignment = Vec::new();
        self.profile.bytes = SynthesisProfile::bytes_of(self);
        true
    }

    /// The aux variables as field elements again, for a prover that reads them on the host.
    pub fn expand_witness(&mut self) {
        if let Some(compact) = self.compact_aux.take() {
            self.aux_assignment = compact.expand();
            self.profile.bytes = SynthesisProfile::bytes_of(self);
        }
    }

    /// Computes a, b and c on the host if they were deferred: for a prover that cannot
    /// evaluate the matrices itself. The witness is expanded first where it was compact.
    pub fn evaluate_deferred(&mut self) {
        self.evaluate_deferred_into(None);
    }

    /// As [`Self::evaluate_deferred`], into `lent` when given and of the constraints' size
    /// (else into fresh vectors, `lent` dropped back to its lender).
    pub fn evaluate_deferred_into(&mut self, lent: Option<LentAbc>) {
        self.expand_witness();
        let Some(matrices) = self.deferred.take() else {
            return;
        };
        let (inputs, aux) = (&self.input_assignment, &self.aux_assignment);
        let rows = matrices.rows();
        match lent.filter(|set| set.rows() == rows) {
            Some(mut set) => {
                for (which, out) in set.to_write().into_iter().enumerate() {
                    matrices.evaluate_into(which, inputs, aux, out);
                }
                // SAFETY: `evaluate_into` writes every one of the `rows` values of each.
                unsafe { set.mark_written() };
                self.lent_abc = Some(set);
            }
            None => {
                self.a = matrices.evaluate(0, inputs, aux, rows);
                self.b = matrices.evaluate(1, inputs, aux, rows);
                self.c = matrices.evaluate(2, inputs, aux, rows);
            }
        }
        self.profile.bytes = SynthesisProfile::bytes_of(self);
    }

    /// As [`Self::evaluate_deferred_into`], but a compact witness stays compact, for a prover
    /// that takes it compact (the cuda backend expands it on the device; 0.13 GB cross the
    /// bus for a 32GiB partition, not 4.3 GB), and so do a, b and c. Into a lent set they are
    /// evaluated from the compact witness and written compact as they are computed
    /// ([`ConstraintMatrices::evaluate_compact`]): neither the witness nor a, b and c are
    /// ever held whole. Into fresh vectors, the witness is expanded while they are evaluated
    /// and they are made compact after.
    pub fn evaluate_deferred_keeping_compact(&mut self, lent: Option<LentAbc>) {
        if self.deferred.is_none() {
            return;
        }
        if self.compact_aux.is_none() {
            return self.evaluate_deferred_into(lent);
        }
        let lent = lent.filter(|set| set.rows() == self.num_constraints());
        match lent {
            Some(set) if !evaluates_whole() => self.evaluate_compact_into(set),
            lent => {
                let compact = self.compact_aux.take();
                if let Some(compact) = &compact {
                    self.aux_assignment = compact.expand();
                }
                self.evaluate_deferred_into(lent);
                self.aux_assignment = Vec::new();
                self.compact_aux = compact;
                // Counts the partition's bytes again, with the witness back in its compact form.
                self.compact_abc();
            }
        }
    }

    /// The bytes it holds at most while its a, b and c are evaluated into a lent set of
    /// `set_rows` rows (the set's own bytes apart), where that takes the compact way
    /// ([`Self::evaluate_deferred_keeping_compact`]): the witness it holds now and the
    /// vectors' layouts, no witness expanded. `None` where it would take the whole way
    /// (a witness held whole, a set for other rows, `CUZK_HOST_EVALUATION=whole`).
    pub fn compact_evaluation_bytes(&self, set_rows: usize) -> Option<u64> {
        let rows = self.num_constraints();
        let compact = self.deferred.is_some()
            && self.compact_aux.is_some()
            && set_rows == rows
            && !evaluates_whole();
        compact.then(|| self.bytes_in_flight() + 3 * CompactVector::bytes_for(rows, CHUNK_ROWS))
    }

    /// a, b and c from the compact witness into `set`, compact as they are computed; the
    /// witness stays compact.
    fn evaluate_compact_into(&mut self, mut set: LentAbc) {
        let Some(compact) = &self.compact_aux else {
            return;
        };
        let Some(matrices) = self.deferred.take() else {
            return;
        };
        let witness = compact.lookup();
        let evaluate =
            |which, out| matrices.evaluate_compact(which, &self.input_assignment, &witness, out);
        let [a, b, c] = set.to_write();
        // The three side by side, so that no core waits at the end of each.
        let (a, (b, c)) = rayon::join(
            || evaluate(0, a),
            || rayon::join(|| evaluate(1, b), || evaluate(2, c)),
        );
        // SAFETY: each vector's chunks hold their wide values, as the layouts say.
        unsafe { set.mark_written() };
        self.lent_abc = Some(set);
        self.compact_abc = Some(Box::new([a, b, c]));
        self.profile.bytes = SynthesisProfile::bytes_of(self);
    }

    /// A copy of the witness alone, held compact: the inputs, the aux variables' bits and
    /// wide values, the densities and the same witness id, no a, b and c. What a prover that
    /// shares its pass over streamed bases with the partition it proves next reads of it,
    /// while that partition's a, b and c are evaluated beside the call (which writes the
    /// partition). `None` where the witness is whole: gigabytes, not worth a copy.
    pub fn witness_copy(&self) -> Option<SynthesizedPartition> {
        let compact_aux = self.compact_aux.clone()?;
        Some(SynthesizedPartition {
            a_aux_density: self.a_aux_density.clone(),
            b_input_density: self.b_input_density.clone(),
            b_aux_density: self.b_aux_density.clone(),
            a: Vec::new(),
            b: Vec::new(),
            c: Vec::new(),
            lent_abc: None,
            compact_abc: None,
            input_assignment: self.input_assignment.clone(),
            aux_assignment: Vec::new(),
            compact_aux: Some(compact_aux),
            deferred: None,
            profile: SynthesisProfile::default(),
            witness_id: self.witness_id,
        })
    }

    /// Holds a, b and c compact in their own memory (`host_abc::compact`), for a prover
    /// that expands them on its device: about a fifth of their bytes then cross the bus.
    /// Returns whether it did (not while they are deferred, or compact already).
    pub fn compact_abc(&mut self) -> bool {
        if self.deferred.is_some() || self.compact_abc.is_some() {
            return false;
        }
        self.compact_abc = Some(Box::new(self.abc_mut().map(CompactVector::of)));
        self.profile.bytes = SynthesisProfile::bytes_of(self);
        true
    }

    /// a, b and c whole again where they were held compact ([`Self::compact_abc`]).
    pub fn expand_abc(&mut self) {
        let Some(layouts) = self.compact_abc.take() else {
            return;
        };
        for (layout, values) in layouts.iter().zip(self.abc_mut()) {
            layout.expand(values);
        }
        self.profile.bytes = SynthesisProfile::bytes_of(self);
    }

    /// a, b and c to change in place, wherever they are (as [`Self::abc`]).
    fn abc_mut(&mut self) -> [&mut [Fr]; 3] {
        match self.lent_abc.as_mut().and_then(LentAbc::vectors_mut) {
            Some(lent) => lent,
            None => [&mut self.a, &mut self.b, &mut self.c].map(Vec::as_mut_slice),
        }
    }

    /// a, b and c on the host, wherever they are (empty while deferred; their compact layout
    /// while [`Self::compact_abc`] holds them so).
    pub fn abc(&self) -> [&[Fr]; 3] {
        match self.lent_abc.as_ref().and_then(LentAbc::vectors) {
            Some(lent) => lent,
            None => [&self.a, &self.b, &self.c],
        }
    }

    /// Moves a, b and c out of lent memory into the partition's own vectors, for a prover
    /// that takes them by value (only the lender's prover reads lent memory in place).
    pub fn own_abc(&mut self) {
        self.expand_abc();
        if let Some(set) = self.lent_abc.take() {
            if let Some([a, b, c]) = set.vectors() {
                (self.a, self.b, self.c) = (a.to_vec(), b.to_vec(), c.to_vec());
            }
            self.profile.bytes = SynthesisProfile::bytes_of(self);
        }
    }

    /// The public inputs as the verifier sees them: without the leading constant one.
    pub fn public_inputs(&self) -> &[Fr] {
        &self.input_assignment[1..]
    }

    /// The index of the first constraint with `A_j * B_j != C_j`, if any (of a, b and c on
    /// the host: see [`Self::evaluate_deferred`]).
    pub fn first_unsatisfied(&self) -> Option<usize> {
        let whole = self.compact_abc.as_ref().map(|layouts| {
            let mut vectors = self.abc().map(<[Fr]>::to_vec);
            for (layout, values) in layouts.iter().zip(&mut vectors) {
                layout.expand(values);
            }
            vectors
        });
        let [a, b, c] = match &whole {
            Some([a, b, c]) => [a.as_slice(), b, c],
            None => self.abc(),
        };
        (0..a.len()).find(|&j| a[j] * b[j] != c[j])
    }
}

/// How long a partition's vectors will get, when known (from the parameter file's counts),
/// so they are allocated once at their final size: growing a 4 GB vector by doubling copies
/// it and briefly holds both copies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Capacity {
    /// Length of a, b and c: the FFT domain the prover pads them to.
    pub abc: usize,
    /// Aux variables.
    pub aux: usize,
    /// Public inputs, the constant one included.
    pub inputs: usize,
}

/// Synthesizes `circuit` into a [`SynthesizedPartition`].
pub fn synthesize<C: Circuit<Fr>>(circuit: C) -> Result<SynthesizedPartition, SynthesisError> {
    synthesize_with_capacity(circuit, Capacity::default())
}

/// Synthesizes `circuit` with its vectors allocated to `capacity` up front.
pub fn synthesize_with_capacity<C: Circuit<Fr>>(
    circuit: C,
    capacity: Capacity,
) -> Result<SynthesizedPartition, SynthesisError> {
    let (started, cpu_started) = (std::time::Instant::now(), thread_cpu_ms());
    let mut cs = PartitionAssignment::with_capacity(capacity);
    cs.alloc_input(|| "one", || Ok(Fr::ONE))?;
    circuit.synthesize(&mut cs)?;
    // The generator turns every input into a constraint `x_i * 0 = 0`, so that the A
    // polynomials of the inputs are linearly independent; the prover mirrors it.
    for i in 0..cs.0.input_assignment.len() {
        cs.enforce(
            || "input constraint",
            |lc| lc + Variable::new_unchecked(Index::Input(i)),
            |lc| lc,
            |lc| lc,
        );
    }
    let mut partition = cs.0;
    partition.profile = SynthesisProfile {
        witness_ms: started.elapsed().as_secs_f64() * 1e3,
        witness_cpu_ms: thread_cpu_ms() - cpu_started,
        bytes: SynthesisProfile::bytes_of(&partition),
        ..SynthesisProfile::default()
    };
    Ok(partition)
}

/// The constraint system that records a [`SynthesizedPartition`] as the circuit runs.
struct PartitionAssignment(SynthesizedPartition);

impl PartitionAssignment {
    fn with_capacity(capacity: Capacity) -> Self {
        PartitionAssignment(SynthesizedPartition {
            a_aux_density: DensityTracker::new(),
            b_input_density: DensityTracker::new(),
            b_aux_density: DensityTracker::new(),
            a: Vec::with_capacity(capacity.abc),
            b: Vec::with_capacity(capacity.abc),
            c: Vec::with_capacity(capacity.abc),
            input_assignment: Vec::with_capacity(capacity.inputs),
            aux_assignment: Vec::with_capacity(capacity.aux),
            compact_aux: None,
            lent_abc: None,
            compact_abc: None,
            deferred: None,
            profile: SynthesisProfile::default(),
            witness_id: next_witness_id(),
        })
    }
}

/// Evaluates `lc` at the witness, marking each variable it uses in the given trackers.
fn eval(
    lc: &LinearCombination<Fr>,
    mut input_density: Option<&mut DensityTracker>,
    mut aux_density: Option<&mut DensityTracker>,
    inputs: &[Fr],
    aux: &[Fr],
) -> Fr {
    let mut acc = Fr::ZERO;
    for (&i, coeff) in lc.iter_inputs() {
        if bool::from(coeff.is_zero()) {
            continue;
        }
        acc += inputs[i] * coeff;
        if let Some(density) = input_density.as_deref_mut() {
            density.inc(i);
        }
    }
    for (&i, coeff) in lc.iter_aux() {
        if bool::from(coeff.is_zero()) {
            continue;
        }
        acc += aux[i] * coeff;
        if let Some(density) = aux_density.as_deref_mut() {
            density.inc(i);
        }
    }
    acc
}

impl NamelessSystem for PartitionAssignment {
    fn new_aux<F>(&mut self, value: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
    {
        let p = &mut self.0;
        p.aux_assignment.push(value()?);
        p.a_aux_density.add_element();
        p.b_aux_density.add_element();
        Ok(Variable::new_unchecked(Index::Aux(
            p.aux_assignment.len() - 1,
        )))
    }

    fn new_input<F>(&mut self, value: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
    {
        let p = &mut self.0;
        p.input_assignment.push(value()?);
        p.b_input_density.add_element();
        Ok(Variable::new_unchecked(Index::Input(
            p.input_assignment.len() - 1,
        )))
    }

    fn constrain<LA, LB, LC>(&mut self, a: LA, b: LB, c: LC)
    where
        LA: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LB: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LC: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
    {
        let p = &mut self.0;
        let (inputs, aux) = (&p.input_assignment, &p.aux_assignment);
        // Inputs are not tracked in A: the input constraints give every input full density
        // there. C has no query of its own (it lives inside the L query, which is dense).
        let a = eval(
            &a(LinearCombination::zero()),
            None,
            Some(&mut p.a_aux_density),
            inputs,
            aux,
        );
        let b = eval(
            &b(LinearCombination::zero()),
            Some(&mut p.b_input_density),
            Some(&mut p.b_aux_density),
            inputs,
            aux,
        );
        let c = eval(&c(LinearCombination::zero()), None, None, inputs, aux);
        p.a.push(a);
        p.b.push(b);
        p.c.push(c);
    }
}

nameless_constraint_system!(PartitionAssignment);

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use bellperson::gadgets::num::AllocatedNum;

    /// `x^3 + x + 5 = out`, with `out` public: the textbook circuit, small enough to prove in
    /// milliseconds, large enough to have inputs in B and aux in A, B and C.
    #[derive(Clone)]
    pub struct CubeCircuit {
        pub x: Option<Fr>,
    }

    impl Circuit<Fr> for CubeCircuit {
        fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
            let x = AllocatedNum::alloc(cs.namespace(|| "x"), || {
                self.x.ok_or(SynthesisError::AssignmentMissing)
            })?;
            let x2 = x.square(cs.namespace(|| "x^2"))?;
            let x3 = x2.mul(cs.namespace(|| "x^3"), &x)?;
            let out = cs.alloc_input(
                || "out",
                || {
                    let x3 = x3.get_value().ok_or(SynthesisError::AssignmentMissing)?;
                    let x = x.get_value().ok_or(SynthesisError::AssignmentMissing)?;
                    Ok(x3 + x + Fr::from(5u64))
                },
            )?;
            cs.enforce(
                || "x^3 + x + 5 = out",
                |lc| lc + x3.get_variable() + x.get_variable() + (Fr::from(5u64), CS::one()),
                |lc| lc + CS::one(),
                |lc| lc + out,
            );
            Ok(())
        }
    }

    /// `value` and its 64 bits, allocated as booleans and packed back into it: a witness
    /// of bits but for one wide value, like a PoRep partition's.
    #[derive(Clone)]
    pub struct BitsCircuit {
        pub value: Option<u64>,
    }

    impl Circuit<Fr> for BitsCircuit {
        fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
            let value = AllocatedNum::alloc(cs.namespace(|| "value"), || {
                self.value
                    .map(Fr::from)
                    .ok_or(SynthesisError::AssignmentMissing)
            })?;
            let mut packed = LinearCombination::zero();
            let mut weight = Fr::ONE;
            for i in 0..64 {
                let bit = bellperson::gadgets::boolean::AllocatedBit::alloc(
                    cs.namespace(|| format!("bit {i}")),
                    self.value.map(|v| v >> i & 1 == 1),
                )?;
                packed = packed + (weight, bit.get_variable());
                weight = weight.double();
            }
            value.inputize(cs.namespace(|| "value in"))?;
            cs.enforce(
                || "packed",
                |_| packed,
                |lc| lc + CS::one(),
                |lc| lc + value.get_variable(),
            );
            Ok(())
        }
    }

    #[test]
    fn cube_circuit_records_a_satisfying_assignment() {
        let p = synthesize(CubeCircuit {
            x: Some(Fr::from(3u64)),
        })
        .expect("synthesis");
        // 3 circuit constraints + 2 input constraints (one and out).
        assert_eq!(p.num_constraints(), 5);
        assert_eq!(p.input_assignment, vec![Fr::ONE, Fr::from(35u64)]);
        assert_eq!(p.public_inputs(), &[Fr::from(35u64)]);
        assert_eq!(p.aux_assignment.len(), 3);
        assert_eq!(p.first_unsatisfied(), None);
        // B uses the constant one (last circuit constraint) but not `out`.
        assert_eq!(p.b_input_density.get_total_density(), 1);
        assert_eq!(p.a_aux_density.get_total_density(), 3);
    }

    #[test]
    fn a_wrong_witness_is_caught() {
        let mut p = synthesize(CubeCircuit {
            x: Some(Fr::from(3u64)),
        })
        .expect("synthesis");
        p.c[2] += Fr::ONE;
        assert_eq!(p.first_unsatisfied(), Some(2));
    }

    #[test]
    fn missing_witness_is_an_error() {
        assert!(matches!(
            synthesize(CubeCircuit { x: None }),
            Err(SynthesisError::AssignmentMissing)
        ));
    }
}
