//! Waiting work: the run-wide sets of moments when a partition was queued, a job still had
//! partitions to synthesize, or any job was in flight. Lanes read them to tell what their
//! idle time waited for, and the queue to measure itself.

use crate::waterfall::intervals::Intervals;
use crate::waterfall::shared::sum;
use crate::waterfall::spans::RunSpans;

/// The run-wide sets that say what an idle lane was waiting for.
pub(super) struct WaitSets {
    /// At least one partition synthesized and not yet picked up.
    pub(super) queued: Intervals,
    /// Queue time summed over partitions.
    pub(super) queued_sum: f64,
    /// A job in flight still had partitions to synthesize (claim to its last SYNTH_END).
    pub(super) pending_synthesis: Intervals,
    /// A job was in flight (claim to DONE/FAILED).
    pub(super) in_flight: Intervals,
}

impl WaitSets {
    pub(super) fn new(spans: &RunSpans) -> WaitSets {
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
