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
        /// GPU_ENDs in the window after the first one's batch.
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
/// completed in the window are the GPU_ENDs after the first one's batch (a batch's
/// partitions start together on one lane and end within a moment of each other, all
/// proved before the window); with
/// `k` partitions per proof on average (GPU_ENDs over the jobs that had one), seconds per
/// proof is `window / later GPU_ENDs * k`.
///
/// With fewer than two jobs reaching the prover there is no window to speak of, so the
/// figure falls back to the whole span over the proofs written.
pub(super) fn throughput(spans: &RunSpans, span_s: f64, proved: usize) -> Option<Throughput> {
    // Each proved partition's end, lane and start.
    let mut ends = Vec::new();
    let mut jobs_proved = 0;
    for job in &spans.jobs {
        let before = ends.len();
        ends.extend(
            job.partitions
                .values()
                .filter_map(|p| Some((p.gpu_end?, p.lane.as_deref(), p.gpu_start))),
        );
        jobs_proved += usize::from(ends.len() > before);
    }
    ends.sort_by(|a, b| a.0.total_cmp(&b.0));
    if let (true, Some(&(from, lane, _)), Some(&(to, _, _))) =
        (jobs_proved >= 2, ends.first(), ends.last())
    {
        // The first end's batch: its lane's partitions that were proving when it ended
        // (a batch's proofs are written one after another, their ends a moment apart).
        let first_batch = ends
            .iter()
            .filter(|&&(end, on, start)| {
                on == lane && (end == from || start.is_some_and(|start| start < from))
            })
            .count();
        let later = ends.len() - first_batch;
        // A run that is one batch has no later end: no window, the whole span instead.
        if to > from && later > 0 {
            let partitions_per_proof = ends.len() as f64 / jobs_proved as f64;
            let seconds_per_proof = (to - from) / later as f64 * partitions_per_proof;
            return Some(Throughput {
                seconds_per_proof,
                proofs_per_hour: 3600.0 / seconds_per_proof,
                basis: Basis::SteadyState {
                    from_s: from,
                    to_s: to,
                    partitions: later,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::waterfall::analysis::analyze;
    use crate::waterfall::screen::screen;
    use crate::waterfall::shared::Selection;
    use crate::waterfall::test_support::{assert_close, fixture, metrics, options};

    #[test]
    fn a_batch_ending_together_counts_once_in_the_steady_state() {
        // Two jobs of two partitions, proved two at a time: 1-5 s and 5-9 s. The second
        // batch's two partitions (one proof's worth) took the 4 s after the first's end.
        let run = metrics("batched.csv");
        assert_eq!(
            run.throughput,
            Some(Throughput {
                seconds_per_proof: 4.0,
                proofs_per_hour: 900.0,
                basis: Basis::SteadyState {
                    from_s: 5.0,
                    to_s: 9.0,
                    partitions: 2,
                    partitions_per_proof: 2.0,
                },
            })
        );
        // The lane proved for 8 s, not for the 16 s its partitions' spans add up to.
        let steps = run.lanes[0].steps.as_ref().expect("steps");
        assert_eq!(steps.partitions, 4);
        assert_close(steps.prove_s, 8.0);
        assert_close(steps.kernel_s, 7.2);
        assert_close(steps.other_s, 0.0);
    }

    #[test]
    fn a_batch_whose_proofs_end_a_moment_apart_still_counts_once() {
        // As a real batch's GPU_ENDs come: one after another as each proof is put together,
        // a tenth of a millisecond apart. The first batch's second end is still its own.
        let mut timeline = fixture("batched.csv");
        let row = timeline
            .rows
            .iter_mut()
            .find(|row| row.event == "GPU_END" && row.job == "s-t01000-2" && row.t_ms == 5000.0)
            .expect("the first batch's second end");
        row.t_ms = 5000.1;
        let runs = analyze(&screen(&timeline), &Selection::Last, &options())
            .expect("analysis")
            .runs;
        let throughput = runs[0].throughput.as_ref().expect("throughput");
        assert_eq!(
            throughput.basis,
            Basis::SteadyState {
                from_s: 5.0,
                to_s: 9.0,
                partitions: 2,
                partitions_per_proof: 2.0,
            }
        );
        assert_close(throughput.seconds_per_proof, 4.0);

        // A run cut after that one batch has no steady state (no end after the batch's):
        // the whole span, over the proofs written (none yet here), not a division by none.
        timeline.rows.retain(|row| row.t_ms <= 5000.1);
        let runs = analyze(&screen(&timeline), &Selection::Last, &options())
            .expect("analysis")
            .runs;
        assert!(
            runs[0]
                .throughput
                .as_ref()
                .is_none_or(|t| matches!(t.basis, Basis::WholeRun { .. })),
            "{:?}",
            runs[0].throughput
        );
    }
}
