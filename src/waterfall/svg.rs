//! The SVG drawing: the same waterfall as a standalone image, runs stacked top to bottom.
//! It computes nothing, and owns what only it shows: the colour of each stage.

use super::axis::{tick_label, Axis};
use super::metrics::{RunMetrics, Stage};
use super::spans::Outcome;

/// The fill a stage is drawn with.
fn colour(stage: Stage) -> &'static str {
    match stage {
        Stage::Queue => "#c7c7c7",
        Stage::Synthesis => "#4e79a7",
        Stage::Channel => "#f28e2b",
        Stage::Prove => "#59a14f",
        Stage::Verify => "#b07aa1",
        Stage::Write => "#9c755f",
        Stage::Params => "#edc948",
        Stage::GpuLock => "#ff9da7",
        Stage::Idle => "#eeeeee",
    }
}

/// The fill of the mark where a row failed.
const FAILED_COLOUR: &str = "#e15759";

const SVG_CHART_W: f64 = 1000.0;
const SVG_ROW_H: f64 = 16.0;
const SVG_BAR_H: f64 = 11.0;
const SVG_CHAR_W: f64 = 7.2;
const SVG_PAD: f64 = 10.0;
/// Room right of the chart for the lanes' busy percentages.
const SVG_RIGHT: f64 = 60.0;

/// The same waterfall as a standalone SVG document, runs stacked top to bottom.
pub(super) fn render_svg(runs: &[RunMetrics]) -> String {
    let longest = runs
        .iter()
        .flat_map(|run| {
            let rows = run.rows.iter().map(|row| row.label.chars().count());
            rows.chain(run.lanes.iter().map(|lane| lane.name.chars().count()))
        })
        .chain(["prover lanes".len()])
        .max()
        .unwrap_or(0)
        .min(48);
    let left = SVG_PAD + longest as f64 * SVG_CHAR_W + SVG_PAD;
    let mut body = String::new();
    let mut y = SVG_PAD;
    for run in runs {
        y = svg_run(run, left, y, &mut body) + 2.0 * SVG_ROW_H;
    }
    // Wide enough for the chart and for the longest line of text (the verdict, usually).
    let longest_text = runs
        .iter()
        .map(|run| run.verdict.text.chars().count() + "verdict: ".len())
        .chain(runs.iter().filter_map(|run| {
            let kernels = run.gpu_kernels.as_ref()?;
            Some(kernels.describe().chars().count())
        }))
        .max()
        .unwrap_or(0);
    let width =
        (left + SVG_CHART_W + SVG_RIGHT).max(2.0 * SVG_PAD + longest_text as f64 * SVG_CHAR_W);
    let height = y;
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{height:.0}\" \
         viewBox=\"0 0 {width:.0} {height:.0}\" font-family=\"monospace\" font-size=\"12\">\n\
         <rect x=\"0\" y=\"0\" width=\"{width:.0}\" height=\"{height:.0}\" fill=\"white\"/>\n\
         {body}</svg>\n"
    )
}

/// Draws one run from `top`; returns the y below it.
fn svg_run(run: &RunMetrics, left: f64, top: f64, out: &mut String) -> f64 {
    let axis = Axis::new(run.start_s, run.end_s);
    let x = |t: f64| left + axis.fraction(t) * SVG_CHART_W;
    let mut y = top;

    svg_text(
        out,
        SVG_PAD,
        y + 12.0,
        "",
        &format!(
            "run {}: {} proved, {} failed, wall {:.2} s",
            run.run_id, run.proved, run.failed, run.wall_s
        ),
    );
    y += 2.0 * SVG_ROW_H;

    let (tick_times, step) = axis.ticks(10);
    out.push_str(&format!(
        "<line x1=\"{left:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"#555\"/>\n",
        left + SVG_CHART_W
    ));
    for &t in &tick_times {
        out.push_str(&format!(
            "<line x1=\"{0:.1}\" y1=\"{1:.1}\" x2=\"{0:.1}\" y2=\"{2:.1}\" stroke=\"#555\"/>\n",
            x(t),
            y - 4.0,
            y + 4.0
        ));
        svg_text(
            out,
            x(t),
            y - 6.0,
            " text-anchor=\"middle\"",
            &tick_label(t, step),
        );
    }
    y += 6.0;

    for row in &run.rows {
        svg_text(out, SVG_PAD, y + SVG_ROW_H - 4.0, "", &row.label);
        for s in &row.segments {
            let title = format!(
                "{}: {} {:.3} s -> {:.3} s ({:.3} s)",
                row.label,
                s.stage.name(),
                s.start_s,
                s.end_s,
                s.end_s - s.start_s
            );
            svg_rect(out, x(s.start_s), x(s.end_s), y, colour(s.stage), &title);
        }
        if let Outcome::Failed { at_s, reason } = &row.outcome {
            let title = format!("{}: failed at {at_s:.3} s: {reason}", row.label);
            svg_rect(
                out,
                x(*at_s) - 1.5,
                x(*at_s) + 1.5,
                y,
                FAILED_COLOUR,
                &title,
            );
        }
        y += SVG_ROW_H;
    }

    svg_text(
        out,
        SVG_PAD,
        y + SVG_ROW_H - 4.0,
        " font-weight=\"bold\"",
        "prover lanes",
    );
    y += SVG_ROW_H;
    for lane in &run.lanes {
        svg_text(out, SVG_PAD, y + SVG_ROW_H - 4.0, "", &lane.name);
        let other_idle = lane.idle_spans.subtract(&lane.gpu_lock);
        for (set, stage) in [
            (&other_idle, Stage::Idle),
            (&lane.gpu_lock, Stage::GpuLock),
            (&lane.loading, Stage::Params),
            (&lane.proving, Stage::Prove),
        ] {
            for &(a, b) in set.spans() {
                let title = format!("{}: {} {a:.3} s -> {b:.3} s", lane.name, stage.name());
                svg_rect(out, x(a), x(b), y, colour(stage), &title);
            }
        }
        let label = format!("{:.0}% busy", lane.busy_fraction * 100.0);
        svg_text(
            out,
            left + SVG_CHART_W + 4.0,
            y + SVG_ROW_H - 4.0,
            "",
            &label,
        );
        y += SVG_ROW_H;
    }

    y += SVG_ROW_H / 2.0;
    let mut legend_x = left;
    let swatches = Stage::JOB
        .iter()
        .chain(&[Stage::Params, Stage::GpuLock, Stage::Idle])
        .map(|&s| (colour(s), s.name()))
        .chain([(FAILED_COLOUR, "failed")]);
    for (colour, name) in swatches {
        out.push_str(&format!(
            "<rect x=\"{legend_x:.1}\" y=\"{:.1}\" width=\"10\" height=\"10\" fill=\"{colour}\"/>\n",
            y + 2.0
        ));
        svg_text(out, legend_x + 14.0, y + 11.0, "", name);
        legend_x += 14.0 + name.len() as f64 * SVG_CHAR_W + 12.0;
    }
    y += SVG_ROW_H;
    if let Some(kernels) = &run.gpu_kernels {
        svg_text(out, SVG_PAD, y + 12.0, "", &kernels.describe());
        y += SVG_ROW_H;
    }
    svg_text(
        out,
        SVG_PAD,
        y + 12.0,
        "",
        &format!("verdict: {}", run.verdict.text),
    );
    y + SVG_ROW_H
}

/// A bar from `x0` to `x1` in the row at `y`, at least half a pixel wide so short stages show.
fn svg_rect(out: &mut String, x0: f64, x1: f64, y: f64, fill: &str, title: &str) {
    out.push_str(&format!(
        "<rect x=\"{x0:.2}\" y=\"{:.1}\" width=\"{:.2}\" height=\"{SVG_BAR_H}\" fill=\"{fill}\">\
         <title>{}</title></rect>\n",
        y + (SVG_ROW_H - SVG_BAR_H) / 2.0,
        (x1 - x0).max(0.5),
        xml_escape(title)
    ));
}

/// Text at (`x`, `y`); `attributes` are extra, already escaped attributes.
fn svg_text(out: &mut String, x: f64, y: f64, attributes: &str, text: &str) {
    out.push_str(&format!(
        "<text x=\"{x:.1}\" y=\"{y:.1}\"{attributes}>{}</text>\n",
        xml_escape(text)
    ));
}

/// Escapes text for XML content and attributes; control characters XML 1.0 forbids become `?`.
pub(super) fn xml_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if c.is_control() => out.push('?'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::waterfall::analysis::analyze;
    use crate::waterfall::screen::screen;
    use crate::waterfall::shared::Selection;
    use crate::waterfall::test_support::{fixture, options};

    #[test]
    fn svg_is_well_formed_and_escapes_names() {
        let mut timeline = fixture("partitions.csv");
        for row in &mut timeline.rows {
            if row.job == "s-t01000-8" {
                row.job = "<odd & \"name\">\u{1}'".into();
            }
        }
        let options = options();
        let runs = analyze(&screen(&timeline), &Selection::Last, &options)
            .expect("analysis")
            .runs;
        let svg = render_svg(&runs);
        let document = roxmltree::Document::parse(&svg).expect("well-formed SVG");
        let root = document.root_element();
        assert_eq!(root.tag_name().name(), "svg");
        let texts: Vec<&str> = root
            .descendants()
            .filter(|n| n.has_tag_name("text"))
            .filter_map(|n| n.text())
            .collect();
        assert!(texts.contains(&"<odd & \"name\">?'"), "{texts:?}");
        assert!(texts.contains(&"gpu-0"), "{texts:?}");
        let colours: BTreeSet<&str> = root
            .descendants()
            .filter(|n| n.has_tag_name("rect"))
            .filter_map(|n| n.attribute("fill"))
            .collect();
        for stage in [Stage::Synthesis, Stage::Prove, Stage::Verify, Stage::Write] {
            assert!(
                colours.contains(colour(stage)),
                "{stage:?} missing: {colours:?}"
            );
        }
        assert!(colours.contains(FAILED_COLOUR));
    }

    #[test]
    fn svg_draws_a_lane_giving_way_to_post_and_its_legend() {
        let timeline = fixture("priority_lock.csv");
        let runs = analyze(&screen(&timeline), &Selection::Last, &options())
            .expect("analysis")
            .runs;
        let svg = render_svg(&runs);
        let document = roxmltree::Document::parse(&svg).expect("well-formed SVG");
        let lock_bars: Vec<&str> = document
            .descendants()
            .filter(|n| n.has_tag_name("rect"))
            .filter(|n| n.attribute("fill") == Some(colour(Stage::GpuLock)))
            .filter_map(|n| n.descendants().find(|c| c.has_tag_name("title")))
            .filter_map(|title| title.text())
            .collect();
        assert_eq!(
            lock_bars,
            ["gpu-0: gpu lock (PoSt) 1.000 s -> 5.000 s"],
            "{svg}"
        );
        assert!(svg.contains(">gpu lock (PoSt)</text>"), "{svg}");
    }
}
