//! The run's pre-compiled constraints: each circuit shape's R1CS is mapped from beside its
//! parameters (`cuzk params constraints` or an earlier run saved it there), or recorded in
//! the background the first time a sector of that shape comes and saved there for every later
//! run. The shape's partitions wait for a recording rather than go through the gadgets: a
//! partition's gadgets cost about what the whole recording does (at 32GiB about 100 CPU s
//! against 108 s), they would hold a, b and c meanwhile (17.1 GB each) and take the cores the
//! recording runs on, and once it is ready every partition costs a few CPU seconds. Only a
//! shape whose constraints cannot be had (no room in the budget, a failed recording) is
//! synthesized in full.
//!
//! A file is named after its circuit's identity and checked against the parameters' counts
//! when loaded (see [`crate::r1cs::CircuitIdentity`]): constraints of another circuit are
//! recorded again rather than failing every partition, and a file there is never replaced.
//!
//! The matrices take a place in the memory budget; when the budget has no room for them, or
//! they cannot be made, partitions keep the full path and the run says why once.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::{Context, Result};

use crate::event::{EventKind, EventSink};
use crate::memory::{show_bytes, MemoryBudget, Reservation};
use crate::params::check_recorded;
use crate::r1cs::{r1cs_path, R1cs};

use super::job::Job;

/// What is known of one shape's constraints.
enum Slot {
    /// Being loaded or recorded.
    Preparing,
    /// Ready, with its place in the budget.
    Ready(Arc<R1cs>, #[allow(dead_code)] Reservation),
    /// Not to be had in this run: full synthesis.
    Unavailable,
}

/// What a partition of a shape is synthesized with, as [`ConstraintSets::get`] answers.
pub enum Constraints {
    /// Its pre-compiled constraints.
    Ready(Arc<R1cs>),
    /// Nothing yet: they are being recorded, and the partition waits for them.
    Recording,
    /// Its gadgets in full: the constraints cannot be had now.
    Full,
}

/// The constraint sets of a run, by parameter file, and the threads that evaluate them.
pub struct ConstraintSets {
    slots: Mutex<HashMap<PathBuf, Slot>>,
    pool: rayon::ThreadPool,
    memory: MemoryBudget,
    events: EventSink,
    is_enabled: bool,
    is_native_witness: bool,
}

impl ConstraintSets {
    /// The sets of a run; `threads` evaluate the matrices for every partition. Disabled
    /// (`--synthesis full`), every partition is synthesized in full; `is_native_witness`:
    /// witnesses are computed natively where they can be (`--synthesis native`).
    pub fn new(
        threads: usize,
        memory: MemoryBudget,
        events: EventSink,
        is_enabled: bool,
        is_native_witness: bool,
    ) -> Result<Arc<ConstraintSets>> {
        Ok(Arc::new(ConstraintSets {
            slots: Mutex::new(HashMap::new()),
            pool: rayon::ThreadPoolBuilder::new()
                .num_threads(threads.max(1))
                .thread_name(|i| format!("constraints-{i}"))
                .build()
                .context("starting the constraint evaluation pool")?,
            memory,
            events,
            is_enabled,
            is_native_witness,
        }))
    }

    /// Whether a partition with pre-compiled constraints computes its witness natively.
    pub fn is_native_witness(&self) -> bool {
        self.is_native_witness
    }

    /// The pool that evaluates `A·w`, `B·w` and `C·w`.
    pub fn pool(&self) -> &rayon::ThreadPool {
        &self.pool
    }

    /// The constraints of `job`'s shape if they are ready; otherwise starts preparing them
    /// (once per shape, when the budget has room for them) and says whether to wait for
    /// them or go through the gadgets. `constraints` is the circuit's size, to budget a
    /// recording.
    pub fn get(
        self: &Arc<Self>,
        params_path: &Path,
        job: &Arc<Job>,
        constraints: u64,
    ) -> Constraints {
        if !self.is_enabled {
            return Constraints::Full;
        }
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        match slots.get(params_path) {
            Some(Slot::Ready(r1cs, _)) => return Constraints::Ready(r1cs.clone()),
            Some(Slot::Preparing) => return Constraints::Recording,
            Some(Slot::Unavailable) => return Constraints::Full,
            None => {}
        }
        let file = match r1cs_path(params_path) {
            Ok(file) => file,
            Err(err) => {
                slots.insert(params_path.to_owned(), Slot::Unavailable);
                drop(slots);
                self.fall_back(params_path, format!("{err:#}"));
                return Constraints::Full;
            }
        };
        // Room for the matrices while they are made: the file's size, or for a recording
        // twice the ~70 bytes a constraint they take (measured on 2KiB), as vectors grow.
        let bytes = std::fs::metadata(&file).map_or(constraints * 140, |m| m.len());
        // No room now: this partition goes through the gadgets, the next one asks again.
        let Some(making) = self.memory.try_reserve(bytes) else {
            return Constraints::Full;
        };
        if file.is_file() {
            // Saved by an earlier run: mapping it and checking its digest takes a second or
            // two, so the partition asking waits for it rather than synthesizing in full.
            let started = Instant::now();
            let loaded = R1cs::load(&file)
                .and_then(|r1cs| check_recorded(&r1cs, &file, params_path).map(|()| r1cs));
            match loaded {
                Ok(r1cs) => {
                    drop(slots);
                    self.settle(params_path, &file, Ok((r1cs, false)), started, making);
                    let slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
                    return match slots.get(params_path) {
                        Some(Slot::Ready(r1cs, _)) => Constraints::Ready(r1cs.clone()),
                        _ => Constraints::Full,
                    };
                }
                // Damaged, or of another circuit: recorded again below, in the background.
                Err(err) => log::warn!("{err:#}"),
            }
        }
        slots.insert(params_path.to_owned(), Slot::Preparing);
        let (sets, path, job) = (self.clone(), params_path.to_owned(), job.clone());
        std::thread::spawn(move || {
            let started = Instant::now();
            // A panicking recording fails the shape over to the gadgets, never leaves its
            // partitions waiting.
            let recorded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                record_and_save(&file, &job)
            }))
            .unwrap_or_else(|panic| {
                Err(anyhow::anyhow!(
                    "recording the constraints panicked: {}",
                    crate::util::panic_message(panic.as_ref())
                ))
            })
            .map(|r1cs| (r1cs, true));
            sets.settle(&path, &file, recorded, started, making);
        });
        Constraints::Recording
    }

    /// Files the constraints for `params_path` once made (or not), trading `making`, their
    /// room while they were made, for their real size.
    fn settle(
        &self,
        params_path: &Path,
        file: &Path,
        made: Result<(R1cs, bool)>,
        started: Instant,
        making: Reservation,
    ) {
        drop(making);
        let slot = match made {
            Ok((r1cs, is_recorded)) => match self.memory.try_reserve(r1cs.memory_bytes()) {
                Some(reservation) => {
                    self.events.emit(EventKind::ConstraintsReady {
                        path: file.display().to_string(),
                        is_recorded,
                        bytes: r1cs.memory_bytes(),
                        ms: started.elapsed().as_secs_f64() * 1e3,
                    });
                    Slot::Ready(Arc::new(r1cs), reservation)
                }
                None => {
                    self.fall_back(
                        file,
                        format!(
                            "they do not fit the memory budget now: {} (hint: raise --max-memory)",
                            show_bytes(r1cs.memory_bytes())
                        ),
                    );
                    Slot::Unavailable
                }
            },
            Err(err) => {
                self.fall_back(file, format!("{err:#}"));
                Slot::Unavailable
            }
        };
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        slots.insert(params_path.to_owned(), slot);
    }
}

impl ConstraintSets {
    /// Forgets the constraints made for the parameters at `params_path` and gives their room
    /// back, when those parameters are evicted (no job in flight uses them); a recording in
    /// progress is kept. They are mapped or recorded again if that size comes back.
    pub fn evict(&self, params_path: &Path) {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        if matches!(slots.get(params_path), Some(Slot::Ready(..))) {
            slots.remove(params_path);
        }
    }

    /// The shape's partitions are synthesized in full this run, because of `reason`: in the
    /// timeline, where a slower run is looked into, and in the log.
    fn fall_back(&self, file: &Path, reason: String) {
        log::warn!(
            "pre-compiled constraints {} unavailable, synthesizing in full: {reason}",
            file.display()
        );
        self.events.emit(EventKind::FullSynthesis {
            path: file.display().to_string(),
            reason,
        });
    }
}

/// Records the constraints of `job`'s circuit and saves them at `file` (best effort: a
/// read-only parameter cache only costs the recording again next run). A file already there
/// (damaged, or recorded for another circuit) is left for its readers; this run keeps its
/// recording in memory.
fn record_and_save(file: &Path, job: &Job) -> Result<R1cs> {
    let r1cs = job
        .sector
        .circuits
        .record_constraints(R1cs::recording_threads())?;
    match r1cs.save(file) {
        Ok(true) => {}
        Ok(false) => log::warn!(
            "{} was not replaced by the constraints just recorded, since another run may have it mapped; they are used from memory in this run (hint: delete it when no cuzk runs, and the next run saves them)",
            file.display()
        ),
        Err(err) => log::warn!(
            "could not keep the recorded constraints at {}: {err:#}",
            file.display()
        ),
    }
    Ok(r1cs)
}
