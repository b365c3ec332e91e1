//! Synthesis: runs one partition's circuit through cuzk's own constraint system.
//!
//! This module owns [`SynthesizedPartition`]: the witness (input and aux assignments), the
//! evaluations of A, B and C for every constraint, and the query densities that Groth16 needs.
//! It is the CPU half of a proof, split from the prover so partitions can be synthesized on a
//! bounded pool while the prover works on earlier ones. It knows nothing about PoRep (see
//! `porep`) or about curve arithmetic (see `backend::groth16`).

use bellperson::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar as Fr;
use ec_gpu_gen::multiexp_cpu::DensityTracker;
use ff::Field;

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

    // The witness.
    /// Public inputs, starting with the constant one.
    pub input_assignment: Vec<Fr>,
    /// Private (auxiliary) variables.
    pub aux_assignment: Vec<Fr>,
}

impl SynthesizedPartition {
    /// Number of constraints, the input constraints included.
    pub fn num_constraints(&self) -> usize {
        self.a.len()
    }

    /// The public inputs as the verifier sees them: without the leading constant one.
    pub fn public_inputs(&self) -> &[Fr] {
        &self.input_assignment[1..]
    }

    /// The index of the first constraint with `A_j * B_j != C_j`, if any.
    pub fn first_unsatisfied(&self) -> Option<usize> {
        (0..self.a.len()).find(|&j| self.a[j] * self.b[j] != self.c[j])
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
    Ok(cs.0)
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

impl ConstraintSystem<Fr> for PartitionAssignment {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let p = &mut self.0;
        p.aux_assignment.push(f()?);
        p.a_aux_density.add_element();
        p.b_aux_density.add_element();
        Ok(Variable::new_unchecked(Index::Aux(
            p.aux_assignment.len() - 1,
        )))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let p = &mut self.0;
        p.input_assignment.push(f()?);
        p.b_input_density.add_element();
        Ok(Variable::new_unchecked(Index::Input(
            p.input_assignment.len() - 1,
        )))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
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

    fn push_namespace<NR, N>(&mut self, _: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
        // Names only matter for debugging constraint systems; proving ignores them.
    }

    fn pop_namespace(&mut self) {}

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }
}

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
