//! What a program that feeds a run asks of it while it runs (`cuzk serve`, for its gRPC
//! clients): which GPUs it proves on, parameter sets to load before their first job or to
//! drop, and jobs to withdraw.
//!
//! The asking side only leaves a note here and wakes the feeder; the feeder carries each
//! note out between scans, because it owns what they touch: the memory budget a parameter
//! set is reserved from, the jobs admitted and in flight, the claim of an inbox file. So a
//! preload is budgeted like the feeder's own, an eviction never drops a set a job in flight
//! proves with, and a withdrawn job ends the way every failed job does: its file in
//! `failed/` with a `withdrawn` record and a `FAILED` row in the timeline.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use crossbeam_channel::Sender;

use crate::backend::gpu::free_memory::GpuDescription;
use crate::proof_kind::CircuitId;

/// Notes for a live run, shared by the program that feeds it and the run's feeder.
#[derive(Clone, Debug, Default)]
pub struct RunRequests(Arc<Mutex<Notes>>);

/// What is asked and what the run has said so far.
#[derive(Debug, Default)]
struct Notes {
    /// The GPUs the run proves on, once its provers are planned.
    gpus: Option<Vec<GpuDescription>>,
    /// Parameter files whose memory is reserved: loaded, loading or about to be.
    resident: Vec<PathBuf>,
    /// Wakes the feeder; set while a run is live.
    wake: Option<Sender<()>>,
    asked: Asked,
}

/// Notes the feeder has yet to carry out.
#[derive(Debug, Default)]
pub(super) struct Asked {
    /// Circuits whose parameters to load now.
    pub preload: Vec<CircuitId>,
    /// Circuits whose parameters to drop, each answered true when dropped.
    pub evict: Vec<(CircuitId, Sender<bool>)>,
    /// Jobs to withdraw, with the reason their failure record gives.
    pub withdraw: Vec<(String, String)>,
}

impl RunRequests {
    fn notes(&self) -> MutexGuard<'_, Notes> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn ask(&self, note: impl FnOnce(&mut Asked)) {
        let mut notes = self.notes();
        note(&mut notes.asked);
        if let Some(wake) = &notes.wake {
            let _ = wake.try_send(());
        }
    }

    /// The GPUs the run proves on; `None` until its provers are planned.
    pub fn gpus(&self) -> Option<Vec<GpuDescription>> {
        self.notes().gpus.clone()
    }

    /// The parameter files the run holds in memory (or is loading), as the feeder last said.
    pub fn resident(&self) -> Vec<PathBuf> {
        self.notes().resident.clone()
    }

    /// Asks the run to load `circuit`'s parameters now, within its memory budget.
    pub fn preload(&self, circuit: CircuitId) {
        self.ask(|asked| asked.preload.push(circuit));
    }

    /// Asks the run to drop `circuit`'s parameters; `answer` gets true when they were
    /// dropped, false when they were not held or a job in flight proves with them.
    pub fn evict(&self, circuit: CircuitId, answer: Sender<bool>) {
        self.ask(|asked| asked.evict.push((circuit, answer)));
    }

    /// Asks the run to withdraw the job named `job`: an inbox file is claimed and failed at
    /// once, a job in flight stops before its next partition; `reason` is the record's.
    pub fn withdraw(&self, job: &str, reason: String) {
        self.ask(|asked| asked.withdraw.push((job.to_owned(), reason)));
    }

    /// The run starts: its GPUs, and how to wake its feeder.
    pub(super) fn attach(&self, gpus: Vec<GpuDescription>, wake: Sender<()>) {
        let mut notes = self.notes();
        notes.gpus = Some(gpus);
        notes.wake = Some(wake);
    }

    /// The run ends: nothing wakes a feeder that is gone. Notes left are kept for the next
    /// run over the same requests.
    pub(super) fn detach(&self) {
        let mut notes = self.notes();
        notes.wake = None;
        notes.resident.clear();
    }

    /// Takes the notes not yet carried out.
    pub(super) fn take(&self) -> Asked {
        std::mem::take(&mut self.notes().asked)
    }

    /// The feeder says which parameter files it holds.
    pub(super) fn set_resident(&self, mut resident: Vec<PathBuf>) {
        resident.sort();
        self.notes().resident = resident;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_note_wakes_the_feeder_and_is_taken_once() {
        let requests = RunRequests::default();
        let (wake, woken) = crossbeam_channel::bounded(1);
        requests.attach(Vec::new(), wake);
        requests.withdraw("s-t01000-1.porep-1000-1", "asked".into());
        assert!(woken.try_recv().is_ok(), "the feeder is woken");
        let asked = requests.take();
        assert_eq!(
            asked.withdraw,
            vec![("s-t01000-1.porep-1000-1".to_owned(), "asked".to_owned())]
        );
        assert!(requests.take().withdraw.is_empty(), "taken once");
        requests.detach();
        requests.preload(CircuitId::seal(2048));
        assert!(woken.try_recv().is_err(), "no feeder to wake after the run");
        assert_eq!(requests.take().preload, vec![CircuitId::seal(2048)]);
    }
}
