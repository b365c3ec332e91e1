//! Reporter: the first consumer of pipeline events. It appends each event to the timeline,
//! keeps the progress display (a bar on a terminal, plain lines otherwise) and counts the
//! outcome for the summary and the exit code; then it hands each event to the run's other
//! consumers (its metrics, a program feeding the run), so they see only what the timeline
//! has.
//!
//! One thread owns the terminal and the timeline file, so nothing else prints while a run
//! is going, and a slow terminal never slows the prover.

use std::io::IsTerminal;
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender};
use indicatif::{ProgressBar, ProgressStyle};

use crate::event::{Event, EventKind};
use crate::memory::show_bytes;
use crate::timeline::TimelineWriter;

/// What a run achieved, counted from its events.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RunSummary {
    /// Proofs written to the outbox (benchmark results included).
    pub proved: usize,
    /// Of those, benchmark shape jobs: timed, never written as proofs.
    pub benchmarked: usize,
    /// Jobs that went to `failed/`.
    pub failed: usize,
    /// Times a file was left in the inbox because it looked unfinished.
    pub deferred: usize,
    /// C1 files set aside (`set-aside/`): neither proved nor failed.
    pub set_aside: usize,
    /// Inbox files that could not be claimed and were never claimed later in the run.
    pub skipped: usize,
    /// Seconds from the first to the last event.
    pub elapsed_s: f64,
    /// The most a synthesized partition held (its vectors), as measured.
    pub largest_partition_bytes: u64,
    /// Partitions whose a, b and c were left to the prover (their witness alone in flight).
    pub deferred_partitions: usize,
    /// Of those, partitions whose a, b and c the prover's thread made on the host.
    pub evaluated_at_prover: usize,
    /// The most one of those held at its prover, a, b and c made.
    pub largest_at_prover_bytes: u64,
    /// Seconds into the run when the first partition's proof began.
    pub first_prove_start_s: Option<f64>,
    /// Seconds into the run when the last proof was written (benchmark results included).
    pub last_proof_s: Option<f64>,
}

impl RunSummary {
    /// Seconds per proof once the provers have work: from the first partition's proof to
    /// the last proof written, over the proofs, so parameter loads and the first partitions'
    /// synthesis are left out. (From the first proof written to the last would not do: the
    /// partitions of several jobs interleave, so their proofs end close together.) `None`
    /// before a proof.
    pub fn steady_s_per_proof(&self) -> Option<f64> {
        let (first, last) = self.first_prove_start_s.zip(self.last_proof_s)?;
        (self.proved > 0).then(|| (last - first) / self.proved as f64)
    }
}

/// Starts the reporter thread; it ends when every sender of `events` is gone. Each of the
/// `observers` (the run's metrics, a program feeding the run) gets each event once the
/// timeline has it.
pub fn spawn(
    events: Receiver<Event>,
    timeline: TimelineWriter,
    observers: Vec<Sender<Event>>,
) -> JoinHandle<RunSummary> {
    std::thread::Builder::new()
        .name("reporter".into())
        .spawn(move || report(events, timeline, observers))
        .expect("spawning the reporter thread")
}

fn report(
    events: Receiver<Event>,
    mut timeline: TimelineWriter,
    mut observers: Vec<Sender<Event>>,
) -> RunSummary {
    let mut display = Display::new();
    let mut summary = RunSummary::default();
    let mut timeline_failed = false;
    for event in events {
        if let Err(err) = timeline.record(&event) {
            // The proofs matter more than their timeline: say it once and keep proving.
            if !timeline_failed {
                display.line(&format!("warning: timeline not written: {err:#}"));
                timeline_failed = true;
            }
        }
        summary.elapsed_s = event.elapsed_ms / 1e3;
        match &event.kind {
            EventKind::JobParsed {
                job,
                is_benchmark: true,
                ..
            } => {
                display.benchmarks.insert(job.clone());
            }
            EventKind::ProofWritten { job, .. } => {
                summary.proved += 1;
                summary.last_proof_s = Some(event.elapsed_ms / 1e3);
                if display.benchmarks.contains(job) {
                    summary.benchmarked += 1;
                }
            }
            EventKind::SynthFinished {
                is_deferred,
                profile,
                ..
            } => {
                summary.largest_partition_bytes =
                    summary.largest_partition_bytes.max(profile.bytes);
                summary.deferred_partitions += usize::from(*is_deferred);
            }
            EventKind::ProveStarted { .. } => {
                summary
                    .first_prove_start_s
                    .get_or_insert(event.elapsed_ms / 1e3);
            }
            EventKind::HostEvaluationFinished { bytes, .. } => {
                summary.evaluated_at_prover += 1;
                summary.largest_at_prover_bytes = summary.largest_at_prover_bytes.max(*bytes);
            }
            EventKind::JobFailed { .. } => summary.failed += 1,
            EventKind::FileDeferred { .. } => summary.deferred += 1,
            EventKind::FileSetAside { .. } => summary.set_aside += 1,
            EventKind::FileSkipped { job, .. } => {
                display.skipped.insert(job.clone());
            }
            EventKind::JobClaimed { job, .. } => {
                display.skipped.remove(job);
            }
            _ => {}
        }
        summary.skipped = display.skipped.len();
        display.show(&event, &summary);
        // An observer that went away stops observing; the run goes on.
        observers.retain(|tx| tx.send(event.clone()).is_ok());
    }
    display.finish(&summary);
    summary
}

/// Progress on stderr: a spinner with counts on a terminal, one line per job otherwise.
struct Display {
    bar: Option<ProgressBar>,
    in_flight: usize,
    /// Jobs of benchmark shape files: their results are timings, not proofs.
    benchmarks: std::collections::HashSet<String>,
    /// Parameter loads seen, with when they started (negative once reported done).
    loads: std::collections::HashMap<String, f64>,
    /// Inbox files that could not be claimed, until one is claimed after all.
    skipped: std::collections::HashSet<String>,
    /// Parameters generated on this machine are in use: "verified" means against their keys.
    has_local_keys: bool,
}

/// What "verified" means when the parameters were generated on this machine.
const LOCAL_KEYS_NOTE: &str =
    "proofs are verified against these locally generated keys only, not the network's";

impl Display {
    fn new() -> Display {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new_spinner();
            bar.set_style(
                ProgressStyle::with_template("{spinner} [{elapsed_precise}] {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar.enable_steady_tick(Duration::from_millis(250));
            bar
        });
        Display {
            bar,
            in_flight: 0,
            benchmarks: Default::default(),
            loads: Default::default(),
            skipped: Default::default(),
            has_local_keys: false,
        }
    }

    fn line(&self, text: &str) {
        match &self.bar {
            Some(bar) => bar.println(text),
            None => log::info!("{text}"),
        }
    }

    fn show(&mut self, event: &Event, summary: &RunSummary) {
        let secs = event.elapsed_ms / 1e3;
        match &event.kind {
            EventKind::JobClaimed { job, is_resumed } => {
                self.in_flight += 1;
                let how = if *is_resumed { "resumed" } else { "claimed" };
                self.line(&format!("[{secs:7.1}s] {how} {job}"));
            }
            EventKind::JobParsed {
                job,
                sector,
                sector_size,
                kind,
                partitions,
                is_benchmark,
            } => self.line(&format!(
                "[{secs:7.1}s] {job}: {}{sector}, {}, {partitions} partition(s){}",
                match kind {
                    crate::proof_kind::ProofKind::Seal => "",
                    crate::proof_kind::ProofKind::Update => "update of ",
                },
                crate::c1::SectorSizeName(*sector_size),
                if *is_benchmark {
                    " [BENCHMARK shape: timed only, its proof cannot verify and is not written]"
                } else {
                    ""
                }
            )),
            EventKind::ProveFinished {
                job,
                partition,
                worker,
                timings,
            } => self.line(&format!(
                "[{secs:7.1}s] {job}: partition {partition} proved on {worker}{}",
                timings.map(|t| format!(" ({t})")).unwrap_or_default()
            )),
            EventKind::ProofWritten { job, path } => {
                self.in_flight = self.in_flight.saturating_sub(1);
                if self.benchmarks.contains(job) {
                    self.line(&format!(
                        "[{secs:7.1}s] benchmarked {job} -> {path} (timings only, not a proof)"
                    ));
                } else {
                    self.line(&format!("[{secs:7.1}s] proved {job} -> {path}"));
                }
            }
            EventKind::JobFailed {
                job,
                stage,
                message,
            } => {
                self.in_flight = self.in_flight.saturating_sub(1);
                self.line(&format!("[{secs:7.1}s] FAILED {job} ({stage}): {message}"));
            }
            EventKind::FileDeferred { job, reason } => {
                self.in_flight = self.in_flight.saturating_sub(1);
                self.line(&format!("[{secs:7.1}s] waiting for {job}: {reason}"));
            }
            EventKind::FileSetAside { job, reason } => {
                self.in_flight = self.in_flight.saturating_sub(1);
                self.line(&format!("[{secs:7.1}s] SET ASIDE {job}: {reason}"));
            }
            EventKind::ResultSuperseded { job, kept_as } => self.line(&format!(
                "[{secs:7.1}s] {job}: the outbox's proof of that name was made from another C1 file (lotus ran C1 again?); kept as {kept_as}, proving this file again"
            )),
            EventKind::FileSkipped { job, reason } => self.line(&format!(
                "[{secs:7.1}s] cannot claim {job}, left in the inbox: {reason}"
            )),
            EventKind::ClaimTaken { job, reason } => {
                self.line(&format!("[{secs:7.1}s] CLAIM TAKEN {job}: {reason}"))
            }
            EventKind::ParamsGenerating { path } => {
                self.has_local_keys = true;
                self.line(&format!(
                    "[{secs:7.1}s] generating INSECURE test parameters {path} (tests and private networks only; 2KiB takes about 3 minutes on 2 cores); {LOCAL_KEYS_NOTE}"
                ))
            }
            EventKind::StopRequested => self.line(&format!(
                "[{secs:7.1}s] stopping: no new files will be claimed; finishing the {} job(s) in flight (signal again to abort at once; claimed files are resumed on restart)",
                self.in_flight
            )),
            EventKind::MemoryWait {
                job,
                partition,
                needed_bytes,
                in_use_bytes,
                budget_bytes,
            } => self.line(&format!(
                "[{secs:7.1}s] {job}: partition {partition} waits for memory: needs {}, {} of the {} budget in use (--max-memory)",
                show_bytes(*needed_bytes),
                show_bytes(*in_use_bytes),
                show_bytes(*budget_bytes)
            )),
            EventKind::ConstraintsReady {
                path,
                is_recorded,
                bytes,
                ms,
            } => self.line(&format!(
                "[{secs:7.1}s] pre-compiled constraints {} in {:.1} s ({}): {path}",
                if *is_recorded { "recorded and saved" } else { "loaded" },
                ms / 1e3,
                show_bytes(*bytes)
            )),
            EventKind::FullSynthesis { path, reason } => self.line(&format!(
                "[{secs:7.1}s] pre-compiled constraints {path} cannot be used, synthesizing in full: {reason}"
            )),
            EventKind::CpuFallback {
                job,
                partition,
                worker,
                reason,
            } => self.line(&format!(
                "[{secs:7.1}s] {job}: partition {partition} on {worker}: {reason}"
            )),
            EventKind::DeviceFault {
                job,
                partition,
                worker,
                message,
            } => self.line(&format!(
                "[{secs:7.1}s] {job}: partition {partition} failed on {worker}, which may be the device's fault: {message}"
            )),
            EventKind::ProverStopped {
                worker,
                faults,
                message,
            } => self.line(&format!(
                "[{secs:7.1}s] {worker} stopped proving after {faults} faulty calls in a row (--max-device-faults); its device is taken to be broken: {message} (hint: check it with nvidia-smi and the kernel log's Xid errors; files it failed went back to the inbox)"
            )),
            EventKind::PriorityWaitStarted { worker, path } => self.line(&format!(
                "[{secs:7.1}s] {worker} waits: the GPU priority lock {path} is taken (a WindowPoSt or WinningPoSt is proving on this machine); no new GPU work until it is free"
            )),
            EventKind::PriorityWaitFinished { worker, waited_ms } => self.line(&format!(
                "[{secs:7.1}s] {worker} goes on after giving way to PoSt for {:.1} s",
                waited_ms / 1e3
            )),
            // Every prover waiting on a load reports it too: say each load once.
            EventKind::ParamsLoadStarted { path, .. } if !self.loads.contains_key(path) => {
                self.loads.insert(path.clone(), event.elapsed_ms);
                self.line(&format!("[{secs:7.1}s] loading parameters {path}"));
                if !self.has_local_keys && crate::params::check::is_generated(std::path::Path::new(path)) {
                    self.has_local_keys = true;
                    self.line(&format!(
                        "[{secs:7.1}s] {LOCAL_KEYS_NOTE}: these are INSECURE test parameters generated on this machine, and the chain rejects proofs made with them"
                    ));
                }
            }
            EventKind::ParamsLoadFinished { path, .. } => {
                if let Some(started_ms) = self.loads.get_mut(path).filter(|t| **t >= 0.0) {
                    let took = (event.elapsed_ms - *started_ms) / 1e3;
                    *started_ms = -1.0;
                    self.line(&format!("[{secs:7.1}s] parameters loaded in {took:.1} s"));
                }
            }
            _ => {}
        }
        if let Some(bar) = &self.bar {
            bar.set_message(format!(
                "proved {}, failed {}, in flight {}",
                summary.proved, summary.failed, self.in_flight
            ));
        }
    }

    fn finish(&self, summary: &RunSummary) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        let per_proof = if summary.proved > 0 {
            format!(", {:.1} s/proof", summary.elapsed_s / summary.proved as f64)
        } else {
            String::new()
        };
        let benchmarked = if summary.benchmarked > 0 {
            format!(
                " ({} of them benchmark shapes, not proofs)",
                summary.benchmarked
            )
        } else {
            String::new()
        };
        let skipped = if summary.skipped > 0 {
            format!(", {} left in the inbox unclaimed", summary.skipped)
        } else {
            String::new()
        };
        let local_keys = if self.has_local_keys && summary.proved > summary.benchmarked {
            format!(" ({LOCAL_KEYS_NOTE})")
        } else {
            String::new()
        };
        log::info!(
            "done: {} proved{benchmarked}{local_keys}, {} failed{skipped} in {:.1} s{per_proof}",
            summary.proved,
            summary.failed,
            summary.elapsed_s
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_steady_state_runs_from_the_first_proof_begun_to_the_last_written() {
        // Three sectors: parameters until 34 s, the first partition proved from 35 s, the
        // proofs written at 67, 78 and 92 s (the first sector's last, its partitions having
        // waited): 19 s per sector, not the 12.5 s between the first and last written.
        let summary = RunSummary {
            proved: 3,
            first_prove_start_s: Some(35.0),
            last_proof_s: Some(92.0),
            ..RunSummary::default()
        };
        assert_eq!(summary.steady_s_per_proof(), Some(19.0));
        assert_eq!(RunSummary::default().steady_s_per_proof(), None);
    }
}
