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
//! before a prover's first partitions, while its parameters load, both are made ahead
//! ([`LendsAbc::make_all_ahead`]), and otherwise the second set is made ahead
//! ([`LendsAbc::make_ahead`]): at a prover's first partition, beside the first set. A set
//! made ahead has its bytes reserved at once from the room the budget keeps for partitions
//! at the provers (where they do not fit, nothing is made ahead). The second
//! partition, evaluated beside the first one's proof, waits for it rather than making
//! another in the GPU's way, unless it needs more rows than it will hold. A set made ahead
//! that fails only ends the making ahead; a partition's own set that fails sends the
//! partitions after it to heap vectors. A set's three buffers are made on three threads.

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
///
/// # Safety
/// A buffer `make(bytes)` returns holds at least `bytes` initialised bytes (any values),
/// aligned for [`Fr`], from `start` on; its memory stays where it is, valid and this
/// buffer's alone, while the buffer
/// lives, wherever the `Buffer` value moves (the sets lend their memory by pointer, and move
/// the buffers into the closure that gives them back).
pub unsafe trait SetMaker: Send + Sync + 'static {
    /// One buffer, its memory fixed while it lives.
    type Buffer: Send + 'static;

    /// What its buffers are, for the log ("pinned host memory").
    const WHAT: &'static str;

    /// A buffer of `bytes`, or why not.
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
    /// Sets being made ahead, for a partition still to come, and their rows.
    making: usize,
    making_rows: usize,
    /// Set once making one for a partition failed: not tried again (pinned memory is the
    /// host's). A set made ahead that fails only ends the making ahead.
    refused: bool,
    ahead_failed: bool,
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
                    making_rows: 0,
                    refused: false,
                    ahead_failed: false,
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
            let set = Set {
                buffers,
                rows,
                reservation,
            };
            let mut state = shared.state.lock().unwrap_or_else(|e| e.into_inner());
            state.lent -= 1;
            // A set that comes back without its bytes' reservation (its partition gave up
            // before holding it: a cancelled job) is freed, outside the lock, rather than
            // kept uncounted.
            let freed = if set.reservation.is_some() {
                state.idle.push(set);
                None
            } else {
                Some(set)
            };
            shared.made.notify_all();
            drop(state);
            drop(freed);
        });
        // SAFETY: each buffer holds `rows >= wanted` values of `Fr`, aligned for it
        // (`make_set` asked `SetMaker::make` for that many bytes, whose contract says so, and
        // `lend` picks only a set that holds the rows wanted); the buffers are moved into
        // `give_back`, which nothing but the lent set's drop calls, and their memory does not
        // move with them (`SetMaker`'s contract): it is the set's alone until then.
        unsafe { LentAbc::new(pointers, wanted, rows, reservation, give_back) }
    }
}

/// A set of `rows` values per buffer, its three buffers made on three threads.
fn make_set<M: SetMaker>(maker: &M, name: &str, rows: usize) -> Option<Set<M::Buffer>> {
    let bytes = rows * std::mem::size_of::<Fr>();
    let started = Instant::now();
    let made: Vec<Result<M::Buffer, String>> = std::thread::scope(|scope| {
        let makers: Vec<_> = (0..3)
            .map(|_| {
                std::thread::Builder::new()
                    .name("abc-set".into())
                    .spawn_scoped(scope, || maker.make(bytes))
            })
            .collect();
        makers
            .into_iter()
            .map(|m| match m {
                Ok(thread) => thread
                    .join()
                    .unwrap_or_else(|_| Err("its thread panicked".into())),
                Err(error) => Err(format!("no thread to make it: {error}")),
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
        // Only beside the first set: later sets are made where one is too small.
        self.start_making(rows, budget, 0);
    }

    fn make_all_ahead(&self, rows: usize, budget: &MemoryBudget) {
        for before in 0..MOST_SETS {
            if !self.start_making(rows, budget, before) {
                break;
            }
        }
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
            // No room for another while one that holds it is made ahead: that one is this
            // partition's.
            if state.making > 0
                && state.making_rows >= rows
                && state.idle.len() + state.lent + state.making >= MOST_SETS
            {
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

impl<M: SetMaker> AbcSets<M> {
    /// Starts making a set of `rows` on a thread of its own, where the lender has exactly
    /// `sets` sets (idle, lent or being made), has failed none and the set's bytes fit the
    /// budget; true if it started one.
    fn start_making(&self, rows: usize, budget: &MemoryBudget, sets: usize) -> bool {
        let mut state = self.state();
        if state.refused
            || state.ahead_failed
            || state.idle.len() + state.lent + state.making != sets
        {
            return false;
        }
        // From the room the budget keeps for partitions at the provers, as the partition
        // that will take it would grow there.
        let bytes = (3 * rows * std::mem::size_of::<Fr>()) as u64;
        let Some(reservation) = budget.try_reserve_at_prover(bytes) else {
            return false;
        };
        state.making += 1;
        state.making_rows = rows;
        drop(state);
        let (maker, shared, name) = (self.maker.clone(), self.shared.clone(), self.name.clone());
        let made_ahead = move || {
            // A panic is a failed set: `lend` must not wait for this one forever.
            let set = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                make_set(&*maker, &name, rows)
            }))
            .unwrap_or(None);
            let mut state = shared.state.lock().unwrap_or_else(|e| e.into_inner());
            state.making -= 1;
            let unused = match set {
                Some(mut set) => {
                    set.reservation = Some(reservation);
                    state.idle.push(set);
                    None
                }
                None => {
                    state.ahead_failed = true;
                    Some(reservation)
                }
            };
            shared.made.notify_all();
            drop(state);
            drop(unused);
        };
        if let Err(error) = std::thread::Builder::new()
            .name("abc-set-ahead".into())
            .spawn(made_ahead)
        {
            warn!("{}: no thread to make a set ahead ({error})", self.name);
            let mut state = self.state();
            state.making -= 1;
            state.ahead_failed = true;
            self.shared.made.notify_all();
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::mpsc;
    use std::time::Duration;

    use super::*;

    /// Long enough for any loaded machine: correct code never waits this long.
    const PATIENCE: Duration = Duration::from_secs(30);

    /// Makes heap buffers, counting them. Fails past `fail_after`, or panics. With
    /// `overlap`, each make waits (up to PATIENCE) until `overlap` makes run at once, and
    /// notes that they did. With `gate`, a make of that many bytes waits until `release`,
    /// then fails where `gate_fails`.
    #[derive(Default)]
    struct HeapMaker {
        made: AtomicUsize,
        fail_after: Option<usize>,
        panics: bool,
        overlap: usize,
        gate: usize,
        gate_fails: bool,
        released: Mutex<bool>,
        opened: Condvar,
        running: Mutex<usize>,
        changed: Condvar,
        saw_overlap: AtomicUsize,
    }

    impl HeapMaker {
        fn release(&self) {
            *self.released.lock().unwrap() = true;
            self.opened.notify_all();
        }
    }

    // SAFETY: a vector of `bytes / 32` scalars (the sets ask for whole rows) is aligned for
    // `Fr`, and its heap memory does not move with the vector.
    unsafe impl SetMaker for Arc<HeapMaker> {
        type Buffer = Vec<Fr>;
        const WHAT: &'static str = "heap memory";

        fn make(&self, bytes: usize) -> Result<Vec<Fr>, String> {
            if self.gate > 0 && bytes == self.gate {
                let mut released = self.released.lock().unwrap();
                while !*released {
                    released = self.opened.wait(released).unwrap();
                }
                if self.gate_fails {
                    return Err("the gated set fails".into());
                }
            }
            if self.overlap > 0 {
                let mut running = self.running.lock().unwrap();
                *running += 1;
                self.changed.notify_all();
                let deadline = Instant::now() + PATIENCE;
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

    fn sets(maker: HeapMaker) -> (Arc<AbcSets<Arc<HeapMaker>>>, Arc<HeapMaker>) {
        let maker = Arc::new(maker);
        (Arc::new(AbcSets::new("cuda-0", maker.clone())), maker)
    }

    const ROWS: usize = 8;
    const SET_BYTES: u64 = 3 * ROWS as u64 * 32;

    /// A lent set holding the reservation of its bytes, as a partition leaves it.
    fn counted(mut set: LentAbc, budget: &MemoryBudget) -> LentAbc {
        let held = set
            .take_reservation()
            .unwrap_or_else(|| budget.try_reserve(set.bytes()).expect("room"));
        set.hold(held);
        set
    }

    #[test]
    fn the_second_set_is_made_ahead_beside_the_first_and_counted_at_once() {
        // Both sets' six buffers are made at once, or the maker waits in vain.
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
        second.hold(held);
        drop((counted(first, &budget), second));
        assert_eq!(budget.in_use(), 2 * SET_BYTES, "idle sets stay counted");
        assert!(lender.lend(ROWS).is_some());
        assert_eq!(maker.made.load(Ordering::SeqCst), 6, "the sets are kept");
    }

    #[test]
    fn before_the_first_partition_every_set_is_made_ahead_as_far_as_the_budget_holds() {
        // Both sets' six buffers are made at once, or the maker waits in vain.
        let (lender, maker) = sets(HeapMaker {
            overlap: 6,
            ..HeapMaker::default()
        });
        let budget = MemoryBudget::new(10 * SET_BYTES, None);
        lender.make_all_ahead(ROWS, &budget);
        assert_eq!(budget.in_use(), 2 * SET_BYTES, "both reserved at once");
        // The partitions then make nothing: each takes a set made ahead, with its bytes.
        lender.make_ahead(ROWS, &budget);
        let mut first = lender.lend(ROWS).expect("a set made ahead");
        let mut second = lender.lend(ROWS).expect("the other");
        for set in [&mut first, &mut second] {
            let held = set
                .take_reservation()
                .expect("made ahead, with its reservation");
            assert_eq!(held.bytes(), SET_BYTES);
            set.hold(held);
        }
        assert_eq!(maker.made.load(Ordering::SeqCst), 6);
        assert_eq!(maker.saw_overlap.load(Ordering::SeqCst), 6, "side by side");
        assert_eq!(budget.in_use(), 2 * SET_BYTES);
        // Sets made: asking again makes none.
        lender.make_all_ahead(ROWS, &budget);
        assert_eq!(maker.made.load(Ordering::SeqCst), 6);

        // A budget that holds one set: one is made ahead, the other when a partition wants it.
        let (lender, maker) = sets(HeapMaker::default());
        let budget = MemoryBudget::new(SET_BYTES + SET_BYTES / 2, None);
        lender.make_all_ahead(ROWS, &budget);
        assert_eq!(budget.in_use(), SET_BYTES);
        // Made while the parameters load, it is ready by the first partition.
        let deadline = Instant::now() + PATIENCE;
        while lender.state().idle.is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        let mut first = lender.lend(ROWS).expect("the set made ahead");
        assert!(first.take_reservation().is_some());
        let mut second = lender.lend(ROWS).expect("made when wanted");
        assert!(second.take_reservation().is_none());
        assert_eq!(maker.made.load(Ordering::SeqCst), 6);
    }

    #[test]
    fn nothing_is_made_ahead_where_the_budget_has_no_room() {
        let (lender, maker) = sets(HeapMaker::default());
        let budget = MemoryBudget::new(SET_BYTES - 1, None);
        lender.make_ahead(ROWS, &budget);
        assert_eq!(budget.in_use(), 0);
        let _first = lender.lend(ROWS).expect("a set");
        assert_eq!(maker.made.load(Ordering::SeqCst), 3, "no set made ahead");
        let mut second = lender.lend(ROWS).expect("made when wanted, as before");
        assert!(second.take_reservation().is_none());
        assert_eq!(maker.made.load(Ordering::SeqCst), 6);
    }

    #[test]
    fn a_partition_waits_for_the_set_made_ahead_and_is_woken_if_it_fails() {
        for fails in [false, true] {
            let (lender, maker) = sets(HeapMaker {
                gate: 2 * ROWS * 32,
                gate_fails: fails,
                ..HeapMaker::default()
            });
            let budget = MemoryBudget::new(10 * SET_BYTES, None);
            lender.make_ahead(2 * ROWS, &budget);
            let _first = lender.lend(ROWS).expect("its own set");
            let (told, answer) = mpsc::channel();
            let waiting = lender.clone();
            std::thread::spawn(move || {
                let set = waiting.lend(ROWS);
                let held = set.map(|mut set| set.take_reservation().map(|r| r.bytes()));
                told.send(held).expect("the test listens");
            });
            assert!(
                answer.recv_timeout(Duration::from_millis(200)).is_err(),
                "it waits for the set being made"
            );
            maker.release();
            let held = answer.recv_timeout(PATIENCE).expect("woken");
            if fails {
                assert_eq!(held, Some(None), "its own set, made when the other failed");
                let deadline = Instant::now() + PATIENCE;
                while budget.in_use() > 0 && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(10));
                }
                assert_eq!(budget.in_use(), 0, "the failed set's bytes went back");
            } else {
                assert_eq!(held, Some(Some(2 * SET_BYTES)), "the set made ahead");
            }
        }
    }

    #[test]
    fn a_larger_partition_does_not_wait_for_a_smaller_set_made_ahead() {
        let (lender, maker) = sets(HeapMaker {
            gate: ROWS * 32,
            ..HeapMaker::default()
        });
        let budget = MemoryBudget::new(10 * SET_BYTES, None);
        lender.make_ahead(ROWS, &budget);
        let (told, answer) = mpsc::channel();
        let lending = lender.clone();
        std::thread::spawn(move || {
            let first = lending.lend(2 * ROWS);
            let second = lending.lend(2 * ROWS);
            let rows = (first.map(|set| set.rows()), second.map(|set| set.rows()));
            told.send(rows).expect("the test listens");
        });
        let answered = answer.recv_timeout(PATIENCE);
        maker.release();
        assert_eq!(
            answered.expect("no wait for a set too small"),
            (Some(2 * ROWS), None),
            "its own set, then the heap (two sets at most, one being made)"
        );
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
        let deadline = Instant::now() + PATIENCE;
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
        let budget = MemoryBudget::new(100 * SET_BYTES, None);
        let first = counted(lender.lend(ROWS).expect("a set"), &budget);
        let second = counted(lender.lend(ROWS).expect("another"), &budget);
        drop(first);
        let large = counted(
            lender.lend(2 * ROWS).expect("an idle set replaced"),
            &budget,
        );
        assert_eq!(large.bytes(), 2 * SET_BYTES);
        assert_eq!(maker.made.load(Ordering::SeqCst), 9);
        assert_eq!(
            budget.in_use(),
            3 * SET_BYTES,
            "the replaced set's bytes went back"
        );
        drop((large, second));
        let small = lender.lend(ROWS).expect("a set");
        assert_eq!(small.bytes(), SET_BYTES, "the smallest that holds it");
        let other = lender.lend(ROWS).expect("the other");
        assert_eq!(other.spare_bytes(), SET_BYTES, "the larger counted whole");
        assert_eq!(maker.made.load(Ordering::SeqCst), 9, "none made");
    }

    #[test]
    fn a_set_back_without_its_reservation_is_freed_not_kept_uncounted() {
        let (lender, maker) = sets(HeapMaker::default());
        drop(lender.lend(ROWS).expect("a set"));
        assert!(lender.lend(ROWS).is_some());
        assert_eq!(maker.made.load(Ordering::SeqCst), 6, "made again");
    }
}
