//! The constraint system a circuit runs through once to be recorded ([`R1cs::record`]) or
//! only counted ([`count_shape`]): it numbers each distinct coefficient, builds A, B and C
//! row by row, and tracks the query densities as the prover will. A recorder may keep only
//! its lane's share of the rows ([`Share`]), building no linear combination of a row it does
//! not keep, and may jump over units of the circuit other lanes record ([`Jump`]); see
//! [`super::lanes`].

use std::collections::HashMap;

use bellperson::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar as Fr;
use ec_gpu_gen::multiexp_cpu::DensityTracker;
use ff::{Field, PrimeField};

use super::{entry, special_ids, Matrix, R1cs, R1csCounts, Storage, INPUT_BIT};
use crate::constraint_system::{nameless_constraint_system, NamelessSystem};

/// Rows are shared between lanes in blocks of this many, round robin.
pub(super) const LANE_BLOCK_ROWS: u64 = 1 << 12;

/// What a recorder has counted: inputs (the constant one included), aux variables and
/// constraints.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Counted {
    pub(super) inputs: usize,
    pub(super) aux: usize,
    pub(super) rows: u64,
}

impl Counted {
    /// `self` plus `times` times `unit`.
    pub(super) fn plus(self, unit: Counted, times: usize) -> Counted {
        Counted {
            inputs: self.inputs + unit.inputs * times,
            aux: self.aux + unit.aux * times,
            rows: self.rows + unit.rows * times as u64,
        }
    }

    /// `self` less `earlier`, where `self` counts on from `earlier`.
    pub(super) fn since(self, earlier: Counted) -> Option<Counted> {
        Some(Counted {
            inputs: self.inputs.checked_sub(earlier.inputs)?,
            aux: self.aux.checked_sub(earlier.aux)?,
            rows: self.rows.checked_sub(earlier.rows)?,
        })
    }
}

/// Which rows a recorder keeps.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) enum Share {
    /// Every row: a recording on one thread, or a count.
    #[default]
    All,
    /// The blocks of [`LANE_BLOCK_ROWS`] rows whose index is `lane` modulo `lanes`.
    Blocks { lane: u64, lanes: u64 },
    /// The rows in `rows` (global row numbers).
    Rows(std::ops::Range<u64>),
    /// None: a count that builds no linear combination.
    Nothing,
}

impl Share {
    /// Whether row `row` is kept.
    pub(super) fn keeps(&self, row: u64) -> bool {
        match self {
            Share::All => true,
            Share::Blocks { lane, lanes } => (row / LANE_BLOCK_ROWS) % lanes == *lane,
            Share::Rows(rows) => rows.contains(&row),
            Share::Nothing => false,
        }
    }
}

/// Other lanes' units skipped by a recorder that runs only its own (see
/// [`super::lanes::record_by_units`]): once the counts reach `after` (the prelude's end), they
/// jump by `skip`, as if the earlier units had run; at the end they jump by `tail`.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Jump {
    pub(super) after: Counted,
    pub(super) skip: Counted,
    pub(super) tail: Counted,
}

/// The constraint system [`R1cs::record`] and [`count_shape`] run the circuit through.
#[derive(Default)]
pub(super) struct Recorder {
    /// Keep the matrices (recording), or only count (sizing).
    is_keeping: bool,
    /// The rows this recorder keeps.
    share: Share,
    /// The units it skips, and whether it has skipped the earlier ones.
    jump: Option<Jump>,
    has_skipped: bool,
    /// The rows kept, in order, as (first global row, rows) runs.
    pub(super) segments: Vec<(u64, u64)>,
    /// The counts of the circuit itself, before the input constraints.
    pub(super) synthesized: Counted,
    /// With a jump: the counts where its own units ended, before the tail's jump.
    pub(super) own_end: Counted,
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
        Self::run_share(circuit, is_keeping, Share::All, None)
    }

    /// [`Recorder::run`], keeping only `share`'s rows, and jumping over other lanes' units
    /// as `jump` says.
    pub(super) fn run_share<C: Circuit<Fr>>(
        circuit: C,
        is_keeping: bool,
        share: Share,
        jump: Option<Jump>,
    ) -> Result<Recorder, SynthesisError> {
        let mut cs = Recorder {
            is_keeping,
            share,
            jump,
            ..Default::default()
        };
        cs.alloc_input(|| "one", || Ok(Fr::ONE))?;
        circuit.synthesize(&mut cs)?;
        if let Some(jump) = cs.jump.take() {
            if !cs.has_skipped {
                cs.skip(jump.skip); // no unit of its own ran: the earlier ones end here too
            }
            cs.own_end = cs.counted();
            cs.skip(jump.tail);
        }
        cs.synthesized = cs.counted();
        for i in 0..cs.inputs {
            if cs.keeps_row() {
                let input = LinearCombination::zero() + Variable::new_unchecked(Index::Input(i));
                cs.push_row(0, &input);
                cs.push_row(1, &LinearCombination::zero());
                cs.push_row(2, &LinearCombination::zero());
            }
            cs.constraints += 1;
        }
        Ok(cs)
    }

    /// What has been counted so far.
    pub(super) fn counted(&self) -> Counted {
        Counted {
            inputs: self.inputs,
            aux: self.aux,
            rows: self.constraints,
        }
    }

    /// Counts `units` as if they had run, building nothing.
    fn skip(&mut self, units: Counted) {
        // Unmarked variables, at once (a 32GiB lane skips up to 120M aux variables).
        let grow = |tracker: &mut DensityTracker, by: usize| {
            let len = tracker.bv.len();
            tracker.bv.resize(len + by, false);
        };
        grow(&mut self.a_aux, units.aux);
        grow(&mut self.b_aux, units.aux);
        grow(&mut self.b_input, units.inputs);
        self.inputs += units.inputs;
        self.aux += units.aux;
        self.constraints += units.rows;
    }

    /// Before each new variable or constraint: past the prelude, skip the earlier units.
    fn before_next(&mut self) {
        if let Some(jump) = self.jump {
            // The counts only grow, so they equal the prelude's only between its last
            // variable or constraint and the first unit's.
            if !self.has_skipped && self.counted() == jump.after {
                self.skip(jump.skip);
                self.has_skipped = true;
            }
        }
    }

    /// Whether the current row is kept, noting it in the segments when it is.
    fn keeps_row(&mut self) -> bool {
        let row = self.constraints;
        if !self.share.keeps(row) {
            return false;
        }
        match self.segments.last_mut() {
            Some((first, len)) if *first + *len == row => *len += 1,
            _ => self.segments.push((row, 1)),
        }
        true
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
        self.before_next();
        self.aux += 1;
        self.a_aux.add_element();
        self.b_aux.add_element();
        Ok(Variable::new_unchecked(Index::Aux(self.aux - 1)))
    }

    fn new_input<F>(&mut self, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
    {
        self.before_next();
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
        self.before_next();
        if !self.keeps_row() {
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
