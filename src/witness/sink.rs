//! The witness sink: where native code and gadgets append a witness, in allocation order.
//!
//! It is a constraint system that keeps assignments and ignores constraints (the recorded
//! matrices hold them), so a gadget this module does not compute natively runs on it
//! unchanged and lands its variables exactly where the circuit puts them. Native code
//! appends with [`Sink::bit`] and [`Sink::num`]. A sink can start at any variable index, so
//! independent parts of a circuit (one challenge each) are computed in parallel and joined.

use std::mem::MaybeUninit;

use bellperson::gadgets::boolean::{AllocatedBit, Boolean};
use bellperson::gadgets::num::AllocatedNum;
use bellperson::{Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar as Fr;
use ff::Field;

use crate::constraint_system::{nameless_constraint_system, NamelessSystem};

/// Where aux values go: a vector that grows, or slots of a larger vector set aside for this
/// run of variables (so parallel parts write the partition's witness in place).
enum Slots<'a> {
    Growing(Vec<Fr>),
    Fixed {
        slots: &'a mut [MaybeUninit<Fr>],
        filled: usize,
        /// Values that found no slot: the part is longer than the slots set aside.
        overflow: usize,
    },
}

/// Assignments of one contiguous run of variables.
pub struct Sink<'a> {
    aux: Slots<'a>,
    /// Input values from `input_base` on.
    pub inputs: Vec<Fr>,
    aux_base: usize,
    input_base: usize,
    /// Set by [`Sink::existing`]: the next allocation names this variable instead of a new
    /// one (how a gadget is handed a value native code already assigned).
    alias: Option<Variable>,
}

impl<'a> Sink<'a> {
    /// A growing sink whose first aux and input variables have these indices, with room for
    /// `aux` aux values.
    pub fn new(aux_base: usize, input_base: usize, aux: usize) -> Sink<'a> {
        Sink {
            aux: Slots::Growing(Vec::with_capacity(aux)),
            inputs: Vec::new(),
            aux_base,
            input_base,
            alias: None,
        }
    }

    /// A sink that writes its aux values into `slots`, which it must fill exactly
    /// ([`Sink::filled_exactly`]).
    pub fn in_slots(
        aux_base: usize,
        input_base: usize,
        slots: &'a mut [MaybeUninit<Fr>],
    ) -> Sink<'a> {
        Sink {
            aux: Slots::Fixed {
                slots,
                filled: 0,
                overflow: 0,
            },
            inputs: Vec::new(),
            aux_base,
            input_base,
            alias: None,
        }
    }

    /// Aux values appended so far.
    pub fn aux_len(&self) -> usize {
        match &self.aux {
            Slots::Growing(values) => values.len(),
            Slots::Fixed {
                filled, overflow, ..
            } => filled + overflow,
        }
    }

    /// Whether every slot of a sink made by [`Sink::in_slots`] was written, and nothing more.
    pub fn filled_exactly(&self) -> bool {
        match &self.aux {
            Slots::Growing(_) => false,
            Slots::Fixed {
                slots,
                filled,
                overflow,
            } => *filled == slots.len() && *overflow == 0,
        }
    }

    /// The aux values of a growing sink (none for one in slots).
    pub fn take_aux(&mut self) -> Vec<Fr> {
        match &mut self.aux {
            Slots::Growing(values) => std::mem::take(values),
            Slots::Fixed { .. } => Vec::new(),
        }
    }

    /// Index of the next aux variable.
    pub fn next_aux(&self) -> usize {
        self.aux_base + self.aux_len()
    }

    #[inline(always)]
    fn push(&mut self, value: Fr) {
        match &mut self.aux {
            Slots::Growing(values) => values.push(value),
            Slots::Fixed {
                slots,
                filled,
                overflow,
            } => match slots.get_mut(*filled) {
                Some(slot) => {
                    slot.write(value);
                    *filled += 1;
                }
                None => *overflow += 1,
            },
        }
    }

    /// Appends a boolean aux variable.
    #[inline(always)]
    pub fn bit(&mut self, value: bool) {
        self.push(if value { Fr::ONE } else { Fr::ZERO });
    }

    /// Appends an aux variable; returns its index.
    #[inline]
    pub fn num(&mut self, value: Fr) -> usize {
        self.push(value);
        self.next_aux() - 1
    }

    /// Appends a public input.
    pub fn input(&mut self, value: Fr) {
        self.inputs.push(value);
    }

    /// The aux variable `index` (already assigned `value`) as a gadget's number, without
    /// allocating anything.
    pub fn existing(
        &mut self,
        index: usize,
        value: Fr,
    ) -> Result<AllocatedNum<Fr>, SynthesisError> {
        self.alias = Some(Variable::new_unchecked(Index::Aux(index)));
        AllocatedNum::alloc(&mut *self, || Ok(value))
    }

    /// The boolean aux variable `index` (already assigned `value`) as a gadget's bit, without
    /// allocating anything.
    pub fn existing_bit(&mut self, index: usize, value: bool) -> Result<Boolean, SynthesisError> {
        self.alias = Some(Variable::new_unchecked(Index::Aux(index)));
        Ok(Boolean::from(AllocatedBit::alloc(&mut *self, Some(value))?))
    }
}

impl NamelessSystem for Sink<'_> {
    fn new_aux<F>(&mut self, value: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
    {
        let value = value()?; // also how an `AllocatedNum` learns its value
        if let Some(variable) = self.alias.take() {
            return Ok(variable);
        }
        Ok(Variable::new_unchecked(Index::Aux(self.num(value))))
    }

    fn new_input<F>(&mut self, value: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
    {
        self.inputs.push(value()?);
        Ok(Variable::new_unchecked(Index::Input(
            self.input_base + self.inputs.len() - 1,
        )))
    }

    fn constrain<LA, LB, LC>(&mut self, _: LA, _: LB, _: LC)
    where
        LA: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LB: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LC: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
    {
        // The recorded matrices hold the constraints.
    }
}

nameless_constraint_system!(Sink<'_>);
