//! Spans: one run's events folded into what each job and partition went through.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;

use super::screen::{Event, EventName};

/// When each of one partition's events happened (seconds; the first of duplicates wins).
#[derive(Clone, Debug, Default)]
pub(super) struct PartitionSpans {
    pub(super) synth_start: Option<f64>,
    pub(super) synth_end: Option<f64>,
    pub(super) chan_send: Option<f64>,
    pub(super) pickup: Option<f64>,
    pub(super) gpu_start: Option<f64>,
    pub(super) gpu_end: Option<f64>,
    /// The prover lane that took it.
    pub(super) lane: Option<String>,
    /// The prover's own step timings, from GPU_END's detail.
    pub(super) steps: Option<ProverSteps>,
}

/// The prover's steps for one partition, in seconds (GPU_END's `fft_ms=..;..;cpu_ms=..`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct ProverSteps {
    pub(super) fft: f64,
    pub(super) msm_g1: f64,
    pub(super) msm_g2: f64,
    pub(super) cpu_tail: f64,
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
pub(super) struct JobSpans {
    pub(super) name: String,
    /// Its first event, standing in for CLAIM when the claim row was lost.
    first_seen: f64,
    claim: Option<f64>,
    /// Partitions according to PARSED.
    declared_partitions: Option<usize>,
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
pub(super) struct RunSpans {
    pub(super) id: String,
    /// The first and last event of the run: its time axis.
    pub(super) first_t: f64,
    pub(super) last_t: f64,
    /// Jobs in order of their start.
    pub(super) jobs: Vec<JobSpans>,
    pub(super) workers: Workers,
    /// Parameter loading per lane.
    pub(super) params: BTreeMap<String, Vec<(f64, f64)>>,
    /// Files left in the inbox as incomplete and never claimed in this run.
    pub(super) deferred: BTreeSet<String>,
}

/// Parameter loads ahead of the provers are recorded under the worker `params`, which is
/// not a prover lane and must not count as an idle one.
fn is_prover_lane(worker: &str) -> bool {
    worker != PARAMS_LOADER
}

/// The worker name of parameter loads started ahead of the provers; every lane waits on them.
pub(super) const PARAMS_LOADER: &str = "params";

impl RunSpans {
    pub(super) fn from_events(id: &str, events: &[Event<'_>]) -> RunSpans {
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
    use crate::waterfall::ascii::render_ascii;
    use crate::waterfall::screen::screen;
    use crate::waterfall::svg::xml_escape;
    use crate::waterfall::test_support::{fixture, options};
    use crate::waterfall::{analyze, Selection};

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
