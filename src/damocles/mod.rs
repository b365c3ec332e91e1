//! damocles (venus-cluster) external processors: damocles-worker starts `cuzk damocles-c2`
//! (or `cuzk processor c2`, its default arguments) for commit phase 2, and `cuzk
//! damocles-snap` (`cuzk processor snap_prove`) for SnapDeals update proofs, as a child
//! process and sends it requests; cuzk proves them with its own pipeline and answers each one.
//!
//! # The protocol (vc-processors v1)
//!
//! Line-delimited JSON over the child's stdin and stdout ([`wire`]), the same for both
//! stages ([`Stage`]):
//!
//! 1. the child prints `c2 processor ready` (`snap_prove processor ready`) as its first
//!    stdout line, at once (damocles-worker waits `stable_wait`, 5 s by default), before any
//!    parameter is loaded;
//! 2. each request is one line, `{"id":N,"task":{"c1out":<SealCommitPhase1Output>,
//!    "prover_id":[32 bytes],"sector_id":S,"miner_id":M}}` for c2, `{"id":N,"task":
//!    {"registered_proof":..,"vannilla_proofs":[[bytes],..],"comm_r_old":[32 bytes],
//!    "comm_r_new":..,"comm_d_new":..}}` for snap_prove; several are in flight at once;
//! 3. each answer is one line, `{"id":N,"err_msg":null,"output":{"proof":[bytes]}}` (c2),
//!    `{"id":N,"err_msg":null,"output":[bytes]}` (snap_prove) or
//!    `{"id":N,"err_msg":"why","output":null}`, in whatever order the proofs finish.
//!
//! The child applies the processor's settings damocles passes in its environment (its
//! `cgroup.cpuset` and `numa_preferred`) itself, before anything else: [`placement`].
//!
//! stdout carries protocol lines only: the process's file descriptor 1 is pointed at stderr
//! once the protocol has its own copy of it (see [`protocol_stdout`]), so no log line or
//! stray print of a library can corrupt the stream. Every request with a readable id gets
//! exactly one answer. A line without one is logged to stderr and skipped: damocles matches
//! answers to waiting requests by id, so an answer with a guessed id could only complete
//! somebody else's request (damocles itself never sends such a line). A request reusing the
//! id of one still in flight is skipped the same way, for the same reason. At the end of
//! stdin the processor stops reading, proves and answers the requests in flight, and exits
//! with 0; damocles-worker kills it with SIGKILL when it is done with it, which loses only
//! the requests it no longer waits for.
//!
//! # The job source
//!
//! A request becomes a job of the ordinary `prove-dir` pipeline, so it gets everything a C1
//! file dropped into an inbox gets: the bounded synthesis pool, the provers, `verify_seal`
//! before the answer, the timeline. The processor keeps a spool of its own in a fresh
//! temporary directory; each c2 request's `c1out` is written, bytes as received, to its inbox
//! as `s-t0<miner>-<sector>.r<id>.json` (the bare SealCommitPhase1Output form; the lotus
//! sector name gives the miner and sector, the id keeps requests for one sector apart), each
//! snap_prove request's task as `update.r<id>.json` (it is an update input as it stands), and
//! the pipeline runs over that spool in watch mode, steered by a
//! [`RunControl`](crate::pipeline::RunControl): its observer hands this module each event
//! as the timeline records it, and a `DONE` or `FAILED` event of a request's job is its
//! answer (the proof read from the outbox, or the stage and reason). Nothing polls the file
//! system, and there is no second way through the prover to keep in step with the first.
//! Answered jobs' files are removed, so the private spool does not grow. When the end of
//! input asks the run to drain, it ends like a `--once` run.
//!
//! # Trying again before answering
//!
//! damocles-worker takes every C2 error as final and pauses the sealing thread, so a fault
//! that another try could get past is tried again here first, up to `--attempts` tries in
//! all, and only then answered (saying that retrying may help; see [`wire::Retry`]):
//!
//! - a job that failed on the machine's side (`prove`: a GPU or driver fault; `verify`: a
//!   proof computed wrong) goes back into the inbox at once, as `<job>.a<try>`, for the run
//!   to prove again;
//! - a run that stopped (parameters that could not be loaded, being written by another
//!   process, a full disk) keeps its requests' C1 files in the inbox, renamed for the next
//!   try, and a fresh run starts after `--retry-pause-secs`; a request that comes meanwhile
//!   starts it at once.
//!
//! A request whose own content is at fault (it does not parse, it is another sector's) is
//! answered at once, saying that retrying cannot help. A stop signal answers every request in
//! flight (another processor may take them) and ends the processor.

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use crossbeam_channel::{after, bounded, never, select, unbounded, Receiver, Sender};

use crate::event::{Event, EventKind};
use crate::pipeline::{self, RunControl, RunSettings};
use crate::spool::SpoolLayout;

pub mod placement;
mod private_spool;
pub mod wire;

use private_spool::PrivateSpool;

pub use wire::Stage;
use wire::{parse_request, request_id, Answer, BadRequest, Request, Retry};

/// Bytes a request line may hold beyond its C1 output: ids, prover id, punctuation.
const LINE_OVERHEAD_BYTES: u64 = 64 << 10;

/// How the processor runs.
#[derive(Clone, Debug)]
pub struct ProcessorSettings {
    /// The stage it serves.
    pub stage: Stage,
    /// The pipeline's settings; the spool's directories are replaced by the private spool's.
    pub run: RunSettings,
    /// Where the private spool is made (a fresh directory inside, removed at exit).
    pub tmp_dir: PathBuf,
    /// The timeline; `None`: inside the private spool, removed at exit.
    pub timeline: Option<PathBuf>,
    /// Tries of a request whose failure another try may get past, before it is answered.
    pub attempts: u32,
    /// How long a stopped run waits before the next try.
    pub retry_pause: Duration,
}

impl ProcessorSettings {
    /// Tries of a request, unless `--attempts` says otherwise.
    pub const DEFAULT_ATTEMPTS: u32 = 3;
    /// Seconds before a stopped run's requests are tried again (`--retry-pause-secs`).
    pub const DEFAULT_RETRY_PAUSE_SECS: f64 = 10.0;
}

/// Writes answer lines, whole, one at a time.
struct AnswerWriter(Mutex<Box<dyn Write + Send>>);

impl AnswerWriter {
    fn send(&self, answer: &Answer) {
        let mut line = match serde_json::to_vec(answer) {
            Ok(line) => line,
            Err(err) => {
                log::error!("encoding the answer to request {}: {err}", answer.id);
                return;
            }
        };
        line.push(b'\n');
        let mut out = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Err(err) = out.write_all(&line).and_then(|()| out.flush()) {
            // damocles-worker is gone or closed our stdout: nobody waits for answers.
            log::warn!("cannot answer request {}: {err}", answer.id);
        }
    }
}

/// A request in flight: its id, the try being made, and the job name of its first try.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Pending {
    id: u64,
    attempt: u32,
    /// `s-t0<miner>-<sector>.r<id>` (`update.r<id>` for snap_prove); later tries add
    /// `.a<try>`.
    base: String,
}

impl Pending {
    /// The job name of this try.
    fn job(&self) -> String {
        if self.attempt <= 1 {
            self.base.clone()
        } else {
            format!("{}.a{}", self.base, self.attempt)
        }
    }

    /// The next try.
    fn next(&self) -> Pending {
        Pending {
            attempt: self.attempt + 1,
            ..self.clone()
        }
    }
}

/// The requests in flight, by job name.
#[derive(Default)]
struct InFlight {
    requests: HashMap<String, Pending>,
    /// Set when the run ends: requests must wait for the next run.
    is_closed: bool,
}

/// How a run ended, for the requests it leaves.
enum RunEnd {
    /// It drained its inbox, as asked at the end of input.
    Drained,
    /// A stop signal: nothing more is proved.
    Stopped,
    /// It could not go on, for this reason.
    Fault(String),
}

/// What the processor's threads share.
struct Shared {
    stage: Stage,
    answers: AnswerWriter,
    in_flight: Mutex<InFlight>,
    layout: SpoolLayout,
    attempts: u32,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, InFlight> {
        self.in_flight.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn is_in_flight(&self, id: u64) -> bool {
        self.lock().requests.values().any(|p| p.id == id)
    }

    fn has_pending(&self) -> bool {
        !self.lock().requests.is_empty()
    }

    /// Answers `job`'s request, if it is one in flight, with what the event says; or puts
    /// it back for another try when the failure may pass.
    fn answer_event(&self, event: &Event) {
        let (job, outcome) = match &event.kind {
            EventKind::ProofWritten { job, path } => (job, Ok(path)),
            EventKind::JobFailed {
                job,
                stage,
                message,
            } => (
                job,
                Err((format!("cuzk: {stage}: {message}"), Retry::after(*stage))),
            ),
            // Neither the file's fault nor known to be the device's: another try may pass.
            EventKind::FileSetAside { job, reason } => (
                job,
                Err((
                    format!("cuzk: prove: {reason}"),
                    Retry::MayHelp("a fault of this machine's GPU".into()),
                )),
            ),
            // Never the case for a file this module wrote, but a request must not wait for
            // a claim that cannot happen; its file goes, so it is never proved unasked.
            EventKind::FileSkipped { job, reason } => (
                job,
                Err((
                    format!("cuzk: cannot claim the request's file: {reason}"),
                    Retry::MayHelp("a fault of this machine's temporary directory".into()),
                )),
            ),
            _ => return,
        };
        let Some(pending) = self.lock().requests.remove(job) else {
            return;
        };
        let answer = match outcome {
            Ok(path) => match fs::read(path) {
                Ok(proof) => Answer::proof(pending.id, proof, self.stage),
                Err(err) => Answer::error(
                    pending.id,
                    &format!("cuzk: reading the proof {path}: {err}"),
                    Retry::MayHelp("a fault of this machine's temporary directory".into()),
                ),
            },
            Err((message, retry)) => {
                if retry.may_help() && pending.attempt < self.attempts {
                    // A failed file is in failed/, a set-aside one in set-aside/.
                    let (from, reason) = match &event.kind {
                        EventKind::FileSetAside { .. } => (
                            self.layout.set_aside.join(format!("{job}.json")),
                            self.layout.set_aside.join(format!("{job}.set-aside.json")),
                        ),
                        _ => (
                            self.layout.failed.join(format!("{job}.json")),
                            self.layout.failed.join(format!("{job}.error.json")),
                        ),
                    };
                    match self.try_again(&pending, &from, &message) {
                        Ok(()) => {
                            let _ = fs::remove_file(reason);
                            return;
                        }
                        Err(err) => log::warn!("request {}: cannot try again: {err:#}", pending.id),
                    }
                }
                self.give_up(&pending, &message, retry)
            }
        };
        self.answers.send(&answer);
        self.remove_job_files(job);
    }

    /// Moves the request's C1 file from `from` into the inbox under its next try's name and
    /// keeps it in flight for the run that claims it.
    fn try_again(&self, pending: &Pending, from: &Path, why: &str) -> Result<()> {
        let next = pending.next();
        let to = self.layout.inbox.join(format!("{}.json", next.job()));
        // Registered before the file appears, so the run that claims it finds the request.
        self.lock().requests.insert(next.job(), next.clone());
        if let Err(err) = fs::rename(from, &to) {
            self.lock().requests.remove(&next.job());
            return Err(err)
                .with_context(|| format!("moving {} to {}", from.display(), to.display()));
        }
        log::warn!(
            "request {}: try {} of {} failed, trying again: {why}",
            pending.id,
            pending.attempt,
            self.attempts
        );
        Ok(())
    }

    /// The error answer of a request tried `pending.attempt` times.
    fn give_up(&self, pending: &Pending, message: &str, retry: Retry) -> Answer {
        let tries = if pending.attempt > 1 {
            format!(" [tried {} times]", pending.attempt)
        } else {
            String::new()
        };
        Answer::error(pending.id, &format!("{message}{tries}"), retry)
    }

    /// Ends a run: answers the requests still in flight, or keeps them for another try when
    /// the run could not go on and tries are left. Returns when the next run should start,
    /// if requests wait for one.
    fn close(&self, end: &RunEnd, retry_pause: Duration) -> Option<Duration> {
        let left: Vec<(String, Pending)> = {
            let mut in_flight = self.lock();
            in_flight.is_closed = true;
            in_flight.requests.drain().collect()
        };
        let mut is_waiting = false;
        for (job, pending) in left {
            let (message, retry) = match end {
                // Put back for another try just as the run drained: the next run takes it.
                RunEnd::Drained if self.layout.inbox.join(format!("{job}.json")).is_file() => {
                    self.lock().requests.insert(job, pending);
                    is_waiting = true;
                    continue;
                }
                RunEnd::Drained => (
                    "cuzk's pipeline ended before proving it".to_owned(),
                    Retry::MayHelp("a fault of this processor, not of the request".into()),
                ),
                RunEnd::Stopped => (
                    "cuzk was asked to stop (SIGINT or SIGTERM) before proving it".to_owned(),
                    Retry::MayHelp("another processor can prove it".into()),
                ),
                RunEnd::Fault(reason) => {
                    let message = format!("cuzk could not prove it: {reason}");
                    let retry = Retry::MayHelp(
                        "a fault of this machine, not of the request; once it is fixed".into(),
                    );
                    if pending.attempt < self.attempts {
                        let from = self.layout.inbox.join(format!("{job}.json"));
                        match self.try_again(&pending, &from, reason) {
                            Ok(()) => {
                                is_waiting = true;
                                continue;
                            }
                            Err(err) => {
                                log::warn!("request {}: cannot try again: {err:#}", pending.id)
                            }
                        }
                    }
                    (message, retry)
                }
            };
            self.answers.send(&self.give_up(&pending, &message, retry));
            self.remove_job_files(&job);
        }
        is_waiting.then_some(match end {
            RunEnd::Fault(_) => retry_pause,
            _ => Duration::ZERO,
        })
    }

    /// Removes whatever the spool holds of an answered job, wherever it is; the private
    /// spool would otherwise keep every C1 file and proof.
    fn remove_job_files(&self, job: &str) {
        let layout = &self.layout;
        let c1 = format!("{job}.json");
        let mut paths = vec![
            layout.inbox.join(&c1),
            layout.outbox.join(format!("{job}.proof")),
            layout.outbox.join(&c1),
            layout.done.join(&c1),
            layout.failed.join(&c1),
            layout.failed.join(format!("{job}.error.json")),
            layout.set_aside.join(&c1),
            layout.set_aside.join(format!("{job}.set-aside.json")),
        ];
        if let Ok(owners) = fs::read_dir(&layout.work) {
            paths.extend(owners.flatten().map(|owner| owner.path().join(&c1)));
        }
        for path in paths {
            let _ = fs::remove_file(path);
        }
    }
}

/// One pipeline run over the private spool, on a thread of its own.
struct Run {
    thread: JoinHandle<()>,
    /// Only the drain: a sender of the observer kept here would keep the answers waiting.
    drain: pipeline::Drain,
}

/// How a run ended, for the processor's loop.
struct RunEnded {
    /// A stop signal ended it.
    is_stopped: bool,
    /// Requests wait for another run, to start after this long.
    next_run_after: Option<Duration>,
}

impl Run {
    fn start(
        settings: RunSettings,
        retry_pause: Duration,
        shared: Arc<Shared>,
        ended: Sender<RunEnded>,
    ) -> Result<Run> {
        shared.lock().is_closed = false;
        let (observer, events) = unbounded::<Event>();
        let control = RunControl {
            observer: Some(observer),
            ..RunControl::default()
        };
        let drain = control.drain.clone();
        let thread = std::thread::Builder::new()
            .name("pipeline".into())
            .spawn(move || {
                let answering = {
                    let shared = shared.clone();
                    std::thread::spawn(move || {
                        for event in events {
                            shared.answer_event(&event);
                        }
                    })
                };
                let result = pipeline::run_with(&settings, &control);
                // The observer's last sender went with the reporter: the answers are all given.
                drop(control);
                let _ = answering.join();
                let end = match &result {
                    Err(err) => {
                        log::error!("the pipeline stopped: {err:#}");
                        RunEnd::Fault(format!("{err:#}"))
                    }
                    Ok(_) if pipeline::is_stopping() => RunEnd::Stopped,
                    Ok(_) => RunEnd::Drained,
                };
                let next_run_after = shared.close(&end, retry_pause);
                let _ = ended.send(RunEnded {
                    is_stopped: matches!(end, RunEnd::Stopped),
                    next_run_after,
                });
            })
            .context("starting the pipeline thread")?;
        Ok(Run { thread, drain })
    }

    fn is_finished(&self) -> bool {
        self.thread.is_finished()
    }

    /// Lets the run prove what it holds, then waits for it to end.
    fn drain(self) {
        self.drain.request();
        let _ = self.thread.join();
    }
}

/// A line read from the input, or its end.
enum Input {
    Line(Vec<u8>),
    /// A line longer than the cap, with its first bytes.
    TooLong(Vec<u8>),
    End,
}

/// Reads lines of at most `cap` bytes from `input` and sends them, on a thread of its own,
/// so that the processor can also notice its run ending while no request comes.
fn read_lines(mut input: Box<dyn BufRead + Send>, cap: u64) -> Receiver<Input> {
    let (tx, rx) = bounded(1);
    std::thread::spawn(move || loop {
        let mut line = Vec::new();
        let read = (&mut input).take(cap).read_until(b'\n', &mut line);
        let message = match read {
            Ok(0) => Input::End,
            Ok(_) if line.ends_with(b"\n") || (line.len() as u64) < cap => Input::Line(line),
            Ok(_) => {
                // Skip the rest of the line; the start is enough to find its id.
                let mut rest = Vec::new();
                let _ = input.read_until(b'\n', &mut rest);
                Input::TooLong(line)
            }
            Err(err) => {
                log::warn!("reading stdin: {err}");
                Input::End
            }
        };
        let is_end = matches!(message, Input::End);
        if tx.send(message).is_err() || is_end {
            return;
        }
    });
    rx
}

/// The processor: the private spool, its current run and the answers.
struct Processor {
    stage: Stage,
    settings: RunSettings,
    retry_pause: Duration,
    shared: Arc<Shared>,
    run: Option<Run>,
    ended: (Sender<RunEnded>, Receiver<RunEnded>),
}

impl Processor {
    /// The run to hand a request to: the current one, or a fresh one if it ended.
    fn ensure_run(&mut self) -> Result<()> {
        if self.run.as_ref().is_some_and(|run| !run.is_finished()) && !self.shared.lock().is_closed
        {
            return Ok(());
        }
        if let Some(old) = self.run.take() {
            let _ = old.thread.join();
        }
        self.run = Some(Run::start(
            self.settings.clone(),
            self.retry_pause,
            self.shared.clone(),
            self.ended.0.clone(),
        )?);
        Ok(())
    }

    /// Takes one input line: answers it at once if it is bad, else hands it to the run.
    fn take_line(&mut self, line: &[u8], is_cut: bool) -> Result<()> {
        let text = String::from_utf8_lossy(line);
        let parsed = if is_cut {
            Err(BadRequest {
                id: request_id(&text),
                reason: format!(
                    "request line longer than {} bytes; not read (hint: a C1 output or an update's vanilla proofs of any sector size are far smaller)",
                    line.len()
                ),
            })
        } else {
            parse_request(text.trim_end(), self.stage)
        };
        let request = match parsed {
            Ok(request) => request,
            Err(bad) => {
                match bad.id {
                    Some(id) if !self.shared.is_in_flight(id) => {
                        self.shared.answers.send(&Answer::error(
                            id,
                            &bad.reason,
                            Retry::CannotHelp("the request itself is at fault".into()),
                        ))
                    }
                    Some(id) => log::warn!(
                        "skipped a bad request with the id {id} of a request in flight (its answer is still to come): {bad}"
                    ),
                    None => log::warn!(
                        "skipped a line without a request id, which no answer can be matched to: {bad}"
                    ),
                }
                return Ok(());
            }
        };
        if self.shared.is_in_flight(request.id) {
            log::warn!(
                "skipped a request with the id {} of a request in flight (its answer is still to come)",
                request.id
            );
            return Ok(());
        }
        self.submit(&request)
    }

    /// Writes the request's input file (its C1 output, or its update task) into the private
    /// inbox, where the run claims it.
    fn submit(&mut self, request: &Request<'_>) -> Result<()> {
        let pending = Pending {
            id: request.id,
            attempt: 1,
            base: request.base_name.clone(),
        };
        let job = pending.job();
        let inbox = self.shared.layout.inbox.clone();
        // A dotfile first, which the run never claims; renamed once whole.
        let hidden = inbox.join(format!(".{job}.json.part"));
        let path = inbox.join(format!("{job}.json"));
        if let Err(err) = fs::write(&hidden, request.input.as_bytes()) {
            let _ = fs::remove_file(&hidden);
            let message = format!(
                "cuzk: cannot write the request to {}: {err} (hint: free space there, or give damocles-c2 --tmp-dir elsewhere)",
                hidden.display()
            );
            self.shared.answers.send(&Answer::error(
                request.id,
                &message,
                Retry::MayHelp("once there is room".into()),
            ));
            return Ok(());
        }
        loop {
            self.ensure_run()?;
            let mut in_flight = self.shared.lock();
            if in_flight.is_closed {
                // The run ended between the check and the lock: start another.
                continue;
            }
            // Registered and renamed under the lock, so a run that ends now answers it.
            in_flight.requests.insert(job.clone(), pending.clone());
            if let Err(err) = fs::rename(&hidden, &path) {
                in_flight.requests.remove(&job);
                drop(in_flight);
                let _ = fs::remove_file(&hidden);
                self.shared.answers.send(&Answer::error(
                    request.id,
                    &format!(
                        "cuzk: cannot move the request into {}: {err}",
                        inbox.display()
                    ),
                    Retry::MayHelp("a fault of this machine's temporary directory".into()),
                ));
            }
            return Ok(());
        }
    }

    /// At the end of input: lets the run prove what it holds, and as long as requests wait
    /// for another try (and no stop signal came), runs again for them.
    fn finish(&mut self) -> Result<()> {
        loop {
            let Some(run) = self.run.take() else {
                return Ok(());
            };
            run.drain();
            let wait = self
                .ended
                .1
                .try_iter()
                .filter_map(|ended| ended.next_run_after)
                .max();
            if pipeline::is_stopping() || !self.shared.has_pending() {
                return Ok(());
            }
            std::thread::sleep(wait.unwrap_or(Duration::ZERO));
            self.ensure_run()?;
        }
    }
}

/// Serves requests from `input` until it ends, answering on `output`; the returned code is
/// the process exit code. The ready line is written before anything else happens.
pub fn serve(
    input: Box<dyn BufRead + Send>,
    mut output: Box<dyn Write + Send>,
    settings: &ProcessorSettings,
) -> Result<u8> {
    writeln!(output, "{}", settings.stage.ready_line())
        .and_then(|()| output.flush())
        .context("writing the ready line to stdout")?;
    private_spool::remove_stale(&settings.tmp_dir);
    let spool_dir = PrivateSpool::create(&settings.tmp_dir)?;
    note_other_processors(settings, spool_dir.path());
    let inbox = spool_dir.path().join("inbox");
    let layout = SpoolLayout::beside(&inbox);
    let run_settings = RunSettings {
        layout: layout.clone(),
        timeline: settings
            .timeline
            .clone()
            .unwrap_or_else(|| spool_dir.path().join("timeline.csv")),
        once: false,
        // Requests are renamed into the inbox whole, and the watcher wakes the run.
        settle: Duration::ZERO,
        poll: Duration::from_secs(1),
        ..settings.run.clone()
    };
    let cap = run_settings
        .max_c1_bytes
        .saturating_add(LINE_OVERHEAD_BYTES);
    let mut processor = Processor {
        stage: settings.stage,
        settings: run_settings,
        retry_pause: settings.retry_pause,
        shared: Arc::new(Shared {
            stage: settings.stage,
            answers: AnswerWriter(Mutex::new(output)),
            in_flight: Mutex::default(),
            layout,
            attempts: settings.attempts.max(1),
        }),
        run: None,
        ended: unbounded(),
    };
    // Started now, so that finding the GPUs overlaps the wait for the first request.
    processor.ensure_run()?;
    let lines = read_lines(input, cap);
    let mut next_run_at: Option<Instant> = None;
    loop {
        let next_run = next_run_at
            .map(|at| after(at.saturating_duration_since(Instant::now())))
            .unwrap_or_else(never);
        select! {
            recv(lines) -> input => match input {
                Ok(Input::Line(line)) => processor.take_line(&line, false)?,
                Ok(Input::TooLong(start)) => processor.take_line(&start, true)?,
                Ok(Input::End) | Err(_) => break,
            },
            recv(processor.ended.1) -> ended => match ended {
                // A stop signal: the requests in flight were answered; take no more.
                Ok(RunEnded { is_stopped: true, .. }) => return Ok(0),
                Ok(RunEnded { next_run_after: Some(wait), .. }) => {
                    next_run_at = Some(Instant::now() + wait);
                }
                _ => {}
            },
            recv(next_run) -> _ => {
                next_run_at = None;
                processor.ensure_run()?;
            },
        }
    }
    processor.finish()?;
    drop(spool_dir);
    Ok(0)
}

/// Says so when other processors run beside this one without `--max-memory`: each budgets
/// the memory available when its run starts, and several starting together each count
/// all of it.
fn note_other_processors(settings: &ProcessorSettings, own: &Path) {
    if settings.run.max_memory.is_some() {
        return;
    }
    let others = private_spool::live_others(&settings.tmp_dir, own);
    if others > 0 {
        log::info!(
            "{others} other cuzk processor(s) run on this host (their spools are in {}); each budgets the memory available when its run starts, so together they may count the same memory twice (hint: give each --max-memory, its share of the machine, or serve every request from one processor with damocles' `concurrent`, which shares one set of parameters)",
            settings.tmp_dir.display()
        );
    }
}

/// The process's stdout for protocol lines only: a duplicate of file descriptor 1, which is
/// then pointed at stderr, so that nothing else written to stdout (a library's print, a
/// progress bar) can reach damocles-worker as a protocol line.
pub fn protocol_stdout() -> Result<File> {
    use std::os::fd::FromRawFd;
    // SAFETY: dup returns a new descriptor we own, or -1.
    let protocol = unsafe { libc::dup(libc::STDOUT_FILENO) };
    if protocol < 0 {
        return Err(std::io::Error::last_os_error()).context("duplicating stdout");
    }
    // SAFETY: both descriptors are open; nothing has been written to stdout yet.
    if unsafe { libc::dup2(libc::STDERR_FILENO, libc::STDOUT_FILENO) } < 0 {
        let err = std::io::Error::last_os_error();
        // SAFETY: `protocol` is ours and not used elsewhere.
        unsafe { libc::close(protocol) };
        return Err(err).context("pointing stdout at stderr");
    }
    // SAFETY: `protocol` is a fresh descriptor owned by nothing else.
    Ok(unsafe { File::from_raw_fd(protocol) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tries_after_the_first_have_names_of_their_own() {
        let first = Pending {
            id: 7,
            attempt: 1,
            base: "s-t01000-1.r7".into(),
        };
        assert_eq!(first.job(), "s-t01000-1.r7");
        assert_eq!(first.next().job(), "s-t01000-1.r7.a2");
        assert_eq!(first.next().next().job(), "s-t01000-1.r7.a3");
        // Still a lotus sector name: the miner and sector come from it.
        let path = format!("inbox/{}.json", first.next().job());
        assert_eq!(
            crate::c1::identity_from_file_name(Path::new(&path)),
            Some(crate::c1::SectorIdentity {
                miner_id: 1000,
                sector_num: 1
            })
        );
    }
}
