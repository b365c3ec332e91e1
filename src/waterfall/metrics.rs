//! Metrics: everything the drawings show, computed once from a run's spans into plain data
//! that carries no glyphs, colours or layout. Its main type is [`RunMetrics`], one run's
//! numbers; each part of it is measured in a submodule of its own:
//!
//! - [`stage`]: the stages a row or lane can be in, and their names;
//! - [`rows`]: each row's stages and phase seconds, and their min/avg/max;
//! - [`waits`]: the run-wide sets of waiting work that idle time is classified by;
//! - [`lanes`]: each prover lane's busy, loading and idle time, gaps and step split, and
//!   parameter loading over the run;
//! - [`queue`]: how long partitions waited for a prover;
//! - [`memory_waits`]: how long partitions waited for the memory budget before synthesis;
//! - [`throughput`]: seconds per proof, over the steady state;
//! - [`gpu_busy`]: the GPUs' kernel-busy share of the run and of the provers' busy time, from
//!   the driver's GPU_BUSY rows;
//! - [`verdict`]: the stage that held the run back, and what to change.

use serde::Serialize;

use super::intervals::Intervals;
use super::shared::Options;
use super::spans::{Outcome, RunSpans};

mod gpu_busy;
mod lanes;
mod memory_waits;
mod queue;
mod rows;
mod stage;
mod synthesis_split;
mod throughput;
mod verdict;
mod waits;

// Only tests build gaps by hand; the drawings read them off each lane.
pub(super) use gpu_busy::GpuKernels;
#[cfg(test)]
pub(super) use lanes::Gap;
pub(super) use lanes::{IdleCause, LaneMetrics};
pub(super) use memory_waits::MemoryWaits;
pub(super) use queue::QueueMetrics;
pub(super) use rows::{PhaseSummary, RowMetrics};
pub(super) use stage::Stage;
pub(super) use synthesis_split::SynthesisSplit;
pub(super) use throughput::{Basis, Throughput};
pub(super) use verdict::Verdict;

use gpu_busy::gpu_kernels;
use lanes::{lane_metrics, params_loading};
use memory_waits::memory_waits;
use queue::queue_metrics;
use rows::{rows, summarize};
use synthesis_split::synthesis_split;
use throughput::throughput;
use verdict::{verdict, SynthesisUse};
use waits::WaitSets;

/// Everything reported about one run.
#[derive(Clone, Debug, Serialize)]
pub struct RunMetrics {
    pub run_id: String,
    /// Its place among the file's runs, from 1.
    pub position: usize,
    pub runs_in_file: usize,
    /// The time axis: the run's first and last event.
    pub start_s: f64,
    pub end_s: f64,
    pub wall_s: f64,
    pub span_start_s: f64,
    pub span_end_s: f64,
    pub span_s: f64,
    pub jobs: usize,
    pub proved: usize,
    pub failed: usize,
    pub unfinished: usize,
    pub deferred: usize,
    pub synthesis_workers: Vec<String>,
    pub gap_threshold_s: f64,
    pub rows: Vec<RowMetrics>,
    pub summary: Option<PhaseSummary>,
    pub throughput: Option<Throughput>,
    pub queue: QueueMetrics,
    /// Partitions that waited for the memory budget before their synthesis.
    pub memory: MemoryWaits,
    /// Where synthesis time went; absent from timelines without synthesis profiles.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub synthesis: Option<SynthesisSplit>,
    pub lanes: Vec<LaneMetrics>,
    /// The GPUs' kernel activity; absent without GPU_BUSY rows (CPU runs, older timelines).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_kernels: Option<GpuKernels>,
    pub verdict: Verdict,
}

impl RunMetrics {
    /// Measures one run: `position` is its place among the file's `runs_in_file` runs.
    pub fn compute(
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
        let memory = memory_waits(spans, &window);
        let synthesis = synthesis_split(spans);
        let rows = rows(spans, options.per_partition);
        let count = |wanted: fn(&Outcome) -> bool| {
            spans.jobs.iter().filter(|j| wanted(&j.outcome())).count()
        };
        let proved = count(|o| *o == Outcome::Proved);
        let synthesis_workers: Vec<String> = spans.workers.synthesis.iter().cloned().collect();
        let params_s = params_loading(spans, &window).total();
        let generating_s = Intervals::new(spans.generating.iter().copied())
            .intersect(&window)
            .total();
        let recording_s = Intervals::new(spans.recording.iter().copied())
            .intersect(&window)
            .total();
        let gpu_kernels = gpu_kernels(spans, &lanes, &window);
        let verdict = verdict(
            &lanes,
            &queue,
            span_s,
            (params_s, generating_s, recording_s),
            SynthesisUse {
                workers: synthesis_workers.len(),
                partitions: spans.jobs.iter().map(|job| job.partitions.len()).sum(),
            },
            gpu_kernels.as_ref(),
            &memory,
        );
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
            memory,
            synthesis,
            lanes,
            gpu_kernels,
            verdict,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::rows::Phases;
    use super::verdict::Bound;
    use super::*;
    use crate::waterfall::test_support::{gap, metrics};

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
                behind_loading_s: 0.0,
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
}
