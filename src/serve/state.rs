//! What the gRPC handlers share: the spool, the run's requests, and what the run's events
//! said (each job's moments for the answer's timings, the parameter sets loaded, the counts
//! of proofs), with a counter that moves at every event so that a waiting `AwaitProof`
//! looks at the spool again.

use std::collections::HashMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use tokio::sync::watch;

use super::jobs::{self, Standing};
use super::proto::{await_proof_response::Status as AwaitStatus, AwaitProofResponse};
use super::request::{self, InputFile, Refusal};
use crate::atomic_file;
use crate::event::{Event, EventKind, JobStage};
use crate::pipeline::{IntakeRules, RunRequests};
use crate::spool::{recorded_digest, SpoolLayout};

/// A served job's moments, as the run's events gave them.
#[derive(Clone, Debug, Default)]
struct JobMoments {
    submitted: Option<SystemTime>,
    claimed: Option<SystemTime>,
    synthesis: Option<(SystemTime, SystemTime)>,
    proving: Option<(SystemTime, SystemTime)>,
    params_ms: f64,
    ended: Option<SystemTime>,
}

/// A job accepted into the spool.
#[derive(Debug, Clone)]
pub struct Accepted {
    /// Its name, the answer's `job_id`.
    pub job: String,
    /// Jobs ahead of it in the inbox.
    pub queue_position: u32,
}

/// The server's shared state.
pub struct State {
    /// The spool served.
    pub layout: SpoolLayout,
    /// How the run judges an input, which a request is judged by first.
    pub rules: IntakeRules,
    /// `--gen-test-params`: test sizes without parameters are accepted.
    pub may_generate_params: bool,
    /// The run's `--settle-secs`, which a request's file is dated past.
    pub settle: Duration,
    /// The run's live requests (preload, evict, withdraw) and GPUs.
    pub requests: RunRequests,
    /// The run's metrics text file, which `GetMetrics` returns.
    pub metrics: Option<PathBuf>,
    /// When the server started.
    pub started: Instant,
    changes: watch::Sender<u64>,
    is_closed: AtomicBool,
    moments: Mutex<HashMap<String, JobMoments>>,
    /// Parameter files loaded this run, with their load's milliseconds.
    loaded: Mutex<HashMap<PathBuf, f64>>,
    loading: Mutex<HashMap<PathBuf, SystemTime>>,
    completed: AtomicU64,
    failed: AtomicU64,
    /// At most this many requests are parsed and bound at once: each holds its input's
    /// parse outside the run's memory budget.
    pub checks: tokio::sync::Semaphore,
    /// Taken to look at a job's standing and write its file as one step.
    pub writing: tokio::sync::Mutex<()>,
}

/// How long an ended job's moments are kept for its answers' timings: a server that runs for
/// months must not keep every job it ever proved.
const KEEP_MOMENTS: Duration = Duration::from_secs(24 * 3600);

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

fn ms_between(from: SystemTime, to: SystemTime) -> u64 {
    to.duration_since(from).map_or(0, |d| d.as_millis() as u64)
}

impl State {
    /// State for a server of the spool `layout` run with these rules.
    pub fn new(
        layout: SpoolLayout,
        rules: IntakeRules,
        may_generate_params: bool,
        settle: Duration,
        requests: RunRequests,
        metrics: Option<PathBuf>,
    ) -> State {
        State {
            layout,
            rules,
            may_generate_params,
            settle,
            requests,
            metrics,
            started: Instant::now(),
            changes: watch::channel(0).0,
            is_closed: AtomicBool::new(false),
            moments: Mutex::default(),
            loaded: Mutex::default(),
            loading: Mutex::default(),
            completed: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            checks: tokio::sync::Semaphore::new(2),
            writing: tokio::sync::Mutex::new(()),
        }
    }

    /// A receiver that sees every change.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    fn bump(&self) {
        self.changes.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// The run has ended: waiters answer that the server is going away.
    pub fn close(&self) {
        self.is_closed.store(true, Ordering::SeqCst);
        self.bump();
    }

    /// True once the run has ended.
    pub fn is_closed(&self) -> bool {
        self.is_closed.load(Ordering::SeqCst)
    }

    /// Proofs written and jobs failed (withdrawals not counted) since the server started.
    pub fn totals(&self) -> (u64, u64) {
        (
            self.completed.load(Ordering::Relaxed),
            self.failed.load(Ordering::Relaxed),
        )
    }

    /// The parameter files this run loaded, with their load's milliseconds.
    pub fn loaded_params(&self) -> HashMap<PathBuf, f64> {
        lock(&self.loaded).clone()
    }

    /// Forgets that `path` is loaded (it was evicted).
    pub fn forget_params(&self, path: &Path) {
        lock(&self.loaded).remove(path);
    }

    /// Takes one of the run's events.
    pub fn observe(&self, event: &Event) {
        let at = event.wall;
        match &event.kind {
            EventKind::ParamsLoadStarted { path, .. } => {
                lock(&self.loading).insert(PathBuf::from(path), at);
            }
            EventKind::ParamsLoadFinished { path, .. } => {
                let path = PathBuf::from(path);
                let started = lock(&self.loading).remove(&path);
                let ms = started.map_or(0, |s| ms_between(s, at)) as f64;
                lock(&self.loaded).insert(path, ms);
                // The jobs claimed and not yet proving waited for it.
                for m in lock(&self.moments).values_mut() {
                    if m.claimed.is_some() && m.proving.is_none() && m.ended.is_none() {
                        m.params_ms += ms;
                    }
                }
            }
            EventKind::ProofWritten { .. } => {
                self.completed.fetch_add(1, Ordering::Relaxed);
            }
            EventKind::JobFailed { stage, .. } if *stage != JobStage::Withdrawn => {
                self.failed.fetch_add(1, Ordering::Relaxed);
            }
            _ => {}
        }
        if let Some(job) = event.kind.job() {
            let mut moments = lock(&self.moments);
            let entry = moments.entry(job.to_owned()).or_default();
            let widen = |span: &mut Option<(SystemTime, SystemTime)>, at| {
                *span = Some(
                    span.map_or((at, at), |(from, to): (SystemTime, SystemTime)| {
                        (from.min(at), to.max(at))
                    }),
                );
            };
            match &event.kind {
                EventKind::JobClaimed { .. } => entry.claimed = Some(at),
                EventKind::SynthStarted { .. } | EventKind::SynthFinished { .. } => {
                    widen(&mut entry.synthesis, at)
                }
                EventKind::ProveStarted { .. } | EventKind::ProveFinished { .. } => {
                    widen(&mut entry.proving, at)
                }
                EventKind::ProofWritten { .. } | EventKind::JobFailed { .. } => {
                    entry.ended = Some(at)
                }
                _ => {}
            }
        }
        self.bump();
    }

    /// True when the spool holds `file`'s job already, queued, in flight, or proved from the
    /// same bytes: a resubmission that writes nothing.
    pub fn is_held(&self, file: &InputFile) -> bool {
        match jobs::standing(&self.layout, &file.job) {
            Standing::Queued | Standing::InFlight => true,
            Standing::Proved(_) => {
                let record = self.layout.outbox.join(format!("{}.json", file.job));
                recorded_digest(&record).as_deref() == Some(file.digest.as_str())
            }
            _ => false,
        }
    }

    /// Writes `file` into the inbox, whole and dated by its priority, unless the spool
    /// holds its job already; a failed or withdrawn job of its name starts afresh.
    /// Returns whether it was written.
    pub fn write_input(&self, file: &InputFile) -> Result<bool, Refusal> {
        if self.is_held(file) {
            return Ok(false);
        }
        jobs::clear_failure(&self.layout, &file.job);
        let path = self.layout.inbox.join(format!("{}.json", file.job));
        let dated = request::queue_time(SystemTime::now(), file.priority, self.settle);
        atomic_file::write_with(&path, |out| {
            out.write_all(&file.bytes)?;
            out.set_modified(dated)?;
            Ok(())
        })
        .map_err(|err| {
            Refusal(format!(
                "cuzk cannot write the request into its inbox: {err:#} (hint: free space in {})",
                self.layout.inbox.display()
            ))
        })?;
        let now = SystemTime::now();
        let mut moments = lock(&self.moments);
        moments.retain(|_, m| {
            m.ended
                .is_none_or(|ended| now.duration_since(ended).unwrap_or_default() < KEEP_MOMENTS)
        });
        moments.insert(
            file.job.clone(),
            JobMoments {
                submitted: Some(now),
                ..JobMoments::default()
            },
        );
        drop(moments);
        self.bump();
        Ok(true)
    }

    /// The answer for `job` as it stands; `None` while it is queued, in flight or unknown.
    pub fn answer(&self, job: &str, standing: &Standing) -> Option<AwaitProofResponse> {
        let (status, proof, error_message) = match standing {
            Standing::Proved(path) => match fs::read(path) {
                Ok(proof) => (AwaitStatus::Completed, proof, String::new()),
                Err(err) => (
                    AwaitStatus::Failed,
                    Vec::new(),
                    format!("cuzk: reading the proof {}: {err}", path.display()),
                ),
            },
            Standing::Failed { .. } if standing.is_withdrawn() => (
                AwaitStatus::Cancelled,
                Vec::new(),
                "withdrawn by CancelProof".into(),
            ),
            Standing::Failed { stage, message } => (
                AwaitStatus::Failed,
                Vec::new(),
                format!("cuzk: {stage}: {message}"),
            ),
            Standing::SetAside(reason) => (
                AwaitStatus::Failed,
                Vec::new(),
                format!("cuzk: set aside: {reason}"),
            ),
            Standing::Queued | Standing::InFlight | Standing::Unknown => return None,
        };
        let mut answer = AwaitProofResponse {
            job_id: job.to_owned(),
            status: status as i32,
            proof,
            error_message,
            ..AwaitProofResponse::default()
        };
        if let Some(m) = lock(&self.moments).get(job) {
            let span_ms =
                |span: Option<(SystemTime, SystemTime)>| span.map_or(0, |(a, b)| ms_between(a, b));
            answer.queue_wait_ms = match (m.submitted, m.claimed) {
                (Some(s), Some(c)) => ms_between(s, c),
                _ => 0,
            };
            answer.srs_load_ms = m.params_ms as u64;
            answer.synthesis_ms = span_ms(m.synthesis);
            answer.gpu_compute_ms = span_ms(m.proving);
            // The outbox can hold the proof a moment before its event reaches the moments:
            // then it ended no later than now.
            answer.total_ms = match (m.submitted, m.ended) {
                (Some(s), Some(e)) => ms_between(s, e),
                (Some(s), None) if status == AwaitStatus::Completed => {
                    ms_between(s, SystemTime::now())
                }
                _ => 0,
            };
        }
        Some(answer)
    }

    /// An answer that the wait ran out.
    pub fn timeout_answer(job: &str) -> AwaitProofResponse {
        AwaitProofResponse {
            job_id: job.to_owned(),
            status: AwaitStatus::Timeout as i32,
            ..AwaitProofResponse::default()
        }
    }

    /// An answer that the request failed before it was accepted.
    pub fn refused_answer(job: &str, refusal: &Refusal) -> AwaitProofResponse {
        AwaitProofResponse {
            job_id: job.to_owned(),
            status: AwaitStatus::Failed as i32,
            error_message: format!("cuzk: {refusal}"),
            ..AwaitProofResponse::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serve::proto::Priority;

    #[test]
    fn moments_of_jobs_ended_a_day_ago_are_let_go() {
        let dir = tempfile::tempdir().unwrap();
        let layout = SpoolLayout::beside(&dir.path().join("inbox"));
        std::fs::create_dir_all(&layout.inbox).unwrap();
        let rules = IntakeRules {
            max_c1_bytes: 1 << 20,
            incomplete_grace: Duration::ZERO,
            miner_id: None,
            allow_benchmark: false,
        };
        let state = State::new(
            layout,
            rules,
            false,
            Duration::ZERO,
            RunRequests::default(),
            None,
        );
        let ended = |job: &str, ago: Duration| Event {
            elapsed_ms: 0.0,
            wall: SystemTime::now() - ago,
            kind: EventKind::JobFailed {
                job: job.into(),
                stage: JobStage::Parse,
                message: "x".into(),
            },
        };
        state.observe(&ended("old", Duration::from_secs(2 * 24 * 3600)));
        state.observe(&ended("recent", Duration::from_secs(60)));
        let file = InputFile {
            job: "new".into(),
            digest: crate::spool::C1Digest::of_bytes(b"{}"),
            bytes: b"{}".to_vec(),
            priority: Priority::Normal,
        };
        assert!(state.write_input(&file).unwrap());
        let moments = lock(&state.moments);
        let mut kept: Vec<&String> = moments.keys().collect();
        kept.sort();
        assert_eq!(kept, ["new", "recent"]);
    }
}
