//! The parameter sets of a run: each file is loaded once, kept resident and shared by every
//! prover; a load that fails fails once.
//!
//! Each file has its own slot, so loading one set never stalls provers that use another,
//! and provers that need a set being loaded wait on its slot (shown as loading, not idle, in
//! the timeline) rather than on a lock over all of them. A failed load is remembered with its
//! reason: every later request gets the same error at once instead of reading the file again.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use bellperson::groth16::Parameters;
use blstrs::Bls12;

use crate::backend::ParamsKind;
use crate::event::{EventKind, EventSink, PRELOAD_WORKER};
use crate::memory::{MemoryBudget, Reservation};

use super::load::read_parameters;

/// Why a parameter set could not be loaded.
#[derive(Clone, Debug, thiserror::Error)]
#[error("{path}: cannot load Groth16 parameters: {reason} (hint: the file is damaged, incomplete or not a parameter file; fetch or generate it again)")]
pub struct LoadParamsError {
    /// The parameter file.
    pub path: PathBuf,
    /// What went wrong.
    pub reason: String,
}

/// A loaded parameter set, in the form its backend proves with.
#[derive(Clone)]
pub enum LoadedParams {
    /// bellperson's parameters in ordinary memory (the CPU and ec-gpu backends).
    Groth16(Arc<Parameters<Bls12>>),
    /// SupraSeal's SRS in pinned memory.
    #[cfg(feature = "supraseal")]
    Supraseal(crate::supraseal::SuprasealParams),
}

enum SlotState {
    /// Nobody has asked for it yet.
    Unloaded,
    /// A thread is reading it.
    Loading,
    /// In memory.
    Loaded(LoadedParams),
    /// The load failed; the error is given to everyone who asks.
    Failed(LoadParamsError),
}

#[derive(Default)]
struct Slot {
    state: Mutex<Option<SlotState>>,
    changed: Condvar,
}

/// The parameter sets of a run, by file.
pub struct ParamSets {
    /// The form the run's provers need.
    kind: ParamsKind,
    slots: Mutex<HashMap<PathBuf, Arc<Slot>>>,
    /// The memory each set holds, reserved before it is loaded and kept for the run.
    memory: Mutex<HashMap<PathBuf, Reservation>>,
}

/// What the caller of [`ParamSets::claim_load`] must do.
enum Claim {
    /// The set is ready (or failed) already.
    Done(Result<LoadedParams, LoadParamsError>),
    /// Another thread is loading it: wait on the slot.
    Wait,
    /// Load it: this thread owns the load.
    Load,
}

impl ParamSets {
    /// A run's empty set of parameters, loaded in the form `kind` when asked for.
    pub fn new(kind: ParamsKind) -> Arc<ParamSets> {
        Arc::new(ParamSets {
            kind,
            slots: Mutex::default(),
            memory: Mutex::default(),
        })
    }

    fn slot(&self, path: &Path) -> Arc<Slot> {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        slots.entry(path.to_owned()).or_default().clone()
    }

    fn claim_load(slot: &Slot) -> Claim {
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

    fn finish_load(slot: &Slot, result: &Result<LoadedParams, LoadParamsError>) {
        let mut state = slot.state.lock().unwrap_or_else(|e| e.into_inner());
        *state = Some(match result {
            Ok(params) => SlotState::Loaded(params.clone()),
            Err(err) => SlotState::Failed(err.clone()),
        });
        slot.changed.notify_all();
    }

    fn wait_loaded(slot: &Slot) -> Result<LoadedParams, LoadParamsError> {
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

    /// Starts loading the set at `path` on a thread of its own unless it is loading or
    /// loaded already, so that the first partitions' synthesis and the load overlap.
    pub fn preload(self: &Arc<Self>, path: &Path, events: &EventSink) {
        let slot = self.slot(path);
        if !matches!(Self::claim_load(&slot), Claim::Load) {
            return;
        }
        let (path, events) = (path.to_owned(), events.clone());
        let kind = self.kind;
        std::thread::spawn(move || {
            // A failure is reported by the prover that needs the set, with its job.
            let result = load_with_events(kind, &path, PRELOAD_WORKER, &events);
            Self::finish_load(&slot, &result);
        });
    }

    /// The set at `path`: loaded on this thread if nobody is loading it, else waited for.
    /// `worker` names the waiting prover in the timeline.
    pub fn get(
        &self,
        path: &Path,
        worker: &str,
        events: &EventSink,
    ) -> Result<LoadedParams, LoadParamsError> {
        let slot = self.slot(path);
        match Self::claim_load(&slot) {
            Claim::Done(result) => result,
            Claim::Load => {
                let result = load_with_events(self.kind, path, worker, events);
                Self::finish_load(&slot, &result);
                result
            }
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

/// Loads the set at `path`, bracketed by load events for `worker`.
fn load_with_events(
    kind: ParamsKind,
    path: &Path,
    worker: &str,
    events: &EventSink,
) -> Result<LoadedParams, LoadParamsError> {
    let shown = path.display().to_string();
    events.emit(EventKind::ParamsLoadStarted {
        worker: worker.to_owned(),
        path: shown.clone(),
    });
    let started = Instant::now();
    let result = load(kind, path);
    if result.is_ok() {
        let bytes = std::fs::metadata(path).map_or(0, |m| m.len());
        let secs = started.elapsed().as_secs_f64();
        log::info!(
            "loaded {shown}: {:.1} GB in {secs:.1} s ({:.2} GB/s)",
            bytes as f64 / 1e9,
            bytes as f64 / 1e9 / secs.max(1e-9),
        );
    }
    events.emit(EventKind::ParamsLoadFinished {
        worker: worker.to_owned(),
        path: shown,
    });
    result
}

fn load(kind: ParamsKind, path: &Path) -> Result<LoadedParams, LoadParamsError> {
    let fail = |reason: String| LoadParamsError {
        path: path.to_owned(),
        reason,
    };
    if !path.is_file() {
        return Err(fail("the file does not exist".into()));
    }
    match kind {
        ParamsKind::Groth16 => read_parameters(path)
            .map(|params| LoadedParams::Groth16(Arc::new(params)))
            .map_err(|e| fail(e.to_string())),
        #[cfg(feature = "supraseal")]
        ParamsKind::Supraseal => crate::supraseal::SuprasealParams::load(path)
            .map(LoadedParams::Supraseal)
            .map_err(fail),
        #[cfg(not(feature = "supraseal"))]
        ParamsKind::Supraseal => Err(fail("this cuzk was built without SupraSeal".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossbeam_channel::unbounded;

    #[test]
    fn a_failed_load_fails_once_for_everyone() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("v28-broken.params");
        std::fs::write(&path, b"not parameters").expect("write");
        let (tx, rx) = unbounded();
        let events = EventSink::new(tx);
        let sets = ParamSets::new(ParamsKind::Groth16);
        let Err(first) = sets.get(&path, "gpu-0", &events) else {
            panic!("broken parameters loaded")
        };
        assert!(first.to_string().contains("v28-broken.params"), "{first}");
        // Mended on disk, but the run keeps its verdict: no second read.
        std::fs::remove_file(&path).expect("remove");
        let Err(second) = sets.get(&path, "gpu-1", &events) else {
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
