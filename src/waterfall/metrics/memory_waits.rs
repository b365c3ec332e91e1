//! Memory waits: partitions that waited for room in the memory budget (`--max-memory`) before
//! their synthesis could start. When they did, the budget, not the number of synthesis
//! workers, capped how many partitions were synthesized at once, and the verdict says so.

use serde::Serialize;

use crate::waterfall::intervals::Intervals;
use crate::waterfall::shared::ratio;
use crate::waterfall::spans::RunSpans;

/// How long partitions waited for memory.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct MemoryWaits {
    /// Partitions that waited at least once.
    pub partitions: usize,
    /// Time with at least one partition waiting, within the span.
    pub waiting_s: f64,
    pub waiting_fraction: f64,
}

/// Each partition's wait runs from its MEMORY_WAIT to its SYNTH_START (or the job's end, when
/// it never started). The feeder starts partitions in order, so one waits at a time.
pub(super) fn memory_waits(spans: &RunSpans, window: &Intervals) -> MemoryWaits {
    let mut waits = Vec::new();
    for job in &spans.jobs {
        let end = spans.job_end(job);
        for part in job.partitions.values() {
            if let Some(from) = part.memory_wait {
                waits.push((from, part.synth_start.unwrap_or(end).max(from)));
            }
        }
    }
    let partitions = waits.len();
    let waiting = Intervals::new(waits).intersect(window);
    MemoryWaits {
        partitions,
        waiting_s: waiting.total(),
        waiting_fraction: ratio(waiting.total(), window.total()),
    }
}

#[cfg(test)]
mod tests {
    use crate::waterfall::test_support::{assert_close, metrics};

    #[test]
    fn partitions_waiting_for_memory_are_measured_until_their_synthesis_starts() {
        // Partitions 2 and 3 of job 1 wait over [0.5, 4) and [4, 7), partition 0 of job 2
        // over [7.5, 8).
        let run = metrics("memory_bound.csv");
        let memory = &run.memory;
        assert_eq!(memory.partitions, 3);
        assert_close(memory.waiting_s, 3.5 + 3.0 + 0.5);
        assert_close(memory.waiting_fraction, 7.0 / run.span_s);
    }

    #[test]
    fn a_run_without_memory_waits_has_none() {
        let memory = metrics("synthesis_bound.csv").memory;
        assert_eq!(memory, Default::default());
    }
}
