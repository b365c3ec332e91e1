//! Native witnesses: a partition's witness computed without running the circuit's gadgets
//! where they are slow, written in exactly the order and form the circuit allocates it.
//!
//! The pre-compiled path (`r1cs`) needs only a partition's witness; running the circuit to
//! get it allocates every bit of every SHA-256 compression through the constraint-system
//! API, which is most of a PoRep partition's time. Here those values are computed with u32
//! arithmetic ([`sha256`]) and appended to a [`sink`] in the circuit's order, while the
//! rest (Poseidon, a few percent of the variables) runs the real gadgets on the same sink.
//! A witness that does not have the recorded circuit's counts is never used: the caller
//! falls back to the gadget path and says so.

mod bits;
pub mod check;
pub mod porep;
mod sha256;
pub mod sink;

use blstrs::Scalar as Fr;

/// A partition's assignments: public inputs (the constant one first) and aux variables.
pub struct Witness {
    /// Public inputs, starting with the constant one.
    pub inputs: Vec<Fr>,
    /// Private (auxiliary) variables.
    pub aux: Vec<Fr>,
}
