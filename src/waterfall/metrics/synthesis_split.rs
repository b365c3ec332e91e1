//! Where synthesis time went, from each partition's SYNTH_END profile: the circuit pass
//! (the witness, with the constraints for full synthesis) against the evaluation of the
//! pre-compiled matrices, by the clock and in CPU time, and what a partition in flight held.
//! A partition whose evaluation was left to the GPU holds its witness alone, compact where
//! it is mostly bits (the time turning it so is shown apart).

use serde::Serialize;

use crate::waterfall::spans::RunSpans;

/// Per-partition means of the synthesis profiles in a run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SynthesisSplit {
    /// Partitions with a profile (timelines before profiles have none).
    pub partitions: usize,
    /// Of them, synthesized over pre-compiled constraints.
    pub precompiled: usize,
    /// Of them, with a, b and c left to the prover: evaluated on its GPU, or on the host
    /// right before the proof ([`Self::evaluated_at_prover`]).
    pub deferred: usize,
    /// Of the deferred, evaluated on the host by their prover (EVAL_END): the GPU kept no
    /// constraints.
    pub evaluated_at_prover: usize,
    pub circuit_s: f64,
    pub circuit_cpu_s: f64,
    pub evaluate_s: f64,
    pub evaluate_cpu_s: f64,
    /// Of them, with the witness turned compact for the GPU.
    pub compacted: usize,
    /// Turning it compact, per compacted partition.
    pub compact_s: f64,
    pub compact_cpu_s: f64,
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
            split.evaluated_at_prover += usize::from(is_deferred && part.eval_end.is_some());
            split.circuit_s += p.witness_ms / 1e3;
            split.circuit_cpu_s += p.witness_cpu_ms / 1e3;
            split.evaluate_s += p.evaluate_ms / 1e3;
            split.evaluate_cpu_s += p.evaluate_cpu_ms / 1e3;
            if p.compact_ms > 0.0 {
                split.compacted += 1;
                split.compact_s += p.compact_ms / 1e3;
                split.compact_cpu_s += p.compact_cpu_ms / 1e3;
            }
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
    if split.compacted > 0 {
        split.compact_s /= split.compacted as f64;
        split.compact_cpu_s /= split.compacted as f64;
    }
    split.bytes = bytes / split.partitions as u64;
    Some(split)
}

#[cfg(test)]
mod tests {
    use crate::waterfall::ascii::render_ascii;
    use crate::waterfall::test_support::{assert_close, metrics};

    #[test]
    fn the_time_turning_witnesses_compact_is_shown_apart_for_those_it_was_spent_on() {
        // Two partitions evaluated on the GPU: the first's witness went compact (3 MB held,
        // 0.4 s, 0.3 s of CPU), the second's stayed whole (86 MB).
        let run = metrics("compact_witness.csv");
        let split = run.synthesis.clone().expect("profiles");
        assert_eq!(
            (split.partitions, split.deferred, split.compacted),
            (2, 2, 1)
        );
        assert_close(split.circuit_s, 2.75);
        assert_close(split.compact_s, 0.4);
        assert_close(split.compact_cpu_s, 0.3);
        assert_eq!(split.bytes, 44_500_000);
        let text = render_ascii(std::slice::from_ref(&run), 80);
        assert!(
            text.contains("witness made compact 0.40 s (CPU 0.30 s, 1 of them); each held 44 MB"),
            "{text}"
        );
        assert!(text.contains("2 evaluated on the GPU)"), "{text}");
    }

    #[test]
    fn partitions_their_prover_evaluated_on_the_host_are_not_said_to_be_on_the_gpu() {
        // Three partitions left to the prover, each evaluated on the host (EVAL_END): a card
        // without room for the constraints.
        let run = metrics("host_evaluation_profiled.csv");
        let split = run.synthesis.clone().expect("profiles");
        assert_eq!((split.deferred, split.evaluated_at_prover), (3, 3));
        let text = render_ascii(std::slice::from_ref(&run), 80);
        assert!(
            text.contains("3 pre-compiled, 3 evaluated on the host at the prover)"),
            "{text}"
        );
        assert!(!text.contains("on the GPU)"), "{text}");
    }
}
