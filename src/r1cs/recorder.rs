//! The constraint system a circuit runs through once to be recorded ([`R1cs::record`]) or
//! only counted ([`count_shape`]): it numbers each distinct coefficient, builds A, B and C
//! row by row, and tracks the query densities as the prover will. A recorder may keep only
//! its lane's share of the rows ([`Lane`]): it still runs the whole circuit, but builds no
//! linear combination of a row it does not keep (see [`super::lanes`]).

use std::collections::HashMap;

use bellperson::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar as Fr;
use ec_gpu_gen::multiexp_cpu::DensityTracker;
use ff::{Field, PrimeField};

use super::{entry, special_ids, Matrix, R1cs, R1csCounts, Storage, INPUT_BIT};
use crate::constraint_system::{nameless_constraint_system, NamelessSystem};

/// Rows are shared between lanes in blocks of this many, round robin.
pub(super) const LANE_BLOCK_ROWS: u64 = 1 << 12;

/// Which rows a recorder keeps: the blocks of [`LANE_BLOCK_ROWS`] rows whose index is
/// `lane` modulo `lanes`. One lane keeps every row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Lane {
    pub(super) lane: u64,
    pub(super) lanes: u64,
}

impl Default for Lane {
    fn default() -> Self {
        Lane { lane: 0, lanes: 1 }
    }
}

impl Lane {
    /// Whether row `row` is this lane's.
    pub(super) fn keeps(&self, row: u64) -> bool {
        self.lanes == 1 || (row / LANE_BLOCK_ROWS) % self.lanes == self.lane
    }
}

/// The constraint system [`R1cs::record`] and [`count_shape`] run the circuit through.
#[derive(Default)]
pub(super) struct Recorder {
    /// Keep the matrices (recording), or only count (sizing).
    is_keeping: bool,
    /// The rows this recorder keeps.
    pub(super) lane: Lane,
    pub(super) inputs: usize,
    pub(super) aux: usize,
    pub(super) constraints: u64,
    coeff_ids: HashMap<[u8; 32], u32>,
    pub(super) coeffs: Vec<Fr>,
    /// Where each coefficient first appeared: (row, matrix, position in the row), the order
    /// a single recorder numbers them in, so lanes' numbers can be merged into its numbers.
    pub(super) coeff_firsts: Vec<(u64, u8, u32)>,
    one_id: Option<u32>,
    pub(super) matrices: [Matrix; 3],
    // A tracks aux only, B inputs and aux, C nothing: the prover's rules (see `synth`).
    pub(super) a_aux: DensityTracker,
    pub(super) b_input: DensityTracker,
    pub(super) b_aux: DensityTracker,
}

impl Recorder {
    /// Runs `circuit` through a recorder, then appends one constraint `x_i * 0 = 0` per input,
    /// as the parameter generator and the prover do.
    pub(super) fn run<C: Circuit<Fr>>(
        circuit: C,
        is_keeping: bool,
    ) -> Result<Recorder, SynthesisError> {
        Self::run_lane(circuit, is_keeping, Lane::default())
    }

    /// [`Recorder::run`], keeping only `lane`'s rows.
    pub(super) fn run_lane<C: Circuit<Fr>>(
        circuit: C,
        is_keeping: bool,
        lane: Lane,
    ) -> Result<Recorder, SynthesisError> {
        let mut cs = Recorder {
            is_keeping,
            lane,
            ..Default::default()
        };
        cs.alloc_input(|| "one", || Ok(Fr::ONE))?;
        circuit.synthesize(&mut cs)?;
        for i in 0..cs.inputs {
            if cs.lane.keeps(cs.constraints) {
                let input = LinearCombination::zero() + Variable::new_unchecked(Index::Input(i));
                cs.push_row(0, &input);
                cs.push_row(1, &LinearCombination::zero());
                cs.push_row(2, &LinearCombination::zero());
            }
            cs.constraints += 1;
        }
        Ok(cs)
    }

    fn coeff_id(&mut self, which: usize, coeff: &Fr) -> u32 {
        // Most terms have coefficient one: skip hashing them.
        if *coeff == Fr::ONE {
            if let Some(id) = self.one_id {
                return id;
            }
        }
        let repr = coeff.to_repr();
        if let Some(&id) = self.coeff_ids.get(&repr) {
            return id;
        }
        let id = self.coeffs.len() as u32;
        self.coeffs.push(*coeff);
        let matrix = &self.matrices[which];
        let in_row = matrix.entries.len() as u64 - matrix.row_ptr.last().copied().unwrap_or(0);
        self.coeff_firsts
            .push((self.constraints, which as u8, in_row as u32));
        self.coeff_ids.insert(repr, id);
        if *coeff == Fr::ONE {
            self.one_id = Some(id);
        }
        id
    }

    /// Records one row of matrix `which` (0: A, 1: B, 2: C) and marks its variables: A
    /// tracks aux only (the input constraints give every input full density there), B
    /// inputs and aux, C nothing (it lives inside the dense L query).
    fn push_row(&mut self, which: usize, lc: &LinearCombination<Fr>) {
        for (&i, coeff) in lc.iter_inputs() {
            if bool::from(coeff.is_zero()) {
                continue;
            }
            self.keep(which, i as u64 | INPUT_BIT, coeff);
            if which == 1 {
                self.b_input.inc(i);
            }
        }
        for (&i, coeff) in lc.iter_aux() {
            if bool::from(coeff.is_zero()) {
                continue;
            }
            self.keep(which, i as u64, coeff);
            match which {
                0 => self.a_aux.inc(i),
                1 => self.b_aux.inc(i),
                _ => {}
            }
        }
        if self.is_keeping {
            let end = self.matrices[which].entries.len() as u64;
            self.matrices[which].row_ptr.push(end);
        }
    }

    fn keep(&mut self, which: usize, column: u64, coeff: &Fr) {
        if self.is_keeping {
            let id = self.coeff_id(which, coeff);
            self.matrices[which].entries.push(entry(column, id));
        }
    }

    pub(super) fn finish(self) -> R1cs {
        let nnz = [0, 1, 2].map(|w| self.matrices[w].entries.len() as u64);
        let counts = R1csCounts {
            inputs: self.inputs as u64,
            aux: self.aux as u64,
            constraints: (self.matrices[0].row_ptr.len() - 1) as u64,
            coeffs: self.coeffs.len() as u64,
            nnz,
        };
        let (one, minus_one) = special_ids(&self.coeffs);
        R1cs {
            counts,
            coeffs: self.coeffs,
            one,
            minus_one,
            storage: Storage::Owned(self.matrices),
            densities: [self.a_aux, self.b_input, self.b_aux],
        }
    }
}

impl NamelessSystem for Recorder {
    fn new_aux<F>(&mut self, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
    {
        self.aux += 1;
        self.a_aux.add_element();
        self.b_aux.add_element();
        Ok(Variable::new_unchecked(Index::Aux(self.aux - 1)))
    }

    fn new_input<F>(&mut self, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
    {
        self.inputs += 1;
        self.b_input.add_element();
        Ok(Variable::new_unchecked(Index::Input(self.inputs - 1)))
    }

    fn constrain<LA, LB, LC>(&mut self, a: LA, b: LB, c: LC)
    where
        LA: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LB: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LC: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
    {
        if !self.lane.keeps(self.constraints) {
            // Another lane's row: its combinations are never built, the bulk of the saving.
            self.constraints += 1;
            return;
        }
        self.push_row(0, &a(LinearCombination::zero()));
        self.push_row(1, &b(LinearCombination::zero()));
        if self.is_keeping {
            self.push_row(2, &c(LinearCombination::zero()));
        }
        self.constraints += 1;
    }
}

nameless_constraint_system!(Recorder);
