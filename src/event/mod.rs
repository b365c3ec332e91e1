//! Events: the one interface between the pipeline and whatever watches it.
//!
//! The pipeline stamps each [`Event`] when it happens and sends it down a channel; the
//! reporter thread turns events into timeline rows, progress and the final summary. Nothing
//! else flows from the pipeline to its consumers.
//!
//! This module is also the one definition of what an event is: `table.rs` lists every event
//! once (its fields, its [`EventName`] in the timeline, and the column each field is written
//! to), and [`EventKind`], [`EventName`] and `timeline`'s codec are made from that table.
//! [`WorkerName`] names who did the work, [`RunStartSettings`] how a run was configured, and
//! [`JobStage`] the step a job failed in, in the timeline and in `failed/<job>.error.json`.

use std::fmt;
use std::time::{Instant, SystemTime};

use crossbeam_channel::Sender;

mod kinds;
mod settings;
mod table;
mod worker;

#[cfg(test)]
mod examples;

pub use kinds::{EventKind, EventName};
pub use settings::RunStartSettings;
pub(crate) use table::event_table;
pub use worker::WorkerName;

#[cfg(test)]
pub(crate) use examples::one_of_each;

/// The step of a job's journey that failed: named in the timeline's `FAILED` rows and in
/// `failed/<job>.error.json`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum JobStage {
    /// The spool: the entry is not a C1 file, or its result already exists.
    Spool,
    /// Reading and parsing the C1 file.
    Parse,
    /// Finding the miner and sector the file belongs to.
    Identity,
    /// Binding the file to its sector's circuits (replica id, shapes).
    Bind,
    /// Finding or loading the Groth16 parameters.
    Params,
    /// Synthesizing a partition.
    Synthesis,
    /// Proving a partition.
    Prove,
    /// Checking the assembled proof with `verify_seal`.
    Verify,
    /// Writing the proof to the outbox.
    Write,
    /// The job took the prover down (killed for memory, a driver fault) too many times.
    Crash,
    /// The program that asked for the proof withdrew it (`CancelProof` of `cuzk serve`).
    Withdrawn,
}

impl JobStage {
    /// Every stage, in the order a job meets them.
    pub const ALL: [JobStage; 11] = [
        JobStage::Spool,
        JobStage::Parse,
        JobStage::Identity,
        JobStage::Bind,
        JobStage::Params,
        JobStage::Synthesis,
        JobStage::Prove,
        JobStage::Verify,
        JobStage::Write,
        JobStage::Crash,
        JobStage::Withdrawn,
    ];

    /// The stage's name in timelines and failure records.
    pub fn as_str(self) -> &'static str {
        match self {
            JobStage::Spool => "spool",
            JobStage::Parse => "parse",
            JobStage::Identity => "identity",
            JobStage::Bind => "bind",
            JobStage::Params => "params",
            JobStage::Synthesis => "synthesis",
            JobStage::Prove => "prove",
            JobStage::Verify => "verify",
            JobStage::Write => "write",
            JobStage::Crash => "crash",
            JobStage::Withdrawn => "withdrawn",
        }
    }

    /// The stage with this name, if there is one.
    pub fn parse(text: &str) -> Option<JobStage> {
        JobStage::ALL
            .into_iter()
            .find(|stage| stage.as_str() == text)
    }
}

impl fmt::Display for JobStage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for JobStage {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// Milliseconds spent in each step of one proof, for the timeline.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ProveTimings {
    /// Host-to-GPU copies of the partition (a, b, c and the witness), where a backend
    /// times them apart from the steps (the cuda backend); 0 elsewhere.
    pub upload_ms: f64,
    /// iFFT, coset FFT, `a*b - c`, division by Z and coset iFFT: the quotient `h` (on a GPU,
    /// with the upload of `a`, `b`, `c`).
    pub fft_ms: f64,
    /// The G1 multiexps: `H`, `L`, `A` and `B_g1`.
    pub msm_g1_ms: f64,
    /// `msm_g1_ms` one multiexp at a time (`H`, `L`, `A`, `B_g1`), where a backend times
    /// them apart (the cuda backend); all 0 elsewhere.
    pub msm_g1_split_ms: [f64; 4],
    /// `a = A·w`, `b = B·w`, `c = C·w` evaluated on the GPU from the pre-compiled
    /// constraints (the cuda backend, where the GPU keeps them); 0 elsewhere.
    pub evaluate_ms: f64,
    /// The G2 multiexp for `B`.
    pub msm_g2_ms: f64,
    /// Scalar conversions and the final combination on the CPU.
    pub cpu_tail_ms: f64,
    /// A backend that proves whole partitions in one call (SupraSeal): the call, not split
    /// into steps.
    pub gpu_call_ms: f64,
    /// Not a time: bytes the partition sent from the host to the GPU over PCIe (a, b and c
    /// or the witness, and the bases of multiexps over bases the GPU does not keep), where
    /// a backend counts them (the cuda backend); 0 elsewhere.
    pub pcie_bytes: u64,
    /// The query multiexps' work that ran beside the `H` multiexp (the cuda backend: their
    /// ones summed and their bases streamed while `H`'s kernels run), its wall time, within
    /// `msm_g1_split_ms[0]`; 0 elsewhere.
    pub beside_h_ms: f64,
}

impl std::fmt::Display for ProveTimings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "fft {:.0} ms, G1 multiexps {:.0} ms, G2 multiexp {:.0} ms, CPU {:.0} ms",
            self.fft_ms, self.msm_g1_ms, self.msm_g2_ms, self.cpu_tail_ms
        )?;
        if self.gpu_call_ms > 0.0 {
            write!(f, ", one GPU call {:.0} ms", self.gpu_call_ms)?;
        }
        if self.upload_ms > 0.0 {
            write!(f, ", upload {:.0} ms", self.upload_ms)?;
        }
        if self.evaluate_ms > 0.0 {
            write!(f, ", constraints evaluated {:.0} ms", self.evaluate_ms)?;
        }
        if self.pcie_bytes > 0 {
            write!(f, ", {:.2} GB over PCIe", self.pcie_bytes as f64 / 1e9)?;
        }
        if self.beside_h_ms > 0.0 {
            write!(f, ", the queries beside H {:.0} ms", self.beside_h_ms)?;
        }
        Ok(())
    }
}

/// An [`EventKind`] stamped with when it happened.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// Milliseconds since the run started.
    pub elapsed_ms: f64,
    /// Wall-clock time.
    pub wall: SystemTime,
    /// What happened.
    pub kind: EventKind,
}

/// Where the pipeline sends events; cheap to clone, one per thread.
#[derive(Clone)]
pub struct EventSink {
    tx: Sender<Event>,
    started: Instant,
}

impl EventSink {
    /// A sink whose clock starts now.
    pub fn new(tx: Sender<Event>) -> EventSink {
        EventSink {
            tx,
            started: Instant::now(),
        }
    }

    /// Stamps and sends `kind`. A closed channel means the reporter is gone (the run is
    /// ending), so the event is dropped rather than failing the work that emitted it.
    pub fn emit(&self, kind: EventKind) {
        let _ = self.tx.send(Event {
            elapsed_ms: self.started.elapsed().as_secs_f64() * 1e3,
            wall: SystemTime::now(),
            kind,
        });
    }

    /// Sends `kind` as having happened at `at`, an instant already past: for an event that
    /// closes a period it reports late (see [`EventKind::GpuBusy`]).
    pub fn emit_at(&self, at: Instant, kind: EventKind) {
        let ago = at.elapsed();
        let _ = self.tx.send(Event {
            elapsed_ms: at.saturating_duration_since(self.started).as_secs_f64() * 1e3,
            wall: SystemTime::now()
                .checked_sub(ago)
                .unwrap_or(SystemTime::UNIX_EPOCH),
            kind,
        });
    }
}
