//! The parameter sets of a run: each file is loaded once, kept resident and shared by every
//! prover; a load that fails fails once.
//!
//! The cache knows files, not backends: it is made with the loader of the form the run's
//! provers prove with (bellperson's parameters, SupraSeal's SRS; see `backend::ParamsKind`)
//! and hands out whatever that loader made.
//!
//! Each file has its own slot, so loading one set never stalls provers that use another,
//! and provers that need a set being loaded wait on its slot (shown as loading, not idle, in
//! the timeline) rather than on a lock over all of them. A failed load is remembered with its
//! reason: every later request gets the same error at once instead of reading the file again.
//!
//! A set stays for the run unless the feeder evicts it ([`ParamSets::evict`]): when jobs of
//! another size need the room and no job in flight uses it, so that sizes that do not fit the
//! budget together take turns instead of waiting for ever.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use crate::event::{EventKind, EventSink, WorkerName};
use crate::memory::{MemoryBudget, Reservation};
use crate::util::panic_message;

/// Why a parameter set could not be loaded.
#[derive(Clone, Debug, thiserror::Error)]
#[error("{path}: cannot load Groth16 parameters: {reason} (hint: the file is damaged, incomplete or not a parameter file; fetch or generate it again)")]
pub struct LoadParamsError {
    /// The parameter file.
    pub path: PathBuf,
    /// What went wrong.
    pub reason: String,
}

/// Turns a parameter file into the form a run proves with, or says why it cannot.
pub type ParamsLoader<P> = dyn Fn(&Path) -> Result<P, String> + Send + Sync;

enum SlotState<P> {
    /// Nobody has asked for it yet.
    Unloaded,
    /// A thread is reading it.
    Loading,
    /// In memory.
    Loaded(P),
    /// The load failed; the error is given to everyone who asks.
    Failed(LoadParamsError),
}

struct Slot<P> {
    state: Mutex<Option<SlotState<P>>>,
    changed: Condvar,
}

impl<P> Default for Slot<P> {
    fn default() -> Self {
        Slot {
            state: Mutex::new(None),
            changed: Condvar::new(),
        }
    }
}

/// The parameter sets of a run, by file, each in the form `P` the run's provers need.
pub struct ParamSets<P> {
    /// Makes a `P` of a file.
    loader: Arc<ParamsLoader<P>>,
    slots: Mutex<HashMap<PathBuf, Arc<Slot<P>>>>,
    /// The memory each set holds, reserved before it is loaded and kept for the run.
    memory: Mutex<HashMap<PathBuf, Reservation>>,
}

/// What the caller of [`ParamSets::claim_load`] must do.
enum Claim<P> {
    /// The set is ready (or failed) already.
    Done(Result<P, LoadParamsError>),
    /// Another thread is loading it: wait on the slot.
    Wait,
    /// Load it: this thread owns the load.
    Load,
}

impl<P: Clone + Send + 'static> ParamSets<P> {
    /// A run's empty set of parameters, each loaded by `loader` when asked for.
    pub fn new(
        loader: impl Fn(&Path) -> Result<P, String> + Send + Sync + 'static,
    ) -> Arc<ParamSets<P>> {
        Arc::new(ParamSets {
            loader: Arc::new(loader),
            slots: Mutex::default(),
            memory: Mutex::default(),
        })
    }

    fn slot(&self, path: &Path) -> Arc<Slot<P>> {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        slots.entry(path.to_owned()).or_default().clone()
    }

    fn claim_load(slot: &Slot<P>) -> Claim<P> {
        let mut state = slot.state.lock().unwrap_or_else(|e| e.into_inner());
        match state.get_or_insert(SlotState::Unloaded) {
            SlotState::Loaded(params) => Claim::Done(Ok(params.clone())),
            SlotState::Failed(err) => Claim::Done(Err(err.clone())),
            SlotState::Loading => Claim::Wait,
            unloaded @ SlotState::Unloaded => {
                *unloaded = SlotState::Loading;
                Claim::Load
            }
        }
    }

    fn finish_load(slot: &Slot<P>, result: &Result<P, LoadParamsError>) {
        let mut state = slot.state.lock().unwrap_or_else(|e| e.into_inner());
        *state = Some(match result {
            Ok(params) => SlotState::Loaded(params.clone()),
            Err(err) => SlotState::Failed(err.clone()),
        });
        slot.changed.notify_all();
    }

    fn wait_loaded(slot: &Slot<P>) -> Result<P, LoadParamsError> {
        let mut state = slot.state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            match &*state {
                Some(SlotState::Loaded(params)) => return Ok(params.clone()),
                Some(SlotState::Failed(err)) => return Err(err.clone()),
                _ => state = slot.changed.wait(state).unwrap_or_else(|e| e.into_inner()),
            }
        }
    }

    /// Reserves `bytes` for the set at `path` unless they are reserved already; false when
    /// the budget has no room now.
    pub fn reserve_memory(&self, path: &Path, budget: &MemoryBudget, bytes: u64) -> bool {
        let mut memory = self.memory.lock().unwrap_or_else(|e| e.into_inner());
        if memory.contains_key(path) {
            return true;
        }
        match budget.try_reserve(bytes) {
            Some(reservation) => {
                memory.insert(path.to_owned(), reservation);
                true
            }
            None => false,
        }
    }

    /// The files whose memory is reserved: sets loaded, being loaded, or about to be.
    pub fn resident(&self) -> Vec<PathBuf> {
        let memory = self.memory.lock().unwrap_or_else(|e| e.into_inner());
        memory.keys().cloned().collect()
    }

    /// Forgets the set at `path` and gives its memory back, so another set can be loaded in
    /// its room; false, changing nothing, while it is being loaded. The caller makes sure no
    /// job in flight uses it (a prover still holding it would keep it in memory). A failed
    /// set stays failed: it is not read again.
    pub fn evict(&self, path: &Path) -> bool {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(slot) = slots.get(path) {
            let state = slot.state.lock().unwrap_or_else(|e| e.into_inner());
            match &*state {
                Some(SlotState::Loading) => return false,
                Some(SlotState::Failed(_)) => {}
                _ => {
                    drop(state);
                    slots.remove(path);
                }
            }
        }
        drop(slots);
        let mut memory = self.memory.lock().unwrap_or_else(|e| e.into_inner());
        memory.remove(path).is_some()
    }

    /// The sets loaded so far, with their files.
    pub fn loaded(&self) -> Vec<(PathBuf, P)> {
        let slots: Vec<(PathBuf, Arc<Slot<P>>)> = {
            let slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
            slots.iter().map(|(p, s)| (p.clone(), s.clone())).collect()
        };
        slots
            .into_iter()
            .filter_map(|(path, slot)| {
                let state = slot.state.lock().unwrap_or_else(|e| e.into_inner());
                match &*state {
                    Some(SlotState::Loaded(params)) => Some((path, params.clone())),
                    _ => None,
                }
            })
            .collect()
    }

    /// Starts loading the set at `path` on a thread of its own unless it is loading or
    /// loaded already, so that the first partitions' synthesis and the load overlap.
    pub fn preload(self: &Arc<Self>, path: &Path, events: &EventSink) {
        let slot = self.slot(path);
        if !matches!(Self::claim_load(&slot), Claim::Load) {
            return;
        }
        let (path, events) = (path.to_owned(), events.clone());
        let loader = self.loader.clone();
        std::thread::spawn(move || {
            // A failure is reported by the prover that needs the set, with its job.
            let _ = load_with_events(&*loader, &slot, &path, &WorkerName::ParamsLoader, &events);
        });
    }

    /// The set at `path`: loaded on this thread if nobody is loading it, else waited for.
    /// `worker` names the waiting prover in the timeline.
    pub fn get(
        &self,
        path: &Path,
        worker: &WorkerName,
        events: &EventSink,
    ) -> Result<P, LoadParamsError> {
        let slot = self.slot(path);
        match Self::claim_load(&slot) {
            Claim::Done(result) => result,
            Claim::Load => load_with_events(&*self.loader, &slot, path, worker, events),
            Claim::Wait => {
                let shown = path.display().to_string();
                events.emit(EventKind::ParamsLoadStarted {
                    worker: worker.to_owned(),
                    path: shown.clone(),
                });
                let result = Self::wait_loaded(&slot);
                events.emit(EventKind::ParamsLoadFinished {
                    worker: worker.to_owned(),
                    path: shown,
                });
                result
            }
        }
    }
}

/// Loads the set at `path` into its slot, bracketed by load events for `worker`. The slot
/// is filled before the finish is told, so whoever hears of it (a server answering a
/// preload, then an eviction) finds the set loaded, not still loading.
fn load_with_events<P: Clone + Send + 'static>(
    loader: &ParamsLoader<P>,
    slot: &Slot<P>,
    path: &Path,
    worker: &WorkerName,
    events: &EventSink,
) -> Result<P, LoadParamsError> {
    let shown = path.display().to_string();
    events.emit(EventKind::ParamsLoadStarted {
        worker: worker.to_owned(),
        path: shown.clone(),
    });
    let started = Instant::now();
    let result = load(loader, path);
    if result.is_ok() {
        let bytes = std::fs::metadata(path).map_or(0, |m| m.len());
        let secs = started.elapsed().as_secs_f64();
        log::info!(
            "loaded {shown}: {:.1} GB in {secs:.1} s ({:.2} GB/s)",
            bytes as f64 / 1e9,
            bytes as f64 / 1e9 / secs.max(1e-9),
        );
    }
    ParamSets::finish_load(slot, &result);
    events.emit(EventKind::ParamsLoadFinished {
        worker: worker.to_owned(),
        path: shown,
    });
    result
}

fn load<P>(loader: &ParamsLoader<P>, path: &Path) -> Result<P, LoadParamsError> {
    let fail = |reason: String| LoadParamsError {
        path: path.to_owned(),
        reason,
    };
    if !path.is_file() {
        return Err(fail("the file does not exist".into()));
    }
    // A loader that panics (a decoder's assertion on a damaged file, a failed allocation in
    // a GPU library) fails the load like any error: on the preload's own thread its slot
    // would otherwise stay loading for ever, and every prover waiting on it with it.
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| loader(path))) {
        Ok(loaded) => loaded.map_err(fail),
        Err(panic) => Err(fail(format!(
            "loading it panicked: {}",
            panic_message(panic.as_ref())
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossbeam_channel::unbounded;

    fn gpu(gpu: usize) -> WorkerName {
        WorkerName::Gpu { gpu, lane: None }
    }

    #[test]
    fn an_evicted_set_gives_its_room_back_and_loads_again_when_asked() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (small, large) = (
            dir.path().join("small.params"),
            dir.path().join("large.params"),
        );
        std::fs::write(&small, b"s").expect("write");
        std::fs::write(&large, b"l").expect("write");
        let (tx, rx) = unbounded();
        let events = EventSink::new(tx);
        let sets = ParamSets::new(|path: &Path| Ok(path.to_owned()));
        let budget = MemoryBudget::new(100, None);
        assert!(sets.reserve_memory(&small, &budget, 60));
        sets.get(&small, &gpu(0), &events).expect("load");
        assert!(
            !sets.reserve_memory(&large, &budget, 60),
            "no room for both"
        );
        assert!(sets.evict(&small));
        assert_eq!(budget.in_use(), 0);
        assert_eq!(sets.resident(), Vec::<PathBuf>::new());
        assert!(
            sets.reserve_memory(&large, &budget, 60),
            "room once evicted"
        );
        sets.get(&large, &gpu(0), &events).expect("load");
        assert!(sets.evict(&large));
        assert!(sets.reserve_memory(&small, &budget, 60));
        sets.get(&small, &gpu(0), &events).expect("loaded again");
        let loads = rx
            .try_iter()
            .filter(|e| matches!(e.kind, EventKind::ParamsLoadStarted { .. }))
            .count();
        assert_eq!(loads, 3, "an evicted set is read again when needed");
    }

    #[test]
    fn a_preloaded_set_is_in_its_slot_before_its_load_is_told_finished() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("v28-told.params");
        std::fs::write(&path, b"x").expect("write");
        // Room for the start only: the loading thread blocks on telling the finish until
        // the events are read, so what it did before telling shows while it waits.
        let (tx, rx) = crossbeam_channel::bounded(1);
        let events = EventSink::new(tx);
        let sets = ParamSets::new(|path: &Path| Ok(path.to_owned()));
        let budget = MemoryBudget::new(100, None);
        assert!(sets.reserve_memory(&path, &budget, 60));
        sets.preload(&path, &events);
        let patience = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while sets.loaded().is_empty() {
            assert!(
                std::time::Instant::now() < patience,
                "the set was not in its slot while its finish waited to be told"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let told: Vec<_> = rx.iter().take(2).map(|e| e.kind).collect();
        assert!(
            matches!(told[1], EventKind::ParamsLoadFinished { .. }),
            "{told:?}"
        );
        assert!(
            sets.evict(&path),
            "a set told loaded can be evicted at once"
        );
        assert_eq!(budget.in_use(), 0);
    }

    #[test]
    fn a_preload_that_panics_fails_the_set_instead_of_leaving_it_loading() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("v28-panics.params");
        std::fs::write(&path, b"x").expect("write");
        let (tx, _rx) = unbounded();
        let events = EventSink::new(tx);
        let sets: Arc<ParamSets<u8>> =
            ParamSets::new(|_: &Path| -> Result<u8, String> { panic!("decoder assertion") });
        sets.preload(&path, &events);
        // A prover asking for the set gets the reason, not a wait for ever (bounded here
        // so that a regression fails instead of hanging the suite).
        let (done_tx, done_rx) = crossbeam_channel::bounded(1);
        let asking = sets.clone();
        let asked_path = path.clone();
        std::thread::spawn(move || {
            let _ = done_tx.send(asking.get(&asked_path, &gpu(0), &events).map(|_| ()));
        });
        let answer = done_rx
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("the prover's wait ended");
        let err = answer.expect_err("nothing loaded");
        assert!(err.reason.contains("panicked: decoder assertion"), "{err}");
    }

    #[test]
    fn a_failed_load_fails_once_for_everyone() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("v28-broken.params");
        std::fs::write(&path, b"not parameters").expect("write");
        let (tx, rx) = unbounded();
        let events = EventSink::new(tx);
        let sets = ParamSets::new(|path: &Path| {
            crate::params::load::read_parameters(path).map_err(|e| e.to_string())
        });
        let Err(first) = sets.get(&path, &gpu(0), &events) else {
            panic!("broken parameters loaded")
        };
        assert!(first.to_string().contains("v28-broken.params"), "{first}");
        // Mended on disk, but the run keeps its verdict: no second read.
        std::fs::remove_file(&path).expect("remove");
        let Err(second) = sets.get(&path, &gpu(1), &events) else {
            panic!("broken parameters loaded the second time")
        };
        assert_eq!(first.reason, second.reason);
        let loads = rx
            .try_iter()
            .filter(|e| matches!(e.kind, EventKind::ParamsLoadStarted { .. }))
            .count();
        assert_eq!(loads, 1, "the file was read once");
    }
}
