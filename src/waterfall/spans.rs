//! Spans: one run's events folded into what each job and partition went through.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;

use crate::event::ProveTimings;
use crate::event::{EventKind, WorkerName};
use crate::proof_kind::ProofKind;
use crate::synth::SynthesisProfile;

use super::screen::Event;

/// When each of one partition's events happened (seconds; the first of duplicates wins).
#[derive(Clone, Debug, Default)]
pub(super) struct PartitionSpans {
    /// It waited for room in the memory budget before synthesis (MEMORY_WAIT); a partition
    /// stopped while waiting has its row for that alone.
    pub(super) memory_wait: Option<f64>,
    pub(super) synth_start: Option<f64>,
    pub(super) synth_end: Option<f64>,
    pub(super) chan_send: Option<f64>,
    pub(super) pickup: Option<f64>,
    /// Its a, b and c evaluated on the host by its prover (EVAL_START, EVAL_END).
    pub(super) eval_start: Option<f64>,
    pub(super) eval_end: Option<f64>,
    pub(super) gpu_start: Option<f64>,
    pub(super) gpu_end: Option<f64>,
    /// The prover lane that took it.
    pub(super) lane: Option<String>,
    /// The prover's own step timings, from GPU_END.
    pub(super) steps: Option<ProveTimings>,
    /// How its synthesis went, from SYNTH_END: pre-compiled, left to the GPU, the profile.
    pub(super) synthesis: Option<(bool, bool, SynthesisProfile)>,
}

/// What one job went through.
#[derive(Clone, Debug)]
pub(super) struct JobSpans {
    pub(super) name: String,
    /// Its first event, standing in for CLAIM when the claim row was lost.
    first_seen: f64,
    claim: Option<f64>,
    /// Partitions according to PARSED.
    declared_partitions: Option<usize>,
    /// A C2 or an update, according to PARSED.
    pub(super) kind: ProofKind,
    pub(super) partitions: BTreeMap<usize, PartitionSpans>,
    pub(super) verify_start: Option<f64>,
    pub(super) verify_end: Option<f64>,
    pub(super) done: Option<f64>,
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
            kind: ProofKind::Seal,
            partitions: BTreeMap::new(),
            verify_start: None,
            verify_end: None,
            done: None,
            failed: None,
        }
    }

    pub(super) fn start(&self) -> f64 {
        self.claim.unwrap_or(self.first_seen)
    }

    /// When the job finished (DONE, else FAILED), if it did.
    fn finish(&self) -> Option<f64> {
        self.done.or(self.failed.as_ref().map(|(t, _)| *t))
    }

    /// When its last partition finished synthesis, once all of them have.
    pub(super) fn synthesis_done(&self) -> Option<f64> {
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
    pub(super) fn write_start(&self) -> Option<f64> {
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

    pub(super) fn outcome(&self) -> Outcome {
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
    fn apply(&mut self, event: &Event, workers: &mut Workers) {
        let t = event.t;
        let first = |slot: &mut Option<f64>| {
            slot.get_or_insert(t);
        };
        match &event.kind {
            EventKind::JobClaimed { .. } => first(&mut self.claim),
            EventKind::JobParsed {
                partitions, kind, ..
            } => {
                self.declared_partitions = Some(*partitions);
                self.kind = *kind;
            }
            EventKind::SynthStarted {
                partition, worker, ..
            } => {
                first(&mut self.part(*partition).synth_start);
                workers.note_synthesis(worker);
            }
            EventKind::SynthFinished {
                partition,
                worker,
                is_precompiled,
                is_deferred,
                profile,
                ..
            } => {
                let part = self.part(*partition);
                first(&mut part.synth_end);
                part.synthesis
                    .get_or_insert((*is_precompiled, *is_deferred, *profile));
                workers.note_synthesis(worker);
            }
            EventKind::MemoryWait { partition, .. } => {
                first(&mut self.part(*partition).memory_wait)
            }
            EventKind::PartitionQueued { partition, .. } => {
                first(&mut self.part(*partition).chan_send)
            }
            // A prover lane's moments with the partition: each names the lane that had it.
            EventKind::ProverPickedUp {
                partition, worker, ..
            } => self.at_lane(*partition, worker, workers, t, |p| &mut p.pickup),
            EventKind::HostEvaluationStarted {
                partition, worker, ..
            } => self.at_lane(*partition, worker, workers, t, |p| &mut p.eval_start),
            EventKind::HostEvaluationFinished {
                partition, worker, ..
            } => self.at_lane(*partition, worker, workers, t, |p| &mut p.eval_end),
            EventKind::ProveStarted {
                partition, worker, ..
            } => self.at_lane(*partition, worker, workers, t, |p| &mut p.gpu_start),
            EventKind::ProveFinished {
                partition,
                worker,
                timings,
                ..
            } => {
                let part = self.part(*partition);
                first(&mut part.gpu_end);
                workers.note_lane(part, worker);
                if part.steps.is_none() {
                    part.steps = *timings;
                }
            }
            EventKind::VerifyStarted { .. } => first(&mut self.verify_start),
            EventKind::VerifyFinished { .. } => first(&mut self.verify_end),
            EventKind::ProofWritten { .. } => first(&mut self.done),
            EventKind::JobFailed { stage, message, .. } => {
                self.failed
                    .get_or_insert_with(|| (t, format!("{stage}: {message}")));
            }
            // A fallback changes how long a step took, which the spans already show; a device
            // fault ends the try, and the file's next claim starts another.
            EventKind::CpuFallback { .. } | EventKind::DeviceFault { .. } => {}
            // Run-level events never reach a job; see `RunSpans::from_events`.
            EventKind::RunStarted { .. }
            | EventKind::RunFinished { .. }
            | EventKind::ParamsGenerating { .. }
            | EventKind::ParamsLoadStarted { .. }
            | EventKind::ParamsLoadFinished { .. }
            | EventKind::ConstraintsReady { .. }
            | EventKind::FullSynthesis { .. }
            | EventKind::PriorityWaitStarted { .. }
            | EventKind::PriorityWaitFinished { .. }
            | EventKind::GpuBusy { .. }
            | EventKind::ProverStopped { .. }
            | EventKind::FileDeferred { .. }
            | EventKind::FileSetAside { .. }
            | EventKind::FileSkipped { .. }
            | EventKind::ClaimTaken { .. }
            | EventKind::ResultSuperseded { .. }
            | EventKind::StopRequested => {}
        }
    }

    /// Notes time `t` in `partition`'s `slot` (the first time wins) and the lane `worker`.
    fn at_lane(
        &mut self,
        partition: usize,
        worker: &WorkerName,
        workers: &mut Workers,
        t: f64,
        slot: fn(&mut PartitionSpans) -> &mut Option<f64>,
    ) {
        let part = self.part(partition);
        slot(part).get_or_insert(t);
        workers.note_lane(part, worker);
    }

    fn part(&mut self, partition: usize) -> &mut PartitionSpans {
        self.partitions.entry(partition).or_default()
    }
}

/// How a job ended.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum Outcome {
    Proved,
    Failed { at_s: f64, reason: String },
    Unfinished,
}

/// The workers seen in a run.
#[derive(Clone, Debug, Default)]
pub(super) struct Workers {
    pub(super) synthesis: BTreeSet<String>,
    lanes: BTreeSet<String>,
}

impl Workers {
    fn note_synthesis(&mut self, worker: &WorkerName) {
        if !worker.is_empty() {
            self.synthesis.insert(worker.to_string());
        }
    }

    fn note_lane(&mut self, part: &mut PartitionSpans, worker: &WorkerName) {
        if worker.is_empty() {
            return;
        }
        let name = worker.to_string();
        part.lane.get_or_insert_with(|| name.clone());
        self.lanes.insert(name);
    }
}

/// What a GPU_BUSY row says: over `[start, end)` (seconds) a GPU ran kernels `busy` of the
/// time (a fraction).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct KernelBusy {
    pub(super) gpu: usize,
    pub(super) start: f64,
    pub(super) end: f64,
    pub(super) busy: f64,
}

/// One run folded into spans.
#[derive(Clone, Debug)]
pub(super) struct RunSpans {
    pub(super) id: String,
    /// The first and last event of the run: its time axis.
    pub(super) first_t: f64,
    pub(super) last_t: f64,
    /// Jobs in order of their start.
    pub(super) jobs: Vec<JobSpans>,
    pub(super) workers: Workers,
    /// Parameter loading per lane; the loader's (`params`) includes generating test
    /// parameters (`--gen-test-params`), which the run waits for the same way.
    pub(super) params: BTreeMap<String, Vec<(f64, f64)>>,
    /// Test parameters being generated (PARAMS_GEN until their load starts).
    pub(super) generating: Vec<(f64, f64)>,
    /// Constraints being recorded in this run (a CONSTRAINTS_READY of a recording, back by
    /// the time it took): the circuit's partitions wait for them.
    pub(super) recording: Vec<(f64, f64)>,
    /// Per lane, the stretches it gave way to a PoSt holding the GPU priority lock.
    pub(super) priority_waits: BTreeMap<String, Vec<(f64, f64)>>,
    /// Files left in the inbox as incomplete and never claimed in this run.
    pub(super) deferred: BTreeSet<String>,
    /// The GPUs' kernel activity, period by period; empty in timelines without GPU_BUSY.
    pub(super) kernel_busy: Vec<KernelBusy>,
}

impl RunSpans {
    pub(super) fn from_events(id: &str, events: &[Event]) -> RunSpans {
        let mut jobs: Vec<JobSpans> = Vec::new();
        let mut job_index: HashMap<&str, usize> = HashMap::new();
        let mut workers = Workers::default();
        let mut params: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
        let mut loading: HashMap<&WorkerName, f64> = HashMap::new();
        let mut generating_since: HashMap<&str, f64> = HashMap::new();
        let mut generating = Vec::new();
        let mut recording = Vec::new();
        let mut priority_waits: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
        let mut waiting: HashMap<&WorkerName, f64> = HashMap::new();
        let mut deferred = BTreeSet::new();
        let mut kernel_busy = Vec::new();
        for event in events {
            match &event.kind {
                // Loads ahead of the provers (the parameter loader's) are not a prover lane
                // and must not count as an idle one.
                EventKind::ParamsLoadStarted { worker, path } => {
                    if worker.is_prover_lane() {
                        workers.lanes.insert(worker.to_string());
                    }
                    loading.entry(worker).or_insert(event.t);
                    // Generated test parameters are loaded once made: the generation ended.
                    if let Some(start) = generating_since.remove(path.as_str()) {
                        generating.push((start, event.t));
                    }
                }
                EventKind::ParamsGenerating { path } => {
                    generating_since.entry(path.as_str()).or_insert(event.t);
                }
                EventKind::ConstraintsReady {
                    is_recorded: true,
                    ms,
                    ..
                } => recording.push(((event.t - ms / 1e3).max(0.0), event.t)),
                EventKind::ParamsLoadFinished { worker, .. } => {
                    if worker.is_prover_lane() {
                        workers.lanes.insert(worker.to_string());
                    }
                    if let Some(start) = loading.remove(worker) {
                        params
                            .entry(worker.to_string())
                            .or_default()
                            .push((start, event.t));
                    }
                }
                EventKind::PriorityWaitStarted { worker, .. } => {
                    workers.lanes.insert(worker.to_string());
                    waiting.entry(worker).or_insert(event.t);
                }
                EventKind::PriorityWaitFinished { worker, waited_ms } => {
                    workers.lanes.insert(worker.to_string());
                    // Without its start row, the wait still says how long it was.
                    let start = waiting.remove(worker).unwrap_or(event.t - waited_ms / 1e3);
                    priority_waits
                        .entry(worker.to_string())
                        .or_default()
                        .push((start, event.t));
                }
                EventKind::FileDeferred { job, .. } | EventKind::FileSetAside { job, .. } => {
                    deferred.insert(job.clone());
                }
                EventKind::GpuBusy {
                    gpu,
                    busy_pct,
                    period_ms,
                } => kernel_busy.push(KernelBusy {
                    gpu: *gpu,
                    start: event.t - period_ms / 1e3,
                    end: event.t,
                    busy: (busy_pct / 100.0).clamp(0.0, 1.0),
                }),
                // Never claimed: no job span; `cuzk prove-dir` and the timeline say why.
                EventKind::FileSkipped { .. } => {}
                kind => {
                    // Other run-level events mark no job.
                    let Some(job) = kind.job() else { continue };
                    let index = *job_index.entry(job).or_insert_with(|| {
                        jobs.push(JobSpans::new(job, event.t));
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
                .entry(lane.to_string())
                .or_default()
                .push((start, last_t));
        }
        // So does a generation, and it is parameter time for every lane, as the loader's
        // loads ahead of the provers are.
        generating.extend(generating_since.into_values().map(|start| (start, last_t)));
        if !generating.is_empty() {
            params
                .entry(WorkerName::ParamsLoader.to_string())
                .or_default()
                .extend(generating.iter().copied());
        }
        // So does a wait for the priority lock.
        for (lane, start) in waiting {
            priority_waits
                .entry(lane.to_string())
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
            generating,
            recording,
            priority_waits,
            deferred,
            kernel_busy,
        }
    }

    /// When `job` stopped occupying the pipeline; an unfinished job runs to the timeline's end.
    pub(super) fn job_end(&self, job: &JobSpans) -> f64 {
        job.finish().unwrap_or(self.last_t).max(job.start())
    }

    /// First CLAIM to last DONE/FAILED. A job that never finished (the run was stopped or the
    /// timeline torn) keeps the span open to the last event; no job at all gives the axis.
    pub(super) fn span(&self) -> (f64, f64) {
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
    pub(super) fn lanes(&self) -> Vec<&str> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::waterfall::analysis::analyze;
    use crate::waterfall::ascii::render_ascii;
    use crate::waterfall::screen::screen;
    use crate::waterfall::shared::Selection;
    use crate::waterfall::svg::xml_escape;
    use crate::waterfall::test_support::{fixture, options};

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
    fn lane_names_sort_naturally() {
        let mut lanes = vec!["gpu-10", "cpu-0", "gpu-2"];
        lanes.sort_by_key(|l| natural_key(l));
        assert_eq!(lanes, ["cpu-0", "gpu-2", "gpu-10"]);
        assert_eq!(xml_escape("a<b>&'\"\u{7}"), "a&lt;b&gt;&amp;&apos;&quot;?");
    }
}
