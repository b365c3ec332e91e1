//! A prover's own sets for a, b and c ([`AbcSets`], a [`LendsAbc`]): made by a [`SetMaker`]
//! (the cuda backend's makes pinned host memory), lent to one partition at a time, kept.
//!
//! Two sets per prover at most: the partition being proved and the next one, evaluated
//! beside it. A third partition (a batch of more, or a call that never answered and kept
//! its set) gets heap vectors. A set is made at the first partition it is too small for and
//! kept with its budget reservation until the prover goes; a partition takes the smallest
//! idle set that holds it, so where circuits of two sizes alternate (a PoRep and an update
//! circuit) the sets grow to the larger once instead of being replaced at every switch. An
//! idle set too small is replaced.
//!
//! Making one is slow (12.9 GB of pinned memory at 32GiB took 7-18 s on an H200 box), so
//! the second set is made ahead ([`LendsAbc::make_ahead`]): at a prover's first partition,
//! beside the first set and with its bytes reserved from the budget at once, so the second
//! partition, evaluated beside the first one's proof, finds it made instead of making it in
//! the GPU's way. A set's three buffers are made on three threads.

use std::ptr::NonNull;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Instant;

use blstrs::Scalar as Fr;
use log::{info, warn};

use super::{GiveBack, LendsAbc, LentAbc};
use crate::memory::{MemoryBudget, Reservation};

/// Sets a prover lends at most.
pub const MOST_SETS: usize = 2;

/// How a lender's buffers are made.
pub trait SetMaker: Send + Sync + 'static {
    /// One buffer, its memory fixed while it lives.
    type Buffer: Send + 'static;

    /// What its buffers are, for the log ("pinned host memory").
    const WHAT: &'static str;

    /// A buffer of `bytes`, aligned for [`Fr`], or why not.
    fn make(&self, bytes: usize) -> Result<Self::Buffer, String>;

    /// Where `buffer`'s memory starts.
    fn start(buffer: &mut Self::Buffer) -> NonNull<u8>;
}

/// One prover's sets.
pub struct AbcSets<M: SetMaker> {
    name: String,
    maker: Arc<M>,
    shared: Arc<Shared<M::Buffer>>,
}

struct Shared<B> {
    state: Mutex<SetsState<B>>,
    /// Told when a set made ahead is ready, or failed.
    made: Condvar,
}

struct SetsState<B> {
    idle: Vec<Set<B>>,
    lent: usize,
    /// Sets being made ahead, for a partition still to come.
    making: usize,
    /// Set once making one failed: not tried again (pinned memory is the host's).
    refused: bool,
}

struct Set<B> {
    buffers: [B; 3],
    rows: usize,
    reservation: Option<Reservation>,
}

impl<M: SetMaker> AbcSets<M> {
    /// No sets yet, for the prover named `name`.
    pub fn new(name: &str, maker: M) -> AbcSets<M> {
        AbcSets {
            name: name.to_owned(),
            maker: Arc::new(maker),
            shared: Arc::new(Shared {
                state: Mutex::new(SetsState {
                    idle: Vec::new(),
                    lent: 0,
                    making: 0,
                    refused: false,
                }),
                made: Condvar::new(),
            }),
        }
    }

    fn state(&self) -> MutexGuard<'_, SetsState<M::Buffer>> {
        self.shared.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `set`, counted as lent already, as a [`LentAbc`] of `wanted <= set.rows` rows that
    /// goes back here, whole, when dropped.
    fn lend_set(&self, set: Set<M::Buffer>, wanted: usize) -> LentAbc {
        let Set {
            mut buffers,
            rows,
            reservation,
        } = set;
        let pointers = buffers
            .each_mut()
            .map(|buffer| M::start(buffer).cast::<Fr>());
        let shared = self.shared.clone();
        let give_back: GiveBack = Box::new(move |reservation| {
            let mut state = shared.state.lock().unwrap_or_else(|e| e.into_inner());
            state.lent -= 1;
            state.idle.push(Set {
                buffers,
                rows,
                reservation,
            });
        });
        // SAFETY: each buffer holds `rows >= wanted` values of `Fr` (`make_set` made it so,
        // and `lend` picks only a set that holds the rows wanted), aligned for `Fr`
        // (`SetMaker::make`), and the buffers are moved into `give_back`, which nothing but
        // the lent set's drop calls: their memory (which does not move with them) is the
        // set's alone until then.
        unsafe { LentAbc::new(pointers, wanted, rows, reservation, give_back) }
    }
}

/// A set of `rows` values per buffer, its three buffers made on three threads.
fn make_set<M: SetMaker>(maker: &M, name: &str, rows: usize) -> Option<Set<M::Buffer>> {
    let bytes = rows * std::mem::size_of::<Fr>();
    let started = Instant::now();
    let made: Vec<Result<M::Buffer, String>> = std::thread::scope(|scope| {
        let makers: Vec<_> = (0..3).map(|_| scope.spawn(|| maker.make(bytes))).collect();
        makers
            .into_iter()
            .map(|m| {
                m.join()
                    .unwrap_or_else(|_| Err("its thread panicked".into()))
            })
            .collect()
    });
    let buffers: Result<Vec<M::Buffer>, String> = made.into_iter().collect();
    match buffers {
        Ok(buffers) => {
            info!(
                "{name}: {:.1} GB of {} for a, b and c in {:.1} s; the GPU reads them from there",
                3.0 * bytes as f64 / 1e9,
                M::WHAT,
                started.elapsed().as_secs_f64()
            );
            let buffers: [M::Buffer; 3] = buffers.try_into().ok()?;
            Some(Set {
                buffers,
                rows,
                reservation: None,
            })
        }
        Err(error) => {
            warn!(
                "{name}: no {} for a, b and c ({error}); they go up from the heap, slower",
                M::WHAT
            );
            None
        }
    }
}

impl<M: SetMaker> LendsAbc for AbcSets<M> {
    fn takes_compact_witness(&self) -> bool {
        true
    }

    fn make_ahead(&self, rows: usize, budget: &MemoryBudget) {
        let mut state = self.state();
        // Only beside the first set: later sets are made where one is too small.
        if state.refused || state.idle.len() + state.lent + state.making > 0 {
            return;
        }
        let bytes = (3 * rows * std::mem::size_of::<Fr>()) as u64;
        let Some(reservation) = budget.try_reserve(bytes) else {
            return;
        };
        state.making += 1;
        drop(state);
        let (maker, shared, name) = (self.maker.clone(), self.shared.clone(), self.name.clone());
        std::thread::spawn(move || {
            // A panic is a failed set: `lend` must not wait for this one forever.
            let set = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                make_set(&*maker, &name, rows)
            }))
            .unwrap_or(None);
            let mut state = shared.state.lock().unwrap_or_else(|e| e.into_inner());
            state.making -= 1;
            match set {
                Some(mut set) => {
                    set.reservation = Some(reservation);
                    state.idle.push(set);
                }
                None => state.refused = true,
            }
            shared.made.notify_all();
        });
    }

    fn lend(&self, rows: usize) -> Option<LentAbc> {
        let mut state = self.state();
        loop {
            let fitting = (0..state.idle.len())
                .filter(|&at| state.idle[at].rows >= rows)
                .min_by_key(|&at| state.idle[at].rows);
            if let Some(at) = fitting {
                let set = state.idle.swap_remove(at);
                state.lent += 1;
                drop(state);
                return Some(self.lend_set(set, rows));
            }
            if state.refused {
                return None;
            }
            // No room for another while one is made ahead: that one is this partition's.
            if state.making > 0 && state.idle.len() + state.lent + state.making >= MOST_SETS {
                state = self
                    .shared
                    .made
                    .wait(state)
                    .unwrap_or_else(|e| e.into_inner());
                continue;
            }
            break;
        }
        // An idle set too small makes room for one of this size.
        let replaced = if state.idle.len() + state.lent + state.making >= MOST_SETS {
            Some(state.idle.pop()?)
        } else {
            None
        };
        // Counted as lent while it is made, outside the lock: a set given back meanwhile
        // must not wait for it.
        state.lent += 1;
        drop(state);
        drop(replaced);
        match make_set(&*self.maker, &self.name, rows) {
            Some(set) => Some(self.lend_set(set, rows)),
            None => {
                let mut state = self.state();
                state.lent -= 1;
                state.refused = true;
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;

    /// Makes heap buffers, counting them; fails past `fail_after`, or panics; with
    /// `overlap`, each make waits (up to two seconds) until `overlap` makes run at once,
    /// and notes that they did.
    #[derive(Default)]
    struct HeapMaker {
        made: AtomicUsize,
        fail_after: Option<usize>,
        panics: bool,
        overlap: usize,
        running: Mutex<usize>,
        changed: Condvar,
        saw_overlap: AtomicUsize,
    }

    impl SetMaker for Arc<HeapMaker> {
        type Buffer = Vec<Fr>;
        const WHAT: &'static str = "heap memory";

        fn make(&self, bytes: usize) -> Result<Vec<Fr>, String> {
            if self.overlap > 0 {
                let mut running = self.running.lock().unwrap();
                *running += 1;
                self.changed.notify_all();
                let deadline = Instant::now() + Duration::from_secs(2);
                while *running < self.overlap && Instant::now() < deadline {
                    running = self
                        .changed
                        .wait_timeout(running, Duration::from_millis(20))
                        .unwrap()
                        .0;
                }
                if *running >= self.overlap {
                    self.saw_overlap.fetch_add(1, Ordering::SeqCst);
                }
                drop(running);
            }
            let made = self.made.fetch_add(1, Ordering::SeqCst);
            assert!(!self.panics, "a maker that panics");
            if self.fail_after.is_some_and(|most| made >= most) {
                return Err("no more".into());
            }
            Ok(vec![Fr::from(3u64); bytes / std::mem::size_of::<Fr>()])
        }

        fn start(buffer: &mut Vec<Fr>) -> NonNull<u8> {
            NonNull::new(buffer.as_mut_ptr().cast()).expect("a vector's pointer")
        }
    }

    fn sets(maker: HeapMaker) -> (AbcSets<Arc<HeapMaker>>, Arc<HeapMaker>) {
        let maker = Arc::new(maker);
        (AbcSets::new("cuda-0", maker.clone()), maker)
    }

    const ROWS: usize = 8;
    const SET_BYTES: u64 = 3 * ROWS as u64 * 32;

    #[test]
    fn the_second_set_is_made_ahead_beside_the_first_and_counted_at_once() {
        // Both sets' six buffers are made at once, or the maker waits two seconds in vain.
        let (lender, maker) = sets(HeapMaker {
            overlap: 6,
            ..HeapMaker::default()
        });
        let budget = MemoryBudget::new(10 * SET_BYTES, None);
        lender.make_ahead(ROWS, &budget);
        assert_eq!(budget.in_use(), SET_BYTES, "its bytes reserved at once");
        let mut first = lender.lend(ROWS).expect("the first partition's set");
        assert!(first.take_reservation().is_none(), "made for it, not ahead");
        let mut second = lender.lend(ROWS).expect("the set made ahead");
        let held = second.take_reservation().expect("with its reservation");
        assert_eq!(held.bytes(), SET_BYTES);
        assert_eq!(maker.made.load(Ordering::SeqCst), 6);
        assert_eq!(
            maker.saw_overlap.load(Ordering::SeqCst),
            6,
            "the two sets were made side by side"
        );
        assert!(lender.lend(ROWS).is_none(), "two sets at most");
        // Once sets exist, nothing more is made ahead.
        lender.make_ahead(ROWS, &budget);
        assert_eq!(budget.in_use(), SET_BYTES);
        drop((first, second));
        assert!(lender.lend(ROWS).is_some());
        assert_eq!(maker.made.load(Ordering::SeqCst), 6, "the sets are kept");
    }

    #[test]
    fn nothing_is_made_ahead_where_the_budget_has_no_room() {
        let (lender, maker) = sets(HeapMaker::default());
        let budget = MemoryBudget::new(SET_BYTES - 1, None);
        lender.make_ahead(ROWS, &budget);
        assert_eq!(budget.in_use(), 0);
        let _first = lender.lend(ROWS).expect("a set");
        let mut second = lender.lend(ROWS).expect("made when wanted, as before");
        assert!(second.take_reservation().is_none());
        assert_eq!(maker.made.load(Ordering::SeqCst), 6);
    }

    #[test]
    fn a_set_that_fails_sends_its_partitions_to_the_heap_and_gives_its_bytes_back() {
        for maker in [
            HeapMaker {
                fail_after: Some(0),
                ..HeapMaker::default()
            },
            HeapMaker {
                panics: true,
                ..HeapMaker::default()
            },
        ] {
            fails_to_the_heap(maker);
        }
    }

    fn fails_to_the_heap(maker: HeapMaker) {
        let (lender, maker) = sets(maker);
        let budget = MemoryBudget::new(10 * SET_BYTES, None);
        lender.make_ahead(ROWS, &budget);
        assert!(lender.lend(ROWS).is_none(), "its own set failed");
        assert!(lender.lend(ROWS).is_none(), "refused from then on");
        // The set made ahead fails on its thread, and its reservation goes back.
        let deadline = Instant::now() + Duration::from_secs(5);
        while budget.in_use() > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(budget.in_use(), 0);
        let tried = maker.made.load(Ordering::SeqCst);
        assert!(lender.lend(ROWS).is_none());
        lender.make_ahead(ROWS, &budget);
        assert_eq!(
            maker.made.load(Ordering::SeqCst),
            tried,
            "nothing tried again"
        );
        assert_eq!(budget.in_use(), 0);
    }

    #[test]
    fn a_larger_circuit_replaces_an_idle_set_and_a_smaller_one_takes_the_larger() {
        let (lender, maker) = sets(HeapMaker::default());
        let first = lender.lend(ROWS).expect("a set");
        let second = lender.lend(ROWS).expect("another");
        drop(first);
        let large = lender.lend(2 * ROWS).expect("an idle set replaced");
        assert_eq!(large.bytes(), 2 * SET_BYTES);
        assert_eq!(maker.made.load(Ordering::SeqCst), 9);
        drop((large, second));
        let small = lender.lend(ROWS).expect("a set");
        assert_eq!(small.bytes(), SET_BYTES, "the smallest that holds it");
        let other = lender.lend(ROWS).expect("the other");
        assert_eq!(other.spare_bytes(), SET_BYTES, "the larger counted whole");
        assert_eq!(maker.made.load(Ordering::SeqCst), 9, "none made");
    }
}
