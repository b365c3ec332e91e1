//! `cuzk waterfall`: where every second of a run went, read back from its timeline CSV.
//!
//! This module owns the analysis and its three drawings. The data flows one way:
//!
//! 1. [`read_timeline`] reads the rows; [`screen`] groups them by run, in time order, and sets
//!    aside rows it cannot use (unknown events, missing fields) with one warning per kind;
//! 2. [`RunSpans::from_events`] folds one run's events into per-job and per-partition spans;
//! 3. [`RunMetrics::compute`] derives everything reported: each row's phases, the prover
//!    lanes and their idle gaps, the queue, steady-state throughput and the verdict;
//! 4. [`render_ascii`], [`render_svg`] and [`render_json`] draw [`RunMetrics`] and compute
//!    nothing themselves, so tests check the numbers once and the drawings only for shape.
//!
//! # Definitions
//!
//! Times are seconds since the run started (the timeline's `t_ms` / 1000).
//!
//! - **span**: from the run's first CLAIM to its last DONE or FAILED (to its last event when a
//!   job never finished), the time the run had work. Busy fractions, idle time and the
//!   percentages in the verdict are shares of it.
//! - **phases** of a row (a job, or one partition with `--partitions`) split its life, CLAIM to
//!   DONE/FAILED, by the most advanced thing happening to it: *write* (VERIFY_END to DONE),
//!   *verify*, *prove* (a partition between GPU_START and GPU_END), *synthesis*, *channel*
//!   (a partition synthesized but not yet proving: SYNTH_END to GPU_START, a blocked send plus
//!   the queue) and *queue wait* (none of these: waiting for a synthesis worker, parsing,
//!   waiting for sibling partitions). They add up to the row's total.
//! - **queued**: a partition is queued from SYNTH_END until a prover takes it (GPU_PICKUP).
//! - a prover lane is **busy** while proving (GPU_START to GPU_END). Loading parameters is
//!   neither busy nor idle. **Idle** time is split by what the lane waited for, first match:
//!   *scheduling* (a partition was queued, so the lane should have been proving), *synthesis*
//!   (a job in flight still had partitions to synthesize), *drain* (jobs in flight, nothing
//!   left to synthesize: other lanes' last proofs, verification, writing) and *input* (no job in
//!   flight: the inbox was empty). A **gap** is a stretch of idle time with one cause, at least
//!   `--gap-ms` long; an idle lane that first waits for synthesis and then ignores a queued
//!   partition shows two gaps, because the two want different fixes.
//! - **prover-bound time**: a partition was queued while every lane was busy or loading.
//! - **steady-state throughput**: see [`throughput`].

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Write;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use serde::Serialize;

use crate::timeline::{read_timeline, Timeline, TimelineRow};

mod intervals;

use intervals::Intervals;

/// Arguments of `cuzk waterfall`.
#[derive(Debug, clap::Args)]
pub struct WaterfallArgs {
    /// The timeline CSV written by `cuzk prove-dir`.
    pub timeline: PathBuf,

    /// Show the run with this id instead of the last one in the file.
    #[arg(long, value_name = "ID", conflicts_with = "all")]
    pub run: Option<String>,

    /// Show every run in the file, one after another, each on its own time axis.
    #[arg(long)]
    pub all: bool,

    /// Width of the drawing in columns [default: $COLUMNS, else 100; at least 20].
    #[arg(long, value_name = "N")]
    pub width: Option<usize>,

    /// One row per partition instead of one per job.
    #[arg(long)]
    pub partitions: bool,

    /// List the prover lanes' idle gaps at least this long, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 1000.0)]
    pub gap_ms: f64,

    /// Also write the waterfall as a standalone SVG image to FILE.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,

    /// Print the computed metrics as JSON instead of drawing them.
    #[arg(long)]
    pub json: bool,
}

/// The top-level entry point for `cuzk waterfall`; returns the exit code.
pub fn run(args: WaterfallArgs) -> Result<u8> {
    if !(args.gap_ms.is_finite() && args.gap_ms >= 0.0) {
        bail!(
            "--gap-ms wants a non-negative number of milliseconds, not {}",
            args.gap_ms
        );
    }
    let timeline = read_timeline(&args.timeline)?;
    let selection = match (&args.run, args.all) {
        (Some(id), _) => Selection::Run(id.clone()),
        (None, true) => Selection::All,
        (None, false) => Selection::Last,
    };
    let options = Options {
        per_partition: args.partitions,
        gap_s: args.gap_ms / 1000.0,
    };
    let screened = screen(&timeline);
    // Warnings first: they may explain why nothing could be shown.
    for warning in &screened.warnings {
        eprintln!("warning: {warning}");
    }
    let analysis = analyze(&screened, &selection, &options)
        .with_context(|| format!("{}", args.timeline.display()))?;
    if let Some(path) = &args.svg {
        std::fs::write(path, render_svg(&analysis.runs))
            .with_context(|| format!("writing SVG {}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    let text = if args.json {
        render_json(&args.timeline.display().to_string(), &analysis)?
    } else {
        render_ascii(&analysis.runs, resolve_width(args.width))
    };
    print(&text)?;
    Ok(0)
}

/// `--width`, else `$COLUMNS`, else 100; narrower than 20 columns cannot hold a row.
fn resolve_width(flag: Option<usize>) -> usize {
    flag.or_else(|| std::env::var("COLUMNS").ok()?.trim().parse().ok())
        .unwrap_or(100)
        .max(MIN_WIDTH)
}

const MIN_WIDTH: usize = 20;

/// Writes `text` to stdout; a closed pipe (`cuzk waterfall t.csv | head`) is not an error.
fn print(text: &str) -> Result<()> {
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.context("writing to stdout"),
    }
}

// ---------------------------------------------------------------------------------------------
// Selection and screening: rows to per-run, time-ordered events.

/// Which runs of the file to show.
#[derive(Clone, Debug, PartialEq)]
enum Selection {
    /// The run that appears last in the file (the most recently started one).
    Last,
    /// The run with this id.
    Run(String),
    /// Every run, in file order.
    All,
}

/// How rows are drawn and gaps reported.
#[derive(Clone, Debug)]
struct Options {
    /// One row per partition instead of per job.
    per_partition: bool,
    /// The shortest idle stretch listed as a gap, in seconds.
    gap_s: f64,
}

/// What `analyze` found: the chosen runs' metrics and what had to be skipped on the way.
#[derive(Debug)]
struct Analysis {
    /// Every run id in the file, in order of first appearance.
    runs_in_file: Vec<String>,
    /// One line per kind of problem in the file (`warning: ` is added when printed).
    warnings: Vec<String>,
    /// The chosen runs.
    runs: Vec<RunMetrics>,
}

/// Picks runs from a screened file and computes their metrics.
fn analyze(screened: &Screened<'_>, selection: &Selection, options: &Options) -> Result<Analysis> {
    if screened.runs.is_empty() {
        bail!("no usable events: the file holds only a header or unreadable rows");
    }
    let runs_in_file: Vec<String> = screened.runs.iter().map(|r| r.id.to_owned()).collect();
    let chosen: Vec<usize> = match selection {
        Selection::Last => vec![screened.runs.len() - 1],
        Selection::All => (0..screened.runs.len()).collect(),
        Selection::Run(id) => match runs_in_file.iter().position(|r| r == id) {
            Some(index) => vec![index],
            None => bail!(
                "no run {id:?} in this timeline; its runs are: {}",
                runs_in_file.join(", ")
            ),
        },
    };
    let runs = chosen
        .into_iter()
        .map(|index| {
            let run = &screened.runs[index];
            let spans = RunSpans::from_events(run.id, &run.events);
            RunMetrics::compute(&spans, options, index + 1, runs_in_file.len())
        })
        .collect();
    Ok(Analysis {
        runs_in_file,
        warnings: screened.warnings.clone(),
        runs,
    })
}

/// The one warning for lines the reader could not parse (a torn last line, usually).
fn skipped_lines_warning(skipped: &[String]) -> Option<String> {
    let first = skipped.first()?;
    let more = match skipped.len() {
        1 => String::new(),
        n => format!("; and {} more", n - 1),
    };
    Some(format!(
        "skipped {} ({first}{more})",
        plural(skipped.len(), "malformed line")
    ))
}

/// The events a timeline may hold; see [`crate::timeline::EVENT_NAMES`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum EventName {
    RunStart,
    RunEnd,
    ParamsGen,
    Claim,
    Parsed,
    SynthStart,
    SynthEnd,
    ChanSend,
    Pickup,
    ParamsStart,
    ParamsEnd,
    GpuStart,
    GpuEnd,
    VerifyStart,
    VerifyEnd,
    Done,
    Failed,
    Deferred,
}

impl EventName {
    fn parse(name: &str) -> Option<EventName> {
        Some(match name {
            "RUN_START" => EventName::RunStart,
            "RUN_END" => EventName::RunEnd,
            "PARAMS_GEN" => EventName::ParamsGen,
            "CLAIM" => EventName::Claim,
            "PARSED" => EventName::Parsed,
            "SYNTH_START" => EventName::SynthStart,
            "SYNTH_END" => EventName::SynthEnd,
            "CHAN_SEND" => EventName::ChanSend,
            "GPU_PICKUP" => EventName::Pickup,
            "PARAMS_START" => EventName::ParamsStart,
            "PARAMS_END" => EventName::ParamsEnd,
            "GPU_START" => EventName::GpuStart,
            "GPU_END" => EventName::GpuEnd,
            "VERIFY_START" => EventName::VerifyStart,
            "VERIFY_END" => EventName::VerifyEnd,
            "DONE" => EventName::Done,
            "FAILED" => EventName::Failed,
            "DEFERRED" => EventName::Deferred,
            _ => return None,
        })
    }

    /// Why `row` cannot be used for this event, if it cannot.
    fn unusable(self, row: &TimelineRow) -> Option<&'static str> {
        use EventName::*;
        let needs_job = !matches!(
            self,
            RunStart | RunEnd | ParamsGen | ParamsStart | ParamsEnd
        );
        let needs_partition = matches!(
            self,
            SynthStart | SynthEnd | ChanSend | Pickup | GpuStart | GpuEnd
        );
        let needs_worker = matches!(self, ParamsStart | ParamsEnd);
        if !row.t_ms.is_finite() {
            Some("t_ms is not a finite number")
        } else if needs_job && row.job.is_empty() {
            Some("no job")
        } else if needs_partition && row.partition.is_none() {
            Some("no partition")
        } else if needs_worker && row.worker.is_empty() {
            Some("no worker")
        } else {
            None
        }
    }
}

/// A usable row: its event and its time in seconds.
#[derive(Clone, Copy, Debug)]
struct Event<'a> {
    name: EventName,
    t: f64,
    row: &'a TimelineRow,
}

/// One run's events, sorted by time.
#[derive(Debug)]
struct RunEvents<'a> {
    id: &'a str,
    events: Vec<Event<'a>>,
}

/// The file's usable rows grouped by run, and one warning per kind of unusable line or row.
#[derive(Debug)]
struct Screened<'a> {
    /// Runs in order of first appearance.
    runs: Vec<RunEvents<'a>>,
    warnings: Vec<String>,
}

/// Groups rows by run and sorts each run by time, since rows may be written out of order.
fn screen(timeline: &Timeline) -> Screened<'_> {
    let mut runs: Vec<RunEvents<'_>> = Vec::new();
    let mut run_index: HashMap<&str, usize> = HashMap::new();
    let mut unknown: BTreeMap<&str, usize> = BTreeMap::new();
    let mut unusable = 0;
    let mut first_unusable = None;
    for row in &timeline.rows {
        let Some(name) = EventName::parse(&row.event) else {
            *unknown.entry(row.event.as_str()).or_default() += 1;
            continue;
        };
        if let Some(why) = name.unusable(row) {
            unusable += 1;
            first_unusable.get_or_insert_with(|| {
                format!(
                    "{} at t_ms {} in run {:?}: {why}",
                    row.event, row.t_ms, row.run_id
                )
            });
            continue;
        }
        let index = *run_index.entry(row.run_id.as_str()).or_insert_with(|| {
            runs.push(RunEvents {
                id: &row.run_id,
                events: Vec::new(),
            });
            runs.len() - 1
        });
        runs[index].events.push(Event {
            name,
            t: row.t_ms / 1000.0,
            row,
        });
    }
    for run in &mut runs {
        // Stable, so events stamped in the same millisecond keep their file order.
        run.events.sort_by(|a, b| a.t.total_cmp(&b.t));
    }
    let mut warnings: Vec<String> = skipped_lines_warning(&timeline.skipped)
        .into_iter()
        .collect();
    if !unknown.is_empty() {
        let count: usize = unknown.values().sum();
        let names: Vec<String> = unknown.iter().map(|(n, c)| format!("{n} ({c})")).collect();
        warnings.push(format!(
            "ignored {} with unknown events: {}",
            plural(count, "row"),
            names.join(", ")
        ));
    }
    if let Some(first) = first_unusable {
        warnings.push(format!(
            "ignored {} missing a field their event needs (first: {first})",
            plural(unusable, "row")
        ));
    }
    Screened { runs, warnings }
}

// ---------------------------------------------------------------------------------------------
// Spans: one run's events folded into what each job and partition went through.

/// When each of one partition's events happened (seconds; the first of duplicates wins).
#[derive(Clone, Debug, Default)]
struct PartitionSpans {
    synth_start: Option<f64>,
    synth_end: Option<f64>,
    chan_send: Option<f64>,
    pickup: Option<f64>,
    gpu_start: Option<f64>,
    gpu_end: Option<f64>,
    /// The prover lane that took it.
    lane: Option<String>,
    /// The prover's own step timings, from GPU_END's detail.
    steps: Option<ProverSteps>,
}

/// The prover's steps for one partition, in seconds (GPU_END's `fft_ms=..;..;cpu_ms=..`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct ProverSteps {
    fft: f64,
    msm_g1: f64,
    msm_g2: f64,
    cpu_tail: f64,
}

impl ProverSteps {
    fn parse(detail: &str) -> Option<ProverSteps> {
        let seconds = |key: &str| -> Option<f64> {
            let ms: f64 = detail_value(detail, key)?.parse().ok()?;
            ms.is_finite().then_some(ms / 1000.0)
        };
        Some(ProverSteps {
            fft: seconds("fft_ms")?,
            msm_g1: seconds("msm_g1_ms")?,
            msm_g2: seconds("msm_g2_ms")?,
            cpu_tail: seconds("cpu_ms")?,
        })
    }
}

/// The value of `key` in a `key=value;key=value` detail.
fn detail_value<'d>(detail: &'d str, key: &str) -> Option<&'d str> {
    detail.split(';').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        (k.trim() == key).then_some(v.trim())
    })
}

/// What one job went through.
#[derive(Clone, Debug)]
struct JobSpans {
    name: String,
    /// Its first event, standing in for CLAIM when the claim row was lost.
    first_seen: f64,
    claim: Option<f64>,
    /// Partitions according to PARSED.
    declared_partitions: Option<usize>,
    partitions: BTreeMap<usize, PartitionSpans>,
    verify_start: Option<f64>,
    verify_end: Option<f64>,
    done: Option<f64>,
    /// When and why it failed.
    failed: Option<(f64, String)>,
}

impl JobSpans {
    fn new(name: &str, first_seen: f64) -> JobSpans {
        JobSpans {
            name: name.to_owned(),
            first_seen,
            claim: None,
            declared_partitions: None,
            partitions: BTreeMap::new(),
            verify_start: None,
            verify_end: None,
            done: None,
            failed: None,
        }
    }

    fn start(&self) -> f64 {
        self.claim.unwrap_or(self.first_seen)
    }

    /// When the job finished (DONE, else FAILED), if it did.
    fn finish(&self) -> Option<f64> {
        self.done.or(self.failed.as_ref().map(|(t, _)| *t))
    }

    /// When its last partition finished synthesis, once all of them have.
    fn synthesis_done(&self) -> Option<f64> {
        let known = self.partitions.len();
        if known == 0 || known < self.declared_partitions.unwrap_or(0) {
            return None;
        }
        self.partitions
            .values()
            .map(|p| p.synth_end)
            .try_fold(f64::NEG_INFINITY, |last, end| Some(last.max(end?)))
    }

    /// When writing the proof began: VERIFY_END, or the last GPU_END when nothing verified.
    fn write_start(&self) -> Option<f64> {
        if self.verify_end.is_some() || self.verify_start.is_some() {
            return self.verify_end;
        }
        if self.partitions.is_empty() {
            return None;
        }
        self.partitions
            .values()
            .map(|p| p.gpu_end)
            .try_fold(f64::NEG_INFINITY, |last, end| Some(last.max(end?)))
    }

    fn outcome(&self) -> Outcome {
        match (&self.done, &self.failed) {
            (Some(_), _) => Outcome::Proved,
            (None, Some((at, reason))) => Outcome::Failed {
                at_s: *at,
                reason: reason.clone(),
            },
            (None, None) => Outcome::Unfinished,
        }
    }

    /// Records one of the job's events; events arrive in time order.
    fn apply(&mut self, event: &Event<'_>, workers: &mut Workers) {
        let (t, row) = (event.t, event.row);
        let first = |slot: &mut Option<f64>| {
            slot.get_or_insert(t);
        };
        let partition = row.partition.unwrap_or_default();
        match event.name {
            EventName::Claim => first(&mut self.claim),
            EventName::Parsed => {
                self.declared_partitions =
                    detail_value(&row.detail, "partitions").and_then(|p| p.parse().ok());
            }
            EventName::SynthStart => {
                first(&mut self.part(partition).synth_start);
                workers.note_synthesis(&row.worker);
            }
            EventName::SynthEnd => {
                first(&mut self.part(partition).synth_end);
                workers.note_synthesis(&row.worker);
            }
            EventName::ChanSend => first(&mut self.part(partition).chan_send),
            EventName::Pickup => {
                let part = self.part(partition);
                first(&mut part.pickup);
                workers.note_lane(part, &row.worker);
            }
            EventName::GpuStart => {
                let part = self.part(partition);
                first(&mut part.gpu_start);
                workers.note_lane(part, &row.worker);
            }
            EventName::GpuEnd => {
                let part = self.part(partition);
                first(&mut part.gpu_end);
                workers.note_lane(part, &row.worker);
                if part.steps.is_none() {
                    part.steps = ProverSteps::parse(&row.detail);
                }
            }
            EventName::VerifyStart => first(&mut self.verify_start),
            EventName::VerifyEnd => first(&mut self.verify_end),
            EventName::Done => first(&mut self.done),
            EventName::Failed => {
                self.failed.get_or_insert_with(|| (t, row.detail.clone()));
            }
            // Run-level events never reach a job; see `RunSpans::from_events`.
            EventName::RunStart
            | EventName::RunEnd
            | EventName::ParamsGen
            | EventName::ParamsStart
            | EventName::ParamsEnd
            | EventName::Deferred => {}
        }
    }

    fn part(&mut self, partition: usize) -> &mut PartitionSpans {
        self.partitions.entry(partition).or_default()
    }
}

/// The workers seen in a run.
#[derive(Clone, Debug, Default)]
struct Workers {
    synthesis: BTreeSet<String>,
    lanes: BTreeSet<String>,
}

impl Workers {
    fn note_synthesis(&mut self, worker: &str) {
        if !worker.is_empty() && !self.synthesis.contains(worker) {
            self.synthesis.insert(worker.to_owned());
        }
    }

    fn note_lane(&mut self, part: &mut PartitionSpans, worker: &str) {
        if worker.is_empty() {
            return;
        }
        part.lane.get_or_insert_with(|| worker.to_owned());
        if !self.lanes.contains(worker) {
            self.lanes.insert(worker.to_owned());
        }
    }
}

/// One run folded into spans.
#[derive(Clone, Debug)]
struct RunSpans {
    id: String,
    /// The first and last event of the run: its time axis.
    first_t: f64,
    last_t: f64,
    /// Jobs in order of their start.
    jobs: Vec<JobSpans>,
    workers: Workers,
    /// Parameter loading per lane.
    params: BTreeMap<String, Vec<(f64, f64)>>,
    /// Files left in the inbox as incomplete and never claimed in this run.
    deferred: BTreeSet<String>,
}

/// Parameter loads ahead of the provers are recorded under the worker `params`, which is
/// not a prover lane and must not count as an idle one.
fn is_prover_lane(worker: &str) -> bool {
    worker != "params"
}

impl RunSpans {
    fn from_events(id: &str, events: &[Event<'_>]) -> RunSpans {
        let mut jobs: Vec<JobSpans> = Vec::new();
        let mut job_index: HashMap<&str, usize> = HashMap::new();
        let mut workers = Workers::default();
        let mut params: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
        let mut loading: HashMap<&str, f64> = HashMap::new();
        let mut deferred = BTreeSet::new();
        for event in events {
            let row = event.row;
            match event.name {
                EventName::RunStart | EventName::RunEnd | EventName::ParamsGen => {}
                EventName::ParamsStart => {
                    if is_prover_lane(&row.worker) {
                        workers.lanes.insert(row.worker.clone());
                    }
                    loading.entry(row.worker.as_str()).or_insert(event.t);
                }
                EventName::ParamsEnd => {
                    if is_prover_lane(&row.worker) {
                        workers.lanes.insert(row.worker.clone());
                    }
                    if let Some(start) = loading.remove(row.worker.as_str()) {
                        params
                            .entry(row.worker.clone())
                            .or_default()
                            .push((start, event.t));
                    }
                }
                EventName::Deferred => {
                    deferred.insert(row.job.clone());
                }
                _ => {
                    let index = *job_index.entry(row.job.as_str()).or_insert_with(|| {
                        jobs.push(JobSpans::new(&row.job, event.t));
                        jobs.len() - 1
                    });
                    jobs[index].apply(event, &mut workers);
                }
            }
        }
        let first_t = events.first().map_or(0.0, |e| e.t);
        let last_t = events.last().map_or(first_t, |e| e.t);
        // A load still running when the timeline ends ran until then.
        for (lane, start) in loading {
            params
                .entry(lane.to_owned())
                .or_default()
                .push((start, last_t));
        }
        deferred.retain(|job: &String| !job_index.contains_key(job.as_str()));
        jobs.sort_by(|a, b| {
            a.start()
                .total_cmp(&b.start())
                .then_with(|| a.name.cmp(&b.name))
        });
        RunSpans {
            id: id.to_owned(),
            first_t,
            last_t,
            jobs,
            workers,
            params,
            deferred,
        }
    }

    /// When `job` stopped occupying the pipeline; an unfinished job runs to the timeline's end.
    fn job_end(&self, job: &JobSpans) -> f64 {
        job.finish().unwrap_or(self.last_t).max(job.start())
    }

    /// First CLAIM to last DONE/FAILED. A job that never finished (the run was stopped or the
    /// timeline torn) keeps the span open to the last event; no job at all gives the axis.
    fn span(&self) -> (f64, f64) {
        if self.jobs.is_empty() {
            return (self.first_t, self.last_t);
        }
        let start = self
            .jobs
            .iter()
            .map(JobSpans::start)
            .fold(f64::INFINITY, f64::min);
        let end = self
            .jobs
            .iter()
            .map(|job| self.job_end(job))
            .fold(start, f64::max);
        (start, end)
    }

    /// Lane names in natural order (`gpu-2` before `gpu-10`).
    fn lanes(&self) -> Vec<&str> {
        let mut lanes: Vec<&str> = self.workers.lanes.iter().map(String::as_str).collect();
        lanes.sort_by_key(|lane| natural_key(lane));
        lanes
    }
}

/// Sorts `gpu-10` after `gpu-2`.
fn natural_key(name: &str) -> (String, u64) {
    let digits = name.len() - name.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let (prefix, number) = name.split_at(name.len() - digits);
    (prefix.to_owned(), number.parse().unwrap_or(0))
}

// ---------------------------------------------------------------------------------------------
// Metrics: everything the drawings show, computed once.

/// What a row or a lane was doing; each has a glyph in ASCII and a colour in SVG.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
enum Stage {
    Queue,
    Synthesis,
    Channel,
    Prove,
    Verify,
    Write,
    Params,
    Idle,
}

impl Stage {
    const ALL: [Stage; 8] = [
        Stage::Queue,
        Stage::Synthesis,
        Stage::Channel,
        Stage::Prove,
        Stage::Verify,
        Stage::Write,
        Stage::Params,
        Stage::Idle,
    ];
    const JOB: [Stage; 6] = [
        Stage::Queue,
        Stage::Synthesis,
        Stage::Channel,
        Stage::Prove,
        Stage::Verify,
        Stage::Write,
    ];
    const LANE: [Stage; 3] = [Stage::Prove, Stage::Params, Stage::Idle];

    fn glyph(self) -> char {
        match self {
            Stage::Queue => '.',
            Stage::Synthesis => 'S',
            Stage::Channel => '~',
            Stage::Prove => 'G',
            Stage::Verify => 'V',
            Stage::Write => 'W',
            Stage::Params => 'P',
            Stage::Idle => '-',
        }
    }

    fn colour(self) -> &'static str {
        match self {
            Stage::Queue => "#c7c7c7",
            Stage::Synthesis => "#4e79a7",
            Stage::Channel => "#f28e2b",
            Stage::Prove => "#59a14f",
            Stage::Verify => "#b07aa1",
            Stage::Write => "#9c755f",
            Stage::Params => "#edc948",
            Stage::Idle => "#eeeeee",
        }
    }

    fn legend(self) -> &'static str {
        match self {
            Stage::Queue => "queue wait",
            Stage::Synthesis => "synthesis",
            Stage::Channel => "channel wait",
            Stage::Prove => "proving",
            Stage::Verify => "verify",
            Stage::Write => "write",
            Stage::Params => "loading params",
            Stage::Idle => "idle",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// The glyph and colour of a failure.
const FAILED_GLYPH: char = 'X';
const FAILED_COLOUR: &str = "#e15759";

/// A stretch of time in one stage.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
struct Segment {
    start_s: f64,
    end_s: f64,
    stage: Stage,
}

/// How a job ended.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
enum Outcome {
    Proved,
    Failed { at_s: f64, reason: String },
    Unfinished,
}

/// Seconds a row spent in each phase, and its total (they add up).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
struct Phases {
    queue_s: f64,
    synthesis_s: f64,
    channel_s: f64,
    prove_s: f64,
    verify_s: f64,
    write_s: f64,
    total_s: f64,
}

impl Phases {
    const HEADINGS: [&'static str; 7] = [
        "queue", "synth", "chan", "prove", "verify", "write", "total",
    ];

    fn from_segments(segments: &[Segment], start: f64, end: f64) -> Phases {
        let mut phases = Phases {
            total_s: end - start,
            ..Phases::default()
        };
        for segment in segments {
            let length = segment.end_s - segment.start_s;
            match segment.stage {
                Stage::Queue => phases.queue_s += length,
                Stage::Synthesis => phases.synthesis_s += length,
                Stage::Channel => phases.channel_s += length,
                Stage::Prove => phases.prove_s += length,
                Stage::Verify => phases.verify_s += length,
                Stage::Write => phases.write_s += length,
                Stage::Params | Stage::Idle => {}
            }
        }
        phases
    }

    fn columns(&self) -> [f64; 7] {
        [
            self.queue_s,
            self.synthesis_s,
            self.channel_s,
            self.prove_s,
            self.verify_s,
            self.write_s,
            self.total_s,
        ]
    }

    fn from_columns(c: [f64; 7]) -> Phases {
        Phases {
            queue_s: c[0],
            synthesis_s: c[1],
            channel_s: c[2],
            prove_s: c[3],
            verify_s: c[4],
            write_s: c[5],
            total_s: c[6],
        }
    }
}

/// One row of the waterfall and the table: a job, or one partition of it.
#[derive(Clone, Debug, Serialize)]
struct RowMetrics {
    label: String,
    job: String,
    partition: Option<usize>,
    outcome: Outcome,
    start_s: f64,
    end_s: f64,
    phases: Phases,
    #[serde(skip)]
    segments: Vec<Segment>,
}

/// Per-column min, average and max over the proved rows.
#[derive(Clone, Debug, Serialize)]
struct PhaseSummary {
    rows: usize,
    min: Phases,
    avg: Phases,
    max: Phases,
}

/// What an idle lane was waiting for; see the module docs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
enum IdleCause {
    Scheduling,
    Synthesis,
    Drain,
    Input,
}

impl IdleCause {
    fn describe(self) -> &'static str {
        match self {
            IdleCause::Scheduling => "scheduling: a synthesized partition was queued",
            IdleCause::Synthesis => "waiting for synthesis",
            IdleCause::Drain => "drain: nothing left to prove",
            IdleCause::Input => "input: no job in flight",
        }
    }
}

/// One idle stretch of a lane at least `--gap-ms` long.
#[derive(Clone, Debug, PartialEq, Serialize)]
struct Gap {
    start_s: f64,
    end_s: f64,
    length_s: f64,
    waiting_for: IdleCause,
}

/// A lane's idle seconds by cause.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
struct IdleTimes {
    scheduling_s: f64,
    synthesis_s: f64,
    drain_s: f64,
    input_s: f64,
}

/// Where a lane's proving time went, from the prover's own step timings. The timeline's
/// "busy" overstates kernel time: the CPU tail and host-side work happen inside it too.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
struct StepSplit {
    /// Partitions whose GPU_END carried step timings.
    partitions: usize,
    /// Their GPU_START to GPU_END time.
    prove_s: f64,
    fft_s: f64,
    msm_g1_s: f64,
    msm_g2_s: f64,
    /// FFT and multiexps: the kernel side.
    kernel_s: f64,
    /// Scalar conversions and the final combination on the CPU.
    cpu_tail_s: f64,
    /// The rest of `prove_s`: host-side preparation, transfers, waiting for the device.
    other_s: f64,
}

/// One prover lane (`gpu-0`, `cpu-0`, ...).
#[derive(Clone, Debug, Serialize)]
struct LaneMetrics {
    name: String,
    /// Partitions it finished proving.
    partitions: usize,
    busy_s: f64,
    /// `busy_s` over the span.
    busy_fraction: f64,
    params_s: f64,
    idle: IdleTimes,
    gaps: Vec<Gap>,
    steps: Option<StepSplit>,
    #[serde(skip)]
    proving: Intervals,
    #[serde(skip)]
    loading: Intervals,
    #[serde(skip)]
    idle_spans: Intervals,
}

/// The channel between synthesis and the provers.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
struct QueueMetrics {
    /// Time with at least one partition queued.
    queued_s: f64,
    queued_fraction: f64,
    /// Queue time summed over partitions (can exceed the span).
    partition_wait_s: f64,
    /// Time with a partition queued while every lane was busy or loading parameters.
    prover_bound_s: f64,
    prover_bound_fraction: f64,
}

/// What a throughput figure was measured over.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
enum Basis {
    /// First GPU_END to last GPU_END.
    SteadyState {
        from_s: f64,
        to_s: f64,
        /// GPU_ENDs in the window after the first.
        partitions: usize,
        partitions_per_proof: f64,
    },
    /// The span, over fewer than two proofs.
    WholeRun { proofs: usize },
}

/// Proof throughput.
#[derive(Clone, Debug, PartialEq, Serialize)]
struct Throughput {
    seconds_per_proof: f64,
    proofs_per_hour: f64,
    basis: Basis,
}

/// The stage that held the run back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
enum Bound {
    Prover,
    Synthesis,
    Scheduling,
    Balanced,
    NoProver,
}

/// The one-line conclusion.
#[derive(Clone, Debug, PartialEq, Serialize)]
struct Verdict {
    bound: Bound,
    text: String,
}

/// Everything reported about one run.
#[derive(Clone, Debug, Serialize)]
struct RunMetrics {
    run_id: String,
    /// Its place among the file's runs, from 1.
    position: usize,
    runs_in_file: usize,
    /// The time axis: the run's first and last event.
    start_s: f64,
    end_s: f64,
    wall_s: f64,
    span_start_s: f64,
    span_end_s: f64,
    span_s: f64,
    jobs: usize,
    proved: usize,
    failed: usize,
    unfinished: usize,
    deferred: usize,
    synthesis_workers: Vec<String>,
    gap_threshold_s: f64,
    rows: Vec<RowMetrics>,
    summary: Option<PhaseSummary>,
    throughput: Option<Throughput>,
    queue: QueueMetrics,
    lanes: Vec<LaneMetrics>,
    verdict: Verdict,
}

impl RunMetrics {
    fn compute(
        spans: &RunSpans,
        options: &Options,
        position: usize,
        runs_in_file: usize,
    ) -> RunMetrics {
        let (span_start, span_end) = spans.span();
        let window = Intervals::window(span_start, span_end);
        let span_s = span_end - span_start;
        let waits = WaitSets::new(spans);
        let lanes: Vec<LaneMetrics> = spans
            .lanes()
            .into_iter()
            .map(|lane| lane_metrics(lane, spans, &window, &waits, options.gap_s))
            .collect();
        let queue = queue_metrics(&lanes, &window, &waits);
        let rows = rows(spans, options.per_partition);
        let count = |wanted: fn(&Outcome) -> bool| {
            spans.jobs.iter().filter(|j| wanted(&j.outcome())).count()
        };
        let proved = count(|o| *o == Outcome::Proved);
        let synthesis_workers: Vec<String> = spans.workers.synthesis.iter().cloned().collect();
        let verdict = verdict(&lanes, &queue, span_s, synthesis_workers.len());
        RunMetrics {
            run_id: spans.id.clone(),
            position,
            runs_in_file,
            start_s: spans.first_t,
            end_s: spans.last_t,
            wall_s: spans.last_t - spans.first_t,
            span_start_s: span_start,
            span_end_s: span_end,
            span_s,
            jobs: spans.jobs.len(),
            proved,
            failed: count(|o| matches!(o, Outcome::Failed { .. })),
            unfinished: count(|o| *o == Outcome::Unfinished),
            deferred: spans.deferred.len(),
            synthesis_workers,
            gap_threshold_s: options.gap_s,
            summary: summarize(&rows),
            rows,
            throughput: throughput(spans, span_s, proved),
            queue,
            lanes,
            verdict,
        }
    }
}

/// The waterfall rows: one per job, or one per partition.
fn rows(spans: &RunSpans, per_partition: bool) -> Vec<RowMetrics> {
    let mut rows = Vec::with_capacity(spans.jobs.len());
    for job in &spans.jobs {
        let end = spans.job_end(job);
        let row = |label: String, partition: Option<usize>, parts: &[&PartitionSpans]| {
            let segments = row_segments(job, parts, end);
            RowMetrics {
                label,
                job: job.name.clone(),
                partition,
                outcome: job.outcome(),
                start_s: job.start(),
                end_s: end,
                phases: Phases::from_segments(&segments, job.start(), end),
                segments,
            }
        };
        if per_partition && !job.partitions.is_empty() {
            for (&index, part) in &job.partitions {
                rows.push(row(format!("{} p{index}", job.name), Some(index), &[part]));
            }
        } else {
            let parts: Vec<&PartitionSpans> = job.partitions.values().collect();
            rows.push(row(job.name.clone(), None, &parts));
        }
    }
    rows
}

/// Splits a row's life, start to `end`, into stages. The stage only changes at one of the
/// row's event times, so it is evaluated once between each pair of consecutive ones.
fn row_segments(job: &JobSpans, parts: &[&PartitionSpans], end: f64) -> Vec<Segment> {
    let start = job.start();
    let write_start = job.write_start();
    let mut cuts = vec![start, end];
    cuts.extend(
        [job.verify_start, job.verify_end, write_start, job.done]
            .iter()
            .flatten(),
    );
    for part in parts {
        cuts.extend(
            [
                part.synth_start,
                part.synth_end,
                part.gpu_start,
                part.gpu_end,
            ]
            .iter()
            .flatten(),
        );
    }
    cuts.retain(|&t| t >= start && t <= end);
    cuts.sort_by(f64::total_cmp);
    cuts.dedup();
    let mut segments: Vec<Segment> = Vec::new();
    for pair in cuts.windows(2) {
        let (from, to) = (pair[0], pair[1]);
        let stage = stage_at(job, parts, write_start, (from + to) / 2.0);
        match segments.last_mut() {
            Some(last) if last.stage == stage => last.end_s = to,
            _ => segments.push(Segment {
                start_s: from,
                end_s: to,
                stage,
            }),
        }
    }
    segments
}

/// The most advanced stage of the row at `t`.
fn stage_at(job: &JobSpans, parts: &[&PartitionSpans], write_start: Option<f64>, t: f64) -> Stage {
    let after = |time: Option<f64>| time.is_some_and(|time| time <= t);
    // An interval with no end yet is still open.
    let within = |from: Option<f64>, to: Option<f64>| after(from) && to.is_none_or(|to| t < to);
    if after(write_start) {
        Stage::Write
    } else if after(job.verify_start) {
        Stage::Verify
    } else if parts.iter().any(|p| within(p.gpu_start, p.gpu_end)) {
        Stage::Prove
    } else if parts.iter().any(|p| within(p.synth_start, p.synth_end)) {
        Stage::Synthesis
    } else if parts.iter().any(|p| within(p.synth_end, p.gpu_start)) {
        Stage::Channel
    } else {
        Stage::Queue
    }
}

/// Min, average and max of each column over the rows whose job was proved.
fn summarize(rows: &[RowMetrics]) -> Option<PhaseSummary> {
    let proved: Vec<[f64; 7]> = rows
        .iter()
        .filter(|r| r.outcome == Outcome::Proved)
        .map(|r| r.phases.columns())
        .collect();
    let first = *proved.first()?;
    let (mut min, mut max, mut sum) = (first, first, [0.0; 7]);
    for columns in &proved {
        for i in 0..7 {
            min[i] = min[i].min(columns[i]);
            max[i] = max[i].max(columns[i]);
            sum[i] += columns[i];
        }
    }
    Some(PhaseSummary {
        rows: proved.len(),
        min: Phases::from_columns(min),
        avg: Phases::from_columns(sum.map(|s| s / proved.len() as f64)),
        max: Phases::from_columns(max),
    })
}

/// The run-wide sets that say what an idle lane was waiting for.
struct WaitSets {
    /// At least one partition synthesized and not yet picked up.
    queued: Intervals,
    /// Queue time summed over partitions.
    queued_sum: f64,
    /// A job in flight still had partitions to synthesize (claim to its last SYNTH_END).
    pending_synthesis: Intervals,
    /// A job was in flight (claim to DONE/FAILED).
    in_flight: Intervals,
}

impl WaitSets {
    fn new(spans: &RunSpans) -> WaitSets {
        let (mut queued, mut pending, mut in_flight) = (Vec::new(), Vec::new(), Vec::new());
        for job in &spans.jobs {
            let end = spans.job_end(job);
            in_flight.push((job.start(), end));
            pending.push((job.start(), job.synthesis_done().unwrap_or(end)));
            for part in job.partitions.values() {
                if let Some(from) = part.synth_end.or(part.chan_send) {
                    queued.push((from, part.pickup.or(part.gpu_start).unwrap_or(end)));
                }
            }
        }
        WaitSets {
            queued_sum: sum(queued.iter().map(|(a, b)| (b - a).max(0.0))),
            queued: Intervals::new(queued),
            pending_synthesis: Intervals::new(pending),
            in_flight: Intervals::new(in_flight),
        }
    }
}

/// Busy time, idle time by cause, gaps and the step split of one lane over the span.
fn lane_metrics(
    name: &str,
    spans: &RunSpans,
    window: &Intervals,
    waits: &WaitSets,
    gap_s: f64,
) -> LaneMetrics {
    let mut proving = Vec::new();
    let mut partitions = 0;
    let mut steps = StepSplit::default();
    for job in &spans.jobs {
        let end = spans.job_end(job);
        for part in job.partitions.values() {
            if part.lane.as_deref() != Some(name) {
                continue;
            }
            let Some(start) = part.gpu_start else {
                continue;
            };
            // A partition still proving when the timeline ends was busy until then.
            proving.push((start, part.gpu_end.unwrap_or(end)));
            let Some(stop) = part.gpu_end else { continue };
            partitions += 1;
            if let Some(s) = part.steps {
                steps.partitions += 1;
                steps.prove_s += stop - start;
                steps.fft_s += s.fft;
                steps.msm_g1_s += s.msm_g1;
                steps.msm_g2_s += s.msm_g2;
                steps.cpu_tail_s += s.cpu_tail;
            }
        }
    }
    steps.kernel_s = steps.fft_s + steps.msm_g1_s + steps.msm_g2_s;
    steps.other_s = (steps.prove_s - steps.kernel_s - steps.cpu_tail_s).max(0.0);

    let proving = Intervals::new(proving).intersect(window);
    let loaded = spans.params.get(name).into_iter().flatten().copied();
    let loading = Intervals::new(loaded).intersect(window).subtract(&proving);
    let idle_spans = window.subtract(&proving.union(&loading));
    // Each idle moment gets the first cause that fits: a queued partition says the lane
    // should have been proving whatever else was going on.
    let scheduling = idle_spans.intersect(&waits.queued);
    let rest = idle_spans.subtract(&waits.queued);
    let synthesis = rest.intersect(&waits.pending_synthesis);
    let rest = rest.subtract(&waits.pending_synthesis);
    let drain = rest.intersect(&waits.in_flight);
    let input = rest.subtract(&waits.in_flight);
    let by_cause = [
        (&scheduling, IdleCause::Scheduling),
        (&synthesis, IdleCause::Synthesis),
        (&drain, IdleCause::Drain),
        (&input, IdleCause::Input),
    ];
    // The causes are disjoint and each set is merged, so each interval is a maximal stretch
    // of idle time with one cause.
    let mut gaps: Vec<Gap> = by_cause
        .iter()
        .flat_map(|(set, cause)| set.spans().iter().map(move |&span| (span, *cause)))
        .filter(|((start, end), _)| end - start >= gap_s)
        .map(|((start, end), cause)| Gap {
            start_s: start,
            end_s: end,
            length_s: end - start,
            waiting_for: cause,
        })
        .collect();
    gaps.sort_by(|a, b| a.start_s.total_cmp(&b.start_s));
    let busy_s = proving.total();
    LaneMetrics {
        name: name.to_owned(),
        partitions,
        busy_s,
        busy_fraction: ratio(busy_s, window.total()),
        params_s: loading.total(),
        idle: IdleTimes {
            scheduling_s: scheduling.total(),
            synthesis_s: synthesis.total(),
            drain_s: drain.total(),
            input_s: input.total(),
        },
        gaps,
        steps: (steps.partitions > 0).then_some(steps),
        proving,
        loading,
        idle_spans,
    }
}

fn queue_metrics(lanes: &[LaneMetrics], window: &Intervals, waits: &WaitSets) -> QueueMetrics {
    let queued = waits.queued.intersect(window);
    let every_lane_occupied = lanes
        .iter()
        .map(|lane| lane.proving.union(&lane.loading))
        .reduce(|all, lane| all.intersect(&lane))
        .unwrap_or_default();
    let prover_bound_s = queued.intersect(&every_lane_occupied).total();
    QueueMetrics {
        queued_s: queued.total(),
        queued_fraction: ratio(queued.total(), window.total()),
        partition_wait_s: waits.queued_sum,
        prover_bound_s,
        prover_bound_fraction: ratio(prover_bound_s, window.total()),
    }
}

/// Proof throughput over the steady state.
///
/// The steady-state window runs from the first GPU_END to the last GPU_END of the run. It
/// leaves out the first fill (nothing can finish before the first partition is synthesized
/// and proved) and the final drain (verifying and writing the last proofs), which a longer
/// run would amortize; what remains is the rate the pipeline sustains. Partition proofs
/// completed in the window are the GPU_ENDs after the first one; with `k` partitions per proof
/// on average (GPU_ENDs over the jobs that had one), seconds per proof is
/// `window / (GPU_ENDs - 1) * k`.
///
/// With fewer than two jobs reaching the prover there is no window to speak of, so the
/// figure falls back to the whole span over the proofs written.
fn throughput(spans: &RunSpans, span_s: f64, proved: usize) -> Option<Throughput> {
    let mut ends = Vec::new();
    let mut jobs_proved = 0;
    for job in &spans.jobs {
        let before = ends.len();
        ends.extend(job.partitions.values().filter_map(|p| p.gpu_end));
        jobs_proved += usize::from(ends.len() > before);
    }
    ends.sort_by(f64::total_cmp);
    if let (true, Some(&from), Some(&to)) = (jobs_proved >= 2, ends.first(), ends.last()) {
        if to > from {
            let partitions_per_proof = ends.len() as f64 / jobs_proved as f64;
            let seconds_per_proof = (to - from) / (ends.len() - 1) as f64 * partitions_per_proof;
            return Some(Throughput {
                seconds_per_proof,
                proofs_per_hour: 3600.0 / seconds_per_proof,
                basis: Basis::SteadyState {
                    from_s: from,
                    to_s: to,
                    partitions: ends.len() - 1,
                    partitions_per_proof,
                },
            });
        }
    }
    if proved == 0 || span_s <= 0.0 {
        return None;
    }
    let seconds_per_proof = span_s / proved as f64;
    Some(Throughput {
        seconds_per_proof,
        proofs_per_hour: 3600.0 / seconds_per_proof,
        basis: Basis::WholeRun { proofs: proved },
    })
}

/// Below this share of the span, no stage is said to hold the run back.
const BALANCED_BELOW: f64 = 0.05;

/// Names the stage that held the run back, by how much, and what to change.
///
/// Three candidates are weighed in seconds: prover-bound time (partitions queued while every
/// lane was occupied), the lanes' average idle time waiting for synthesis, and the worst
/// lane's idle time with a partition queued (scheduling).
fn verdict(
    lanes: &[LaneMetrics],
    queue: &QueueMetrics,
    span_s: f64,
    synth_workers: usize,
) -> Verdict {
    if lanes.iter().all(|lane| lane.busy_s == 0.0) {
        return Verdict {
            bound: Bound::NoProver,
            text: "no partition reached a prover in this run, so nothing bounds it yet".into(),
        };
    }
    let names: Vec<&str> = lanes.iter().map(|lane| lane.name.as_str()).collect();
    let names = names.join(", ");
    let count = lanes.len() as f64;
    let busy = sum(lanes.iter().map(|lane| lane.busy_fraction)) / count;
    let synthesis_wait = sum(lanes.iter().map(|lane| lane.idle.synthesis_s)) / count;
    let worst_scheduling = lanes
        .iter()
        .max_by(|a, b| a.idle.scheduling_s.total_cmp(&b.idle.scheduling_s));
    let scheduling = worst_scheduling.map_or(0.0, |lane| lane.idle.scheduling_s);
    let candidates = [
        (Bound::Prover, queue.prover_bound_s),
        (Bound::Synthesis, synthesis_wait),
        (Bound::Scheduling, scheduling),
    ];
    let (bound, seconds) =
        candidates.into_iter().fold(
            (Bound::Balanced, 0.0),
            |best, c| if c.1 > best.1 { c } else { best },
        );
    let bound = if ratio(seconds, span_s) < BALANCED_BELOW {
        Bound::Balanced
    } else {
        bound
    };
    let pct = |fraction: f64| format!("{:.0}%", fraction * 100.0);
    let average = if lanes.len() > 1 { " on average" } else { "" };
    let text = match bound {
        Bound::Prover => {
            let on_gpus = lanes.iter().all(|lane| lane.name.starts_with("gpu"));
            let (kind, advice) = if on_gpus {
                (
                    "GPU-bound",
                    "add GPUs, or lower --synth-jobs to save memory",
                )
            } else {
                (
                    "prover-bound",
                    "prove on GPUs (a build with --features cuda), or lower --synth-jobs to \
                     save memory",
                )
            };
            format!(
                "{kind}: partitions waited {:.1} s in the queue ({} of the run) while {names} \
                 {} {} busy{average}; {advice}",
                queue.queued_s,
                pct(queue.queued_fraction),
                if lanes.len() > 1 { "were" } else { "was" },
                pct(busy)
            )
        }
        Bound::Synthesis => format!(
            "synthesis-bound: {names} idle {} of the run{average} waiting for synthesis; \
             raise --synth-jobs (now using {})",
            pct(ratio(synthesis_wait, span_s)),
            plural(synth_workers, "worker")
        ),
        Bound::Scheduling => format!(
            "scheduling: {} sat idle {:.1} s ({} of the run) while a synthesized partition \
             waited in the queue; the prover is slow to take work, look at parameter loading \
             and the prover loop",
            worst_scheduling.map_or("a lane", |lane| lane.name.as_str()),
            scheduling,
            pct(ratio(scheduling, span_s))
        ),
        Bound::Balanced | Bound::NoProver => format!(
            "balanced: {names} {} busy{average}, partitions queued {} of the run; neither \
             synthesis nor proving held the other back for more than {} of it",
            pct(busy),
            pct(queue.queued_fraction),
            pct(BALANCED_BELOW)
        ),
    };
    Verdict { bound, text }
}

/// `part / whole`, or 0 when there is no whole.
fn ratio(part: f64, whole: f64) -> f64 {
    if whole > 0.0 {
        part / whole
    } else {
        0.0
    }
}

/// A sum from +0.0 (`Sum` for floats starts from -0.0, which prints as "-0.00").
fn sum(values: impl IntoIterator<Item = f64>) -> f64 {
    values.into_iter().fold(0.0, |sum, v| sum + v)
}

fn plural(count: usize, word: &str) -> String {
    format!("{count} {word}{}", if count == 1 { "" } else { "s" })
}

// ---------------------------------------------------------------------------------------------
// JSON.

/// The metrics of the chosen runs as pretty-printed JSON.
fn render_json(timeline: &str, analysis: &Analysis) -> Result<String> {
    #[derive(Serialize)]
    struct Report<'a> {
        timeline: &'a str,
        runs_in_file: &'a [String],
        warnings: &'a [String],
        runs: &'a [RunMetrics],
    }
    let report = Report {
        timeline,
        runs_in_file: &analysis.runs_in_file,
        warnings: &analysis.warnings,
        runs: &analysis.runs,
    };
    let mut text = serde_json::to_string_pretty(&report).context("encoding metrics as JSON")?;
    text.push('\n');
    Ok(text)
}

// ---------------------------------------------------------------------------------------------
// ASCII.

/// Maps times onto `cols` character columns.
struct Scale {
    start: f64,
    length: f64,
    cols: usize,
}

impl Scale {
    fn new(start: f64, end: f64, cols: usize) -> Scale {
        Scale {
            start,
            // A run whose events all share one instant still needs an axis.
            length: if end > start { end - start } else { 1e-3 },
            cols: cols.max(1),
        }
    }

    fn col(&self, t: f64) -> usize {
        let x = ((t - self.start) / self.length * self.cols as f64).floor();
        if x.is_nan() || x < 0.0 {
            0
        } else {
            (x as usize).min(self.cols - 1)
        }
    }

    /// The time a column covers; the outer columns reach to infinity so nothing falls off.
    fn bounds(&self, col: usize) -> (f64, f64) {
        let at = |c: usize| self.start + self.length * c as f64 / self.cols as f64;
        let lo = if col == 0 { f64::NEG_INFINITY } else { at(col) };
        let hi = if col + 1 >= self.cols {
            f64::INFINITY
        } else {
            at(col + 1)
        };
        (lo, hi)
    }
}

/// Draws segments into columns: each column shows the stage covering most of it, so the
/// picture stays proportional; a column that nothing covers is blank.
fn paint(scale: &Scale, segments: impl IntoIterator<Item = (f64, f64, Stage)>) -> Vec<char> {
    let mut cover = vec![[0.0_f64; Stage::ALL.len()]; scale.cols];
    for (start, end, stage) in segments {
        if end <= start {
            continue;
        }
        for (col, cell) in cover
            .iter_mut()
            .enumerate()
            .take(scale.col(end) + 1)
            .skip(scale.col(start))
        {
            let (lo, hi) = scale.bounds(col);
            let overlap = end.min(hi) - start.max(lo);
            if overlap > 0.0 {
                cell[stage.index()] += overlap;
            }
        }
    }
    cover
        .iter()
        .map(|cell| {
            Stage::ALL
                .iter()
                .filter(|stage| cell[stage.index()] > 0.0)
                .max_by(|a, b| cell[a.index()].total_cmp(&cell[b.index()]))
                .map_or(' ', |stage| stage.glyph())
        })
        .collect()
}

/// Tick times every 1, 2 or 5 times a power of ten, at most `max_ticks` of them.
fn ticks(start: f64, end: f64, max_ticks: usize) -> (Vec<f64>, f64) {
    let length = if end > start { end - start } else { 1e-3 };
    let raw = length / max_ticks.max(1) as f64;
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|&step| step >= raw)
        .unwrap_or(10.0 * magnitude);
    let first = (start / step - 1e-9).ceil() as i64;
    let last = (end / step + 1e-9).floor() as i64;
    ((first..=last).map(|k| k as f64 * step).collect(), step)
}

/// `12s`, `1.5s`, `0.25s`: as many decimals as the tick step needs.
fn tick_label(t: f64, step: f64) -> String {
    let decimals = if step >= 1.0 {
        0
    } else {
        ((-step.log10()).ceil() as usize).min(6)
    };
    format!("{t:.decimals$}s")
}

/// `label` in exactly `width` characters: padded, or cut from the left (job names differ at
/// their end) behind `..`.
fn fit(label: &str, width: usize) -> String {
    let chars: Vec<char> = label.chars().collect();
    if chars.len() <= width {
        return format!("{label:<width$}");
    }
    if width < 3 {
        return chars[..width].iter().collect();
    }
    let tail: String = chars[chars.len() - (width - 2)..].iter().collect();
    format!("..{tail}")
}

/// `items` after `prefix`, two spaces apart, wrapped at `width` with a hanging indent.
fn wrap(prefix: &str, items: &[String], width: usize) -> Vec<String> {
    let indent = " ".repeat(prefix.chars().count());
    let mut lines = vec![prefix.to_owned()];
    let mut fresh = true;
    for item in items {
        let Some(line) = lines.last_mut() else { break };
        let needed = if fresh { 0 } else { 2 } + item.chars().count();
        if !fresh && line.chars().count() + needed > width {
            lines.push(format!("{indent}{item}"));
        } else {
            if !fresh {
                line.push_str("  ");
            }
            line.push_str(item);
        }
        fresh = false;
    }
    lines
}

/// Draws each run in turn, separated by a rule.
fn render_ascii(runs: &[RunMetrics], width: usize) -> String {
    let mut lines = Vec::new();
    for (i, run) in runs.iter().enumerate() {
        if i > 0 {
            lines.push(String::new());
            lines.push("=".repeat(width));
            lines.push(String::new());
        }
        ascii_header(run, &mut lines);
        lines.push(String::new());
        ascii_waterfall(run, width, &mut lines);
        lines.push(String::new());
        ascii_table(run, &mut lines);
        lines.push(String::new());
        ascii_throughput(run, &mut lines);
        lines.push(String::new());
        ascii_lanes(run, &mut lines);
        lines.push(format!("verdict: {}", run.verdict.text));
    }
    let mut text = lines.join("\n");
    text.push('\n');
    text
}

fn ascii_header(run: &RunMetrics, lines: &mut Vec<String>) {
    let mut counts = vec![
        plural(run.jobs, "job"),
        format!("{} proved", run.proved),
        format!("{} failed", run.failed),
    ];
    if run.unfinished > 0 {
        counts.push(format!("{} unfinished", run.unfinished));
    }
    if run.deferred > 0 {
        counts.push(format!("{} deferred", run.deferred));
    }
    lines.push(format!(
        "run {} ({} of {} in the file): {}; wall {:.2} s; {}",
        run.run_id,
        run.position,
        run.runs_in_file,
        counts.join(", "),
        run.wall_s,
        plural(run.synthesis_workers.len(), "synthesis worker"),
    ));
}

/// The picture: time axis, one bar per row, one per lane, and the legend. Every line of it
/// fits in `width` columns.
fn ascii_waterfall(run: &RunMetrics, width: usize, lines: &mut Vec<String>) {
    const LANES_HEADING: &str = "prover lanes";
    let longest = run
        .rows
        .iter()
        .map(|row| row.label.chars().count())
        .chain(run.lanes.iter().map(|lane| lane.name.chars().count()))
        .chain([LANES_HEADING.len()])
        .max()
        .unwrap_or(0);
    // Labels take at most a third of the line and always leave ten columns of bar.
    let label_w = longest
        .min((width / 3).max(4))
        .min(width.saturating_sub(13))
        .max(1);
    let cols = width.saturating_sub(label_w + 3).max(1);
    let scale = Scale::new(run.start_s, run.end_s, cols);

    let (tick_times, step) = ticks(run.start_s, run.end_s, (cols / 10).max(1));
    let mut marks = vec!['-'; cols];
    let mut labels = vec![' '; label_w + 2 + cols];
    let mut free_from = label_w + 2;
    for &t in &tick_times {
        let col = scale.col(t);
        marks[col] = '+';
        let text: Vec<char> = tick_label(t, step).chars().collect();
        let at = label_w + 2 + col;
        if at >= free_from && at + text.len() <= labels.len() {
            labels[at..at + text.len()].copy_from_slice(&text);
            free_from = at + text.len() + 1;
        }
    }
    let marks: String = marks.into_iter().collect();
    lines.push(labels.into_iter().collect::<String>().trim_end().to_owned());
    lines.push(format!("{} |{marks}|", fit("", label_w)));

    for row in &run.rows {
        let segments = row.segments.iter().map(|s| (s.start_s, s.end_s, s.stage));
        let mut bar = paint(&scale, segments);
        if let Outcome::Failed { at_s, .. } = row.outcome {
            bar[scale.col(at_s)] = FAILED_GLYPH;
        }
        let bar: String = bar.into_iter().collect();
        lines.push(format!("{} |{bar}|", fit(&row.label, label_w)));
    }

    lines.push(format!("{} |{marks}|", fit(LANES_HEADING, label_w)));
    for lane in &run.lanes {
        let stretches = [
            (&lane.proving, Stage::Prove),
            (&lane.loading, Stage::Params),
            (&lane.idle_spans, Stage::Idle),
        ];
        let segments = stretches
            .iter()
            .flat_map(|(set, stage)| set.spans().iter().map(move |&(a, b)| (a, b, *stage)));
        let bar: String = paint(&scale, segments).into_iter().collect();
        lines.push(format!("{} |{bar}|", fit(&lane.name, label_w)));
    }

    let legend = |stages: &[Stage]| -> Vec<String> {
        stages
            .iter()
            .map(|s| format!("{} {}", s.glyph(), s.legend()))
            .collect()
    };
    let mut jobs = legend(&Stage::JOB);
    jobs.push(format!("{FAILED_GLYPH} failed"));
    lines.extend(wrap("legend rows:  ", &jobs, width));
    lines.extend(wrap("legend lanes: ", &legend(&Stage::LANE), width));
}

/// Per-row phases with min/avg/max over the proved jobs.
fn ascii_table(run: &RunMetrics, lines: &mut Vec<String>) {
    let label_w = run
        .rows
        .iter()
        .map(|row| row.label.chars().count())
        .max()
        .unwrap_or(0)
        .clamp(9, 40);
    let heading = if run.rows.iter().any(|r| r.partition.is_some()) {
        "partition"
    } else {
        "job"
    };
    let cells =
        |columns: [f64; 7]| -> String { columns.iter().map(|v| format!("{v:>8.2}")).collect() };
    let headings: String = Phases::HEADINGS.iter().map(|h| format!("{h:>8}")).collect();
    lines.push(format!("{} {headings}   (seconds)", fit(heading, label_w)));
    for row in &run.rows {
        let note = match &row.outcome {
            Outcome::Proved => String::new(),
            Outcome::Failed { reason, .. } => format!("  FAILED {}", clip(reason, 60)),
            Outcome::Unfinished => "  unfinished".to_owned(),
        };
        lines.push(format!(
            "{} {}{note}",
            fit(&row.label, label_w),
            cells(row.phases.columns())
        ));
    }
    match &run.summary {
        Some(summary) => {
            let rule = "-".repeat(label_w + 1 + 8 * Phases::HEADINGS.len());
            lines.push(rule);
            for (name, phases) in [
                ("min", &summary.min),
                ("avg", &summary.avg),
                ("max", &summary.max),
            ] {
                lines.push(format!(
                    "{} {}",
                    fit(name, label_w),
                    cells(phases.columns())
                ));
            }
            lines.push(format!(
                "(min/avg/max over the {} of proved jobs)",
                plural(summary.rows, "row")
            ));
        }
        None => lines.push("(no job was proved: no min/avg/max)".to_owned()),
    }
}

/// At most `max` characters of `text`.
fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_owned(),
    }
}

fn ascii_throughput(run: &RunMetrics, lines: &mut Vec<String>) {
    lines.push(match &run.throughput {
        None => "throughput: no proof finished".to_owned(),
        Some(t) => {
            let basis = match &t.basis {
                Basis::SteadyState {
                    from_s,
                    to_s,
                    partitions,
                    partitions_per_proof,
                } => format!(
                    "steady state {from_s:.2} s -> {to_s:.2} s, first GPU_END to last: {} after \
                     the first{}",
                    plural(*partitions, "partition proof"),
                    if *partitions_per_proof == 1.0 {
                        String::new()
                    } else {
                        format!(", {partitions_per_proof:.1} per proof")
                    }
                ),
                Basis::WholeRun { proofs } => format!(
                    "whole span over {}: too few proofs for a steady state",
                    plural(*proofs, "proof")
                ),
            };
            format!(
                "throughput: {:.2} s/proof, {:.1} proofs/h ({basis})",
                t.seconds_per_proof, t.proofs_per_hour
            )
        }
    });
    let q = &run.queue;
    lines.push(format!(
        "queue: a partition was queued {:.2} s ({:.0}% of the span), {:.2} s summed over \
         partitions; {:.2} s ({:.0}%) of it with every lane occupied",
        q.queued_s,
        q.queued_fraction * 100.0,
        q.partition_wait_s,
        q.prover_bound_s,
        q.prover_bound_fraction * 100.0
    ));
}

/// Gaps listed per lane before "and N more".
const GAPS_SHOWN: usize = 20;

fn ascii_lanes(run: &RunMetrics, lines: &mut Vec<String>) {
    lines.push(format!(
        "prover lanes over the span {:.2} s -> {:.2} s ({:.2} s); idle gaps of at least {:.2} s:",
        run.span_start_s, run.span_end_s, run.span_s, run.gap_threshold_s
    ));
    if run.lanes.is_empty() {
        lines.push("  (no prover lane in this run)".to_owned());
    }
    let name_w = run.lanes.iter().map(|l| l.name.len()).max().unwrap_or(0);
    let indent = " ".repeat(name_w + 3);
    for lane in &run.lanes {
        let idle = &lane.idle;
        lines.push(format!(
            "  {:<name_w$} busy {:.1}% ({:.2} s, {}), params {:.2} s; idle: synthesis {:.2} s, \
             scheduling {:.2} s, drain {:.2} s, input {:.2} s",
            lane.name,
            lane.busy_fraction * 100.0,
            lane.busy_s,
            plural(lane.partitions, "partition"),
            lane.params_s,
            idle.synthesis_s,
            idle.scheduling_s,
            idle.drain_s,
            idle.input_s
        ));
        if let Some(s) = &lane.steps {
            let share = |x: f64| ratio(x, s.prove_s) * 100.0;
            lines.push(format!(
                "{indent}prover time {:.2} s over {}: kernels {:.2} s ({:.0}%: fft {:.2} + msm G1 \
                 {:.2} + msm G2 {:.2}), CPU tail {:.2} s ({:.0}%), other {:.2} s ({:.0}%); \
                 kernels ran {:.0}% of the span against {:.0}% busy",
                s.prove_s,
                plural(s.partitions, "partition"),
                s.kernel_s,
                share(s.kernel_s),
                s.fft_s,
                s.msm_g1_s,
                s.msm_g2_s,
                s.cpu_tail_s,
                share(s.cpu_tail_s),
                s.other_s,
                share(s.other_s),
                ratio(s.kernel_s, run.span_s) * 100.0,
                lane.busy_fraction * 100.0
            ));
        }
        for gap in lane.gaps.iter().take(GAPS_SHOWN) {
            lines.push(format!(
                "{indent}gap {:.2} s -> {:.2} s ({:.2} s) {}",
                gap.start_s,
                gap.end_s,
                gap.length_s,
                gap.waiting_for.describe()
            ));
        }
        if lane.gaps.len() > GAPS_SHOWN {
            lines.push(format!(
                "{indent}... and {} more (all of them with --json)",
                plural(lane.gaps.len() - GAPS_SHOWN, "gap")
            ));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// SVG.

const SVG_CHART_W: f64 = 1000.0;
const SVG_ROW_H: f64 = 16.0;
const SVG_BAR_H: f64 = 11.0;
const SVG_CHAR_W: f64 = 7.2;
const SVG_PAD: f64 = 10.0;
/// Room right of the chart for the lanes' busy percentages.
const SVG_RIGHT: f64 = 60.0;

/// The same waterfall as a standalone SVG document, runs stacked top to bottom.
fn render_svg(runs: &[RunMetrics]) -> String {
    let longest = runs
        .iter()
        .flat_map(|run| {
            let rows = run.rows.iter().map(|row| row.label.chars().count());
            rows.chain(run.lanes.iter().map(|lane| lane.name.chars().count()))
        })
        .chain(["prover lanes".len()])
        .max()
        .unwrap_or(0)
        .min(48);
    let left = SVG_PAD + longest as f64 * SVG_CHAR_W + SVG_PAD;
    let mut body = String::new();
    let mut y = SVG_PAD;
    for run in runs {
        y = svg_run(run, left, y, &mut body) + 2.0 * SVG_ROW_H;
    }
    // Wide enough for the chart and for the longest line of text (the verdict, usually).
    let longest_text = runs
        .iter()
        .map(|run| run.verdict.text.chars().count() + "verdict: ".len())
        .max()
        .unwrap_or(0);
    let width =
        (left + SVG_CHART_W + SVG_RIGHT).max(2.0 * SVG_PAD + longest_text as f64 * SVG_CHAR_W);
    let height = y;
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{height:.0}\" \
         viewBox=\"0 0 {width:.0} {height:.0}\" font-family=\"monospace\" font-size=\"12\">\n\
         <rect x=\"0\" y=\"0\" width=\"{width:.0}\" height=\"{height:.0}\" fill=\"white\"/>\n\
         {body}</svg>\n"
    )
}

/// Draws one run from `top`; returns the y below it.
fn svg_run(run: &RunMetrics, left: f64, top: f64, out: &mut String) -> f64 {
    let length = if run.end_s > run.start_s {
        run.end_s - run.start_s
    } else {
        1e-3
    };
    let x = |t: f64| left + (t - run.start_s) / length * SVG_CHART_W;
    let mut y = top;

    svg_text(
        out,
        SVG_PAD,
        y + 12.0,
        "",
        &format!(
            "run {}: {} proved, {} failed, wall {:.2} s",
            run.run_id, run.proved, run.failed, run.wall_s
        ),
    );
    y += 2.0 * SVG_ROW_H;

    let (tick_times, step) = ticks(run.start_s, run.end_s, 10);
    out.push_str(&format!(
        "<line x1=\"{left:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"#555\"/>\n",
        left + SVG_CHART_W
    ));
    for &t in &tick_times {
        out.push_str(&format!(
            "<line x1=\"{0:.1}\" y1=\"{1:.1}\" x2=\"{0:.1}\" y2=\"{2:.1}\" stroke=\"#555\"/>\n",
            x(t),
            y - 4.0,
            y + 4.0
        ));
        svg_text(
            out,
            x(t),
            y - 6.0,
            " text-anchor=\"middle\"",
            &tick_label(t, step),
        );
    }
    y += 6.0;

    for row in &run.rows {
        svg_text(out, SVG_PAD, y + SVG_ROW_H - 4.0, "", &row.label);
        for s in &row.segments {
            let title = format!(
                "{}: {} {:.3} s -> {:.3} s ({:.3} s)",
                row.label,
                s.stage.legend(),
                s.start_s,
                s.end_s,
                s.end_s - s.start_s
            );
            svg_rect(out, x(s.start_s), x(s.end_s), y, s.stage.colour(), &title);
        }
        if let Outcome::Failed { at_s, reason } = &row.outcome {
            let title = format!("{}: failed at {at_s:.3} s: {reason}", row.label);
            svg_rect(
                out,
                x(*at_s) - 1.5,
                x(*at_s) + 1.5,
                y,
                FAILED_COLOUR,
                &title,
            );
        }
        y += SVG_ROW_H;
    }

    svg_text(
        out,
        SVG_PAD,
        y + SVG_ROW_H - 4.0,
        " font-weight=\"bold\"",
        "prover lanes",
    );
    y += SVG_ROW_H;
    for lane in &run.lanes {
        svg_text(out, SVG_PAD, y + SVG_ROW_H - 4.0, "", &lane.name);
        for (set, stage) in [
            (&lane.idle_spans, Stage::Idle),
            (&lane.loading, Stage::Params),
            (&lane.proving, Stage::Prove),
        ] {
            for &(a, b) in set.spans() {
                let title = format!("{}: {} {a:.3} s -> {b:.3} s", lane.name, stage.legend());
                svg_rect(out, x(a), x(b), y, stage.colour(), &title);
            }
        }
        let label = format!("{:.0}% busy", lane.busy_fraction * 100.0);
        svg_text(
            out,
            left + SVG_CHART_W + 4.0,
            y + SVG_ROW_H - 4.0,
            "",
            &label,
        );
        y += SVG_ROW_H;
    }

    y += SVG_ROW_H / 2.0;
    let mut legend_x = left;
    let swatches = Stage::JOB
        .iter()
        .chain(&[Stage::Params, Stage::Idle])
        .map(|s| (s.colour(), s.legend()))
        .chain([(FAILED_COLOUR, "failed")]);
    for (colour, name) in swatches {
        out.push_str(&format!(
            "<rect x=\"{legend_x:.1}\" y=\"{:.1}\" width=\"10\" height=\"10\" fill=\"{colour}\"/>\n",
            y + 2.0
        ));
        svg_text(out, legend_x + 14.0, y + 11.0, "", name);
        legend_x += 14.0 + name.len() as f64 * SVG_CHAR_W + 12.0;
    }
    y += SVG_ROW_H;
    svg_text(
        out,
        SVG_PAD,
        y + 12.0,
        "",
        &format!("verdict: {}", run.verdict.text),
    );
    y + SVG_ROW_H
}

/// A bar from `x0` to `x1` in the row at `y`, at least half a pixel wide so short stages show.
fn svg_rect(out: &mut String, x0: f64, x1: f64, y: f64, fill: &str, title: &str) {
    out.push_str(&format!(
        "<rect x=\"{x0:.2}\" y=\"{:.1}\" width=\"{:.2}\" height=\"{SVG_BAR_H}\" fill=\"{fill}\">\
         <title>{}</title></rect>\n",
        y + (SVG_ROW_H - SVG_BAR_H) / 2.0,
        (x1 - x0).max(0.5),
        xml_escape(title)
    ));
}

/// Text at (`x`, `y`); `attributes` are extra, already escaped attributes.
fn svg_text(out: &mut String, x: f64, y: f64, attributes: &str, text: &str) {
    out.push_str(&format!(
        "<text x=\"{x:.1}\" y=\"{y:.1}\"{attributes}>{}</text>\n",
        xml_escape(text)
    ));
}

/// Escapes text for XML content and attributes; control characters XML 1.0 forbids become `?`.
fn xml_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if c.is_control() => out.push('?'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn fixture(name: &str) -> Timeline {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/timelines")
            .join(name);
        read_timeline(&path).expect("fixture reads")
    }

    fn options() -> Options {
        Options {
            per_partition: false,
            gap_s: 1.0,
        }
    }

    fn analysis(name: &str, selection: Selection, options: &Options) -> Analysis {
        analyze(&screen(&fixture(name)), &selection, options).expect("analysis")
    }

    /// The last run of fixture `name` with default options.
    fn metrics(name: &str) -> RunMetrics {
        let mut runs = analysis(name, Selection::Last, &options()).runs;
        assert_eq!(runs.len(), 1);
        runs.remove(0)
    }

    fn gap(start_s: f64, end_s: f64, waiting_for: IdleCause) -> Gap {
        Gap {
            start_s,
            end_s,
            length_s: end_s - start_s,
            waiting_for,
        }
    }

    fn assert_close(actual: f64, expected: f64) {
        assert!(
            (actual - expected).abs() < 1e-9,
            "{actual} is not {expected}"
        );
    }

    fn json_of(runs: &[RunMetrics]) -> String {
        serde_json::to_string(runs).expect("json")
    }

    #[test]
    fn synthesis_bound_lane_waits_for_synthesis() {
        let run = metrics("synthesis_bound.csv");
        assert_eq!((run.jobs, run.proved, run.failed), (3, 3, 0));
        assert_eq!(run.synthesis_workers, ["synth-0"]);
        assert_eq!((run.span_start_s, run.span_end_s), (0.0, 10.0));
        let lane = &run.lanes[0];
        assert_eq!(run.lanes.len(), 1);
        assert_eq!(lane.name, "gpu-0");
        assert_eq!(lane.busy_fraction, 0.3);
        assert_eq!(lane.idle.synthesis_s, 7.0);
        assert_eq!(
            lane.idle.scheduling_s + lane.idle.drain_s + lane.idle.input_s,
            0.0
        );
        assert_eq!(
            lane.gaps,
            [
                gap(0.0, 3.0, IdleCause::Synthesis),
                gap(4.0, 6.0, IdleCause::Synthesis),
                gap(7.0, 9.0, IdleCause::Synthesis),
            ]
        );
        assert_eq!(
            run.throughput,
            Some(Throughput {
                seconds_per_proof: 3.0,
                proofs_per_hour: 1200.0,
                basis: Basis::SteadyState {
                    from_s: 4.0,
                    to_s: 10.0,
                    partitions: 2,
                    partitions_per_proof: 1.0,
                },
            })
        );
        assert_eq!(run.queue.queued_s, 0.0);
        assert_eq!(run.verdict.bound, Bound::Synthesis);
        assert_eq!(
            run.verdict.text,
            "synthesis-bound: gpu-0 idle 70% of the run waiting for synthesis; raise \
             --synth-jobs (now using 1 worker)"
        );
    }

    #[test]
    fn gpu_bound_partitions_queue_behind_a_busy_prover() {
        let run = metrics("gpu_bound.csv");
        let lane = &run.lanes[0];
        assert_eq!(lane.busy_fraction, 0.8);
        assert_eq!(
            lane.gaps,
            [
                gap(0.0, 1.0, IdleCause::Synthesis),
                gap(9.0, 10.0, IdleCause::Drain),
            ]
        );
        // Queued: job 2 over [1, 3), job 3 over [2, 5), job 4 over [2, 7).
        assert_eq!(
            run.queue,
            QueueMetrics {
                queued_s: 6.0,
                queued_fraction: 0.6,
                partition_wait_s: 10.0,
                prover_bound_s: 6.0,
                prover_bound_fraction: 0.6,
            }
        );
        assert_eq!(
            run.rows[1].phases,
            Phases {
                queue_s: 0.0,
                synthesis_s: 1.0,
                channel_s: 2.0,
                prove_s: 2.0,
                verify_s: 1.0,
                write_s: 0.0,
                total_s: 6.0,
            }
        );
        let summary = run.summary.as_ref().expect("summary");
        assert_eq!(summary.rows, 4);
        assert_eq!(summary.avg.channel_s, 2.5);
        assert_eq!((summary.min.total_s, summary.max.total_s), (4.0, 9.0));
        let throughput = run.throughput.as_ref().expect("throughput");
        assert_eq!(throughput.seconds_per_proof, 2.0);
        assert_eq!(throughput.proofs_per_hour, 1800.0);
        assert_eq!(run.verdict.bound, Bound::Prover);
        assert!(
            run.verdict.text.starts_with(
                "GPU-bound: partitions waited 6.0 s in the queue (60% of the run) while gpu-0 \
                 was 80% busy; add GPUs"
            ),
            "{}",
            run.verdict.text
        );
    }

    #[test]
    fn idle_gaps_are_split_by_what_the_lane_waited_for() {
        let run = metrics("idle_gaps.csv");
        let lane = &run.lanes[0];
        assert_eq!(
            lane.gaps,
            [
                gap(0.0, 1.0, IdleCause::Synthesis),
                gap(1.0, 4.0, IdleCause::Scheduling),
                gap(5.0, 10.0, IdleCause::Input),
                gap(10.0, 11.0, IdleCause::Synthesis),
            ]
        );
        assert_eq!(
            lane.idle,
            IdleTimes {
                scheduling_s: 3.0,
                synthesis_s: 2.0,
                drain_s: 0.0,
                input_s: 5.0,
            }
        );
        assert_close(lane.busy_fraction, 2.0 / 12.0);
        assert_eq!(run.verdict.bound, Bound::Scheduling);
        assert!(
            run.verdict
                .text
                .starts_with("scheduling: gpu-0 sat idle 3.0 s (25% of the run)"),
            "{}",
            run.verdict.text
        );

        let longer = Options {
            gap_s: 1.5,
            ..options()
        };
        let run = &analysis("idle_gaps.csv", Selection::Last, &longer).runs[0];
        assert_eq!(
            run.lanes[0].gaps,
            [
                gap(1.0, 4.0, IdleCause::Scheduling),
                gap(5.0, 10.0, IdleCause::Input),
            ]
        );
    }

    #[test]
    fn two_gpus_have_a_lane_each_with_the_prover_step_split() {
        let run = metrics("two_gpus.csv");
        let names: Vec<&str> = run.lanes.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["gpu-0", "gpu-1"]);
        let (gpu0, gpu1) = (&run.lanes[0], &run.lanes[1]);
        assert_eq!(gpu0.busy_fraction, 0.75);
        assert_eq!(gpu1.busy_fraction, 0.5);
        assert_eq!((gpu0.params_s, gpu1.params_s), (1.0, 1.0));
        assert_eq!((gpu0.partitions, gpu1.partitions), (2, 2));
        assert_eq!(gpu0.gaps, [gap(7.0, 8.0, IdleCause::Drain)]);
        assert_eq!(
            gpu1.gaps,
            [
                gap(1.0, 2.0, IdleCause::Synthesis),
                gap(4.0, 5.0, IdleCause::Synthesis),
                gap(7.0, 8.0, IdleCause::Drain),
            ]
        );
        // Each of gpu-0's 3 s proofs: fft 0.75, G1 1.2, G2 0.45, CPU tail 0.3, 0.3 unaccounted.
        let steps = gpu0.steps.as_ref().expect("step split");
        assert_eq!((steps.partitions, steps.prove_s), (2, 6.0));
        assert_close(steps.fft_s, 1.5);
        assert_close(steps.kernel_s, 4.8);
        assert_close(steps.cpu_tail_s, 0.6);
        assert_close(steps.other_s, 0.6);
        // Only job 3 queued, over [3, 4), while both lanes proved.
        assert_eq!(run.queue.prover_bound_s, 1.0);
        let throughput = run.throughput.as_ref().expect("throughput");
        assert_eq!(throughput.seconds_per_proof, 1.0);
        assert!(
            run.verdict.text.contains("gpu-0, gpu-1"),
            "{}",
            run.verdict.text
        );
    }

    #[test]
    fn partitions_and_failures() {
        let run = metrics("partitions.csv");
        assert_eq!((run.jobs, run.proved, run.failed), (2, 1, 1));
        assert_eq!(run.rows.len(), 2);
        assert_eq!(
            run.rows[0].phases,
            Phases {
                queue_s: 0.0,
                synthesis_s: 2.0,
                channel_s: 0.0,
                prove_s: 4.0,
                verify_s: 1.0,
                write_s: 0.5,
                total_s: 7.5,
            }
        );
        assert_eq!(
            run.rows[1].outcome,
            Outcome::Failed {
                at_s: 1.5,
                reason: "parse: expected value at line 1 column 1".into(),
            }
        );
        assert_eq!(run.rows[1].phases.queue_s, 0.5);
        assert_eq!(run.summary.as_ref().map(|s| s.rows), Some(1));
        // One job reached the prover: no steady state, so the span over the one proof.
        assert_eq!(
            run.throughput,
            Some(Throughput {
                seconds_per_proof: 7.5,
                proofs_per_hour: 480.0,
                basis: Basis::WholeRun { proofs: 1 },
            })
        );

        let per_partition = Options {
            per_partition: true,
            ..options()
        };
        let run = &analysis("partitions.csv", Selection::Last, &per_partition).runs[0];
        let labels: Vec<&str> = run.rows.iter().map(|r| r.label.as_str()).collect();
        assert_eq!(labels, ["s-t01000-7 p0", "s-t01000-7 p1", "s-t01000-8"]);
        let p0 = &run.rows[0].phases;
        assert_eq!((p0.synthesis_s, p0.prove_s, p0.queue_s), (2.0, 2.0, 2.0));
        let p1 = &run.rows[1].phases;
        assert_eq!((p1.synthesis_s, p1.channel_s, p1.prove_s), (3.0, 1.0, 2.0));
        assert_eq!(run.summary.as_ref().map(|s| s.rows), Some(2));
    }

    #[test]
    fn phases_add_up_to_each_rows_total() {
        for name in [
            "gpu_bound.csv",
            "two_gpus.csv",
            "partitions.csv",
            "idle_gaps.csv",
        ] {
            for per_partition in [false, true] {
                let options = Options {
                    per_partition,
                    ..options()
                };
                for row in &analysis(name, Selection::All, &options).runs[0].rows {
                    let c = row.phases.columns();
                    assert_close(c[..6].iter().sum(), row.phases.total_s);
                }
            }
        }
    }

    #[test]
    fn an_unfinished_job_keeps_the_span_open_to_the_last_event() {
        // As if the run stopped at 8 s: job 4 began proving at 7 s and never finished.
        let mut timeline = fixture("gpu_bound.csv");
        timeline.rows.retain(|row| row.t_ms <= 8000.0);
        let run = &analyze(&screen(&timeline), &Selection::Last, &options())
            .expect("analysis")
            .runs[0];
        assert_eq!((run.proved, run.unfinished), (3, 1));
        assert_eq!(run.rows[3].outcome, Outcome::Unfinished);
        assert_eq!((run.span_start_s, run.span_end_s), (0.0, 8.0));
        assert_eq!(run.lanes[0].busy_fraction, 0.875);
        assert_eq!(run.lanes[0].partitions, 3);
        let text = render_ascii(std::slice::from_ref(run), 80);
        assert!(text.contains("  unfinished"), "{text}");
    }

    #[test]
    fn rows_out_of_order_give_the_same_metrics() {
        let mut timeline = fixture("gpu_bound.csv");
        let in_order = analyze(&screen(&timeline), &Selection::Last, &options()).expect("analysis");
        timeline.rows.reverse();
        timeline.rows.swap(3, 17);
        let shuffled = analyze(&screen(&timeline), &Selection::Last, &options()).expect("analysis");
        assert_eq!(json_of(&in_order.runs), json_of(&shuffled.runs));
    }

    #[test]
    fn unknown_events_are_ignored_with_one_warning() {
        let with_unknown = analysis("unknown_event.csv", Selection::Last, &options());
        assert_eq!(
            with_unknown.warnings,
            ["ignored 3 rows with unknown events: GPU_WARMUP (2), TEMPERATURE (1)"]
        );
        let plain = analysis("gpu_bound.csv", Selection::Last, &options());
        assert!(plain.warnings.is_empty(), "{:?}", plain.warnings);
        assert_eq!(json_of(&with_unknown.runs), json_of(&plain.runs));
    }

    #[test]
    fn a_torn_last_line_is_one_warning_and_changes_nothing() {
        let torn = analysis("torn_last_line.csv", Selection::Last, &options());
        assert_eq!(torn.warnings.len(), 1);
        assert!(
            torn.warnings[0].starts_with("skipped 1 malformed line (line 37: "),
            "{:?}",
            torn.warnings
        );
        let whole = analysis("synthesis_bound.csv", Selection::Last, &options());
        assert_eq!(json_of(&torn.runs), json_of(&whole.runs));
    }

    #[test]
    fn rows_missing_a_needed_field_are_ignored_with_one_warning() {
        let row = |event: &str, partition: Option<usize>| TimelineRow {
            run_id: "r".into(),
            t_ms: 5.0,
            wall_clock: String::new(),
            event: event.into(),
            job: "j".into(),
            partition,
            worker: "gpu-0".into(),
            detail: String::new(),
        };
        let timeline = Timeline {
            rows: vec![
                row("CLAIM", None),
                row("GPU_START", None),
                row("GPU_END", None),
            ],
            skipped: Vec::new(),
        };
        let analysis = analyze(&screen(&timeline), &Selection::Last, &options()).expect("analysis");
        assert_eq!(
            analysis.warnings,
            [
                "ignored 2 rows missing a field their event needs (first: GPU_START at t_ms 5 in \
              run \"r\": no partition)"
            ]
        );
        assert_eq!(analysis.runs[0].jobs, 1);
    }

    #[test]
    fn runs_are_chosen_last_by_id_or_all() {
        let last = analysis("runs.csv", Selection::Last, &options());
        assert_eq!(last.runs_in_file, ["r1", "r2"]);
        assert_eq!(last.runs.len(), 1);
        assert_eq!(
            (last.runs[0].run_id.as_str(), last.runs[0].position),
            ("r2", 2)
        );
        assert_eq!(last.runs[0].jobs, 2);

        let first = analysis("runs.csv", Selection::Run("r1".into()), &options());
        assert_eq!(first.runs[0].run_id, "r1");
        assert_eq!(
            json_of(&first.runs[..1]).replace("\"position\":1,\"runs_in_file\":2", ""),
            json_of(&[metrics("synthesis_bound.csv")])
                .replace("\"position\":1,\"runs_in_file\":1", "")
        );

        let all = analysis("runs.csv", Selection::All, &options());
        let ids: Vec<&str> = all.runs.iter().map(|r| r.run_id.as_str()).collect();
        assert_eq!(ids, ["r1", "r2"]);

        let error = analyze(
            &screen(&fixture("runs.csv")),
            &Selection::Run("r9".into()),
            &options(),
        )
        .expect_err("no such run");
        assert_eq!(
            error.to_string(),
            "no run \"r9\" in this timeline; its runs are: r1, r2"
        );
    }

    #[test]
    fn a_file_with_only_a_header_is_an_error() {
        let error = analyze(&screen(&Timeline::default()), &Selection::Last, &options())
            .expect_err("nothing to show");
        assert!(error.to_string().contains("no usable events"), "{error}");
    }

    /// Lines of the picture: the axis, rows and lanes, all framed by `|`.
    fn bars(text: &str) -> Vec<&str> {
        text.lines()
            .filter(|line| line.ends_with('|') && line.contains(" |"))
            .collect()
    }

    #[test]
    fn ascii_has_one_row_per_job_lane_rows_and_respects_the_width() {
        let run = metrics("gpu_bound.csv");
        for width in [20, 60, 100, 181] {
            let text = render_ascii(std::slice::from_ref(&run), width);
            let bars = bars(&text);
            // Two axis lines, four jobs, one lane.
            assert_eq!(bars.len(), 7, "{text}");
            assert!(
                bars.iter().all(|line| line.chars().count() == width),
                "{text}"
            );
            // From the tick labels to the legend; a legend entry is never split, so a very
            // narrow picture may be as wide as the longest entry.
            let legend_end = text.lines().position(|l| l.starts_with("legend lanes:"));
            let picture = text.lines().take(legend_end.expect("legend") + 1).skip(2);
            assert!(
                picture
                    .into_iter()
                    .all(|line| line.chars().count() <= width.max(30)),
                "{text}"
            );
        }
        let text = render_ascii(std::slice::from_ref(&run), 100);
        let job_rows: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("s-t01000-"))
            .collect();
        // The table repeats each job once.
        assert_eq!(job_rows.len(), 8, "{text}");
        let first = bars(&text)[1];
        assert!(first.starts_with("s-t01000-1"), "{text}");
        let bar = &first[first.find('|').expect("bar") + 1..first.len() - 1];
        // Job 1: synthesis [0, 1), proving [1, 3), verify [3, 4) on a 10 s axis.
        let glyphs: String = bar.chars().filter(|c| *c != ' ').collect();
        assert!(glyphs.starts_with("SSS"), "{bar}");
        assert!(glyphs.contains("GGGG") && glyphs.ends_with('V'), "{bar}");
        assert!(
            text.lines()
                .any(|l| l.starts_with("gpu-0") && l.contains("G-")),
            "{text}"
        );
        assert!(text.contains("\nverdict: GPU-bound"), "{text}");
    }

    #[test]
    fn ascii_marks_failures_and_labels_partitions() {
        let per_partition = Options {
            per_partition: true,
            ..options()
        };
        let runs = analysis("partitions.csv", Selection::Last, &per_partition).runs;
        let text = render_ascii(&runs, 80);
        let failed = bars(&text)
            .into_iter()
            .find(|line| line.starts_with("s-t01000-8"))
            .expect("failed row");
        assert!(failed.contains('X'), "{text}");
        assert!(text.contains("s-t01000-7 p1 |"), "{text}");
        assert!(text.contains("FAILED parse: expected value"), "{text}");
    }

    #[test]
    fn all_runs_are_drawn_one_after_another() {
        let runs = analysis("runs.csv", Selection::All, &options()).runs;
        let text = render_ascii(&runs, 80);
        let r1 = text.find("run r1 (1 of 2 in the file)").expect("r1");
        let r2 = text.find("run r2 (2 of 2 in the file)").expect("r2");
        assert!(r1 < r2);
        assert_eq!(text.matches("verdict:").count(), 2);
        assert!(text.contains(&"=".repeat(80)));
    }

    #[test]
    fn paint_shows_the_stage_covering_most_of_each_column() {
        let scale = Scale::new(0.0, 10.0, 10);
        let bar: String = paint(
            &scale,
            [
                (0.0, 2.6, Stage::Synthesis),
                (2.6, 3.0, Stage::Channel),
                (3.0, 3.01, Stage::Prove),
                (9.0, 10.0, Stage::Verify),
            ],
        )
        .into_iter()
        .collect();
        // Column 2 is 60% synthesis, 40% channel; a 10 ms proof alone shows in column 3.
        assert_eq!(bar, "SSSG     V");
        assert_eq!(scale.col(-1.0), 0);
        assert_eq!(scale.col(10.0), 9);
    }

    #[test]
    fn ticks_are_round_numbers_of_seconds() {
        let (times, step) = ticks(0.0, 10.0, 5);
        assert_eq!((times, step), (vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0], 2.0));
        let (times, step) = ticks(0.3, 1.2, 4);
        assert_eq!(step, 0.5);
        assert_eq!(times, [0.5, 1.0]);
        assert_eq!(tick_label(0.5, 0.5), "0.5s");
        assert_eq!(tick_label(120.0, 20.0), "120s");
    }

    #[test]
    fn labels_keep_their_distinguishing_end() {
        assert_eq!(fit("abcdefghij", 6), "..ghij");
        assert_eq!(fit("abc", 6), "abc   ");
        assert_eq!(clip("abcdef", 3), "abc...");
    }

    #[test]
    fn svg_is_well_formed_and_escapes_names() {
        let mut timeline = fixture("partitions.csv");
        for row in &mut timeline.rows {
            if row.job == "s-t01000-8" {
                row.job = "<odd & \"name\">\u{1}'".into();
            }
        }
        let options = options();
        let runs = analyze(&screen(&timeline), &Selection::Last, &options)
            .expect("analysis")
            .runs;
        let svg = render_svg(&runs);
        let document = roxmltree::Document::parse(&svg).expect("well-formed SVG");
        let root = document.root_element();
        assert_eq!(root.tag_name().name(), "svg");
        let texts: Vec<&str> = root
            .descendants()
            .filter(|n| n.has_tag_name("text"))
            .filter_map(|n| n.text())
            .collect();
        assert!(texts.contains(&"<odd & \"name\">?'"), "{texts:?}");
        assert!(texts.contains(&"gpu-0"), "{texts:?}");
        let colours: BTreeSet<&str> = root
            .descendants()
            .filter(|n| n.has_tag_name("rect"))
            .filter_map(|n| n.attribute("fill"))
            .collect();
        for stage in [Stage::Synthesis, Stage::Prove, Stage::Verify, Stage::Write] {
            assert!(
                colours.contains(stage.colour()),
                "{stage:?} missing: {colours:?}"
            );
        }
        assert!(colours.contains(FAILED_COLOUR));
    }

    #[test]
    fn json_carries_the_metrics() {
        let analysis = analysis("gpu_bound.csv", Selection::Last, &options());
        let text = render_json("t.csv", &analysis).expect("json");
        let value: serde_json::Value = serde_json::from_str(&text).expect("parses");
        let run = &value["runs"][0];
        assert_eq!(run["lanes"][0]["busy_fraction"], 0.8);
        assert_eq!(run["lanes"][0]["gaps"][1]["waiting_for"], "drain");
        assert_eq!(run["throughput"]["seconds_per_proof"], 2.0);
        assert_eq!(run["throughput"]["basis"]["steady_state"]["from_s"], 3.0);
        assert_eq!(run["rows"][1]["phases"]["channel_s"], 2.0);
        assert_eq!(run["verdict"]["bound"], "prover");
        assert_eq!(value["runs_in_file"][0], "r1");
    }

    #[test]
    fn details_and_lane_names_parse() {
        let steps = ProverSteps::parse("fft_ms=1.0;msm_g1_ms=2.0;msm_g2_ms=3.0;cpu_ms=0.5");
        assert_eq!(
            steps,
            Some(ProverSteps {
                fft: 0.001,
                msm_g1: 0.002,
                msm_g2: 0.003,
                cpu_tail: 0.0005,
            })
        );
        assert_eq!(ProverSteps::parse("fft_ms=1.0"), None);
        assert_eq!(
            detail_value("sector=s;partitions=10", "partitions"),
            Some("10")
        );
        let mut lanes = vec!["gpu-10", "cpu-0", "gpu-2"];
        lanes.sort_by_key(|l| natural_key(l));
        assert_eq!(lanes, ["cpu-0", "gpu-2", "gpu-10"]);
        assert_eq!(xml_escape("a<b>&'\"\u{7}"), "a&lt;b&gt;&amp;&apos;&quot;?");
    }
}
