//! A run's own metrics, written as it goes: `prove-dir --metrics-textfile PATH` and
//! `damocles-c2 --metrics-textfile PATH` (and `serve`, always) keep a node_exporter textfile of
//! what the run is doing now: proofs and failures so far (failures by stage), jobs and
//! partitions in flight, memory in use, seconds per proof by kind as a histogram, device
//! faults and stopped provers, each GPU's busy share as its driver counts it, parameter loads.
//! What a provider alerts on: a prover down, device faults rising, failures at one stage, a
//! GPU that idles.
//!
//! Another consumer of the pipeline's events, beside the reporter: its thread gets each event
//! once the timeline has it ([`RunMetrics::observe`]) and rewrites the file atomically
//! ([`crate::atomic_file`]: a temporary dotfile, synced, renamed, so the collector never reads
//! half of it) at most once a second while events come, and every few seconds anyway so the
//! memory gauges stay fresh. The only thing it reads besides events is the run's memory
//! budget and the process's resident memory. Every sample carries the `spool` label
//! ([`MetricsTextfile::spool_label`]), so two runs on one host writing two files never export
//! the same series. `cuzk status --textfile` is the spool's view from its timeline; this is the
//! live run's, under names of its own (`cuzk_run_*`), so both can sit in one collector.
//!
//! The file is written once before the run starts, so a path that cannot be written stops the
//! run with the reason instead of leaving the metrics silently missing; later write failures
//! are said once and the run goes on (proofs matter more than their metrics).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use crossbeam_channel::{Receiver, RecvTimeoutError};

use crate::event::{Event, EventKind, JobStage};
use crate::memory::MemoryBudget;
use crate::proof_kind::ProofKind;

use super::exposition::{render, Family, Histogram, Kind};

/// Rewrites at most this often while events come.
const MIN_INTERVAL: Duration = Duration::from_secs(1);

/// Rewrites at least this often, for the memory gauges.
const REFRESH: Duration = Duration::from_secs(5);

/// Upper bounds of the seconds-per-proof histogram: a 2KiB proof on a GPU in the first
/// buckets, a 32GiB sector queued behind others in the last.
const PROOF_SECONDS_BOUNDS: &[f64] = &[
    1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 180.0, 300.0, 600.0, 1200.0, 3600.0,
];

/// Where a run writes its metrics, and the label that tells its spool apart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetricsTextfile {
    /// The textfile (`*.prom` in node_exporter's `--collector.textfile.directory`).
    pub path: PathBuf,
    /// The `spool` label of every sample.
    pub spool_label: String,
}

/// What the run has done so far, counted from its events.
#[derive(Clone, Debug)]
pub struct RunMetrics {
    run_id: String,
    started: SystemTime,
    proved: u64,
    failed: u64,
    /// Jobs claimed and not yet proved, failed or handed back, with when they were claimed
    /// (milliseconds into the run).
    jobs: HashMap<String, f64>,
    /// Jobs of benchmark shape files: timings, never proofs.
    benchmarks: HashSet<String>,
    /// Partitions from the start of their synthesis until they are proved.
    partitions: HashSet<(String, usize)>,
    /// Each job's kind, once parsed.
    kinds: HashMap<String, ProofKind>,
    /// Seconds from claim to proof, by kind.
    proof_seconds: BTreeMap<ProofKind, Histogram>,
    /// Jobs failed, by the stage that failed them (every stage, 0 included).
    failures: BTreeMap<&'static str, u64>,
    /// Device faults, by prover.
    device_faults: BTreeMap<String, u64>,
    /// The run's provers, and whether each still proves.
    provers: BTreeMap<String, bool>,
    /// Per GPU: milliseconds its kernels ran, over milliseconds watched.
    gpu_busy: BTreeMap<usize, (f64, f64)>,
    /// Parameter loads finished, and their milliseconds in all.
    params_loads: u64,
    params_load_ms: f64,
    /// Loads under way, by file: how many workers are in one (a prover waiting for the
    /// loader's load is in it too) and when the first began. Overlapping loads of one file
    /// are one load, for their wall time, so a run's count does not depend on who waited.
    params_loading: HashMap<String, (usize, f64)>,
}

impl RunMetrics {
    /// Nothing done yet in run `run_id`.
    pub fn new(run_id: &str) -> RunMetrics {
        RunMetrics {
            run_id: run_id.to_owned(),
            started: SystemTime::now(),
            proved: 0,
            failed: 0,
            jobs: HashMap::new(),
            benchmarks: HashSet::new(),
            partitions: HashSet::new(),
            kinds: HashMap::new(),
            proof_seconds: [ProofKind::Seal, ProofKind::Update]
                .into_iter()
                .map(|kind| (kind, Histogram::new(PROOF_SECONDS_BOUNDS)))
                .collect(),
            failures: JobStage::ALL.iter().map(|s| (s.as_str(), 0)).collect(),
            device_faults: BTreeMap::new(),
            provers: BTreeMap::new(),
            gpu_busy: BTreeMap::new(),
            params_loads: 0,
            params_load_ms: 0.0,
            params_loading: HashMap::new(),
        }
    }

    /// Counts what `event` says.
    pub fn observe(&mut self, event: &Event) {
        match &event.kind {
            EventKind::RunStarted { settings } => {
                for prover in &settings.provers {
                    self.provers.insert(prover.to_string(), true);
                }
            }
            EventKind::JobParsed { job, kind, .. } => {
                self.kinds.insert(job.clone(), *kind);
            }
            EventKind::DeviceFault { worker, .. } => {
                *self.device_faults.entry(worker.to_string()).or_default() += 1;
            }
            EventKind::ProverStopped { worker, .. } => {
                self.provers.insert(worker.to_string(), false);
            }
            EventKind::GpuBusy {
                gpu,
                busy_pct,
                period_ms,
            } => {
                let (busy, watched) = self.gpu_busy.entry(*gpu).or_default();
                *busy += busy_pct / 100.0 * period_ms;
                *watched += period_ms;
            }
            EventKind::ParamsLoadStarted { path, .. } => {
                let (open, _) = self
                    .params_loading
                    .entry(path.clone())
                    .or_insert((0, event.elapsed_ms));
                *open += 1;
            }
            EventKind::ParamsLoadFinished { path, .. } => {
                if let Some((open, started)) = self.params_loading.get_mut(path) {
                    *open -= 1;
                    if *open == 0 {
                        self.params_loads += 1;
                        self.params_load_ms += event.elapsed_ms - *started;
                        self.params_loading.remove(path);
                    }
                }
            }
            _ => {}
        }
        match &event.kind {
            EventKind::JobClaimed { job, .. } => {
                self.jobs.insert(job.clone(), event.elapsed_ms);
            }
            EventKind::JobParsed {
                job,
                is_benchmark: true,
                ..
            } => {
                self.benchmarks.insert(job.clone());
            }
            EventKind::SynthStarted { job, partition, .. } => {
                self.partitions.insert((job.clone(), *partition));
            }
            EventKind::ProveFinished { job, partition, .. } => {
                self.partitions.remove(&(job.clone(), *partition));
            }
            EventKind::ProofWritten { job, .. } => {
                let claimed_ms = self.end_job(job);
                let kind = self.kinds.remove(job).unwrap_or_default();
                // A benchmark shape's result is no proof (as `cuzk status` counts it).
                if !self.benchmarks.remove(job) {
                    self.proved += 1;
                    if let (Some(claimed_ms), Some(histogram)) =
                        (claimed_ms, self.proof_seconds.get_mut(&kind))
                    {
                        histogram.observe((event.elapsed_ms - claimed_ms) / 1e3);
                    }
                }
            }
            EventKind::JobFailed { job, stage, .. } => {
                self.end_job(job);
                self.kinds.remove(job);
                self.benchmarks.remove(job);
                self.failed += 1;
                *self.failures.entry(stage.as_str()).or_default() += 1;
            }
            // Left in the inbox, handed back or set aside: no longer in flight here.
            EventKind::FileDeferred { job, .. } | EventKind::FileSetAside { job, .. } => {
                self.end_job(job);
            }
            _ => {}
        }
    }

    /// Forgets a finished job and its partitions; returns when it was claimed.
    fn end_job(&mut self, job: &str) -> Option<f64> {
        self.partitions.retain(|(j, _)| j != job);
        self.jobs.remove(job)
    }

    /// The metrics now, with the memory gauges read by the caller.
    pub fn families(&self, memory: &MemoryNow) -> Vec<Family> {
        let started_s = self
            .started
            .duration_since(UNIX_EPOCH)
            .map_or(f64::NAN, |d| d.as_secs_f64());
        let mut families = vec![
            Family::new(
                "cuzk_run_info",
                Kind::Gauge,
                "The run writing this file, by id, with cuzk's version and commit (always 1).",
            )
            .with(
                vec![
                    ("run_id", self.run_id.clone()),
                    ("version", env!("CARGO_PKG_VERSION").to_owned()),
                    ("commit", crate::build_info::COMMIT.to_owned()),
                ],
                1.0,
            ),
            Family::new(
                "cuzk_run_start_time_seconds",
                Kind::Gauge,
                "Unix time the run started.",
            )
            .value(started_s),
            Family::new(
                "cuzk_run_proofs_total",
                Kind::Counter,
                "Jobs this run finished: proofs written (checked with verify_seal) and jobs failed; benchmark shapes left out.",
            )
            .with(vec![("result", "proved".into())], self.proved as f64)
            .with(vec![("result", "failed".into())], self.failed as f64),
            Family::new(
                "cuzk_run_jobs_in_flight",
                Kind::Gauge,
                "C1 files claimed and not yet proved, failed or handed back.",
            )
            .value(self.jobs.len() as f64),
            Family::new(
                "cuzk_run_partitions_in_flight",
                Kind::Gauge,
                "Partitions from the start of their synthesis until they are proved.",
            )
            .value(self.partitions.len() as f64),
            Family::new(
                "cuzk_run_memory_reserved_bytes",
                Kind::Gauge,
                "Bytes reserved in the run's memory budget by parameters, constraints and partitions in flight.",
            )
            .value(memory.reserved_bytes as f64),
            Family::new(
                "cuzk_run_memory_budget_bytes",
                Kind::Gauge,
                "The run's memory budget (--max-memory, or what was available at its start).",
            )
            .value(memory.budget_bytes as f64),
        ];
        if let Some(resident) = memory.resident_bytes {
            families.push(
                Family::new(
                    "cuzk_run_resident_memory_bytes",
                    Kind::Gauge,
                    "Resident memory of the cuzk process, as the kernel counts it.",
                )
                .value(resident as f64),
            );
        }
        let mut durations = Family::new(
            "cuzk_run_proof_duration_seconds",
            Kind::Histogram,
            "Seconds per proof, by kind (c2, update): from claiming a file to its checked proof written.",
        );
        for (kind, histogram) in &self.proof_seconds {
            durations = durations.histogram_with(vec![("kind", kind.as_str().into())], histogram);
        }
        families.push(durations);
        let mut failures = Family::new(
            "cuzk_run_failures_total",
            Kind::Counter,
            "Jobs this run failed, by the stage that failed them (parse, bind, prove, verify, ...; withdrawn: asked by a client).",
        );
        for (stage, count) in &self.failures {
            failures = failures.with(vec![("stage", (*stage).into())], *count as f64);
        }
        families.push(failures);
        let mut faults = Family::new(
            "cuzk_run_device_faults_total",
            Kind::Counter,
            "Partitions that failed on their prover's device (the file went back to be proved alone), by prover.",
        );
        // Every prover of the run from 0, and any other that had a fault.
        let mut by_prover: BTreeMap<&String, u64> = self.provers.keys().map(|p| (p, 0)).collect();
        by_prover.extend(self.device_faults.iter().map(|(p, n)| (p, *n)));
        for (prover, count) in by_prover {
            faults = faults.with(vec![("prover", prover.clone())], count as f64);
        }
        families.push(faults);
        let mut up = Family::new(
            "cuzk_run_prover_up",
            Kind::Gauge,
            "1 while a prover proves, 0 once it stopped (--max-device-faults in a row, a lost device, a hung call).",
        );
        for (prover, is_up) in &self.provers {
            up = up.with(
                vec![("prover", prover.clone())],
                f64::from(u8::from(*is_up)),
            );
        }
        families.push(up);
        let mut busy_seconds = Family::new(
            "cuzk_run_gpu_busy_seconds_total",
            Kind::Counter,
            "Seconds a GPU ran kernels, as its driver counts them (NVML); rate() of it is the busy share.",
        );
        let mut busy_ratio = Family::new(
            "cuzk_run_gpu_busy_ratio",
            Kind::Gauge,
            "Share of the run a GPU ran kernels (NVML), since the run started.",
        );
        for (gpu, (busy_ms, watched_ms)) in &self.gpu_busy {
            let labels = vec![("gpu", gpu.to_string())];
            busy_seconds = busy_seconds.with(labels.clone(), busy_ms / 1e3);
            if *watched_ms > 0.0 {
                busy_ratio = busy_ratio.with(labels, busy_ms / watched_ms);
            }
        }
        families.push(busy_seconds);
        families.push(busy_ratio);
        families.push(
            Family::new(
                "cuzk_run_params_loads_total",
                Kind::Counter,
                "Parameter sets loaded by this run (each start loads them: 30-40 s for 32GiB).",
            )
            .value(self.params_loads as f64),
        );
        families.push(
            Family::new(
                "cuzk_run_params_load_seconds_total",
                Kind::Counter,
                "Seconds spent loading parameter sets.",
            )
            .value(self.params_load_ms / 1e3),
        );
        families
    }

    /// The textfile's content now.
    pub fn render(&self, memory: &MemoryNow, spool_label: &str) -> String {
        render(&self.families(memory), &[("spool", spool_label.to_owned())])
    }
}

/// The memory gauges, read when the file is written.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MemoryNow {
    /// Reserved in the budget.
    pub reserved_bytes: u64,
    /// The budget.
    pub budget_bytes: u64,
    /// The process's resident memory, where the system says.
    pub resident_bytes: Option<u64>,
}

impl MemoryNow {
    /// Reads them from `budget` and the kernel.
    pub fn read(budget: &MemoryBudget) -> MemoryNow {
        MemoryNow {
            reserved_bytes: budget.in_use(),
            budget_bytes: budget.total(),
            resident_bytes: resident_bytes(),
        }
    }
}

/// This process's resident set, from `/proc/self/statm` (its second field, in pages).
fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf only reads a system constant.
    let page_size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(page_size).ok().map(|size| pages * size)
}

/// The writer thread: keeps `target` current with the events of run `run_id` until every
/// sender of `events` is gone, then writes it a last time.
pub struct MetricsWriter {
    thread: JoinHandle<()>,
}

impl MetricsWriter {
    /// Writes `target` once now (an error stops the run before it starts), then starts the
    /// thread that keeps it current.
    pub fn start(
        target: &MetricsTextfile,
        run_id: &str,
        budget: MemoryBudget,
        events: Receiver<Event>,
    ) -> Result<MetricsWriter> {
        let metrics = RunMetrics::new(run_id);
        write(target, &metrics, &budget).with_context(|| {
            format!(
                "--metrics-textfile {}: cannot write the run's metrics there (hint: give a file in a directory this process may write, such as node_exporter's --collector.textfile.directory)",
                target.path.display()
            )
        })?;
        let target = target.clone();
        let thread = std::thread::Builder::new()
            .name("metrics".into())
            .spawn(move || keep_current(&target, metrics, &budget, &events))
            .context("starting the metrics thread")?;
        Ok(MetricsWriter { thread })
    }

    /// Waits for the last write, once the run's events have ended.
    pub fn finish(self) {
        let _ = self.thread.join();
    }
}

fn keep_current(
    target: &MetricsTextfile,
    mut metrics: RunMetrics,
    budget: &MemoryBudget,
    events: &Receiver<Event>,
) {
    let mut last_write = Instant::now();
    let mut is_changed = false;
    let mut has_warned = false;
    loop {
        let due = if is_changed { MIN_INTERVAL } else { REFRESH };
        match events.recv_timeout(due.saturating_sub(last_write.elapsed())) {
            Ok(event) => {
                metrics.observe(&event);
                is_changed = true;
                if last_write.elapsed() < MIN_INTERVAL {
                    continue;
                }
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                if let Err(err) = write(target, &metrics, budget) {
                    log::warn!("run metrics not written: {err:#}");
                }
                return;
            }
        }
        if let Err(err) = write(target, &metrics, budget) {
            if !has_warned {
                has_warned = true;
                log::warn!("run metrics not written (the run goes on; said once): {err:#}");
            }
        }
        last_write = Instant::now();
        is_changed = false;
    }
}

fn write(target: &MetricsTextfile, metrics: &RunMetrics, budget: &MemoryBudget) -> Result<()> {
    let text = metrics.render(&MemoryNow::read(budget), &target.spool_label);
    crate::atomic_file::write(&target.path, text.as_bytes())
}

/// The default `spool` label of a damocles processor's metrics: the textfile's name without
/// `.prom`, which is unique in the collector's directory (its private spool is not: a fresh
/// temporary directory per process).
pub fn label_from_file_name(path: &Path) -> String {
    path.file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: f64, kind: EventKind) -> Event {
        Event {
            elapsed_ms: ms,
            wall: SystemTime::now(),
            kind,
        }
    }

    fn metric(text: &str, name: &str) -> Option<f64> {
        text.lines()
            .find(|line| line.split(['{', ' ']).next() == Some(name))
            .and_then(|line| line.rsplit(' ').next())
            .and_then(|value| value.parse().ok())
    }

    #[test]
    fn events_make_counts_in_flight_and_the_histogram() {
        let mut metrics = RunMetrics::new("r1");
        let job = |name: &str| name.to_owned();
        for event in [
            at(
                0.0,
                EventKind::JobClaimed {
                    job: job("a"),
                    is_resumed: false,
                },
            ),
            at(
                1.0,
                EventKind::JobClaimed {
                    job: job("b"),
                    is_resumed: false,
                },
            ),
            at(
                2.0,
                EventKind::SynthStarted {
                    job: job("a"),
                    partition: 0,
                    worker: "synth-0".into(),
                },
            ),
            at(
                3.0,
                EventKind::SynthStarted {
                    job: job("b"),
                    partition: 0,
                    worker: "synth-1".into(),
                },
            ),
            at(
                3.5,
                EventKind::SynthStarted {
                    job: job("b"),
                    partition: 1,
                    worker: "synth-0".into(),
                },
            ),
        ] {
            metrics.observe(&event);
        }
        let memory = MemoryNow {
            reserved_bytes: 5,
            budget_bytes: 10,
            resident_bytes: None,
        };
        let text = metrics.render(&memory, "/srv/c1");
        assert_eq!(
            metric(&text, "cuzk_run_partitions_in_flight"),
            Some(3.0),
            "{text}"
        );
        assert_eq!(metric(&text, "cuzk_run_jobs_in_flight"), Some(2.0));
        assert_eq!(metric(&text, "cuzk_run_memory_reserved_bytes"), Some(5.0));
        assert!(!text.contains("resident"), "no number, no sample: {text}");

        metrics.observe(&at(
            4_000.0,
            EventKind::ProveFinished {
                job: job("a"),
                partition: 0,
                worker: "cpu-0".into(),
                timings: None,
            },
        ));
        metrics.observe(&at(
            12_000.0,
            EventKind::ProofWritten {
                job: job("a"),
                path: "outbox/a.proof".into(),
            },
        ));
        // b fails with one partition still synthesizing: none of it stays in flight.
        metrics.observe(&at(
            13_000.0,
            EventKind::JobFailed {
                job: job("b"),
                stage: crate::event::JobStage::Prove,
                message: "x".into(),
            },
        ));
        let text = metrics.render(&memory, "/srv/c1");
        assert_eq!(metric(&text, "cuzk_run_partitions_in_flight"), Some(0.0));
        assert_eq!(metric(&text, "cuzk_run_jobs_in_flight"), Some(0.0));
        assert!(
            text.contains("cuzk_run_proofs_total{spool=\"/srv/c1\",result=\"proved\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("cuzk_run_proofs_total{spool=\"/srv/c1\",result=\"failed\"} 1\n"),
            "{text}"
        );
        // Claimed at 0 ms, written at 12 s: in the 20 s bucket, not the 10 s one.
        assert!(
            text.contains(
                "cuzk_run_proof_duration_seconds_bucket{spool=\"/srv/c1\",kind=\"c2\",le=\"10\"} 0\n"
            ) && text.contains(
                "cuzk_run_proof_duration_seconds_bucket{spool=\"/srv/c1\",kind=\"c2\",le=\"20\"} 1\n"
            ) && text.contains(
                "cuzk_run_proof_duration_seconds_count{spool=\"/srv/c1\",kind=\"update\"} 0\n"
            ),
            "{text}"
        );
        assert_eq!(
            metric(&text, "cuzk_run_proof_duration_seconds_sum"),
            Some(12.0)
        );
        assert!(
            text.contains("cuzk_run_failures_total{spool=\"/srv/c1\",stage=\"prove\"} 1\n")
                && text.contains("cuzk_run_failures_total{spool=\"/srv/c1\",stage=\"bind\"} 0\n"),
            "every stage, the failed one counted: {text}"
        );
    }

    #[test]
    fn provers_faults_gpu_busy_and_parameter_loads_are_counted() {
        use crate::event::{RunStartSettings, WorkerName};
        let mut metrics = RunMetrics::new("r1");
        let cuda = |n| WorkerName::parse(&format!("cuda-{n}"));
        metrics.observe(&at(
            0.0,
            EventKind::RunStarted {
                settings: RunStartSettings {
                    provers: vec![cuda(0), cuda(1)],
                    ..RunStartSettings::default()
                },
            },
        ));
        metrics.observe(&at(
            10.0,
            EventKind::ParamsLoadStarted {
                worker: cuda(0),
                path: "p.params".into(),
            },
        ));
        // A prover waiting for that load is in it, not a second load.
        metrics.observe(&at(
            500.0,
            EventKind::ParamsLoadStarted {
                worker: cuda(1),
                path: "p.params".into(),
            },
        ));
        metrics.observe(&at(
            2_000.0,
            EventKind::ParamsLoadFinished {
                worker: cuda(1),
                path: "p.params".into(),
            },
        ));
        metrics.observe(&at(
            2_010.0,
            EventKind::ParamsLoadFinished {
                worker: cuda(0),
                path: "p.params".into(),
            },
        ));
        for (ms, pct) in [(3_000.0, 50.0), (4_000.0, 100.0)] {
            metrics.observe(&at(
                ms,
                EventKind::GpuBusy {
                    gpu: 1,
                    busy_pct: pct,
                    period_ms: 1_000.0,
                },
            ));
        }
        metrics.observe(&at(
            5_000.0,
            EventKind::DeviceFault {
                job: "a".into(),
                partition: 0,
                worker: cuda(1),
                message: "illegal address".into(),
            },
        ));
        metrics.observe(&at(
            5_001.0,
            EventKind::ProverStopped {
                worker: cuda(1),
                faults: 1,
                message: "lost".into(),
            },
        ));
        let memory = MemoryNow::default();
        let text = metrics.render(&memory, "s");
        for line in [
            "cuzk_run_prover_up{spool=\"s\",prover=\"cuda-0\"} 1\n",
            "cuzk_run_prover_up{spool=\"s\",prover=\"cuda-1\"} 0\n",
            "cuzk_run_device_faults_total{spool=\"s\",prover=\"cuda-0\"} 0\n",
            "cuzk_run_device_faults_total{spool=\"s\",prover=\"cuda-1\"} 1\n",
            "cuzk_run_gpu_busy_seconds_total{spool=\"s\",gpu=\"1\"} 1.5\n",
            "cuzk_run_gpu_busy_ratio{spool=\"s\",gpu=\"1\"} 0.75\n",
            "cuzk_run_params_loads_total{spool=\"s\"} 1\n",
            "cuzk_run_params_load_seconds_total{spool=\"s\"} 2\n",
        ] {
            assert!(text.contains(line), "{line:?} missing in:\n{text}");
        }
    }

    #[test]
    fn a_benchmark_result_is_no_proof() {
        let mut metrics = RunMetrics::new("r1");
        metrics.observe(&at(
            0.0,
            EventKind::JobClaimed {
                job: "shape".into(),
                is_resumed: false,
            },
        ));
        metrics.observe(&at(
            1.0,
            EventKind::JobParsed {
                job: "shape".into(),
                sector: "s-t01000-1".into(),
                sector_size: 32 << 30,
                kind: crate::proof_kind::ProofKind::Seal,
                partitions: 10,
                is_benchmark: true,
            },
        ));
        metrics.observe(&at(
            9.0,
            EventKind::ProofWritten {
                job: "shape".into(),
                path: "outbox/shape.benchmark.json".into(),
            },
        ));
        let text = metrics.render(&MemoryNow::default(), "s");
        assert!(
            text.contains("cuzk_run_proofs_total{spool=\"s\",result=\"proved\"} 0\n"),
            "{text}"
        );
        assert_eq!(
            metric(&text, "cuzk_run_proof_duration_seconds_count"),
            Some(0.0)
        );
    }

    #[test]
    fn a_damocles_label_is_the_textfile_name() {
        assert_eq!(
            label_from_file_name(Path::new("/var/lib/node_exporter/cuzk-c2-gpu0.prom")),
            "cuzk-c2-gpu0"
        );
    }
}
