//! Where synthesis time went, from each partition's SYNTH_END profile: the circuit pass
//! (the witness, with the constraints for full synthesis) against the evaluation of the
//! pre-compiled matrices, by the clock and in CPU time, and what a partition in flight held.
//! A partition whose evaluation was left to the GPU holds its witness alone.

use serde::Serialize;

use crate::waterfall::spans::RunSpans;

/// Per-partition means of the synthesis profiles in a run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SynthesisSplit {
    /// Partitions with a profile (timelines before profiles have none).
    pub partitions: usize,
    /// Of them, synthesized over pre-compiled constraints.
    pub precompiled: usize,
    /// Of them, with a, b and c left to the prover's GPU.
    pub deferred: usize,
    pub circuit_s: f64,
    pub circuit_cpu_s: f64,
    pub evaluate_s: f64,
    pub evaluate_cpu_s: f64,
    /// Bytes a synthesized partition held, on average.
    pub bytes: u64,
}

/// The run's split; `None` when no partition carried a profile.
pub(super) fn synthesis_split(spans: &RunSpans) -> Option<SynthesisSplit> {
    let mut split = SynthesisSplit::default();
    let mut bytes = 0u64;
    for job in &spans.jobs {
        for part in job.partitions.values() {
            let Some((is_precompiled, is_deferred, p)) = part.synthesis else {
                continue;
            };
            if p.bytes == 0 && p.witness_ms == 0.0 {
                continue;
            }
            split.partitions += 1;
            split.precompiled += usize::from(is_precompiled);
            split.deferred += usize::from(is_deferred);
            split.circuit_s += p.witness_ms / 1e3;
            split.circuit_cpu_s += p.witness_cpu_ms / 1e3;
            split.evaluate_s += p.evaluate_ms / 1e3;
            split.evaluate_cpu_s += p.evaluate_cpu_ms / 1e3;
            bytes += p.bytes;
        }
    }
    if split.partitions == 0 {
        return None;
    }
    let n = split.partitions as f64;
    split.circuit_s /= n;
    split.circuit_cpu_s /= n;
    split.evaluate_s /= n;
    split.evaluate_cpu_s /= n;
    split.bytes = bytes / split.partitions as u64;
    Some(split)
}
