//! The verdict: the one stage that held the run back, by how much, and what to change.

use serde::Serialize;

use super::gpu_busy::{GpuKernels, LaneDevice};
use super::lanes::{LaneMetrics, StepSplit};
use super::memory_waits::MemoryWaits;
use super::queue::QueueMetrics;
use crate::params::PARAMS_ENV;
use crate::waterfall::shared::{plural, ratio, sum};

/// The stage that held the run back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    /// Partitions queued while every lane was busy or loading.
    Prover,
    /// As [`Bound::Prover`] on GPUs, but the GPUs ran kernels less than
    /// [`HOST_BOUND_BELOW`] of the time the provers were busy: the provers' host side held
    /// the run back, not the GPUs.
    Host,
    /// As [`Bound::Prover`] on GPUs, but the provers spent [`UPLOAD_BOUND_FROM`] of their
    /// time or more copying each partition's data to the GPU: the bus held the run back.
    Uploads,
    /// Lanes idle while their provers evaluated a, b and c on the host, right before the
    /// proof (the constraints did not fit on the GPU).
    Evaluation,
    /// Lanes idle, waiting for synthesis.
    Synthesis,
    /// Lanes idle waiting for synthesis while partitions waited for the memory budget: memory
    /// capped how many partitions were synthesized at once; see [`MEMORY_HELD_FROM`].
    Memory,
    /// A lane idle while a partition was queued.
    Scheduling,
    /// Lanes gave way to a PoSt holding the GPU priority lock.
    GpuLock,
    /// Parameter loading covered much of the run; see [`PARAMS_BOUND_FROM`].
    Params,
    /// The run recorded a circuit's constraints, which its partitions wait for, over
    /// [`PARAMS_BOUND_FROM`] of the run and longer than its parameters loaded, while the lanes
    /// waited for synthesis or queued partitions piled up behind the late start: paid once
    /// per machine.
    Recording,
    /// Nothing above held the run back for long.
    Balanced,
    /// No partition reached a prover.
    NoProver,
}

/// The one-line conclusion.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Verdict {
    pub bound: Bound,
    pub text: String,
}

/// Below this share of the span, no stage is said to hold the run back.
const BALANCED_BELOW: f64 = 0.05;

/// From this share of the span on, the run is parameter-bound, whatever else it waited for.
///
/// Loading is paid once per process, before a lane's first proof, and a run that proves many
/// files amortizes it, so every short run shows some: the 5% that names another stage would
/// call nearly every test run parameter-bound. 40% sits well above what a run of several files
/// spends loading (two GPUs loading for 1 s of an 8 s run is 12%) and well below a one-file run
/// that waits for its parameters (10 s of 13 s is 77%). At that share, parameters already in
/// memory could shorten the run by up to two-fifths (less where loads overlapped other work).
///
/// It goes ahead of the other candidates rather than competing with them, because at this
/// size their numbers are mostly its consequence: a lane's wait for synthesis only counts once
/// its loading is over. Below it, the partitions queued behind a load are weighed as loading's
/// own candidate, not as prover-bound time.
const PARAMS_BOUND_FROM: f64 = 0.4;

/// Below this share of the provers' busy time with a kernel running (NVML's count, over the
/// time the GPUs' prover lanes were proving), a GPU-bound run is called host-bound.
///
/// Below 70%, more than three tenths of the time a prover held its GPU had no kernel on it at
/// all: the host side of each proof (preparing inputs, copies, the CPU's own share such as
/// SupraSeal's G2 multiexp) is a large part of it, and another GPU would idle the same way; a
/// faster GPU or more of them shortens only the kernel part. The measure itself is generous:
/// NVML counts a moment busy when any kernel runs, however few of the GPU's cores it uses, so
/// a GPU that bounds its prover reads close to 100%; and the 1 s periods blur only the edges
/// of each proof, a fraction of a second of proofs that take seconds. 70% sits clear of that
/// blur and well above the 46% Curio's engine measured when its host side held its GPUs
/// back while its timeline said 90% busy.
const HOST_BOUND_BELOW: f64 = 0.7;

/// From this share of the provers' time spent on uploads on (the copies the cuda backend
/// times apart from its kernels: a, b and c, or the witness), a GPU-bound run is called
/// PCIe-bound.
///
/// Where the GPU keeps the constraints and the bases, a 32GiB partition's only copy is its
/// witness, 0.1 s of 1.9 s (5%); a card that keeps neither sends a, b and c, 12.9 GB and about
/// 0.7 s of 2.6 s (28%). A quarter sits above what any resident run spends and at what a
/// card too small for the constraints does: there the bus, not the kernels, is what a larger
/// card (or a larger --gpu-memory) removes, and more GPUs on the same bus do not.
const UPLOAD_BOUND_FROM: f64 = 0.25;

/// From this share of the span with a partition waiting for the memory budget on, a
/// synthesis-bound run is called memory-bound.
///
/// A partition waits for memory only when the budget is full, so any wait means the budget,
/// not `--synth-jobs`, capped the partitions in synthesis at that moment. A few waits at a
/// sector's start are normal (a sector's partitions arrive together); a tenth of the run
/// means the cap held for a good part of it, and raising `--synth-jobs` (the synthesis-bound
/// advice) would change nothing.
const MEMORY_HELD_FROM: f64 = 0.1;

/// How much synthesis a run had to do, and with how many workers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct SynthesisUse {
    /// Synthesis workers that ran a partition.
    pub(super) workers: usize,
    /// Partitions synthesized: with no more of them than workers, more workers cannot help.
    pub(super) partitions: usize,
}

/// Names the stage that held the run back, by how much, and what to change.
///
/// A run where no partition reached a prover has no verdict. Otherwise parameter loading
/// (`params_s`, every lane's loads and the preload's, see
/// [`params_loading`](super::lanes::params_loading)) comes first once it reaches
/// [`PARAMS_BOUND_FROM`] of the span. Below that, the candidates are weighed in seconds:
/// prover-bound time (partitions queued while every lane was occupied, none of them loading),
/// time queued behind a parameter load (every lane occupied, some loading), the lanes' average
/// idle time waiting for synthesis, the worst lane's idle time with a partition queued
/// (scheduling), and the lanes' average time giving way to a PoSt (gpu lock). A run bound by
/// its GPU provers whose GPUs ran kernels (`kernels`, from the driver) less than
/// [`HOST_BOUND_BELOW`] of the provers' busy time is host-bound instead, and a run bound by
/// synthesis while partitions waited for `memory` [`MEMORY_HELD_FROM`] of it is memory-bound.
pub(super) fn verdict(
    lanes: &[LaneMetrics],
    queue: &QueueMetrics,
    span_s: f64,
    (params_s, generating_s, recording_s): (f64, f64, f64),
    synthesis: SynthesisUse,
    kernels: Option<&GpuKernels>,
    memory: &MemoryWaits,
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
    let gpu_lock_wait = sum(lanes.iter().map(|lane| lane.idle.gpu_lock_s)) / count;
    let evaluation_wait = sum(lanes.iter().map(|lane| lane.idle.evaluation_s)) / count;
    // Partitions queued behind a parameter load wait for the parameters, not for the
    // provers' speed: a streamed 32GiB run whose GPU was busy a third of the time, loading
    // for another third with partitions queued, is not GPU-bound.
    let candidates = [
        (
            Bound::Prover,
            (queue.prover_bound_s - queue.behind_loading_s).max(0.0),
        ),
        (Bound::Params, queue.behind_loading_s),
        (Bound::Evaluation, evaluation_wait),
        (Bound::Synthesis, synthesis_wait),
        (Bound::Scheduling, scheduling),
        (Bound::GpuLock, gpu_lock_wait),
    ];
    let (bound, seconds) =
        candidates.into_iter().fold(
            (Bound::Balanced, 0.0),
            |best, c| if c.1 > best.1 { c } else { best },
        );
    let on_gpus = lanes
        .iter()
        .all(|lane| LaneDevice::of(&lane.name) != LaneDevice::Cpu);
    let kernel_share = kernels.and_then(|k| k.proving_fraction);
    let steps: Vec<&StepSplit> = lanes
        .iter()
        .filter_map(|lane| lane.steps.as_ref())
        .collect();
    let upload_share = ratio(
        sum(steps.iter().map(|s| s.upload_s)),
        sum(steps.iter().map(|s| s.prove_s)),
    );
    let pcie_gb = ratio(
        sum(steps.iter().map(|s| s.pcie_gb)),
        steps.iter().map(|s| s.partitions).sum::<usize>() as f64,
    );
    // A run's start, paid once: loading the parameters and recording the constraints
    // overlap, and the longer of the two held back the first proof.
    let bound = if ratio(recording_s, span_s) >= PARAMS_BOUND_FROM && recording_s > params_s {
        Bound::Recording
    } else if ratio(params_s, span_s) >= PARAMS_BOUND_FROM {
        Bound::Params
    } else if ratio(seconds, span_s) < BALANCED_BELOW {
        Bound::Balanced
    } else if bound == Bound::Prover
        && on_gpus
        && kernel_share.is_some_and(|share| share < HOST_BOUND_BELOW)
    {
        Bound::Host
    } else if bound == Bound::Prover && on_gpus && upload_share >= UPLOAD_BOUND_FROM {
        Bound::Uploads
    } else if bound == Bound::Synthesis && ratio(recording_s, span_s) >= PARAMS_BOUND_FROM {
        Bound::Recording
    } else if bound == Bound::Synthesis && memory.waiting_fraction >= MEMORY_HELD_FROM {
        Bound::Memory
    } else {
        bound
    };
    let pct = |fraction: f64| format!("{:.0}%", fraction * 100.0);
    let average = if lanes.len() > 1 { " on average" } else { "" };
    let were = if lanes.len() > 1 { "were" } else { "was" };
    let text = match bound {
        Bound::Prover => {
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
                 {were} {} busy{average}; {advice}",
                queue.queued_s,
                pct(queue.queued_fraction),
                pct(busy)
            )
        }
        Bound::Host => {
            // ec-gpu lanes can overlap one partition's host side with another's kernels;
            // the cuda backend's host side is its uploads and the multiexps' host steps;
            // SupraSeal's one prover cannot
            // overlap, its CPU side only goes faster on more cores.
            let devices: Vec<LaneDevice> = lanes.iter().map(|l| LaneDevice::of(&l.name)).collect();
            let advice = if devices.iter().all(|d| matches!(d, LaneDevice::Gpu(_))) {
                "overlap the host side with more provers per GPU (--provers-per-gpu) or give \
                 it faster CPU cores"
            } else if devices.iter().all(|d| matches!(d, LaneDevice::Resident(_))) {
                "the GPU waits inside the cuda backend's calls, on its uploads (the witness, \
                 or a, b and c where the host evaluates the constraints) and the multiexps' \
                 host-side steps: the prover's step timings show which"
            } else {
                "SupraSeal's CPU side (its preprocessing and the B-in-G2 multiexp on the CPU) \
                 sets the pace, and more or faster CPU cores shorten it"
            };
            format!(
                "host-bound: partitions waited {:.1} s in the queue ({} of the run) while \
                 {names} {were} {} busy{average}, but GPU kernels ran only {} of that time \
                 (NVML): the GPU idles inside the prover's calls (host-side preparation, \
                 copies, CPU work), so adding GPUs will not help in proportion; {advice}",
                queue.queued_s,
                pct(queue.queued_fraction),
                pct(busy),
                pct(kernel_share.unwrap_or(0.0))
            )
        }
        Bound::Uploads => format!(
            "PCIe-bound: partitions waited {:.1} s in the queue ({} of the run) while {names} \
             {were} {} busy{average}, and {} of the provers' time went to copying each \
             partition to the GPU ({pcie_gb:.1} GB per partition over PCIe, streamed bases \
             included): the GPU keeps too little of what a proof reads; a card with more memory \
             (or a larger --gpu-memory) keeps the constraints there and sends only the \
             witness, and more GPUs behind the same bus help less than their number",
            queue.queued_s,
            pct(queue.queued_fraction),
            pct(busy),
            pct(upload_share)
        ),
        Bound::Evaluation => format!(
            "host-evaluation-bound: {names} idle {} of the run{average} while {} prover{} \
             evaluated a, b and c on the host right before the proof: the pre-compiled \
             constraints do not fit on the GPU beside its working set; a card with more \
             memory (or a larger --gpu-memory) keeps them there, and more cores shorten the \
             host's evaluation",
            pct(ratio(evaluation_wait, span_s)),
            if lanes.len() > 1 { "their" } else { "its" },
            if lanes.len() > 1 { "s" } else { "" },
        ),
        Bound::Synthesis if synthesis.partitions <= synthesis.workers => format!(
            "synthesis-bound: {names} idle {} of the run{average} waiting for synthesis; \
             its {} never waited for a synthesis worker, so more --synth-jobs cannot \
             help: one partition's synthesis sets the pace (faster cores, or more \
             --synthesis-threads for pre-compiled constraints, shorten it; more files at once \
             keep the provers busy)",
            pct(ratio(synthesis_wait, span_s)),
            plural(synthesis.partitions, "partition")
        ),
        Bound::Synthesis => format!(
            "synthesis-bound: {names} idle {} of the run{average} waiting for synthesis; \
             raise --synth-jobs (now using {})",
            pct(ratio(synthesis_wait, span_s)),
            plural(synthesis.workers, "worker")
        ),
        Bound::Memory => format!(
            "memory-bound: {names} idle {} of the run{average} waiting for synthesis, while \
             partitions waited for the memory budget {} of it ({}): synthesis runs only as many \
             partitions as --max-memory holds, so more --synth-jobs will not help; add memory \
             (README's sizing table has the bytes per partition in flight) or make each \
             partition's synthesis faster (pre-compiled constraints, more cores)",
            pct(ratio(synthesis_wait, span_s)),
            pct(memory.waiting_fraction),
            plural(memory.partitions, "partition"),
        ),
        Bound::Scheduling => format!(
            "scheduling: {} sat idle {:.1} s ({} of the run) while a synthesized partition \
             waited in the queue; the prover is slow to take work, look at parameter loading \
             and the prover loop",
            worst_scheduling.map_or("a lane", |lane| lane.name.as_str()),
            scheduling,
            pct(ratio(scheduling, span_s))
        ),
        Bound::GpuLock => format!(
            "gpu lock (PoSt): {names} gave way {} of the run{average} to a WindowPoSt or \
             WinningPoSt holding the GPU priority lock; that is by design, PoSt has a deadline. \
             The lock is machine-wide: to keep C2 proving, prove PoSt on another machine",
            pct(ratio(gpu_lock_wait, span_s))
        ),
        Bound::Recording => format!(
            "recording-bound: {names} idle {} of the run{average} waiting for synthesis{} while \
             the circuit's constraints were recorded ({recording_s:.1} s, {} of the run), which \
             its partitions wait for; recording is once per machine: the runs after this one \
             map the saved file, and `cuzk params constraints` records them ahead of a run",
            pct(ratio(synthesis_wait, span_s)),
            if params_s > 0.0 {
                format!(" and {params_s:.1} s loading parameters")
            } else {
                String::new()
            },
            pct(ratio(recording_s, span_s))
        ),
        Bound::Params if generating_s > 0.0 => format!(
            "parameter-bound: generating test parameters took {generating_s:.1} s and loading \
             them {:.1} s ({} of the run); generation is once per machine: the runs after this \
             one find them in the cache, and `cuzk params gen` makes them ahead of a run",
            (params_s - generating_s).max(0.0),
            pct(ratio(params_s, span_s))
        ),
        Bound::Params => format!(
            "parameter-bound: loading parameters took {params_s:.1} s ({} of the run); keep \
             `cuzk prove-dir` running without --once so they stay loaded across files, and put \
             the parameter cache (--params or {PARAMS_ENV}) on fast local disk",
            pct(ratio(params_s, span_s))
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
    use crate::waterfall::shared::Selection;
    use crate::waterfall::test_support::{analysis, assert_says, metrics, options};

    #[test]
    fn a_run_spent_mostly_loading_parameters_is_parameter_bound() {
        // One 512MiB file: parameters loaded from 0 to 10 s of a 13 s span while the
        // synthesized partition waited for them; no other stage held the run back.
        let run = metrics("params_bound.csv");
        assert_eq!(run.verdict.bound, Bound::Params);
        assert_eq!(
            run.verdict.text,
            "parameter-bound: loading parameters took 10.0 s (77% of the run); keep `cuzk \
             prove-dir` running without --once so they stay loaded across files, and put the \
             parameter cache (--params or FIL_PROOFS_PARAMETER_CACHE) on fast local disk"
        );
        // Past the threshold, loading names the run whatever else it waited for; below it,
        // loading is weighed as the time partitions queued behind it. Without that queue the
        // run would have been called balanced, as it was before.
        let loading_s = run.lanes[0].params_s;
        assert_eq!(loading_s, 10.0);
        let behind_loading_s = run.queue.behind_loading_s;
        assert!(
            behind_loading_s > 0.0,
            "the partition queued behind the load"
        );
        let queue = QueueMetrics {
            behind_loading_s: 0.0,
            ..run.queue.clone()
        };
        let verdict_at = |params_s: f64| {
            verdict(
                &run.lanes,
                &queue,
                run.span_s,
                (params_s, 0.0, 0.0),
                SynthesisUse {
                    workers: 1,
                    partitions: 1,
                },
                None,
                &run.memory,
            )
        };
        assert_eq!(verdict_at(0.0).bound, Bound::Balanced);
        let threshold_s = PARAMS_BOUND_FROM * run.span_s;
        assert_eq!(verdict_at(threshold_s - 0.01).bound, Bound::Balanced);
        assert_eq!(verdict_at(threshold_s).bound, Bound::Params);
    }

    #[test]
    fn partitions_queued_behind_a_parameter_load_are_not_gpu_bound_time() {
        // Two partitions ready by 1.5 s; the one GPU lane picked up the first and loaded the
        // parameters until 4.5 s (37% of the span, under the threshold), then proved both,
        // 2 s each. The second partition queued 5 s, 3 s of it behind the load: the GPU,
        // proving 4 s of 9.5, was not what held the run back.
        let run = metrics("queued_behind_loading.csv");
        assert_eq!(run.lanes[0].params_s, 3.5);
        assert_eq!(run.queue.prover_bound_s, 5.0, "{:?}", run.queue);
        assert_eq!(run.queue.behind_loading_s, 3.0, "{:?}", run.queue);
        assert_eq!(run.verdict.bound, Bound::Params, "{}", run.verdict.text);
        assert_says(
            &run.verdict.text,
            "loading parameters took 3.5 s (37% of the run)",
            true,
        );
        assert_says(&run.verdict.text, "GPU-bound", false);
        // Counted as prover-bound time, as it was, it made the run GPU-bound.
        let as_before = QueueMetrics {
            behind_loading_s: 0.0,
            ..run.queue.clone()
        };
        let before = verdict(
            &run.lanes,
            &as_before,
            run.span_s,
            (run.lanes[0].params_s, 0.0, 0.0),
            SynthesisUse {
                workers: 2,
                partitions: 2,
            },
            None,
            &run.memory,
        );
        assert_eq!(before.bound, Bound::Prover, "{}", before.text);
        // The queue line says how much of the wait was behind the load.
        let text = crate::waterfall::ascii::render_ascii(std::slice::from_ref(&run), 120);
        assert_says(
            &text,
            "of it with every lane occupied (3.00 s behind a parameter load)",
            true,
        );
    }

    #[test]
    fn a_run_that_generated_its_test_parameters_is_parameter_bound_not_synthesis_bound() {
        // README's first command on a fresh clone: --gen-test-params made the 2KiB parameters
        // for 298 s before the one partition's synthesis could start.
        let run = metrics("params_generated.csv");
        assert_eq!(run.verdict.bound, Bound::Params, "{}", run.verdict.text);
        assert_says(
            &run.verdict.text,
            "generating test parameters took 298.0 s and loading them 2.0 s (99% of the run)",
            true,
        );
        assert_says(&run.verdict.text, "--synth-jobs", false);
    }

    #[test]
    fn a_run_that_recorded_its_constraints_says_so_not_more_workers() {
        // A fresh machine's first 32GiB sector: its partitions waited 108 s for the
        // constraints to be recorded, the GPU idle meanwhile once the bases were up.
        let run = metrics("recording_constraints.csv");
        assert_eq!(run.verdict.bound, Bound::Recording, "{}", run.verdict.text);
        assert_says(
            &run.verdict.text,
            "the circuit's constraints were recorded (108.4 s, 93% of the run)",
            true,
        );
        assert_says(&run.verdict.text, "`cuzk params constraints`", true);
        assert_says(&run.verdict.text, "--synth-jobs", false);
    }

    #[test]
    fn a_streamed_run_that_recorded_its_constraints_is_not_gpu_bound() {
        // Two 32GiB shape sectors at --gpu-memory 24GiB on a bench directory without recorded
        // constraints: loading took 48.2 s (38% of the span) and recording 60.7 s (48%), so
        // the first proof came at 78 s; the twenty proofs then queued behind one another,
        // which alone would have made it GPU-bound with the GPU busy 35% of the run.
        let run = metrics("recording_streamed.csv");
        assert_eq!(run.verdict.bound, Bound::Recording, "{}", run.verdict.text);
        assert_says(
            &run.verdict.text,
            "and 48.2 s loading parameters while the circuit's constraints were recorded \
             (60.7 s, 48% of the run)",
            true,
        );
        assert_says(&run.verdict.text, "GPU-bound", false);
        // Recording shorter than the load (itself under 40% here) leaves the run to the
        // other candidates: GPU-bound, as it was called before.
        let judged = |recording_s: f64| {
            verdict(
                &run.lanes,
                &run.queue,
                run.span_s,
                (run.lanes[0].params_s, 0.0, recording_s),
                SynthesisUse {
                    workers: 14,
                    partitions: 20,
                },
                run.gpu_kernels.as_ref(),
                &run.memory,
            )
            .bound
        };
        assert_eq!(judged(60.7), Bound::Recording);
        assert_eq!(judged(run.lanes[0].params_s - 1.0), Bound::Prover);
    }

    #[test]
    fn a_synthesis_bound_run_held_by_memory_says_so_and_not_more_workers() {
        let run = metrics("memory_bound.csv");
        assert_eq!(run.verdict.bound, Bound::Memory);
        assert_says(&run.verdict.text, "--max-memory", true);
        assert_says(&run.verdict.text, "raise --synth-jobs", false);
        // The same run judged without its memory waits is synthesis-bound, as before.
        let without = |memory: &MemoryWaits| {
            let kernels = run.gpu_kernels.as_ref();
            let synthesis = SynthesisUse {
                workers: 2,
                partitions: 10,
            };
            verdict(
                &run.lanes,
                &run.queue,
                run.span_s,
                (0.0, 0.0, 0.0),
                synthesis,
                kernels,
                memory,
            )
            .bound
        };
        assert_eq!(without(&MemoryWaits::default()), Bound::Synthesis);
        // Just under the threshold it is still synthesis-bound.
        let mut short = run.memory.clone();
        short.waiting_fraction = MEMORY_HELD_FROM - 0.001;
        assert_eq!(without(&short), Bound::Synthesis);
    }

    #[test]
    fn a_run_of_one_partition_is_not_told_to_add_synthesis_workers() {
        // One file of one partition: synthesis took 3 s of the 4 s span, on one worker.
        let run = metrics("one_partition.csv");
        assert_eq!(run.verdict.bound, Bound::Synthesis);
        assert_says(&run.verdict.text, "raise --synth-jobs", false);
        assert_says(&run.verdict.text, "more --synth-jobs cannot help", true);
        assert_says(
            &run.verdict.text,
            "its 1 partition never waited for a synthesis worker",
            true,
        );
        // Three files one after another on one worker: more workers would have helped.
        let run = metrics("synthesis_bound.csv");
        assert_says(
            &run.verdict.text,
            "raise --synth-jobs (now using 1 worker)",
            true,
        );
    }

    #[test]
    fn a_gpu_bound_run_spent_copying_to_the_gpu_is_pcie_bound() {
        // gpu_bound.csv on a cuda lane whose proofs spent 0.6 s of 2 s on uploads and sent
        // 25.3 GB each.
        let run = metrics("uploads_bound.csv");
        assert_eq!(run.verdict.bound, Bound::Uploads);
        assert_says(&run.verdict.text, "30% of the provers' time", true);
        assert_says(&run.verdict.text, "25.3 GB per partition over PCIe", true);
        let steps = run.lanes[0].steps.as_ref().expect("steps");
        assert!(
            (steps.pcie_gb - 4.0 * 25.3124).abs() < 1e-9,
            "{}",
            steps.pcie_gb
        );
        // The same run with uploads under a quarter of the time stays GPU-bound.
        let mut lanes = run.lanes.clone();
        let steps = lanes[0].steps.as_mut().expect("steps");
        steps.upload_s = steps.prove_s * 0.2;
        let again = verdict(
            &lanes,
            &run.queue,
            run.span_s,
            (0.0, 0.0, 0.0),
            SynthesisUse::default(),
            None,
            &MemoryWaits::default(),
        );
        assert_eq!(again.bound, Bound::Prover);
    }

    #[test]
    fn every_fixture_keeps_its_verdict() {
        // params_preload.csv was "balanced" before loading had a verdict of its own: it
        // spends 4 s of its 6 s span loading, so it is parameter-bound now.
        let expected = [
            ("gpu_bound.csv", vec![Bound::Prover]),
            ("gpu_kernels_busy.csv", vec![Bound::Prover]),
            ("gpu_kernels_idle.csv", vec![Bound::Host]),
            ("idle_gaps.csv", vec![Bound::Scheduling]),
            ("memory_bound.csv", vec![Bound::Memory]),
            ("one_partition.csv", vec![Bound::Synthesis]),
            ("params_bound.csv", vec![Bound::Params]),
            ("params_preload.csv", vec![Bound::Params]),
            ("params_generated.csv", vec![Bound::Params]),
            ("recording_constraints.csv", vec![Bound::Recording]),
            ("recording_streamed.csv", vec![Bound::Recording]),
            ("partitions.csv", vec![Bound::Synthesis]),
            ("runs.csv", vec![Bound::Synthesis, Bound::Synthesis]),
            ("supraseal_host.csv", vec![Bound::Host]),
            ("synthesis_bound.csv", vec![Bound::Synthesis]),
            ("torn_last_line.csv", vec![Bound::Synthesis]),
            ("two_gpus.csv", vec![Bound::Prover]),
            ("unknown_event.csv", vec![Bound::Prover]),
            ("uploads_bound.csv", vec![Bound::Uploads]),
        ];
        for (name, bounds) in expected {
            let runs = analysis(name, Selection::All, &options()).runs;
            let found: Vec<Bound> = runs.iter().map(|run| run.verdict.bound).collect();
            assert_eq!(found, bounds, "{name}");
        }
    }
}
