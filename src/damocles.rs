//! damocles (venus-cluster) external C2 processor: damocles-worker starts `cuzk damocles-c2`
//! (or `cuzk processor c2`, its default arguments) as a child process and sends it
//! commit-phase-2 requests; cuzk proves them with its own pipeline and answers each one.
//!
//! # The protocol (vc-processors v1)
//!
//! Line-delimited JSON over the child's stdin and stdout:
//!
//! 1. the child prints `c2 processor ready` as its first stdout line, at once (damocles-worker
//!    waits `stable_wait`, 5 s by default), before any parameter is loaded;
//! 2. each request is one line, `{"id":N,"task":{"c1out":<SealCommitPhase1Output>,
//!    "prover_id":[32 bytes],"sector_id":S,"miner_id":M}}`; several are in flight at once;
//! 3. each answer is one line, `{"id":N,"err_msg":null,"output":{"proof":[bytes]}}` or
//!    `{"id":N,"err_msg":"why","output":null}`, in whatever order the proofs finish.
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
//! temporary directory; each request's `c1out` is written, bytes as received, to its inbox
//! as `s-t0<miner>-<sector>.r<id>.json` (the bare SealCommitPhase1Output form; the lotus
//! sector name gives the miner and sector, the id keeps retries of one sector apart), and
//! the pipeline runs over that spool in watch mode, steered by a
//! [`RunControl`](crate::pipeline::RunControl): its observer hands this module each event
//! as the timeline records it, and a `DONE` or `FAILED` event of a request's job is its
//! answer (the proof read from the outbox, or the stage and reason). Nothing polls the file
//! system, and there is no second way through the prover to keep in step with the first.
//! Answered jobs' files are removed, so the private spool does not grow. When the end of
//! input asks the run to drain, it ends like a `--once` run.
//!
//! If the run itself stops (missing or damaged parameters, a full disk), every request in
//! flight is answered with the reason and the next request starts a fresh run, so fixing
//! the cause needs no restart of damocles-worker.

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{Context, Result};
use crossbeam_channel::{bounded, select, unbounded, Receiver, Sender};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::c1::SectorIdentity;
use crate::event::{Event, EventKind};
use crate::pipeline::{self, RunControl, RunSettings};
use crate::spool::SpoolLayout;

/// The stage name damocles-worker gives commit phase 2.
pub const STAGE: &str = "c2";

/// The line a processor prints when it is ready for requests.
pub const READY_LINE: &str = "c2 processor ready";

/// The name prefix of private spools, so a later processor can tidy those of dead ones.
const SPOOL_PREFIX: &str = "cuzk-damocles-";

/// Bytes a request line may hold beyond its C1 output: ids, prover id, punctuation.
const LINE_OVERHEAD_BYTES: u64 = 64 << 10;

/// How the processor runs.
#[derive(Clone, Debug)]
pub struct ProcessorSettings {
    /// The pipeline's settings; the spool's directories are replaced by the private spool's.
    pub run: RunSettings,
    /// Where the private spool is made (a fresh directory inside, removed at exit).
    pub tmp_dir: PathBuf,
    /// The timeline; `None`: inside the private spool, removed at exit.
    pub timeline: Option<PathBuf>,
}

/// A request as damocles sends it; `c1out` is kept as the bytes received.
#[derive(Deserialize)]
struct WireRequest<'a> {
    id: u64,
    #[serde(borrow)]
    task: WireTask<'a>,
}

#[derive(Deserialize)]
struct WireTask<'a> {
    #[serde(borrow)]
    c1out: &'a RawValue,
    prover_id: [u8; 32],
    sector_id: u64,
    miner_id: u64,
}

/// A request that is well formed and consistent.
#[derive(Debug)]
struct C2Request<'a> {
    id: u64,
    c1out: &'a str,
    sector: SectorIdentity,
}

/// Why a request line cannot be taken, and its id if one could be read.
#[derive(Debug, PartialEq, thiserror::Error)]
#[error("{reason}")]
struct BadRequest {
    id: Option<u64>,
    reason: String,
}

/// One answer line.
#[derive(Debug, Serialize)]
struct Answer {
    id: u64,
    err_msg: Option<String>,
    output: Option<ProofOutput>,
}

/// `SealCommitPhase2Output`: the proof's bytes, which serde writes as a number array.
#[derive(Debug, Serialize)]
struct ProofOutput {
    proof: Vec<u8>,
}

impl Answer {
    fn proof(id: u64, proof: Vec<u8>) -> Answer {
        Answer {
            id,
            err_msg: None,
            output: Some(ProofOutput { proof }),
        }
    }

    fn error(id: u64, message: String) -> Answer {
        Answer {
            id,
            err_msg: Some(message),
            output: None,
        }
    }
}

/// Reads a request line: well formed, with a prover id that is the miner's.
fn parse_request(line: &str) -> Result<C2Request<'_>, BadRequest> {
    let wire: WireRequest<'_> = serde_json::from_str(line).map_err(|e| BadRequest {
        id: request_id(line),
        reason: format!("not a c2 request: {e} (expected {{\"id\":N,\"task\":{{\"c1out\":{{...}},\"prover_id\":[32 numbers],\"sector_id\":N,\"miner_id\":N}}}})"),
    })?;
    let bad = |reason: String| BadRequest {
        id: Some(wire.id),
        reason,
    };
    let task = wire.task;
    let sector = SectorIdentity {
        miner_id: task.miner_id,
        sector_num: task.sector_id,
    };
    if task.prover_id != sector.prover_id() {
        return Err(bad(format!(
            "prover_id {} is not the prover id of miner_id {} (t0{}), which is {}; the proof would be for another miner (hint: damocles derives both from the sector's miner; check the sector's miner id)",
            hex::encode(task.prover_id),
            task.miner_id,
            task.miner_id,
            hex::encode(sector.prover_id())
        )));
    }
    let c1out = task.c1out.get();
    if !c1out.starts_with('{') {
        return Err(bad(
            "c1out is not a JSON object; expected the SealCommitPhase1Output of commit phase 1"
                .into(),
        ));
    }
    Ok(C2Request {
        id: wire.id,
        c1out,
        sector,
    })
}

/// The id of a request line that is not a valid request, if it has one: read as JSON, or
/// from the line's start (`{"id":N,`) when the JSON is cut short.
fn request_id(line: &str) -> Option<u64> {
    #[derive(Deserialize)]
    struct IdOnly {
        id: u64,
    }
    if let Ok(only) = serde_json::from_str::<IdOnly>(line) {
        return Some(only.id);
    }
    let rest = line.trim_start().strip_prefix('{')?.trim_start();
    let rest = rest.strip_prefix("\"id\"")?.trim_start();
    let rest = rest.strip_prefix(':')?.trim_start();
    let digits: &str = &rest[..rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len())];
    let after = rest[digits.len()..].chars().next();
    if !matches!(after, Some(',') | Some('}') | Some(' ') | Some('\t')) {
        return None;
    }
    digits.parse().ok()
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
            eprintln!(
                "cuzk damocles-c2: cannot answer request {}: {err}",
                answer.id
            );
        }
    }
}

/// The requests in flight, by job name.
#[derive(Default)]
struct InFlight {
    ids: HashMap<String, u64>,
    /// Set when the run ends: requests must wait for the next run.
    is_closed: bool,
}

/// What the processor's threads share.
struct Shared {
    answers: AnswerWriter,
    in_flight: Mutex<InFlight>,
    layout: SpoolLayout,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, InFlight> {
        self.in_flight.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn is_in_flight(&self, id: u64) -> bool {
        self.lock().ids.values().any(|&v| v == id)
    }

    /// Answers `job`'s request, if it is one in flight, with what the event says.
    fn answer_event(&self, event: &Event) {
        let (job, answer) = match &event.kind {
            EventKind::ProofWritten { job, path } => (job, Ok(path)),
            EventKind::JobFailed {
                job,
                stage,
                message,
            } => (job, Err(format!("cuzk: {stage}: {message}"))),
            // Never the case for a file this module wrote, but a request must not wait for
            // a claim that cannot happen; its file goes, so it is never proved unasked.
            EventKind::FileSkipped { job, reason } => (
                job,
                Err(format!("cuzk: cannot claim the request's file: {reason}")),
            ),
            _ => return,
        };
        let Some(id) = self.lock().ids.remove(job) else {
            return;
        };
        let answer = match answer {
            Ok(path) => match fs::read(path) {
                Ok(proof) => Answer::proof(id, proof),
                Err(err) => Answer::error(id, format!("cuzk: reading the proof {path}: {err}")),
            },
            Err(message) => Answer::error(id, message),
        };
        self.answers.send(&answer);
        self.remove_job_files(job);
    }

    /// Ends a run: answers every request still in flight with `reason` and removes its file.
    fn close(&self, reason: &str) {
        let left: Vec<(String, u64)> = {
            let mut in_flight = self.lock();
            in_flight.is_closed = true;
            in_flight.ids.drain().collect()
        };
        for (job, id) in left {
            self.answers.send(&Answer::error(id, reason.to_owned()));
            self.remove_job_files(&job);
        }
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

/// How a run ended: `true` when a stop signal ended it.
type RunEnded = bool;

impl Run {
    fn start(settings: RunSettings, shared: Arc<Shared>, ended: Sender<RunEnded>) -> Result<Run> {
        shared.lock().is_closed = false;
        let (observer, events) = unbounded::<Event>();
        let control = RunControl {
            observer: Some(observer),
            drain: pipeline::Drain::default(),
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
                let reason = match &result {
                    Err(err) => {
                        eprintln!("cuzk damocles-c2: the pipeline stopped: {err:#}");
                        format!("cuzk could not prove it: {err:#}")
                    }
                    Ok(_) if pipeline::is_stopping() => {
                        "cuzk was asked to stop (SIGINT or SIGTERM) before proving it".to_owned()
                    }
                    Ok(_) => "cuzk's pipeline ended before proving it".to_owned(),
                };
                shared.close(&reason);
                let _ = ended.send(pipeline::is_stopping());
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
                eprintln!("cuzk damocles-c2: reading stdin: {err}");
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
    settings: RunSettings,
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
                    "request line longer than {} bytes; not read (hint: a C1 output of any sector size is far smaller)",
                    line.len()
                ),
            })
        } else {
            parse_request(text.trim_end())
        };
        let request = match parsed {
            Ok(request) => request,
            Err(bad) => {
                match bad.id {
                    Some(id) if !self.shared.is_in_flight(id) => {
                        self.shared.answers.send(&Answer::error(id, bad.reason))
                    }
                    Some(id) => eprintln!(
                        "cuzk damocles-c2: skipped a bad request with the id {id} of a request in flight (its answer is still to come): {bad}"
                    ),
                    None => eprintln!(
                        "cuzk damocles-c2: skipped a line without a request id, which no answer can be matched to: {bad}"
                    ),
                }
                return Ok(());
            }
        };
        if self.shared.is_in_flight(request.id) {
            eprintln!(
                "cuzk damocles-c2: skipped a request with the id {} of a request in flight (its answer is still to come)",
                request.id
            );
            return Ok(());
        }
        self.submit(&request)
    }

    /// Writes the request's C1 output into the private inbox, where the run claims it.
    fn submit(&mut self, request: &C2Request<'_>) -> Result<()> {
        let job = format!("{}.r{}", request.sector, request.id);
        let inbox = self.shared.layout.inbox.clone();
        // A dotfile first, which the run never claims; renamed once whole.
        let hidden = inbox.join(format!(".{job}.json.part"));
        let path = inbox.join(format!("{job}.json"));
        if let Err(err) = fs::write(&hidden, request.c1out.as_bytes()) {
            let _ = fs::remove_file(&hidden);
            let message = format!(
                "cuzk: cannot write the request to {}: {err} (hint: free space there, or give damocles-c2 --tmp-dir elsewhere)",
                hidden.display()
            );
            self.shared
                .answers
                .send(&Answer::error(request.id, message));
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
            in_flight.ids.insert(job.clone(), request.id);
            if let Err(err) = fs::rename(&hidden, &path) {
                in_flight.ids.remove(&job);
                drop(in_flight);
                let _ = fs::remove_file(&hidden);
                self.shared.answers.send(&Answer::error(
                    request.id,
                    format!(
                        "cuzk: cannot move the request into {}: {err}",
                        inbox.display()
                    ),
                ));
            }
            return Ok(());
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
    writeln!(output, "{READY_LINE}")
        .and_then(|()| output.flush())
        .context("writing the ready line to stdout")?;
    remove_stale_spools(&settings.tmp_dir);
    let spool_dir = tempfile::Builder::new()
        .prefix(&format!("{SPOOL_PREFIX}{}-", std::process::id()))
        .tempdir_in(&settings.tmp_dir)
        .with_context(|| {
            format!(
                "{}: cannot make the processor's spool there (hint: give --tmp-dir a writable directory)",
                settings.tmp_dir.display()
            )
        })?;
    let inbox = spool_dir.path().join("inbox");
    fs::create_dir(&inbox).with_context(|| format!("creating {}", inbox.display()))?;
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
        settings: run_settings,
        shared: Arc::new(Shared {
            answers: AnswerWriter(Mutex::new(output)),
            in_flight: Mutex::default(),
            layout,
        }),
        run: None,
        ended: unbounded(),
    };
    // Started now, so that finding the GPUs overlaps the wait for the first request.
    processor.ensure_run()?;
    let lines = read_lines(input, cap);
    loop {
        select! {
            recv(lines) -> input => match input {
                Ok(Input::Line(line)) => processor.take_line(&line, false)?,
                Ok(Input::TooLong(start)) => processor.take_line(&start, true)?,
                Ok(Input::End) | Err(_) => break,
            },
            recv(processor.ended.1) -> stopped => {
                if stopped == Ok(true) {
                    // A stop signal: the requests in flight were answered; take no more.
                    return Ok(0);
                }
            },
        }
    }
    if let Some(run) = processor.run.take() {
        run.drain();
    }
    drop(spool_dir);
    Ok(0)
}

/// Removes private spools that processors killed with SIGKILL (as damocles-worker stops
/// them) left in `dir`: those whose process no longer runs.
fn remove_stale_spools(dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(SPOOL_PREFIX)) else {
            continue;
        };
        let Some(Ok(pid)) = rest.split('-').next().map(str::parse::<u32>) else {
            continue;
        };
        let is_spool = entry.path().join("inbox").is_dir();
        if is_spool && pid != std::process::id() && !crate::process::is_alive_here(pid) {
            match fs::remove_dir_all(entry.path()) {
                Ok(()) => log::info!(
                    "removed {}, left by a processor that died",
                    entry.path().display()
                ),
                Err(err) => log::warn!("{}: not removed: {err}", entry.path().display()),
            }
        }
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

    fn line(id: u64, prover_miner: u64, miner: u64, c1out: &str) -> String {
        let prover_id = SectorIdentity {
            miner_id: prover_miner,
            sector_num: 0,
        }
        .prover_id();
        format!(
            r#"{{"id":{id},"task":{{"c1out":{c1out},"prover_id":{},"sector_id":7,"miner_id":{miner}}}}}"#,
            serde_json::to_string(&prover_id.to_vec()).expect("json")
        )
    }

    #[test]
    fn a_good_request_keeps_its_c1_bytes() {
        let text = line(
            3,
            1000,
            1000,
            r#"{"registered_proof": "StackedDrg2KiBV1_1"}"#,
        );
        let request = parse_request(&text).expect("good request");
        assert_eq!(request.id, 3);
        assert_eq!(
            request.c1out,
            r#"{"registered_proof": "StackedDrg2KiBV1_1"}"#
        );
        assert_eq!(
            request.sector,
            SectorIdentity {
                miner_id: 1000,
                sector_num: 7
            }
        );
    }

    #[test]
    fn a_prover_id_of_another_miner_is_refused_with_the_id() {
        let bad = parse_request(&line(4, 2000, 1000, "{}")).expect_err("mismatch");
        assert_eq!(bad.id, Some(4));
        assert!(bad.reason.contains("miner_id 1000"), "{bad}");
        assert!(bad.reason.contains("hint"), "{bad}");
    }

    #[test]
    fn bad_lines_give_their_id_when_they_have_one() {
        let id = |text: &str| parse_request(text).expect_err(text).id;
        assert_eq!(id(r#"{"id":5,"task":"nonsense"}"#), Some(5));
        assert_eq!(id(r#"{"id":6,"task":{"c1out":{"x":1}}}"#), Some(6));
        assert_eq!(id(&line(8, 1000, 1000, "[1,2]")), Some(8));
        // Cut short: the JSON is invalid, but the id leads the line as damocles writes it.
        assert_eq!(id(r#"{"id":9,"task":{"c1out":{"registered_pr"#), Some(9));
        assert_eq!(id(r#"{ "id" : 10 , "task""#), Some(10));
        assert_eq!(id("not json at all"), None);
        assert_eq!(id(r#"{"id":"eleven","task":{}}"#), None);
        assert_eq!(id(r#"{"id":12x,"task":{}}"#), None);
        assert_eq!(id(r#"{"task":{},"id":-1}"#), None);
    }

    #[test]
    fn answers_are_the_vc_processors_response_shape() {
        let ok = serde_json::to_string(&Answer::proof(1, vec![1, 2, 255])).expect("json");
        assert_eq!(
            ok,
            r#"{"id":1,"err_msg":null,"output":{"proof":[1,2,255]}}"#
        );
        let err = serde_json::to_string(&Answer::error(2, "no \"way\"".into())).expect("json");
        assert_eq!(err, r#"{"id":2,"err_msg":"no \"way\"","output":null}"#);
    }

    #[test]
    fn stale_spools_of_dead_processors_are_removed() {
        let dir = tempfile::tempdir().expect("tempdir");
        // A pid far above any pid_max is never alive.
        let dead = dir.path().join(format!("{SPOOL_PREFIX}4999999-abc"));
        let alive = dir
            .path()
            .join(format!("{SPOOL_PREFIX}{}-abc", std::process::id()));
        let foreign = dir.path().join(format!("{SPOOL_PREFIX}4999999-notaspool"));
        for spool in [&dead, &alive] {
            fs::create_dir_all(spool.join("inbox")).expect("spool");
        }
        fs::create_dir_all(&foreign).expect("dir");
        remove_stale_spools(dir.path());
        assert!(!dead.exists());
        assert!(alive.exists());
        assert!(
            foreign.exists(),
            "only directories that look like spools go"
        );
    }
}
