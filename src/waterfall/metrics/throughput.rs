//! Throughput: seconds per proof and proofs per hour, over the steady state when the run had
//! one, else over the whole span.

use serde::Serialize;

use crate::waterfall::spans::RunSpans;

/// What a throughput figure was measured over.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Basis {
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
pub struct Throughput {
    pub seconds_per_proof: f64,
    pub proofs_per_hour: f64,
    pub basis: Basis,
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
pub(super) fn throughput(spans: &RunSpans, span_s: f64, proved: usize) -> Option<Throughput> {
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
