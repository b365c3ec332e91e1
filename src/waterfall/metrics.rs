//! Metrics: everything the drawings show, computed once from a run's spans: each row's
//! phases, the prover lanes and their idle gaps, the queue, steady-state throughput and the
//! verdict.

use serde::Serialize;

use super::intervals::Intervals;
use super::spans::{JobSpans, Outcome, PartitionSpans, RunSpans};
use super::{plural, ratio, sum, Options};

/// What a row or a lane was doing; each has a glyph in ASCII and a colour in SVG.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum Stage {
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
    pub(super) const ALL: [Stage; 8] = [
        Stage::Queue,
        Stage::Synthesis,
        Stage::Channel,
        Stage::Prove,
        Stage::Verify,
        Stage::Write,
        Stage::Params,
        Stage::Idle,
    ];
    pub(super) const JOB: [Stage; 6] = [
        Stage::Queue,
        Stage::Synthesis,
        Stage::Channel,
        Stage::Prove,
        Stage::Verify,
        Stage::Write,
    ];
    pub(super) const LANE: [Stage; 3] = [Stage::Prove, Stage::Params, Stage::Idle];

    pub(super) fn glyph(self) -> char {
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

    pub(super) fn colour(self) -> &'static str {
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

    pub(super) fn legend(self) -> &'static str {
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

    pub(super) fn index(self) -> usize {
        self as usize
    }
}

/// The glyph and colour of a failure.
pub(super) const FAILED_GLYPH: char = 'X';
pub(super) const FAILED_COLOUR: &str = "#e15759";

/// A stretch of time in one stage.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub(super) struct Segment {
    pub(super) start_s: f64,
    pub(super) end_s: f64,
    pub(super) stage: Stage,
}

/// Seconds a row spent in each phase, and its total (they add up).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub(super) struct Phases {
    queue_s: f64,
    synthesis_s: f64,
    channel_s: f64,
    prove_s: f64,
    verify_s: f64,
    write_s: f64,
    total_s: f64,
}

impl Phases {
    pub(super) const HEADINGS: [&'static str; 7] = [
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

    pub(super) fn columns(&self) -> [f64; 7] {
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
pub(super) struct RowMetrics {
    pub(super) label: String,
    job: String,
    pub(super) partition: Option<usize>,
    pub(super) outcome: Outcome,
    start_s: f64,
    end_s: f64,
    pub(super) phases: Phases,
    #[serde(skip)]
    pub(super) segments: Vec<Segment>,
}

/// Per-column min, average and max over the proved rows.
#[derive(Clone, Debug, Serialize)]
pub(super) struct PhaseSummary {
    pub(super) rows: usize,
    pub(super) min: Phases,
    pub(super) avg: Phases,
    pub(super) max: Phases,
}

/// What an idle lane was waiting for; see the definitions in [`crate::waterfall`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum IdleCause {
    Scheduling,
    Synthesis,
    Drain,
    Input,
}

impl IdleCause {
    pub(super) fn describe(self) -> &'static str {
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
pub(super) struct Gap {
    pub(super) start_s: f64,
    pub(super) end_s: f64,
    pub(super) length_s: f64,
    pub(super) waiting_for: IdleCause,
}

/// A lane's idle seconds by cause.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub(super) struct IdleTimes {
    pub(super) scheduling_s: f64,
    pub(super) synthesis_s: f64,
    pub(super) drain_s: f64,
    pub(super) input_s: f64,
}

/// Where a lane's proving time went, from the prover's own step timings. The timeline's
/// "busy" overstates kernel time: the CPU tail and host-side work happen inside it too.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub(super) struct StepSplit {
    /// Partitions whose GPU_END carried step timings.
    pub(super) partitions: usize,
    /// Their GPU_START to GPU_END time.
    pub(super) prove_s: f64,
    pub(super) fft_s: f64,
    pub(super) msm_g1_s: f64,
    pub(super) msm_g2_s: f64,
    /// FFT and multiexps: the kernel side.
    pub(super) kernel_s: f64,
    /// Scalar conversions and the final combination on the CPU.
    pub(super) cpu_tail_s: f64,
    /// The rest of `prove_s`: host-side preparation, transfers, waiting for the device.
    pub(super) other_s: f64,
}

/// One prover lane (`gpu-0`, `cpu-0`, ...).
#[derive(Clone, Debug, Serialize)]
pub(super) struct LaneMetrics {
    pub(super) name: String,
    /// Partitions it finished proving.
    pub(super) partitions: usize,
    pub(super) busy_s: f64,
    /// `busy_s` over the span.
    pub(super) busy_fraction: f64,
    pub(super) params_s: f64,
    pub(super) idle: IdleTimes,
    pub(super) gaps: Vec<Gap>,
    pub(super) steps: Option<StepSplit>,
    #[serde(skip)]
    pub(super) proving: Intervals,
    #[serde(skip)]
    pub(super) loading: Intervals,
    #[serde(skip)]
    pub(super) idle_spans: Intervals,
}

/// The channel between synthesis and the provers.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub(super) struct QueueMetrics {
    /// Time with at least one partition queued.
    pub(super) queued_s: f64,
    pub(super) queued_fraction: f64,
    /// Queue time summed over partitions (can exceed the span).
    pub(super) partition_wait_s: f64,
    /// Time with a partition queued while every lane was busy or loading parameters.
    pub(super) prover_bound_s: f64,
    pub(super) prover_bound_fraction: f64,
}

/// What a throughput figure was measured over.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum Basis {
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
pub(super) struct Throughput {
    pub(super) seconds_per_proof: f64,
    pub(super) proofs_per_hour: f64,
    pub(super) basis: Basis,
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
pub(super) struct Verdict {
    bound: Bound,
    pub(super) text: String,
}

/// Everything reported about one run.
#[derive(Clone, Debug, Serialize)]
pub(super) struct RunMetrics {
    pub(super) run_id: String,
    /// Its place among the file's runs, from 1.
    pub(super) position: usize,
    pub(super) runs_in_file: usize,
    /// The time axis: the run's first and last event.
    pub(super) start_s: f64,
    pub(super) end_s: f64,
    pub(super) wall_s: f64,
    pub(super) span_start_s: f64,
    pub(super) span_end_s: f64,
    pub(super) span_s: f64,
    pub(super) jobs: usize,
    pub(super) proved: usize,
    pub(super) failed: usize,
    pub(super) unfinished: usize,
    pub(super) deferred: usize,
    pub(super) synthesis_workers: Vec<String>,
    pub(super) gap_threshold_s: f64,
    pub(super) rows: Vec<RowMetrics>,
    pub(super) summary: Option<PhaseSummary>,
    pub(super) throughput: Option<Throughput>,
    pub(super) queue: QueueMetrics,
    pub(super) lanes: Vec<LaneMetrics>,
    pub(super) verdict: Verdict,
}

impl RunMetrics {
    pub(super) fn compute(
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
                steps.fft_s += s.fft_ms / 1e3;
                steps.msm_g1_s += s.msm_g1_ms / 1e3;
                steps.msm_g2_s += s.msm_g2_ms / 1e3;
                steps.cpu_tail_s += s.cpu_tail_ms / 1e3;
            }
        }
    }
    steps.kernel_s = steps.fft_s + steps.msm_g1_s + steps.msm_g2_s;
    steps.other_s = (steps.prove_s - steps.kernel_s - steps.cpu_tail_s).max(0.0);

    let proving = Intervals::new(proving).intersect(window);
    // A lane waits on its own loads and on those started ahead of all provers.
    let loaders = [name, crate::event::PRELOAD_WORKER];
    let loaded = loaders
        .iter()
        .filter_map(|worker| spans.params.get(*worker))
        .flatten()
        .copied();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::waterfall::test_support::{analysis, metrics, options};
    use crate::waterfall::Selection;

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

    #[test]
    fn loads_ahead_of_the_provers_count_as_loading_for_every_lane() {
        // The shared loader ran 0-4 s; gpu-0 proved 4-6 s. Its wait is loading, not idle,
        // and there is no lane named after the loader.
        let run = metrics("params_preload.csv");
        assert_eq!(run.lanes.len(), 1);
        let lane = &run.lanes[0];
        assert_eq!(lane.name, "gpu-0");
        assert_close(lane.params_s, 4.0);
        assert_close(lane.busy_s, 2.0);
        assert!(lane.gaps.is_empty(), "{:?}", lane.gaps);
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
}
