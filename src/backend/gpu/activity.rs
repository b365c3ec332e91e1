//! GPU activity: how much of each second the GPUs spent running kernels, as the driver saw it.
//!
//! A prover lane in the timeline is busy from GPU_START to GPU_END, the wall time of the
//! prover thread's call. That call also prepares inputs on the host, copies them, and does
//! work on the CPU (SupraSeal's G2 multiexp among it), so a lane can read 90% busy while its
//! GPU runs kernels half the time. This module records the device's side: a [`Sampler`]
//! thread that every second sends one [`EventKind::GpuBusy`] per GPU the provers use, with the
//! share of that second during which one or more kernels was executing. Idle seconds are
//! merged into one row of up to five minutes, so a service waiting for work does not grow
//! its timeline by a row per GPU every second.
//!
//! The number comes from NVML, the library behind `nvidia-smi`, and is the same "GPU
//! utilization" it shows. Per-step CUDA events cannot give it: SupraSeal proves a whole batch
//! in one opaque call. NVML is loaded at run time with `dlopen`, so no build depends on it;
//! a machine without the driver (and the CPU build, which watches no GPU) gets a note from
//! [`GpuActivity::open`] and no events. The FFI is the handful of NVML calls in [`nvml`], with
//! all of its `unsafe`.
//!
//! What it leaves out: the timeline's encoding of the event (`timeline`) and what the
//! waterfall concludes from it (`waterfall`). The averaging of the driver's samples into one
//! percentage is the pure [`mean_busy_pct`], tested without a GPU.

use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, RecvTimeoutError, Sender};

use crate::backend::gpu::free_memory::GpuDescription;
use crate::event::{EventKind, EventSink};

mod nvml;

use nvml::{nvml_id, Nvml, NvmlDevice};

/// How often the sampler reports: NVML's own sample period is 1/6 s to 1 s, so each report
/// averages one to six of the driver's samples.
pub const SAMPLE_PERIOD: Duration = Duration::from_secs(1);

/// The last, partial period is reported when the run ends, unless it is shorter than this:
/// the driver may not have taken a sample in it.
const LAST_PERIOD_MIN: Duration = Duration::from_millis(200);

/// Idle periods of a GPU are merged into one row of up to this length, so a service waiting
/// for work adds a row per GPU every five minutes rather than every second.
const IDLE_ROW_MAX: Duration = Duration::from_secs(300);

/// One of the driver's utilization samples.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sample {
    /// When the driver took it, in microseconds on its clock.
    pub at_us: u64,
    /// The percentage of the period before it during which one or more kernels was executing.
    pub busy_pct: f64,
}

/// The kernel-busy percentage over the time `samples` cover, each weighted by the length of
/// the period it describes: from the sample before it (`previous_us` for the first, the last
/// sample of the previous report) to its own time. Samples at or before `previous_us` were
/// reported already and are left out. A first sample with no known start gets the average
/// weight of the others. `None` when no sample is left.
pub fn mean_busy_pct(previous_us: Option<u64>, samples: &[Sample]) -> Option<f64> {
    let mut fresh: Vec<Sample> = samples
        .iter()
        .filter(|s| s.busy_pct.is_finite() && previous_us.is_none_or(|p| s.at_us > p))
        .copied()
        .collect();
    if fresh.is_empty() {
        return None;
    }
    fresh.sort_by_key(|s| s.at_us);
    let mut weights: Vec<Option<f64>> = Vec::with_capacity(fresh.len());
    let mut before = previous_us;
    for sample in &fresh {
        weights.push(before.map(|b| (sample.at_us - b) as f64));
        before = Some(sample.at_us);
    }
    let known: Vec<f64> = weights.iter().flatten().copied().collect();
    let fill = if known.is_empty() {
        1.0
    } else {
        known.iter().sum::<f64>() / known.len() as f64
    };
    let weights: Vec<f64> = weights.into_iter().map(|w| w.unwrap_or(fill)).collect();
    let total: f64 = weights.iter().sum();
    let pct = |s: &Sample| s.busy_pct.clamp(0.0, 100.0);
    if total > 0.0 {
        let weighted: f64 = fresh.iter().zip(&weights).map(|(s, w)| pct(s) * w).sum();
        Some(weighted / total)
    } else {
        // Every sample at one instant: no lengths to weigh by.
        Some(fresh.iter().map(pct).sum::<f64>() / fresh.len() as f64)
    }
}

/// The GPUs to watch, found in NVML, ready to start a [`Sampler`].
pub struct GpuActivity {
    nvml: Nvml,
    gpus: Vec<WatchedGpu>,
}

/// One GPU being watched.
struct WatchedGpu {
    /// Its index among the GPUs this process sees, as in `gpu-N`.
    index: usize,
    device: NvmlDevice,
    /// The time of the last driver sample reported, `None` before the first.
    last_seen_us: Option<u64>,
    /// Idle periods not yet reported.
    idle: IdleStretch<Instant>,
}

/// Consecutive idle periods of one GPU, reported as one row when they end, when they reach
/// [`IDLE_ROW_MAX`] or when the run does. `T` is the clock: `Instant` in the sampler, plain
/// seconds in tests.
#[derive(Debug)]
struct IdleStretch<T> {
    /// The end of the last idle period and the stretch's length so far.
    pending: Option<(T, Duration)>,
}

/// A row to send: the end of its period, the busy percentage and the period's length.
type Row<T> = (T, f64, Duration);

impl<T: Copy> IdleStretch<T> {
    fn new() -> IdleStretch<T> {
        IdleStretch { pending: None }
    }

    /// Takes the period ending at `end`: what to send now, in order. A busy period first
    /// closes the idle stretch before it.
    fn take(&mut self, end: T, busy_pct: f64, period: Duration) -> Vec<Row<T>> {
        // NVML's figures are whole percentages, so idle is exactly 0.
        if busy_pct > 0.0 {
            let mut rows: Vec<Row<T>> = self.flush().into_iter().collect();
            rows.push((end, busy_pct, period));
            return rows;
        }
        let length = self.pending.map_or(Duration::ZERO, |(_, length)| length) + period;
        self.pending = Some((end, length));
        if length >= IDLE_ROW_MAX {
            return self.flush().into_iter().collect();
        }
        Vec::new()
    }

    /// The stretch so far as one row, if there is one.
    fn flush(&mut self) -> Option<Row<T>> {
        self.pending.take().map(|(end, length)| (end, 0.0, length))
    }
}

/// Why a run records no kernel activity: the note the user gets.
#[derive(Debug, thiserror::Error)]
pub enum WatchGpusError {
    /// NVML could not be loaded or initialized; the reason names the step.
    #[error("{UNRECORDED}: {0}")]
    Nvml(String),
    /// None of the run's GPUs is known to NVML.
    #[error("{UNRECORDED}: NVML does not know {}", .0.join(", "))]
    UnknownGpus(Vec<String>),
}

/// What is lost without NVML.
const UNRECORDED: &str = "GPU kernel activity is not recorded, so `cuzk waterfall` cannot tell \
                          kernel time from the provers' host time";

impl GpuActivity {
    /// Loads NVML and finds `gpus` in it; the error is the note for the user.
    pub fn open(gpus: &[GpuDescription]) -> Result<GpuActivity, WatchGpusError> {
        let nvml = Nvml::load().map_err(WatchGpusError::Nvml)?;
        let mut watched = Vec::new();
        let mut missing = Vec::new();
        for gpu in gpus {
            let device = gpu
                .id
                .as_deref()
                .and_then(nvml_id)
                .and_then(|id| nvml.device(&id));
            match device {
                Some(device) => watched.push(WatchedGpu {
                    index: gpu.index,
                    device,
                    // Samples from before the run belong to whatever ran then.
                    last_seen_us: nvml
                        .samples(device, 0)
                        .and_then(|s| s.iter().map(|s| s.at_us).max()),
                    idle: IdleStretch::new(),
                }),
                None => missing.push(format!("GPU {}", gpu.index)),
            }
        }
        if watched.is_empty() {
            return Err(WatchGpusError::UnknownGpus(missing));
        }
        if !missing.is_empty() {
            log::warn!(
                "NVML does not know {}: their kernel activity is not recorded",
                missing.join(", ")
            );
        }
        Ok(GpuActivity {
            nvml,
            gpus: watched,
        })
    }

    /// Starts the sampler thread, which sends its events to `events` until it is stopped.
    /// A thread that cannot start is logged and skipped: the run does not need it.
    pub fn start(self, events: EventSink) -> Sampler {
        let (stop, stopped) = bounded::<()>(1);
        let thread = std::thread::Builder::new()
            .name("gpu-activity".into())
            .spawn(move || {
                let mut activity = self;
                let mut last = Instant::now();
                let mut next = last + SAMPLE_PERIOD;
                loop {
                    let wait = next.saturating_duration_since(Instant::now());
                    let is_stopping = match stopped.recv_timeout(wait) {
                        Err(RecvTimeoutError::Timeout) => false,
                        Ok(()) | Err(RecvTimeoutError::Disconnected) => true,
                    };
                    let now = Instant::now();
                    let period = now - last;
                    if !is_stopping || period >= LAST_PERIOD_MIN {
                        activity.report(now, period, &events);
                    }
                    if is_stopping {
                        activity.flush_idle(&events);
                        break;
                    }
                    last = now;
                    // Keep to the schedule, unless the thread was held up past a whole period.
                    next += SAMPLE_PERIOD;
                    if next <= now {
                        next = now + SAMPLE_PERIOD;
                    }
                }
            });
        let thread = match thread {
            Ok(thread) => Some(thread),
            Err(err) => {
                log::warn!("GPU kernel activity is not recorded: starting its thread: {err}");
                None
            }
        };
        Sampler {
            stop: Some(stop),
            thread,
        }
    }

    /// Sends one event per GPU for the `period` that just ended at `now`: the mean of the
    /// driver's samples in it, or the driver's latest figure when it has no new sample; idle
    /// periods wait to be sent as one stretch. A GPU NVML cannot answer for is left out of
    /// this period.
    fn report(&mut self, now: Instant, period: Duration, events: &EventSink) {
        for gpu in &mut self.gpus {
            let samples = self
                .nvml
                .samples(gpu.device, gpu.last_seen_us.unwrap_or(0))
                .unwrap_or_default();
            let busy_pct = match mean_busy_pct(gpu.last_seen_us, &samples) {
                Some(pct) => {
                    gpu.last_seen_us = samples.iter().map(|s| s.at_us).max();
                    Some(pct)
                }
                None => self.nvml.utilization_pct(gpu.device),
            };
            if let Some(busy_pct) = busy_pct {
                for row in gpu.idle.take(now, busy_pct, period) {
                    send(events, gpu.index, row);
                }
            }
        }
    }

    /// Sends every idle stretch not yet sent: the run is ending.
    fn flush_idle(&mut self, events: &EventSink) {
        for gpu in &mut self.gpus {
            if let Some(row) = gpu.idle.flush() {
                send(events, gpu.index, row);
            }
        }
    }
}

/// Sends `row` of GPU `gpu`, stamped at the end of its period.
fn send(events: &EventSink, gpu: usize, (end, busy_pct, period): Row<Instant>) {
    events.emit_at(
        end,
        EventKind::GpuBusy {
            gpu,
            busy_pct,
            period_ms: period.as_secs_f64() * 1e3,
        },
    );
}

/// The running sampler thread: stopping it (or dropping it) reports the last partial period
/// and waits for the thread to end.
pub struct Sampler {
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Sampler {
    /// Stops the thread after its last report.
    pub fn stop(mut self) {
        self.finish();
    }

    fn finish(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.try_send(());
        }
        if let Some(thread) = self.thread.take() {
            // A panic in the sampler lost some events; the run itself is fine.
            if thread.join().is_err() {
                log::warn!("the GPU activity sampler stopped early");
            }
        }
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_periods_go_out_as_one_row_at_the_end_of_the_stretch() {
        let second = Duration::from_secs(1);
        let mut idle = IdleStretch::new();
        // Three idle seconds wait; a busy one sends them, ending where they ended, then itself.
        for end in [1.0, 2.0, 3.0] {
            assert!(idle.take(end, 0.0, second).is_empty());
        }
        assert_eq!(
            idle.take(4.0, 40.0, second),
            [(3.0, 0.0, 3 * second), (4.0, 40.0, second)]
        );
        // A busy second with nothing idle before it goes alone.
        assert_eq!(idle.take(5.0, 10.0, second), [(5.0, 10.0, second)]);
        // A long idle wait is cut every IDLE_ROW_MAX.
        let mut sent = Vec::new();
        for i in 1..=IDLE_ROW_MAX.as_secs() + 10 {
            sent.extend(idle.take(5.0 + i as f64, 0.0, second));
        }
        assert_eq!(
            sent,
            [(5.0 + IDLE_ROW_MAX.as_secs_f64(), 0.0, IDLE_ROW_MAX)]
        );
        // The run ends: the rest goes out.
        assert_eq!(
            idle.flush(),
            Some((15.0 + IDLE_ROW_MAX.as_secs_f64(), 0.0, 10 * second))
        );
        assert_eq!(idle.flush(), None);
    }

    fn samples(list: &[(u64, f64)]) -> Vec<Sample> {
        list.iter()
            .map(|&(at_us, busy_pct)| Sample { at_us, busy_pct })
            .collect()
    }

    #[test]
    fn samples_are_weighted_by_the_period_each_describes() {
        // 100% over 0.5 s, then 40% over the next 1 s: (50 + 40) / 1.5 s = 60%.
        let mean = mean_busy_pct(
            Some(1_000_000),
            &samples(&[(1_500_000, 100.0), (2_500_000, 40.0)]),
        );
        assert_eq!(mean, Some(60.0));
        // Even periods: the plain mean, in any order.
        let mean = mean_busy_pct(Some(0), &samples(&[(3, 30.0), (1, 50.0), (2, 40.0)]));
        assert_eq!(mean, Some(40.0));
    }

    #[test]
    fn samples_already_reported_are_left_out() {
        let list = samples(&[(10, 100.0), (20, 0.0), (30, 50.0)]);
        assert_eq!(mean_busy_pct(Some(20), &list), Some(50.0));
        assert_eq!(mean_busy_pct(Some(30), &list), None);
        assert_eq!(mean_busy_pct(None, &[]), None);
    }

    #[test]
    fn a_first_sample_without_a_start_weighs_as_the_average() {
        // Without `previous_us` the first sample's period is unknown: it counts as long as
        // the others (10 us each), so 90, 30, 30 average to 50.
        let list = samples(&[(100, 90.0), (110, 30.0), (120, 30.0)]);
        assert_eq!(mean_busy_pct(None, &list), Some(50.0));
        // Alone, it is the answer.
        assert_eq!(mean_busy_pct(None, &samples(&[(5, 73.0)])), Some(73.0));
    }

    #[test]
    fn odd_values_are_clamped_or_dropped() {
        let list = samples(&[(1, 150.0), (2, f64::NAN), (3, -5.0)]);
        // 100 over [0, 1), 0 over [1, 3) (the NaN dropped, so the last sample covers both).
        let mean = mean_busy_pct(Some(0), &list).expect("a mean");
        assert!((mean - 100.0 / 3.0).abs() < 1e-9, "{mean}");
        // Several samples at one instant: the plain mean.
        assert_eq!(
            mean_busy_pct(None, &samples(&[(7, 20.0), (7, 60.0)])),
            Some(40.0)
        );
    }

    #[test]
    fn without_nvml_or_gpus_there_is_a_note_not_a_failure() {
        // On a machine with NVML and no matching GPU, or without NVML at all, `open` says why
        // in a note; it never panics.
        let gpus = [GpuDescription {
            index: 0,
            name: "none".into(),
            id: Some("GPU-00000000-0000-0000-0000-000000000000".into()),
            total_bytes: 0,
            free_bytes: None,
        }];
        match GpuActivity::open(&gpus) {
            Ok(_) => panic!("no GPU has the all-zero UUID"),
            // Without NVML the load fails; with it, the made-up GPU is unknown.
            Err(note) => {
                assert!(note.to_string().starts_with(UNRECORDED), "{note}");
                if let WatchGpusError::UnknownGpus(gpus) = &note {
                    assert_eq!(gpus, &["GPU 0"]);
                }
            }
        }
    }
}
