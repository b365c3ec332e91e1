//! The pinned host sets a cuda prover lends for a, b and c ([`crate::host_abc`]): a
//! partition evaluated on the host writes its vectors straight into one, and the GPU's copy
//! engine reads them from there at the bus's speed, with no copy on the host.
//!
//! Two sets per prover at most: the partition being proved and the next one, evaluated
//! beside it. A third partition (a batch of more, or a call that never answered and kept
//! its set) gets heap vectors as before. A set is made at the first partition it is too
//! small for and kept with its budget reservation until the prover goes; a partition takes
//! the smallest idle set that holds it, so where circuits of two sizes alternate (a PoRep and
//! an update circuit) the sets grow to the larger once instead of being replaced at every
//! switch (12.5 GB of pinned memory made in seconds beside a proof). An idle set too small
//! is replaced.

use std::ptr::NonNull;
use std::sync::{Arc, Mutex};

use blstrs::Scalar as Fr;
use log::{info, warn};

use super::device::PinnedBuffer;
use crate::host_abc::{GiveBack, LendsAbc, LentAbc};
use crate::memory::Reservation;

/// Sets a prover lends at most.
const MOST_SETS: usize = 2;

/// One prover's pinned sets.
pub struct PinnedAbcSets {
    name: String,
    state: Arc<Mutex<SetsState>>,
}

#[derive(Default)]
struct SetsState {
    idle: Vec<PinnedSet>,
    lent: usize,
    /// Set once an allocation failed: not tried again (pinned memory is the host's).
    refused: bool,
}

struct PinnedSet {
    buffers: [PinnedBuffer; 3],
    rows: usize,
    reservation: Option<Reservation>,
}

impl PinnedAbcSets {
    /// No sets yet, for the prover named `name`.
    pub fn new(name: &str) -> PinnedAbcSets {
        PinnedAbcSets {
            name: name.to_owned(),
            state: Arc::default(),
        }
    }

    fn allocate(&self, rows: usize) -> Option<PinnedSet> {
        let bytes = rows * std::mem::size_of::<Fr>();
        let started = std::time::Instant::now();
        let made: Result<Vec<PinnedBuffer>, _> = (0..3).map(|_| PinnedBuffer::new(bytes)).collect();
        match made {
            Ok(buffers) => {
                info!(
                    "{}: {:.1} GB of pinned host memory for a, b and c in {:.1} s; the GPU reads them from there",
                    self.name,
                    3.0 * bytes as f64 / 1e9,
                    started.elapsed().as_secs_f64()
                );
                let buffers: [PinnedBuffer; 3] = buffers.try_into().ok()?;
                Some(PinnedSet {
                    buffers,
                    rows,
                    reservation: None,
                })
            }
            Err(error) => {
                warn!(
                    "{}: no pinned host memory for a, b and c ({error}); they go up from the heap, slower",
                    self.name
                );
                None
            }
        }
    }
}

impl LendsAbc for PinnedAbcSets {
    fn takes_compact_witness(&self) -> bool {
        true
    }

    fn lend(&self, rows: usize) -> Option<LentAbc> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
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
        // An idle set too small makes room for one of this size.
        let replaced = if state.idle.len() + state.lent >= MOST_SETS {
            Some(state.idle.pop()?)
        } else {
            None
        };
        // Counted as lent while it is made, outside the lock: making 12.5 GB of pinned
        // memory takes seconds, and a set given back meanwhile must not wait for it.
        state.lent += 1;
        drop(state);
        drop(replaced);
        match self.allocate(rows) {
            Some(set) => Some(self.lend_set(set, rows)),
            None => {
                let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
                state.lent -= 1;
                state.refused = true;
                None
            }
        }
    }
}

impl PinnedAbcSets {
    /// `set`, counted as lent already, as a [`LentAbc`] of `wanted <= set.rows` rows that
    /// goes back here, whole, when dropped.
    fn lend_set(&self, set: PinnedSet, wanted: usize) -> LentAbc {
        let PinnedSet {
            mut buffers,
            rows,
            reservation,
        } = set;
        let pointers = buffers.each_mut().map(|buffer| {
            NonNull::new(buffer.as_mut_slice().as_mut_ptr().cast::<Fr>())
                .unwrap_or(NonNull::dangling())
        });
        let state = self.state.clone();
        let give_back: GiveBack = Box::new(move |reservation| {
            let mut state = state.lock().unwrap_or_else(|e| e.into_inner());
            state.lent -= 1;
            state.idle.push(PinnedSet {
                buffers,
                rows,
                reservation,
            });
        });
        // SAFETY: each buffer holds `rows >= wanted` values of `Fr` (`allocate` made it so, and
        // `lend` picks only a set that holds the rows wanted), pinned memory is page-aligned,
        // and the buffers are moved into `give_back`, which nothing but the lent set's drop
        // calls: their memory (which does not move with them) is the set's alone until then.
        unsafe { LentAbc::new(pointers, wanted, rows, reservation, give_back) }
    }
}
