//! The ASCII drawing: header, waterfall, phase table, throughput, prover lanes and verdict.
//! It computes nothing, and owns what only it shows: the glyph of each stage, the table's
//! headings and the words for an idle gap's cause.

use super::axis::{tick_label, Axis};
use super::metrics::{Basis, IdleCause, RunMetrics, Stage};
use super::shared::{plural, ratio};
use super::spans::Outcome;

/// The character a stage is drawn with.
fn glyph(stage: Stage) -> char {
    match stage {
        Stage::Queue => '.',
        Stage::Synthesis => 'S',
        Stage::Channel => '~',
        Stage::Prove => 'G',
        Stage::Verify => 'V',
        Stage::Write => 'W',
        Stage::Params => 'P',
        Stage::GpuLock => 'L',
        Stage::Idle => '-',
    }
}

/// The character that marks where a row failed.
const FAILED_GLYPH: char = 'X';

/// The phase table's column headings, in the order of `Phases::columns`.
const PHASE_HEADINGS: [&str; 7] = [
    "queue", "synth", "chan", "prove", "verify", "write", "total",
];

/// What an idle gap waited for, as its line in the lane list says it.
fn waiting_for(cause: IdleCause) -> &'static str {
    match cause {
        IdleCause::GpuLock => "gpu lock (PoSt): gave way to a WindowPoSt or WinningPoSt",
        IdleCause::Evaluation => "host evaluation: the prover made a, b and c on the host",
        IdleCause::Scheduling => "scheduling: a synthesized partition was queued",
        IdleCause::Synthesis => "waiting for synthesis",
        IdleCause::Drain => "drain: nothing left to prove",
        IdleCause::Input => "input: no job in flight",
    }
}

/// Maps times onto `cols` character columns.
struct Scale {
    axis: Axis,
    cols: usize,
}

impl Scale {
    fn new(start: f64, end: f64, cols: usize) -> Scale {
        Scale {
            axis: Axis::new(start, end),
            cols: cols.max(1),
        }
    }

    fn col(&self, t: f64) -> usize {
        let x = (self.axis.fraction(t) * self.cols as f64).floor();
        if x.is_nan() || x < 0.0 {
            0
        } else {
            (x as usize).min(self.cols - 1)
        }
    }

    /// The time a column covers; the outer columns reach to infinity so nothing falls off.
    fn bounds(&self, col: usize) -> (f64, f64) {
        let at = |c: usize| self.axis.start() + self.axis.length() * c as f64 / self.cols as f64;
        let lo = if col == 0 { f64::NEG_INFINITY } else { at(col) };
        let hi = if col + 1 >= self.cols {
            f64::INFINITY
        } else {
            at(col + 1)
        };
        (lo, hi)
    }
}

/// Draws segments into columns: each column shows the stage covering most of it, so the
/// picture stays proportional; a column that nothing covers is blank.
fn paint(scale: &Scale, segments: impl IntoIterator<Item = (f64, f64, Stage)>) -> Vec<char> {
    // Seconds of each stage per column, indexed by the stage's place in `Stage::ALL`.
    let slot = |stage: Stage| stage as usize;
    let mut cover = vec![[0.0_f64; Stage::ALL.len()]; scale.cols];
    for (start, end, stage) in segments {
        if end <= start {
            continue;
        }
        for (col, cell) in cover
            .iter_mut()
            .enumerate()
            .take(scale.col(end) + 1)
            .skip(scale.col(start))
        {
            let (lo, hi) = scale.bounds(col);
            let overlap = end.min(hi) - start.max(lo);
            if overlap > 0.0 {
                cell[slot(stage)] += overlap;
            }
        }
    }
    cover
        .iter()
        .map(|cell| {
            Stage::ALL
                .iter()
                .filter(|&&stage| cell[slot(stage)] > 0.0)
                .max_by(|&&a, &&b| cell[slot(a)].total_cmp(&cell[slot(b)]))
                .map_or(' ', |&stage| glyph(stage))
        })
        .collect()
}

/// `label` in exactly `width` characters: padded, or cut from the left (job names differ at
/// their end) behind `..`.
fn fit(label: &str, width: usize) -> String {
    let chars: Vec<char> = label.chars().collect();
    if chars.len() <= width {
        return format!("{label:<width$}");
    }
    if width < 3 {
        return chars[..width].iter().collect();
    }
    let tail: String = chars[chars.len() - (width - 2)..].iter().collect();
    format!("..{tail}")
}

/// `items` after `prefix`, two spaces apart, wrapped at `width` with a hanging indent.
fn wrap(prefix: &str, items: &[String], width: usize) -> Vec<String> {
    let indent = " ".repeat(prefix.chars().count());
    let mut lines = vec![prefix.to_owned()];
    let mut fresh = true;
    for item in items {
        let Some(line) = lines.last_mut() else { break };
        let needed = if fresh { 0 } else { 2 } + item.chars().count();
        if !fresh && line.chars().count() + needed > width {
            lines.push(format!("{indent}{item}"));
        } else {
            if !fresh {
                line.push_str("  ");
            }
            line.push_str(item);
        }
        fresh = false;
    }
    lines
}

/// Draws each run in turn, separated by a rule.
pub(super) fn render_ascii(runs: &[RunMetrics], width: usize) -> String {
    let mut lines = Vec::new();
    for (i, run) in runs.iter().enumerate() {
        if i > 0 {
            lines.push(String::new());
            lines.push("=".repeat(width));
            lines.push(String::new());
        }
        ascii_header(run, &mut lines);
        lines.push(String::new());
        ascii_waterfall(run, width, &mut lines);
        lines.push(String::new());
        ascii_table(run, &mut lines);
        lines.push(String::new());
        ascii_throughput(run, &mut lines);
        lines.push(String::new());
        ascii_lanes(run, &mut lines);
        if let Some(kernels) = &run.gpu_kernels {
            lines.push(kernels.describe());
        }
        lines.push(format!("verdict: {}", run.verdict.text));
    }
    let mut text = lines.join("\n");
    text.push('\n');
    text
}

fn ascii_header(run: &RunMetrics, lines: &mut Vec<String>) {
    let mut counts = vec![
        plural(run.jobs, "job"),
        format!("{} proved", run.proved),
        format!("{} failed", run.failed),
    ];
    if run.unfinished > 0 {
        counts.push(format!("{} unfinished", run.unfinished));
    }
    if run.deferred > 0 {
        counts.push(format!("{} deferred", run.deferred));
    }
    lines.push(format!(
        "run {} ({} of {} in the file): {}; wall {:.2} s; {}",
        run.run_id,
        run.position,
        run.runs_in_file,
        counts.join(", "),
        run.wall_s,
        plural(run.synthesis_workers.len(), "synthesis worker"),
    ));
}

/// The picture: time axis, one bar per row, one per lane, and the legend. Every line of it
/// fits in `width` columns.
fn ascii_waterfall(run: &RunMetrics, width: usize, lines: &mut Vec<String>) {
    const LANES_HEADING: &str = "prover lanes";
    let longest = run
        .rows
        .iter()
        .map(|row| row.label.chars().count())
        .chain(run.lanes.iter().map(|lane| lane.name.chars().count()))
        .chain([LANES_HEADING.len()])
        .max()
        .unwrap_or(0);
    // Labels take at most a third of the line and always leave ten columns of bar.
    let label_w = longest
        .min((width / 3).max(4))
        .min(width.saturating_sub(13))
        .max(1);
    let cols = width.saturating_sub(label_w + 3).max(1);
    let scale = Scale::new(run.start_s, run.end_s, cols);

    let (tick_times, step) = scale.axis.ticks((cols / 10).max(1));
    let mut marks = vec!['-'; cols];
    let mut labels = vec![' '; label_w + 2 + cols];
    let mut free_from = label_w + 2;
    for &t in &tick_times {
        let col = scale.col(t);
        marks[col] = '+';
        let text: Vec<char> = tick_label(t, step).chars().collect();
        let at = label_w + 2 + col;
        if at >= free_from && at + text.len() <= labels.len() {
            labels[at..at + text.len()].copy_from_slice(&text);
            free_from = at + text.len() + 1;
        }
    }
    let marks: String = marks.into_iter().collect();
    lines.push(labels.into_iter().collect::<String>().trim_end().to_owned());
    lines.push(format!("{} |{marks}|", fit("", label_w)));

    for row in &run.rows {
        let segments = row.segments.iter().map(|s| (s.start_s, s.end_s, s.stage));
        let mut bar = paint(&scale, segments);
        if let Outcome::Failed { at_s, .. } = row.outcome {
            bar[scale.col(at_s)] = FAILED_GLYPH;
        }
        let bar: String = bar.into_iter().collect();
        lines.push(format!("{} |{bar}|", fit(&row.label, label_w)));
    }

    lines.push(format!("{} |{marks}|", fit(LANES_HEADING, label_w)));
    for lane in &run.lanes {
        let other_idle = lane.idle_spans.subtract(&lane.gpu_lock);
        let stretches = [
            (&lane.proving, Stage::Prove),
            (&lane.loading, Stage::Params),
            (&lane.gpu_lock, Stage::GpuLock),
            (&other_idle, Stage::Idle),
        ];
        let segments = stretches
            .iter()
            .flat_map(|(set, stage)| set.spans().iter().map(move |&(a, b)| (a, b, *stage)));
        let bar: String = paint(&scale, segments).into_iter().collect();
        lines.push(format!("{} |{bar}|", fit(&lane.name, label_w)));
    }

    let legend = |stages: &[Stage]| -> Vec<String> {
        stages
            .iter()
            .map(|&s| format!("{} {}", glyph(s), s.name()))
            .collect()
    };
    let mut jobs = legend(&Stage::JOB);
    jobs.push(format!("{FAILED_GLYPH} failed"));
    lines.extend(wrap("legend rows:  ", &jobs, width));
    lines.extend(wrap("legend lanes: ", &legend(&Stage::LANE), width));
}

/// Per-row phases with min/avg/max over the proved jobs.
fn ascii_table(run: &RunMetrics, lines: &mut Vec<String>) {
    let label_w = run
        .rows
        .iter()
        .map(|row| row.label.chars().count())
        .max()
        .unwrap_or(0)
        .clamp(9, 40);
    let heading = if run.rows.iter().any(|r| r.partition.is_some()) {
        "partition"
    } else {
        "job"
    };
    let cells =
        |columns: [f64; 7]| -> String { columns.iter().map(|v| format!("{v:>8.2}")).collect() };
    let headings: String = PHASE_HEADINGS.iter().map(|h| format!("{h:>8}")).collect();
    lines.push(format!("{} {headings}   (seconds)", fit(heading, label_w)));
    for row in &run.rows {
        let note = match &row.outcome {
            Outcome::Proved => String::new(),
            Outcome::Failed { reason, .. } => format!("  FAILED {}", clip(reason, 60)),
            Outcome::Unfinished => "  unfinished".to_owned(),
        };
        lines.push(format!(
            "{} {}{note}",
            fit(&row.label, label_w),
            cells(row.phases.columns())
        ));
    }
    match &run.summary {
        Some(summary) => {
            let rule = "-".repeat(label_w + 1 + 8 * PHASE_HEADINGS.len());
            lines.push(rule);
            for (name, phases) in [
                ("min", &summary.min),
                ("avg", &summary.avg),
                ("max", &summary.max),
            ] {
                lines.push(format!(
                    "{} {}",
                    fit(name, label_w),
                    cells(phases.columns())
                ));
            }
            lines.push(format!(
                "(min/avg/max over the {} of proved jobs)",
                plural(summary.rows, "row")
            ));
        }
        None => lines.push("(no job was proved: no min/avg/max)".to_owned()),
    }
}

/// At most `max` characters of `text`.
fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_owned(),
    }
}

fn ascii_throughput(run: &RunMetrics, lines: &mut Vec<String>) {
    lines.push(match &run.throughput {
        None => "throughput: no proof finished".to_owned(),
        Some(t) => {
            let basis = match &t.basis {
                Basis::SteadyState {
                    from_s,
                    to_s,
                    partitions,
                    partitions_per_proof,
                } => format!(
                    "steady state {from_s:.2} s -> {to_s:.2} s, first GPU_END to last: {} after \
                     the first{}",
                    plural(*partitions, "partition proof"),
                    if *partitions_per_proof == 1.0 {
                        String::new()
                    } else {
                        format!(", {partitions_per_proof:.1} per proof")
                    }
                ),
                Basis::WholeRun { proofs } => format!(
                    "whole span over {}: too few proofs for a steady state",
                    plural(*proofs, "proof")
                ),
            };
            format!(
                "throughput: {:.2} s/proof, {:.1} proofs/h ({basis})",
                t.seconds_per_proof, t.proofs_per_hour
            )
        }
    });
    let q = &run.queue;
    let behind_loading = match q.behind_loading_s {
        s if s > 0.0 => format!(" ({s:.2} s behind a parameter load)"),
        _ => String::new(),
    };
    lines.push(format!(
        "queue: a partition was queued {:.2} s ({:.0}% of the span), {:.2} s summed over \
         partitions; {:.2} s ({:.0}%) of it with every lane occupied{behind_loading}",
        q.queued_s,
        q.queued_fraction * 100.0,
        q.partition_wait_s,
        q.prover_bound_s,
        q.prover_bound_fraction * 100.0
    ));
    let m = &run.memory;
    if m.partitions > 0 {
        lines.push(format!(
            "memory: {} waited for the memory budget before synthesis, {:.2} s in all ({:.0}% \
             of the span)",
            plural(m.partitions, "partition"),
            m.waiting_s,
            m.waiting_fraction * 100.0
        ));
    }
    if let Some(sy) = &run.synthesis {
        let compaction = match sy.compacted {
            0 => String::new(),
            n => format!(
                ", witness made compact {:.2} s (CPU {:.2} s, {n} of them)",
                sy.compact_s, sy.compact_cpu_s
            ),
        };
        let on_gpu = sy.deferred - sy.evaluated_at_prover;
        let evaluated = match (on_gpu, sy.evaluated_at_prover) {
            (_, 0) => format!("{on_gpu} evaluated on the GPU"),
            (0, host) => format!("{host} evaluated on the host at the prover"),
            (gpu, host) => {
                format!("{gpu} evaluated on the GPU, {host} on the host at the prover")
            }
        };
        lines.push(format!(
            "synthesis per partition ({}: {} pre-compiled, {evaluated}): circuit \
             pass {:.2} s (CPU {:.2} s), constraint evaluation {:.2} s (CPU {:.2} s){compaction}; \
             each held {}",
            plural(sy.partitions, "partition"),
            sy.precompiled,
            sy.circuit_s,
            sy.circuit_cpu_s,
            sy.evaluate_s,
            sy.evaluate_cpu_s,
            crate::memory::show_bytes(sy.bytes)
        ));
    }
}

/// Gaps listed per lane before "and N more".
const GAPS_SHOWN: usize = 20;

fn ascii_lanes(run: &RunMetrics, lines: &mut Vec<String>) {
    lines.push(format!(
        "prover lanes over the span {:.2} s -> {:.2} s ({:.2} s); idle gaps of at least {:.2} s:",
        run.span_start_s, run.span_end_s, run.span_s, run.gap_threshold_s
    ));
    if run.lanes.is_empty() {
        lines.push("  (no prover lane in this run)".to_owned());
    }
    let name_w = run.lanes.iter().map(|l| l.name.len()).max().unwrap_or(0);
    let indent = " ".repeat(name_w + 3);
    for lane in &run.lanes {
        let idle = &lane.idle;
        // Only lanes that gave way to a PoSt say so: most machines never prove PoSt.
        let gpu_lock = if idle.gpu_lock_s > 0.0 {
            format!("gpu lock (PoSt) {:.2} s, ", idle.gpu_lock_s)
        } else {
            String::new()
        };
        // Likewise only lanes whose prover evaluated on the host.
        let gpu_lock = if idle.evaluation_s > 0.0 {
            format!("{gpu_lock}host evaluation {:.2} s, ", idle.evaluation_s)
        } else {
            gpu_lock
        };
        lines.push(format!(
            "  {:<name_w$} busy {:.1}% ({:.2} s, {}), params {:.2} s; idle: {gpu_lock}synthesis \
             {:.2} s, scheduling {:.2} s, drain {:.2} s, input {:.2} s",
            lane.name,
            lane.busy_fraction * 100.0,
            lane.busy_s,
            plural(lane.partitions, "partition"),
            lane.params_s,
            idle.synthesis_s,
            idle.scheduling_s,
            idle.drain_s,
            idle.input_s
        ));
        if let Some(s) = &lane.steps {
            let share = |x: f64| ratio(x, s.prove_s) * 100.0;
            lines.push(format!(
                "{indent}prover time {:.2} s over {}: kernels {:.2} s ({:.0}%: fft {:.2} + msm G1 \
                 {:.2} + msm G2 {:.2}), CPU tail {:.2} s ({:.0}%), other {:.2} s ({:.0}%{}); \
                 kernels ran {:.0}% of the span against {:.0}% busy",
                s.prove_s,
                plural(s.partitions, "partition"),
                s.kernel_s,
                share(s.kernel_s),
                s.fft_s,
                s.msm_g1_s,
                s.msm_g2_s,
                s.cpu_tail_s,
                share(s.cpu_tail_s),
                s.other_s,
                share(s.other_s),
                if s.upload_s > 0.0 {
                    format!(", of it uploads {:.2} s", s.upload_s)
                } else {
                    String::new()
                },
                ratio(s.kernel_s, run.span_s) * 100.0,
                lane.busy_fraction * 100.0
            ));
            if s.evaluate_s > 0.0 || s.msm_g1_split_s.iter().any(|&x| x > 0.0) {
                let [h, l, a, b_g1] = s.msm_g1_split_s;
                let pcie = if s.pcie_gb > 0.0 {
                    format!(
                        "; over PCIe {:.2} GB per partition",
                        ratio(s.pcie_gb, s.partitions as f64)
                    )
                } else {
                    String::new()
                };
                let beside = if s.beside_h_s > 0.0 {
                    format!(
                        " (beside it, the queries' ones and streamed bases {:.2} s)",
                        s.beside_h_s
                    )
                } else {
                    String::new()
                };
                lines.push(format!(
                    "{indent}kernels by step: constraint evaluation {:.2} s, fft {:.2} s, msm H \
                     {h:.2} s{beside}, L {l:.2} s, A {a:.2} s, B G1 {b_g1:.2} s, B G2 {:.2} s{pcie}",
                    s.evaluate_s, s.fft_s, s.msm_g2_s
                ));
            }
        }
        for gap in lane.gaps.iter().take(GAPS_SHOWN) {
            lines.push(format!(
                "{indent}gap {:.2} s -> {:.2} s ({:.2} s) {}",
                gap.start_s,
                gap.end_s,
                gap.length_s,
                waiting_for(gap.waiting_for)
            ));
        }
        if lane.gaps.len() > GAPS_SHOWN {
            lines.push(format!(
                "{indent}... and {} more (all of them with --json)",
                plural(lane.gaps.len() - GAPS_SHOWN, "gap")
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::waterfall::shared::{Options, Selection};
    use crate::waterfall::test_support::{analysis, metrics, options};

    /// Lines of the picture: the axis, rows and lanes, all framed by `|`.
    fn bars(text: &str) -> Vec<&str> {
        text.lines()
            .filter(|line| line.ends_with('|') && line.contains(" |"))
            .collect()
    }

    #[test]
    fn ascii_has_one_row_per_job_lane_rows_and_respects_the_width() {
        let run = metrics("gpu_bound.csv");
        for width in [20, 60, 100, 181] {
            let text = render_ascii(std::slice::from_ref(&run), width);
            let bars = bars(&text);
            // Two axis lines, four jobs, one lane.
            assert_eq!(bars.len(), 7, "{text}");
            assert!(
                bars.iter().all(|line| line.chars().count() == width),
                "{text}"
            );
            // From the tick labels to the legend; a legend entry is never split, so a very
            // narrow picture may be as wide as the longest entry.
            let legend_end = text.lines().position(|l| l.starts_with("legend lanes:"));
            let picture = text.lines().take(legend_end.expect("legend") + 1).skip(2);
            assert!(
                picture
                    .into_iter()
                    .all(|line| line.chars().count() <= width.max(30)),
                "{text}"
            );
        }
        let text = render_ascii(std::slice::from_ref(&run), 100);
        let job_rows: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("s-t01000-"))
            .collect();
        // The table repeats each job once.
        assert_eq!(job_rows.len(), 8, "{text}");
        let first = bars(&text)[1];
        assert!(first.starts_with("s-t01000-1"), "{text}");
        let bar = &first[first.find('|').expect("bar") + 1..first.len() - 1];
        // Job 1: synthesis [0, 1), proving [1, 3), verify [3, 4) on a 10 s axis.
        let glyphs: String = bar.chars().filter(|c| *c != ' ').collect();
        assert!(glyphs.starts_with("SSS"), "{bar}");
        assert!(glyphs.contains("GGGG") && glyphs.ends_with('V'), "{bar}");
        assert!(
            text.lines()
                .any(|l| l.starts_with("gpu-0") && l.contains("G-")),
            "{text}"
        );
        assert!(text.contains("\nverdict: GPU-bound"), "{text}");
    }

    #[test]
    fn ascii_marks_failures_and_labels_partitions() {
        let per_partition = Options {
            per_partition: true,
            ..options()
        };
        let runs = analysis("partitions.csv", Selection::Last, &per_partition).runs;
        let text = render_ascii(&runs, 80);
        let failed = bars(&text)
            .into_iter()
            .find(|line| line.starts_with("s-t01000-8"))
            .expect("failed row");
        assert!(failed.contains('X'), "{text}");
        assert!(text.contains("s-t01000-7 p1 |"), "{text}");
        assert!(text.contains("FAILED parse: expected value"), "{text}");
    }

    #[test]
    fn all_runs_are_drawn_one_after_another() {
        let runs = analysis("runs.csv", Selection::All, &options()).runs;
        let text = render_ascii(&runs, 80);
        let r1 = text.find("run r1 (1 of 2 in the file)").expect("r1");
        let r2 = text.find("run r2 (2 of 2 in the file)").expect("r2");
        assert!(r1 < r2);
        assert_eq!(text.matches("verdict:").count(), 2);
        assert!(text.contains(&"=".repeat(80)));
    }

    #[test]
    fn paint_shows_the_stage_covering_most_of_each_column() {
        let scale = Scale::new(0.0, 10.0, 10);
        let bar: String = paint(
            &scale,
            [
                (0.0, 2.6, Stage::Synthesis),
                (2.6, 3.0, Stage::Channel),
                (3.0, 3.01, Stage::Prove),
                (9.0, 10.0, Stage::Verify),
            ],
        )
        .into_iter()
        .collect();
        // Column 2 is 60% synthesis, 40% channel; a 10 ms proof alone shows in column 3.
        assert_eq!(bar, "SSSG     V");
        assert_eq!(scale.col(-1.0), 0);
        assert_eq!(scale.col(10.0), 9);
    }

    /// The whole drawing of a two-GPU run, as users read it: any change to it shows up in
    /// review as a change to the snapshot.
    #[test]
    fn two_gpus_drawn_at_100_columns() {
        let run = metrics("two_gpus.csv");
        insta::assert_snapshot!(render_ascii(std::slice::from_ref(&run), 100));
    }

    #[test]
    fn a_lane_giving_way_to_post_shows_the_gpu_lock() {
        let run = metrics("priority_lock.csv");
        let text = render_ascii(std::slice::from_ref(&run), 60);
        let lane = bars(&text)
            .into_iter()
            .find(|line| line.starts_with("gpu-0"))
            .expect("lane");
        assert!(lane.contains("LLLL"), "{text}");
        assert!(text.contains("L gpu lock (PoSt)"), "{text}");
        assert!(
            text.contains("idle: gpu lock (PoSt) 4.00 s, synthesis 2.00 s"),
            "{text}"
        );
        assert!(
            text.contains("gap 1.00 s -> 5.00 s (4.00 s) gpu lock (PoSt): gave way"),
            "{text}"
        );
        // Lanes that never gave way do not mention it.
        let quiet = render_ascii(&[metrics("gpu_bound.csv")], 60);
        assert!(!quiet.contains("idle: gpu lock"), "{quiet}");
    }

    #[test]
    fn a_lane_that_counted_its_bytes_shows_them_per_partition() {
        let text = render_ascii(&[metrics("uploads_bound.csv")], 100);
        assert!(
            text.contains("B G2 0.80 s; over PCIe 25.31 GB per partition"),
            "{text}"
        );
        assert!(text.contains("of it uploads 2.40 s"), "{text}");
        // The query sets streamed beside H: within H's time.
        assert!(
            text.contains("msm H 2.00 s (beside it, the queries' ones and streamed bases 1.60 s)"),
            "{text}"
        );
        let quiet = render_ascii(&[metrics("gpu_bound.csv")], 100);
        assert!(!quiet.contains("over PCIe"), "{quiet}");
        assert!(!quiet.contains("beside it"), "{quiet}");
    }

    #[test]
    fn labels_keep_their_distinguishing_end() {
        assert_eq!(fit("abcdefghij", 6), "..ghij");
        assert_eq!(fit("abc", 6), "abc   ");
        assert_eq!(clip("abcdef", 3), "abc...");
    }
}
