//! Kernels: how much of the run, and of the time the provers were busy, the GPUs spent
//! running kernels, from the driver's GPU_BUSY rows (see [`crate::backend::gpu::activity`]).
//!
//! A lane's busy time is the prover thread's wall time; the GPU's kernel time is its part
//! that kept the device working. The verdict compares them: a prover that is busy while its
//! GPU idles is held back by its host side, and more GPUs would idle as well.
//!
//! Each GPU_BUSY row covers the period before it, `[t - period, t)`, at one busy share; a
//! period counts in proportion to how much of it falls in the span, or in the time the
//! GPU's prover lanes were proving. Which lanes drive a GPU follows from their names: ec-gpu
//! provers are `gpu-N` or `gpu-N.K` on GPU N; `cpu-N` drives none; any other lane (SupraSeal's
//! one `supraseal` prover) drives every GPU, so its share is the mean over all of them.

use serde::Serialize;

use super::lanes::LaneMetrics;
use crate::event::WorkerName;
use crate::waterfall::intervals::Intervals;
use crate::waterfall::shared::{ratio, sum};
use crate::waterfall::spans::{KernelBusy, RunSpans};

/// The GPUs' kernel activity over a run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GpuKernels {
    /// Each GPU that has GPU_BUSY rows, by index.
    pub gpus: Vec<GpuKernelBusy>,
    /// Kernel-busy time over the sampled time of the span, all GPUs together.
    pub run_fraction: f64,
    /// Kernel-busy time over the sampled time their prover lanes were proving, all GPUs
    /// together; `None` when no sample fell in proving time.
    pub proving_fraction: Option<f64>,
}

/// One GPU's kernel activity.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GpuKernelBusy {
    /// Its index among the GPUs the run saw (`gpu-N`'s N).
    pub gpu: usize,
    /// The prover lanes that drive it.
    pub lanes: Vec<String>,
    /// Seconds of the span its rows cover, and of them, seconds with a kernel running.
    pub sampled_s: f64,
    pub kernel_s: f64,
    /// `kernel_s` over `sampled_s`.
    pub run_fraction: f64,
    /// The same over the time its lanes were proving.
    pub proving_sampled_s: f64,
    pub proving_kernel_s: f64,
    pub proving_fraction: Option<f64>,
}

impl GpuKernels {
    /// The line both drawings show: `GPU kernels (NVML): busy 46% of the run, 52% of the
    /// time the provers were busy`, and each GPU's two shares when there are several.
    pub fn describe(&self) -> String {
        let pct = |fraction: f64| format!("{:.0}%", fraction * 100.0);
        let proving = match self.proving_fraction {
            Some(fraction) => format!("{} of the time the provers were busy", pct(fraction)),
            None => "no period fell in the provers' busy time".to_owned(),
        };
        let each = if self.gpus.len() > 1 {
            let gpus: Vec<String> = self
                .gpus
                .iter()
                .map(|g| {
                    let proving = g.proving_fraction.map_or("-".to_owned(), pct);
                    format!("GPU {} {} / {proving}", g.gpu, pct(g.run_fraction))
                })
                .collect();
            format!(" (run / provers busy: {})", gpus.join(", "))
        } else {
            String::new()
        };
        format!(
            "GPU kernels (NVML): busy {} of the run, {proving}{each}",
            pct(self.run_fraction)
        )
    }
}

/// Which GPUs a prover lane drives, by its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum LaneDevice {
    /// `gpu-N` or `gpu-N.K`: GPU N, an ec-gpu prover (several may share it).
    Gpu(usize),
    /// `cuda-N`: GPU N, the cuda backend's one prover there.
    Resident(usize),
    /// `cpu-N`: none.
    Cpu,
    /// Any other name (SupraSeal's `supraseal`): every GPU.
    AllGpus,
}

impl LaneDevice {
    pub(super) fn of(name: &str) -> LaneDevice {
        match WorkerName::parse(name) {
            WorkerName::Cpu(_) => LaneDevice::Cpu,
            WorkerName::Cuda(gpu) => LaneDevice::Resident(gpu),
            WorkerName::Gpu { gpu, .. } => LaneDevice::Gpu(gpu),
            _ => LaneDevice::AllGpus,
        }
    }

    fn drives(self, gpu: usize) -> bool {
        match self {
            LaneDevice::Gpu(index) | LaneDevice::Resident(index) => index == gpu,
            LaneDevice::Cpu => false,
            LaneDevice::AllGpus => true,
        }
    }
}

/// The GPUs' kernel activity over `window` (the span), `None` without GPU_BUSY rows.
pub(super) fn gpu_kernels(
    spans: &RunSpans,
    lanes: &[LaneMetrics],
    window: &Intervals,
) -> Option<GpuKernels> {
    if spans.kernel_busy.is_empty() {
        return None;
    }
    let mut indices: Vec<usize> = spans.kernel_busy.iter().map(|k| k.gpu).collect();
    indices.sort_unstable();
    indices.dedup();
    let gpus: Vec<GpuKernelBusy> = indices
        .into_iter()
        .map(|gpu| {
            let mut periods: Vec<KernelBusy> = spans
                .kernel_busy
                .iter()
                .filter(|k| k.gpu == gpu)
                .copied()
                .collect();
            periods.sort_by(|a, b| a.start.total_cmp(&b.start));
            let driving: Vec<&LaneMetrics> = lanes
                .iter()
                .filter(|lane| LaneDevice::of(&lane.name).drives(gpu))
                .collect();
            let proving = driving
                .iter()
                .fold(Intervals::default(), |all, lane| all.union(&lane.proving));
            let (sampled_s, kernel_s) = weigh(&periods, window);
            let (proving_sampled_s, proving_kernel_s) = weigh(&periods, &proving);
            GpuKernelBusy {
                gpu,
                lanes: driving.iter().map(|lane| lane.name.clone()).collect(),
                sampled_s,
                kernel_s,
                run_fraction: ratio(kernel_s, sampled_s),
                proving_sampled_s,
                proving_kernel_s,
                proving_fraction: (proving_sampled_s > 0.0)
                    .then(|| proving_kernel_s / proving_sampled_s),
            }
        })
        .collect();
    let proving_sampled_s = sum(gpus.iter().map(|g| g.proving_sampled_s));
    Some(GpuKernels {
        run_fraction: ratio(
            sum(gpus.iter().map(|g| g.kernel_s)),
            sum(gpus.iter().map(|g| g.sampled_s)),
        ),
        proving_fraction: (proving_sampled_s > 0.0)
            .then(|| sum(gpus.iter().map(|g| g.proving_kernel_s)) / proving_sampled_s),
        gpus,
    })
}

/// How many seconds of `periods` (sorted by start) fall in `within`, and of those, how many
/// had a kernel running: each period's overlap with `within` times its busy share.
fn weigh(periods: &[KernelBusy], within: &Intervals) -> (f64, f64) {
    let spans = within.spans();
    let (mut sampled, mut busy) = (0.0, 0.0);
    // `first` only moves forward: the spans are sorted and disjoint, and a span that ends
    // before one period starts ends before every later one starts too.
    let mut first = 0;
    for period in periods {
        while first < spans.len() && spans[first].1 <= period.start {
            first += 1;
        }
        let overlap = sum(spans[first..]
            .iter()
            .take_while(|(start, _)| *start < period.end)
            .map(|&(start, end)| (end.min(period.end) - start.max(period.start)).max(0.0)));
        sampled += overlap;
        busy += overlap * period.busy;
    }
    (sampled, busy)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::TimelineRow;
    use crate::waterfall::analysis::analyze;
    use crate::waterfall::metrics::verdict::Bound;
    use crate::waterfall::metrics::RunMetrics;
    use crate::waterfall::screen::screen;
    use crate::waterfall::shared::Selection;
    use crate::waterfall::test_support::{
        assert_close, assert_says, fixture, json_of, metrics, options,
    };

    fn period(gpu: usize, start: f64, end: f64, busy: f64) -> KernelBusy {
        KernelBusy {
            gpu,
            start,
            end,
            busy,
        }
    }

    #[test]
    fn lanes_drive_the_gpus_their_names_say() {
        assert_eq!(LaneDevice::of("gpu-0"), LaneDevice::Gpu(0));
        assert_eq!(LaneDevice::of("gpu-12.1"), LaneDevice::Gpu(12));
        assert_eq!(LaneDevice::of("cpu-0"), LaneDevice::Cpu);
        assert_eq!(LaneDevice::of("cuda-3"), LaneDevice::Resident(3));
        assert!(LaneDevice::of("cuda-3").drives(3) && !LaneDevice::of("cuda-3").drives(0));
        assert_eq!(LaneDevice::of("supraseal"), LaneDevice::AllGpus);
        assert!(LaneDevice::of("gpu-1.0").drives(1) && !LaneDevice::of("gpu-1.0").drives(0));
        assert!(LaneDevice::of("supraseal").drives(7));
    }

    #[test]
    fn periods_count_by_their_overlap() {
        let periods = [
            period(0, 0.0, 1.0, 1.0),
            period(0, 1.0, 2.0, 0.5),
            period(0, 2.0, 3.0, 0.0),
        ];
        // Half of the first period, all of the second, a quarter of the third.
        let within = Intervals::new([(0.5, 2.25)]);
        let (sampled, busy) = weigh(&periods, &within);
        assert_close(sampled, 1.75);
        assert_close(busy, 0.5 + 0.5);
        // Two spans inside one period, and one that misses every period.
        let within = Intervals::new([(0.0, 0.25), (0.5, 0.75), (5.0, 6.0)]);
        assert_eq!(weigh(&periods, &within), (0.5, 0.5));
        assert_eq!(weigh(&[], &within), (0.0, 0.0));
    }

    #[test]
    fn kernels_busy_while_proving_keep_the_gpu_bound_verdict() {
        // gpu_bound.csv with GPU_BUSY rows: ~90% while gpu-0 proves over [1, 9), 5% and 3%
        // in the idle seconds at either end.
        let run = metrics("gpu_kernels_busy.csv");
        let kernels = run.gpu_kernels.as_ref().expect("kernel activity");
        assert_eq!(kernels.gpus.len(), 1);
        assert_eq!(kernels.gpus[0].lanes, ["gpu-0"]);
        assert_close(kernels.gpus[0].sampled_s, 10.0);
        assert_close(kernels.gpus[0].proving_sampled_s, 8.0);
        assert_close(kernels.run_fraction, (0.05 + 8.0 * 0.9 + 0.03) / 10.0);
        assert_close(kernels.proving_fraction.expect("proving share"), 0.9);
        assert_eq!(run.verdict.bound, Bound::Prover);
        assert!(
            run.verdict.text.starts_with("GPU-bound: "),
            "{}",
            run.verdict.text
        );
        assert_eq!(
            kernels.describe(),
            "GPU kernels (NVML): busy 73% of the run, 90% of the time the provers were busy"
        );
    }

    #[test]
    fn kernels_idle_inside_the_provers_calls_make_the_run_host_bound() {
        // The same run with kernels ~45% of the proving time.
        let run = metrics("gpu_kernels_idle.csv");
        let kernels = run.gpu_kernels.as_ref().expect("kernel activity");
        assert_close(kernels.run_fraction, (0.05 + 8.0 * 0.45 + 0.03) / 10.0);
        assert_close(kernels.proving_fraction.expect("proving share"), 0.45);
        assert_eq!(run.verdict.bound, Bound::Host);
        assert_says(&run.verdict.text, "--provers-per-gpu", true);
        assert!(
            run.verdict.text.starts_with(
                "host-bound: partitions waited 6.0 s in the queue (60% of the run) while gpu-0 \
                 was 80% busy, but GPU kernels ran only 45% of that time (NVML): the GPU idles \
                 inside the prover's calls"
            ),
            "{}",
            run.verdict.text
        );
        assert!(
            run.verdict
                .text
                .contains("adding GPUs will not help in proportion"),
            "{}",
            run.verdict.text
        );
        // Everything but the kernel activity and the verdict is the run without it.
        let plain = metrics("gpu_bound.csv");
        let lanes = |run: &RunMetrics| serde_json::to_string(&run.lanes).expect("json");
        let queue = |run: &RunMetrics| serde_json::to_string(&run.queue).expect("json");
        assert_eq!(lanes(&run), lanes(&plain));
        assert_eq!(queue(&run), queue(&plain));
    }

    #[test]
    fn without_gpu_busy_rows_nothing_changes() {
        let run = metrics("gpu_bound.csv");
        assert_eq!(run.gpu_kernels, None);
        assert_eq!(run.verdict.bound, Bound::Prover);
        let json = json_of(std::slice::from_ref(&run));
        assert!(!json.contains("gpu_kernels"), "{json}");
        let text = crate::waterfall::ascii::render_ascii(&[run], 100);
        assert!(!text.contains("NVML"), "{text}");
    }

    #[test]
    fn supraseal_drives_every_gpu_and_is_judged_on_their_mean() {
        // One `supraseal` lane proving over [1, 9); GPU 0 ran kernels 60% of that, GPU 1 30%.
        let run = metrics("supraseal_host.csv");
        let kernels = run.gpu_kernels.as_ref().expect("kernel activity");
        let per_gpu: Vec<(usize, Option<f64>)> = kernels
            .gpus
            .iter()
            .map(|g| (g.gpu, g.proving_fraction))
            .collect();
        assert_eq!(per_gpu.len(), 2);
        assert_eq!((per_gpu[0].0, per_gpu[1].0), (0, 1));
        assert_close(per_gpu[0].1.expect("GPU 0"), 0.6);
        assert_close(per_gpu[1].1.expect("GPU 1"), 0.3);
        assert!(kernels.gpus.iter().all(|g| g.lanes == ["supraseal"]));
        assert_close(kernels.proving_fraction.expect("mean"), 0.45);
        assert_close(kernels.run_fraction, 0.36);
        assert_eq!(run.verdict.bound, Bound::Host);
        // One prover for every GPU: no --provers-per-gpu to suggest.
        assert_says(&run.verdict.text, "SupraSeal's CPU side", true);
        assert_says(&run.verdict.text, "--provers-per-gpu", false);
        assert_eq!(
            kernels.describe(),
            "GPU kernels (NVML): busy 36% of the run, 45% of the time the provers were busy \
             (run / provers busy: GPU 0 48% / 60%, GPU 1 24% / 30%)"
        );
    }

    #[test]
    fn each_ec_gpu_lane_is_matched_with_its_own_gpu() {
        // two_gpus.csv: gpu-0 proves [1, 4) and [4, 7), gpu-1 [2, 4) and [5, 7). GPU 0 runs
        // kernels fully over [1, 7); GPU 1 only over [2, 4).
        let mut timeline = fixture("two_gpus.csv");
        let busy = |t_s: usize, gpu: usize, pct: f64| TimelineRow {
            run_id: "r1".into(),
            t_ms: t_s as f64 * 1000.0,
            wall_clock: String::new(),
            event: "GPU_BUSY".into(),
            job: String::new(),
            partition: None,
            worker: String::new(),
            detail: format!("gpu={gpu};busy_pct={pct};period_ms=1000"),
        };
        for t in 1..=8 {
            let on = |from: usize, to: usize| if t > from && t <= to { 100.0 } else { 0.0 };
            timeline.rows.push(busy(t, 0, on(1, 7)));
            timeline.rows.push(busy(t, 1, on(2, 4)));
        }
        let analysis = analyze(&screen(&timeline), &Selection::Last, &options()).expect("runs");
        let kernels = analysis.runs[0]
            .gpu_kernels
            .clone()
            .expect("kernel activity");
        let (gpu0, gpu1) = (&kernels.gpus[0], &kernels.gpus[1]);
        assert_eq!(
            (gpu0.lanes.as_slice(), gpu1.lanes.as_slice()),
            (&["gpu-0".to_owned()][..], &["gpu-1".to_owned()][..])
        );
        assert_close(gpu0.proving_sampled_s, 6.0);
        assert_close(gpu0.proving_fraction.expect("GPU 0"), 1.0);
        assert_close(gpu1.proving_sampled_s, 4.0);
        assert_close(gpu1.proving_fraction.expect("GPU 1"), 0.5);
        assert_close(kernels.proving_fraction.expect("both"), 8.0 / 10.0);
    }
}
