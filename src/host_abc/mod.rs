//! a, b and c in host memory a prover lends: a partition evaluated on the host right
//! before its proof writes its three vectors there instead of into fresh heap vectors.
//!
//! Why: at 32GiB the three are 12.9 GB per partition. From the heap they cross to a GPU
//! through a copy into pinned chunks (about 10 GB/s while the next partition's evaluation
//! takes every core); from the cuda backend's pinned sets the copy engine reads them
//! directly at the bus's speed, and the host copies nothing. A set is taken for one
//! partition ([`LendsAbc::lend`]) and goes back to its lender when the partition drops.
//!
//! The memory budget counts a set all its life: a set carries the [`Reservation`] of its
//! bytes, split off the partition it was written for ([`LentAbc::hold`]), back to its
//! lender with it, and into the next partition's reservation when it is lent again.
//!
//! [`sets`] is the lender the cuda backend uses: two sets kept per prover, the second made
//! ahead.

pub mod compact;
pub mod sets;

use std::mem::MaybeUninit;
use std::ptr::NonNull;

use blstrs::Scalar as Fr;

use crate::memory::{MemoryBudget, Reservation};

/// A prover's host memory for a, b and c.
pub trait LendsAbc: Send + Sync {
    /// A set of three vectors of `rows` values each, if one is free or can be made now.
    fn lend(&self, rows: usize) -> Option<LentAbc>;

    /// Whether its prover takes a compact witness as it is (the cuda backend expands it on
    /// the device): then evaluating a, b and c on the host leaves the witness compact.
    fn takes_compact_witness(&self) -> bool {
        false
    }

    /// Starts making a set of `rows` for a partition still to come, where a set would be
    /// made then in its way, its bytes reserved from `budget` now (nothing is made when they
    /// do not fit). Called before each [`LendsAbc::lend`]; the lender decides.
    fn make_ahead(&self, _rows: usize, _budget: &MemoryBudget) {}

    /// Starts making every set it lends at once, of `rows`, before its prover's first
    /// partitions: called while the prover's parameters load, so that the partitions do not
    /// wait for their sets after. Each set's bytes are reserved from `budget` now; a set whose
    /// bytes do not fit is not made ahead.
    fn make_all_ahead(&self, _rows: usize, _budget: &MemoryBudget) {}
}

/// Gives a set's memory back to its lender, with the reservation it holds.
pub type GiveBack = Box<dyn FnOnce(Option<Reservation>) + Send>;

/// Three vectors of `rows` values each, lent for one partition: written once by its
/// evaluation, read by its proof, given back when dropped. The buffers may hold more
/// (`capacity` values each: a set made for a larger circuit serves a smaller one rather than
/// being replaced), and the set is counted whole.
pub struct LentAbc {
    buffers: [NonNull<Fr>; 3],
    rows: usize,
    capacity: usize,
    is_written: bool,
    reservation: Option<Reservation>,
    give_back: Option<GiveBack>,
}

// SAFETY: the three buffers are this value's alone while it lives (`LentAbc::new`'s
// contract); through `&LentAbc` they are only read, and only once written; `give_back` is
// called only from `drop`, with `&mut self`.
unsafe impl Send for LentAbc {}
unsafe impl Sync for LentAbc {}

impl LentAbc {
    /// A set of `rows` values per vector over `buffers` of `capacity` values each, given
    /// back by `give_back` when dropped.
    ///
    /// # Safety
    /// Each buffer must hold `capacity >= rows` values, initialised (any bytes), aligned for
    /// [`Fr`], valid and used by nothing else until `give_back` is called.
    pub unsafe fn new(
        buffers: [NonNull<Fr>; 3],
        rows: usize,
        capacity: usize,
        reservation: Option<Reservation>,
        give_back: GiveBack,
    ) -> LentAbc {
        debug_assert!(capacity >= rows);
        LentAbc {
            buffers,
            rows,
            capacity: capacity.max(rows),
            is_written: false,
            reservation,
            give_back: Some(give_back),
        }
    }

    /// Values per vector.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Bytes the set holds: its three buffers whole.
    pub fn bytes(&self) -> u64 {
        (3 * self.capacity * std::mem::size_of::<Fr>()) as u64
    }

    /// Bytes the set holds beyond the partition's three vectors (a set made for a larger
    /// circuit): the partition's reservation grows by them too, so the set goes back counted
    /// whole.
    pub fn spare_bytes(&self) -> u64 {
        (3 * (self.capacity - self.rows) * std::mem::size_of::<Fr>()) as u64
    }

    /// The reservation the set came back with, for the partition it is lent to now.
    pub fn take_reservation(&mut self) -> Option<Reservation> {
        self.reservation.take()
    }

    /// Makes the set hold `reservation` (its bytes, split off its partition's), so that it
    /// goes back to the lender counted.
    pub fn hold(&mut self, reservation: Reservation) {
        self.reservation = Some(reservation);
    }

    /// The three vectors to write, uninitialised the first time.
    pub fn to_write(&mut self) -> [&mut [MaybeUninit<Fr>]; 3] {
        let rows = self.rows;
        // SAFETY: three distinct buffers of `rows` values, this value's alone (`new`), and
        // `&mut self` is unique; MaybeUninit asks nothing of their contents.
        self.buffers
            .map(|ptr| unsafe { std::slice::from_raw_parts_mut(ptr.as_ptr().cast(), rows) })
    }

    /// Says the three vectors were written: every value, or held compact (each chunk's wide
    /// values at its start, the other rows as the buffers held them: the partition holds
    /// their layouts, `host_abc::compact`, and every reader expands them first).
    ///
    /// # Safety
    /// Every one of the `rows` values of each vector from [`Self::to_write`] was written, or
    /// the vectors were written compact (the buffers' other bytes are initialised: `new`).
    pub unsafe fn mark_written(&mut self) {
        self.is_written = true;
    }

    /// a, b and c to change in place, once written (to hold them compact).
    pub fn vectors_mut(&mut self) -> Option<[&mut [Fr]; 3]> {
        let rows = self.rows;
        // SAFETY: written (`mark_written`), every byte initialised (`new`); three distinct
        // buffers, this value's alone (`new`), and `&mut self` is unique.
        self.is_written.then(|| {
            self.buffers
                .map(|ptr| unsafe { std::slice::from_raw_parts_mut(ptr.as_ptr(), rows) })
        })
    }

    /// a, b and c, once written.
    pub fn vectors(&self) -> Option<[&[Fr]; 3]> {
        let rows = self.rows;
        // SAFETY: written (`mark_written`), every byte initialised (`new`), and only read
        // through `&self`.
        self.is_written.then(|| {
            self.buffers
                .map(|ptr| unsafe { std::slice::from_raw_parts(ptr.as_ptr(), rows) })
        })
    }
}

impl Drop for LentAbc {
    fn drop(&mut self) {
        if let Some(give_back) = self.give_back.take() {
            give_back(self.reservation.take());
        }
    }
}

impl std::fmt::Debug for LentAbc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LentAbc")
            .field("rows", &self.rows)
            .field("is_written", &self.is_written)
            .finish()
    }
}

/// A lender of heap memory, for tests of the lending paths on builds without a GPU: sets of
/// `Vec`s, at most `most` lent or idle at once, every give-back counted.
#[cfg(test)]
pub mod heap {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};

    use super::*;

    /// A set that came back: a, b, c and what it held.
    pub type HeapSet = (Vec<Fr>, Vec<Fr>, Vec<Fr>, Option<Reservation>);

    /// Lends heap sets.
    #[derive(Default)]
    pub struct HeapLender {
        /// Sets that came back.
        pub idle: Arc<Mutex<Vec<HeapSet>>>,
        /// Sets made.
        pub made: AtomicUsize,
        /// Sets it may make.
        pub most: usize,
    }

    impl LendsAbc for HeapLender {
        fn lend(&self, rows: usize) -> Option<LentAbc> {
            let reused = {
                let mut idle = self.idle.lock().unwrap();
                // The smallest set that holds the rows.
                let at = (0..idle.len())
                    .filter(|&at| idle[at].0.len() >= rows)
                    .min_by_key(|&at| idle[at].0.len());
                at.map(|at| idle.swap_remove(at))
            };
            let (mut a, mut b, mut c, reservation) = match reused {
                Some(set) => set,
                None if self.made.load(Ordering::SeqCst) < self.most => {
                    self.made.fetch_add(1, Ordering::SeqCst);
                    let fresh = || vec![Fr::from(7u64); rows];
                    (fresh(), fresh(), fresh(), None)
                }
                None => return None,
            };
            let capacity = a.len();
            let buffers = [&mut a, &mut b, &mut c].map(|v| NonNull::new(v.as_mut_ptr()).unwrap());
            let idle = self.idle.clone();
            let give_back: GiveBack = Box::new(move |reservation| {
                idle.lock().unwrap().push((a, b, c, reservation));
            });
            // SAFETY: three vectors of `capacity >= rows` values, moved into `give_back`
            // (their heap memory does not move with them) and touched by nothing until it runs.
            Some(unsafe { LentAbc::new(buffers, rows, capacity, reservation, give_back) })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::heap::HeapLender;
    use super::*;
    use crate::memory::MemoryBudget;

    #[test]
    fn a_set_is_read_only_once_written_and_goes_back_with_its_reservation() {
        let lender = HeapLender {
            most: 1,
            ..HeapLender::default()
        };
        let budget = MemoryBudget::new(1000, None);
        let mut set = lender.lend(4).expect("a set");
        assert!(lender.lend(4).is_none(), "one set at most");
        assert!(
            set.vectors().is_none(),
            "nothing to read before it is written"
        );
        for (k, vector) in set.to_write().into_iter().enumerate() {
            for (i, value) in vector.iter_mut().enumerate() {
                value.write(Fr::from((10 * k + i) as u64));
            }
        }
        // SAFETY: every value of the three was written above.
        unsafe { set.mark_written() };
        let [a, b, c] = set.vectors().expect("written");
        assert_eq!(a[3], Fr::from(3u64));
        assert_eq!(b[0], Fr::from(10u64));
        assert_eq!(c[2], Fr::from(22u64));
        assert_eq!(set.bytes(), 3 * 4 * 32);
        set.hold(budget.try_reserve(384).expect("room"));
        drop(set);
        assert_eq!(budget.in_use(), 384, "an idle set stays counted");
        let mut again = lender.lend(4).expect("the set came back");
        let held = again.take_reservation().expect("with its reservation");
        assert_eq!(held.bytes(), 384);
        drop(held);
        assert_eq!(budget.in_use(), 0);
        assert!(
            again.vectors().is_none(),
            "a set lent again is written again"
        );
        drop(again);
        // A smaller partition takes the larger set, which is counted whole.
        let mut small = lender.lend(2).expect("the set serves fewer rows");
        assert_eq!(small.rows(), 2);
        assert_eq!(small.bytes(), 3 * 4 * 32);
        assert_eq!(small.spare_bytes(), 3 * 2 * 32);
        assert_eq!(small.to_write()[0].len(), 2);
        drop(small);
        assert!(lender.lend(5).is_none(), "a larger one needs another set");
    }
}
