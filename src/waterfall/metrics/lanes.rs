//! Lanes: each prover lane's busy time, parameter loading, idle time by what it waited for
//! (a PoSt holding the GPU priority lock among them),
//! its idle gaps and the split of its proving time into the prover's own steps; and parameter
//! loading over the whole run, which the verdict weighs.

use serde::Serialize;

use super::waits::WaitSets;
use crate::event::WorkerName;
use crate::waterfall::intervals::Intervals;
use crate::waterfall::shared::ratio;
use crate::waterfall::spans::RunSpans;

/// What an idle lane was waiting for; see the definitions in [`crate::waterfall`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IdleCause {
    /// The lane gave way to a WindowPoSt or WinningPoSt holding bellperson's GPU priority
    /// lock: idle on purpose, not for want of work.
    GpuLock,
    /// The lane's prover was evaluating a partition's a, b and c on the host.
    Evaluation,
    Scheduling,
    Synthesis,
    Drain,
    Input,
}

/// One idle stretch of a lane at least `--gap-ms` long.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Gap {
    pub start_s: f64,
    pub end_s: f64,
    pub length_s: f64,
    pub waiting_for: IdleCause,
}

/// A lane's idle seconds by cause.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct IdleTimes {
    pub gpu_lock_s: f64,
    pub evaluation_s: f64,
    pub scheduling_s: f64,
    pub synthesis_s: f64,
    pub drain_s: f64,
    pub input_s: f64,
}

/// Where a lane's proving time went, from the prover's own step timings. The timeline's
/// "busy" overstates kernel time: the CPU tail and host-side work happen inside it too.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct StepSplit {
    /// Partitions whose GPU_END carried step timings.
    pub partitions: usize,
    /// Their GPU_START to GPU_END time, overlaps counted once: the partitions of a batch
    /// (one call) each span all of it.
    pub prove_s: f64,
    pub fft_s: f64,
    /// Host-to-GPU copies timed apart from the kernels (the cuda backend).
    pub upload_s: f64,
    /// Gigabytes sent from the host to the GPU over PCIe, copies and streamed bases alike
    /// (the cuda backend counts them).
    pub pcie_gb: f64,
    /// The GPU's evaluation of pre-compiled constraints (the cuda backend).
    pub evaluate_s: f64,
    /// `msm_g1_s` one multiexp at a time (H, L, A, B_G1), where the prover times them.
    pub msm_g1_split_s: [f64; 4],
    /// The query multiexps' work that ran beside H, within its time (the cuda backend).
    pub beside_h_s: f64,
    pub msm_g1_s: f64,
    pub msm_g2_s: f64,
    /// Constraint evaluation, FFT and multiexps: the kernel side.
    pub kernel_s: f64,
    /// Scalar conversions and the final combination on the CPU.
    pub cpu_tail_s: f64,
    /// The rest of `prove_s`: host-side preparation, transfers, waiting for the device.
    pub other_s: f64,
}

/// One prover lane (`gpu-0`, `cpu-0`, ...).
#[derive(Clone, Debug, Serialize)]
pub struct LaneMetrics {
    pub name: String,
    /// Partitions it finished proving.
    pub partitions: usize,
    pub busy_s: f64,
    /// `busy_s` over the span.
    pub busy_fraction: f64,
    pub params_s: f64,
    pub idle: IdleTimes,
    pub gaps: Vec<Gap>,
    pub steps: Option<StepSplit>,
    #[serde(skip)]
    pub proving: Intervals,
    #[serde(skip)]
    pub loading: Intervals,
    #[serde(skip)]
    pub idle_spans: Intervals,
    /// The part of `idle_spans` it waited for the GPU priority lock.
    #[serde(skip)]
    pub gpu_lock: Intervals,
}

/// Busy time, idle time by cause, gaps and the step split of one lane over the span.
pub(super) fn lane_metrics(
    name: &str,
    spans: &RunSpans,
    window: &Intervals,
    waits: &WaitSets,
    gap_s: f64,
) -> LaneMetrics {
    let mut proving = Vec::new();
    let mut evaluating = Vec::new();
    let mut partitions = 0;
    let mut steps = StepSplit::default();
    // The spans of the partitions with steps: a batch's overlap, its time counted once.
    let mut stepped = Vec::new();
    for job in &spans.jobs {
        let end = spans.job_end(job);
        for part in job.partitions.values() {
            if part.lane.as_deref() != Some(name) {
                continue;
            }
            if let Some(start) = part.eval_start {
                evaluating.push((start, part.eval_end.or(part.gpu_start).unwrap_or(end)));
            }
            let Some(start) = part.gpu_start else {
                continue;
            };
            // A partition still proving when the timeline ends was busy until then.
            proving.push((start, part.gpu_end.unwrap_or(end)));
            let Some(stop) = part.gpu_end else { continue };
            partitions += 1;
            // A backend that proves in one call (SupraSeal) reports no steps to split.
            if let Some(s) = part.steps.filter(|s| s.gpu_call_ms == 0.0) {
                steps.partitions += 1;
                stepped.push((start, stop));
                steps.fft_s += s.fft_ms / 1e3;
                steps.upload_s += s.upload_ms / 1e3;
                steps.pcie_gb += s.pcie_bytes as f64 / 1e9;
                steps.beside_h_s += s.beside_h_ms / 1e3;
                steps.evaluate_s += s.evaluate_ms / 1e3;
                for (sum, ms) in steps.msm_g1_split_s.iter_mut().zip(s.msm_g1_split_ms) {
                    *sum += ms / 1e3;
                }
                steps.msm_g1_s += s.msm_g1_ms / 1e3;
                steps.msm_g2_s += s.msm_g2_ms / 1e3;
                steps.cpu_tail_s += s.cpu_tail_ms / 1e3;
            }
        }
    }
    steps.prove_s = Intervals::new(stepped).total();
    steps.kernel_s = steps.evaluate_s + steps.fft_s + steps.msm_g1_s + steps.msm_g2_s;
    steps.other_s = (steps.prove_s - steps.kernel_s - steps.cpu_tail_s).max(0.0);

    let proving = Intervals::new(proving).intersect(window);
    // A lane waits on its own loads and on those started ahead of all provers.
    let loader = WorkerName::ParamsLoader.to_string();
    let loading = loads(spans, [name, loader.as_str()], window).subtract(&proving);
    let idle_spans = window.subtract(&proving.union(&loading));
    let lock_waits = spans
        .priority_waits
        .get(name)
        .into_iter()
        .flatten()
        .copied();
    let lock_waits = Intervals::new(lock_waits);
    // Each idle moment gets the first cause that fits. A lane giving way to a PoSt was told
    // to wait, whatever else was going on; after that, a queued partition says the lane
    // should have been proving.
    let gpu_lock = idle_spans.intersect(&lock_waits);
    let rest = idle_spans.subtract(&lock_waits);
    // Then its own host evaluation: the lane is not idle for want of work, its prover is
    // making a, b and c for the partition it proves next.
    let evaluating = Intervals::new(evaluating);
    let evaluation = rest.intersect(&evaluating);
    let rest = rest.subtract(&evaluating);
    let scheduling = rest.intersect(&waits.queued);
    let rest = rest.subtract(&waits.queued);
    let synthesis = rest.intersect(&waits.pending_synthesis);
    let rest = rest.subtract(&waits.pending_synthesis);
    let drain = rest.intersect(&waits.in_flight);
    let input = rest.subtract(&waits.in_flight);
    let by_cause = [
        (&gpu_lock, IdleCause::GpuLock),
        (&evaluation, IdleCause::Evaluation),
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
            gpu_lock_s: gpu_lock.total(),
            evaluation_s: evaluation.total(),
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
        gpu_lock,
    }
}

/// Parameter loading anywhere in the run, over the window: the union of every lane's loads
/// and the preload's, the same loads the lanes count as loading. Unlike a lane's `loading`,
/// proving is not cut out of it (one lane may prove while another loads).
pub(super) fn params_loading(spans: &RunSpans, window: &Intervals) -> Intervals {
    loads(spans, spans.params.keys().map(String::as_str), window)
}

/// When any of `workers` was loading parameters, over the window.
fn loads<'a>(
    spans: &RunSpans,
    workers: impl IntoIterator<Item = &'a str>,
    window: &Intervals,
) -> Intervals {
    let loaded = workers
        .into_iter()
        .filter_map(|worker| spans.params.get(worker))
        .flatten()
        .copied();
    Intervals::new(loaded).intersect(window)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::waterfall::metrics::verdict::Bound;
    use crate::waterfall::screen::screen;
    use crate::waterfall::shared::{Options, Selection};
    use crate::waterfall::test_support::{
        analysis, assert_close, assert_says, fixture, gap, metrics, options,
    };

    /// Parameter loading over the whole of fixture `name`'s last run.
    fn run_loading(name: &str) -> Intervals {
        let timeline = fixture(name);
        let screened = screen(&timeline);
        let run = screened.runs.last().expect("a run");
        let spans = RunSpans::from_events(run.id, &run.events);
        let (start, end) = spans.span();
        params_loading(&spans, &Intervals::window(start, end))
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
                gpu_lock_s: 0.0,
                evaluation_s: 0.0,
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
    fn a_lane_whose_prover_evaluates_on_the_host_is_idle_for_that_and_says_so() {
        // cuda-0 evaluated each partition's a, b and c for 3 s (the first at its pickup, the
        // others beside the 1 s proof before them): idle 1-4, 5-7 and 8-10 s for that, not
        // for scheduling, though a partition sat queued all the while.
        let run = metrics("host_evaluation.csv");
        let lane = &run.lanes[0];
        assert_eq!(lane.name, "cuda-0");
        assert_close(lane.busy_s, 3.0);
        assert_close(lane.idle.evaluation_s, 7.0);
        assert_close(lane.idle.scheduling_s, 0.0);
        assert_close(lane.idle.synthesis_s, 1.0);
        assert_eq!(
            lane.gaps[..2],
            [
                gap(0.0, 1.0, IdleCause::Synthesis),
                gap(1.0, 4.0, IdleCause::Evaluation),
            ]
        );
        assert_eq!(run.verdict.bound, Bound::Evaluation);
        assert!(
            run.verdict.text.starts_with(
                "host-evaluation-bound: cuda-0 idle 61% of the run while its prover evaluated \
                 a, b and c on the host"
            ),
            "{}",
            run.verdict.text
        );
        let text = crate::waterfall::ascii::render_ascii(std::slice::from_ref(&run), 100);
        assert_says(
            &text,
            "idle: host evaluation 7.00 s, synthesis 1.00 s",
            true,
        );
        assert_says(&text, "verdict: GPU-bound", false);
    }

    #[test]
    fn a_lane_giving_way_to_post_is_idle_for_the_gpu_lock() {
        // gpu-0 picked job 1 up at 1 s and waited for the priority lock until 5 s: neither
        // busy nor waiting for synthesis, though the partition sat with it the whole time.
        let run = metrics("priority_lock.csv");
        let lane = &run.lanes[0];
        assert_close(lane.busy_s, 3.5);
        assert_eq!(
            lane.idle,
            IdleTimes {
                gpu_lock_s: 4.0,
                evaluation_s: 0.0,
                scheduling_s: 0.0,
                synthesis_s: 2.0,
                drain_s: 0.5,
                input_s: 0.0,
            }
        );
        assert_eq!(lane.gpu_lock.spans(), &[(1.0, 5.0)]);
        assert_eq!(
            lane.gaps,
            [
                gap(0.0, 1.0, IdleCause::Synthesis),
                gap(1.0, 5.0, IdleCause::GpuLock),
                gap(7.5, 8.5, IdleCause::Synthesis),
            ]
        );
        assert_eq!(run.verdict.bound, Bound::GpuLock);
        assert!(
            run.verdict
                .text
                .starts_with("gpu lock (PoSt): gpu-0 gave way 40% of the run"),
            "{}",
            run.verdict.text
        );
    }

    #[test]
    fn a_wait_without_its_start_row_still_counts_and_an_open_one_runs_to_the_end() {
        let mut timeline = fixture("priority_lock.csv");
        timeline
            .rows
            .retain(|row| row.event != "PRIORITY_WAIT_START");
        let screened = screen(&timeline);
        let run = &screened.runs[0];
        let spans = RunSpans::from_events(run.id, &run.events);
        assert_eq!(spans.priority_waits["gpu-0"], [(1.0, 5.0)]);

        // A wait the timeline never saw end lasted until its last event.
        let mut timeline = fixture("priority_lock.csv");
        timeline.rows.retain(|row| row.event != "PRIORITY_WAIT_END");
        let screened = screen(&timeline);
        let run = &screened.runs[0];
        let spans = RunSpans::from_events(run.id, &run.events);
        assert_eq!(spans.priority_waits["gpu-0"], [(1.0, 10.0)]);
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
        // Both lanes' first proofs end at 4 s, each its own: only gpu-0's (the first) is
        // before the window, which holds three.
        let throughput = run.throughput.as_ref().expect("throughput");
        assert_eq!(throughput.seconds_per_proof, 1.0);
        assert_says(&run.verdict.text, "gpu-0, gpu-1", true);
    }

    #[test]
    fn a_one_call_backend_has_no_step_split() {
        // SupraSeal's GPU_END carries only call_ms: its zero fft and multiexp times are
        // not "kernels ran 0%".
        let run = metrics("supraseal_host.csv");
        assert_eq!(run.lanes.len(), 1);
        assert!(run.lanes[0].partitions > 0);
        assert_eq!(run.lanes[0].steps, None);
        // A lane with step timings keeps its split.
        assert!(metrics("two_gpus.csv").lanes[0].steps.is_some());
    }

    #[test]
    fn run_loading_is_the_union_of_every_lanes_loads_and_the_preloads() {
        // Both GPUs load over [0, 1): counted once.
        assert_eq!(run_loading("two_gpus.csv").spans(), &[(0.0, 1.0)]);
        // The preload ran [0, 10.012); gpu-0 waited on it from 2.601 s; the span starts at
        // the claim, 0.012 s.
        assert_eq!(run_loading("params_bound.csv").spans(), &[(0.012, 10.012)]);
        // With no load at all there is nothing.
        assert!(run_loading("gpu_bound.csv").spans().is_empty());
    }
}
