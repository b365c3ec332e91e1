//! Rows: each job's (or partition's) life from claim to done, cut into the stages it went
//! through, the seconds per phase, and their min, average and max over the proved rows.

use serde::Serialize;

use super::stage::Stage;
use crate::proof_kind::ProofKind;
use crate::waterfall::spans::{JobSpans, Outcome, PartitionSpans, RunSpans};

/// A stretch of time in one stage.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Segment {
    pub start_s: f64,
    pub end_s: f64,
    pub stage: Stage,
}

/// Seconds a row spent in each phase, and its total (they add up).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Phases {
    pub queue_s: f64,
    pub synthesis_s: f64,
    pub channel_s: f64,
    pub prove_s: f64,
    pub verify_s: f64,
    pub write_s: f64,
    pub total_s: f64,
}

impl Phases {
    fn from_segments(segments: &[Segment], start: f64, end: f64) -> Phases {
        let mut phases = Phases {
            total_s: end - start,
            ..Phases::default()
        };
        for segment in segments {
            let length = segment.end_s - segment.start_s;
            match segment.stage {
                Stage::Queue => phases.queue_s += length,
                Stage::Synthesis => phases.synthesis_s += length,
                Stage::Channel => phases.channel_s += length,
                Stage::Prove => phases.prove_s += length,
                Stage::Verify => phases.verify_s += length,
                Stage::Write => phases.write_s += length,
                // Lane stages: a row never is in them.
                Stage::Params | Stage::GpuLock | Stage::Idle => {}
            }
        }
        phases
    }

    /// The seconds in table order: the six phases, then the total.
    pub fn columns(&self) -> [f64; 7] {
        [
            self.queue_s,
            self.synthesis_s,
            self.channel_s,
            self.prove_s,
            self.verify_s,
            self.write_s,
            self.total_s,
        ]
    }

    fn from_columns(c: [f64; 7]) -> Phases {
        Phases {
            queue_s: c[0],
            synthesis_s: c[1],
            channel_s: c[2],
            prove_s: c[3],
            verify_s: c[4],
            write_s: c[5],
            total_s: c[6],
        }
    }
}

/// One row of the waterfall and the table: a job, or one partition of it.
#[derive(Clone, Debug, Serialize)]
pub struct RowMetrics {
    pub label: String,
    pub job: String,
    /// `c2` or `update`.
    pub kind: &'static str,
    pub partition: Option<usize>,
    pub outcome: Outcome,
    pub start_s: f64,
    pub end_s: f64,
    pub phases: Phases,
    #[serde(skip)]
    pub segments: Vec<Segment>,
}

/// Per-column min, average and max over the proved rows.
#[derive(Clone, Debug, Serialize)]
pub struct PhaseSummary {
    pub rows: usize,
    pub min: Phases,
    pub avg: Phases,
    pub max: Phases,
}

/// The waterfall rows: one per job, or one per partition.
pub(super) fn rows(spans: &RunSpans, per_partition: bool) -> Vec<RowMetrics> {
    let mut rows = Vec::with_capacity(spans.jobs.len());
    for job in &spans.jobs {
        let end = spans.job_end(job);
        // An update is marked where its rows are named; a C2 is what a row is by default.
        let name = match job.kind {
            ProofKind::Seal => job.name.clone(),
            ProofKind::Update => format!("{} [update]", job.name),
        };
        let row = |label: String, partition: Option<usize>, parts: &[&PartitionSpans]| {
            let segments = row_segments(job, parts, end);
            RowMetrics {
                label,
                job: job.name.clone(),
                kind: job.kind.as_str(),
                partition,
                outcome: job.outcome(),
                start_s: job.start(),
                end_s: end,
                phases: Phases::from_segments(&segments, job.start(), end),
                segments,
            }
        };
        if per_partition && !job.partitions.is_empty() {
            for (&index, part) in &job.partitions {
                rows.push(row(format!("{name} p{index}"), Some(index), &[part]));
            }
        } else {
            let parts: Vec<&PartitionSpans> = job.partitions.values().collect();
            rows.push(row(name, None, &parts));
        }
    }
    rows
}

/// Splits a row's life, start to `end`, into stages. The stage only changes at one of the
/// row's event times, so it is evaluated once between each pair of consecutive ones.
fn row_segments(job: &JobSpans, parts: &[&PartitionSpans], end: f64) -> Vec<Segment> {
    let start = job.start();
    let write_start = job.write_start();
    let mut cuts = vec![start, end];
    cuts.extend(
        [job.verify_start, job.verify_end, write_start, job.done]
            .iter()
            .flatten(),
    );
    for part in parts {
        cuts.extend(
            [
                part.synth_start,
                part.synth_end,
                part.gpu_start,
                part.gpu_end,
            ]
            .iter()
            .flatten(),
        );
    }
    cuts.retain(|&t| t >= start && t <= end);
    cuts.sort_by(f64::total_cmp);
    cuts.dedup();
    let mut segments: Vec<Segment> = Vec::new();
    for pair in cuts.windows(2) {
        let (from, to) = (pair[0], pair[1]);
        let stage = stage_at(job, parts, write_start, (from + to) / 2.0);
        match segments.last_mut() {
            Some(last) if last.stage == stage => last.end_s = to,
            _ => segments.push(Segment {
                start_s: from,
                end_s: to,
                stage,
            }),
        }
    }
    segments
}

/// The most advanced stage of the row at `t`.
fn stage_at(job: &JobSpans, parts: &[&PartitionSpans], write_start: Option<f64>, t: f64) -> Stage {
    let after = |time: Option<f64>| time.is_some_and(|time| time <= t);
    // An interval with no end yet is still open.
    let within = |from: Option<f64>, to: Option<f64>| after(from) && to.is_none_or(|to| t < to);
    if after(write_start) {
        Stage::Write
    } else if after(job.verify_start) {
        Stage::Verify
    } else if parts.iter().any(|p| within(p.gpu_start, p.gpu_end)) {
        Stage::Prove
    } else if parts.iter().any(|p| within(p.synth_start, p.synth_end)) {
        Stage::Synthesis
    } else if parts.iter().any(|p| within(p.synth_end, p.gpu_start)) {
        Stage::Channel
    } else {
        Stage::Queue
    }
}

/// Min, average and max of each column over the rows whose job was proved.
pub(super) fn summarize(rows: &[RowMetrics]) -> Option<PhaseSummary> {
    let proved: Vec<[f64; 7]> = rows
        .iter()
        .filter(|r| r.outcome == Outcome::Proved)
        .map(|r| r.phases.columns())
        .collect();
    let first = *proved.first()?;
    let (mut min, mut max, mut sum) = (first, first, [0.0; 7]);
    for columns in &proved {
        for i in 0..7 {
            min[i] = min[i].min(columns[i]);
            max[i] = max[i].max(columns[i]);
            sum[i] += columns[i];
        }
    }
    Some(PhaseSummary {
        rows: proved.len(),
        min: Phases::from_columns(min),
        avg: Phases::from_columns(sum.map(|s| s / proved.len() as f64)),
        max: Phases::from_columns(max),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::waterfall::metrics::throughput::{Basis, Throughput};
    use crate::waterfall::shared::{Options, Selection};
    use crate::waterfall::test_support::{analysis, assert_close, metrics, options};

    #[test]
    fn partitions_and_failures() {
        let run = metrics("partitions.csv");
        assert_eq!((run.jobs, run.proved, run.failed), (2, 1, 1));
        assert_eq!(run.rows.len(), 2);
        assert_eq!(
            run.rows[0].phases,
            Phases {
                queue_s: 0.0,
                synthesis_s: 2.0,
                channel_s: 0.0,
                prove_s: 4.0,
                verify_s: 1.0,
                write_s: 0.5,
                total_s: 7.5,
            }
        );
        assert_eq!(
            run.rows[1].outcome,
            Outcome::Failed {
                at_s: 1.5,
                reason: "parse: expected value at line 1 column 1".into(),
            }
        );
        assert_eq!(run.rows[1].phases.queue_s, 0.5);
        assert_eq!(run.summary.as_ref().map(|s| s.rows), Some(1));
        // One job reached the prover: no steady state, so the span over the one proof.
        assert_eq!(
            run.throughput,
            Some(Throughput {
                seconds_per_proof: 7.5,
                proofs_per_hour: 480.0,
                basis: Basis::WholeRun { proofs: 1 },
            })
        );

        let per_partition = Options {
            per_partition: true,
            ..options()
        };
        let run = &analysis("partitions.csv", Selection::Last, &per_partition).runs[0];
        let labels: Vec<&str> = run.rows.iter().map(|r| r.label.as_str()).collect();
        assert_eq!(labels, ["s-t01000-7 p0", "s-t01000-7 p1", "s-t01000-8"]);
        let p0 = &run.rows[0].phases;
        assert_eq!((p0.synthesis_s, p0.prove_s, p0.queue_s), (2.0, 2.0, 2.0));
        let p1 = &run.rows[1].phases;
        assert_eq!((p1.synthesis_s, p1.channel_s, p1.prove_s), (3.0, 1.0, 2.0));
        assert_eq!(run.summary.as_ref().map(|s| s.rows), Some(2));
    }

    #[test]
    fn phases_add_up_to_each_rows_total() {
        for name in [
            "gpu_bound.csv",
            "two_gpus.csv",
            "partitions.csv",
            "idle_gaps.csv",
        ] {
            for per_partition in [false, true] {
                let options = Options {
                    per_partition,
                    ..options()
                };
                for row in &analysis(name, Selection::All, &options).runs[0].rows {
                    let c = row.phases.columns();
                    assert_close(c[..6].iter().sum(), row.phases.total_s);
                }
            }
        }
    }
}
