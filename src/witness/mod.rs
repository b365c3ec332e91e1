//! Native witnesses: a partition's witness computed without running the circuit's gadgets
//! where they are slow, written in exactly the order and form the circuit allocates it.
//!
//! The pre-compiled path (`r1cs`) needs only a partition's witness; running the circuit to
//! get it allocates every bit of every SHA-256 compression through the constraint-system
//! API, which is most of a PoRep partition's time. Here those values are computed with u32
//! arithmetic ([`sha256`]), Poseidon with field arithmetic mirroring neptune's circuit
//! ([`poseidon`]), and appended to a [`sink`] in the circuit's order, while the rest (the
//! insertions ordering Merkle children, the encoding) runs the real gadgets on the same sink.
//! The update circuit's witness ([`update`]) is made the same way.
//! A witness that does not have the recorded circuit's counts is never used: the caller
//! falls back to the gadget path and says so.

mod bits;
pub mod check;
pub mod porep;
mod poseidon;
mod sha256;
pub mod sink;
pub mod update;

use blstrs::Scalar as Fr;

/// A partition's assignments: public inputs (the constant one first) and aux variables.
pub struct Witness {
    /// Public inputs, starting with the constant one.
    pub inputs: Vec<Fr>,
    /// Private (auxiliary) variables.
    pub aux: Vec<Fr>,
}

/// Asks the kernel to back `v`'s unused capacity with huge pages (transparent huge pages in
/// `madvise` mode, many distributions' default): a partition's witness is gigabytes written
/// once, and with 4 KiB pages every page is a fault. Only a hint; nothing changes if the
/// kernel says no.
pub(crate) fn advise_huge_pages<T>(v: &mut Vec<T>) {
    const PAGE: usize = 4096;
    let spare = v.spare_capacity_mut();
    let start = spare.as_mut_ptr() as usize;
    let end = start + std::mem::size_of_val(spare);
    let (first, last) = (start.div_ceil(PAGE) * PAGE, end / PAGE * PAGE);
    if last > first {
        // SAFETY: the range lies inside `v`'s allocation, which stays where it is while the
        // call runs; MADV_HUGEPAGE changes how pages are backed, never their contents.
        unsafe {
            libc::madvise(
                first as *mut libc::c_void,
                last - first,
                libc::MADV_HUGEPAGE,
            );
        }
    }
}
