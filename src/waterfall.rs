//! `cuzk waterfall`: where every second of a run went, read back from its timeline CSV.
//!
//! This module owns the analysis and its three drawings, each step in a submodule of its own.
//! The data flows one way:
//!
//! 1. [`read_timeline`] reads the rows; [`screen`](screen::screen) groups them by run, in time
//!    order, and sets aside rows it cannot use (unknown events, missing fields) with one warning
//!    per kind;
//! 2. [`RunSpans::from_events`](spans::RunSpans::from_events) folds one run's events into
//!    per-job and per-partition spans;
//! 3. [`RunMetrics::compute`](metrics::RunMetrics::compute) derives everything reported: each
//!    row's phases, the prover lanes and their idle gaps, the queue, steady-state throughput
//!    and the verdict;
//! 4. [`render_ascii`](ascii::render_ascii), [`render_svg`](svg::render_svg) and
//!    [`render_json`](json::render_json) draw [`RunMetrics`](metrics::RunMetrics) and compute
//!    nothing themselves, so tests check the numbers once and the drawings only for shape.
//!
//! [`intervals`] holds the interval arithmetic behind busy, idle and queued time.
//!
//! # Definitions
//!
//! Times are seconds since the run started (the timeline's `t_ms` / 1000).
//!
//! - **span**: from the run's first CLAIM to its last DONE or FAILED (to its last event when a
//!   job never finished), the time the run had work. Busy fractions, idle time and the
//!   percentages in the verdict are shares of it.
//! - **phases** of a row (a job, or one partition with `--partitions`) split its life, CLAIM to
//!   DONE/FAILED, by the most advanced thing happening to it: *write* (VERIFY_END to DONE),
//!   *verify*, *prove* (a partition between GPU_START and GPU_END), *synthesis*, *channel*
//!   (a partition synthesized but not yet proving: SYNTH_END to GPU_START, a blocked send plus
//!   the queue) and *queue wait* (none of these: waiting for a synthesis worker, parsing,
//!   waiting for sibling partitions). They add up to the row's total.
//! - **queued**: a partition is queued from SYNTH_END until a prover takes it (GPU_PICKUP).
//! - a prover lane is **busy** while proving (GPU_START to GPU_END). Loading parameters is
//!   neither busy nor idle. **Idle** time is split by what the lane waited for, first match:
//!   *scheduling* (a partition was queued, so the lane should have been proving), *synthesis*
//!   (a job in flight still had partitions to synthesize), *drain* (jobs in flight, nothing
//!   left to synthesize: other lanes' last proofs, verification, writing) and *input* (no job in
//!   flight: the inbox was empty). A **gap** is a stretch of idle time with one cause, at least
//!   `--gap-ms` long; an idle lane that first waits for synthesis and then ignores a queued
//!   partition shows two gaps, because the two want different fixes.
//! - **prover-bound time**: a partition was queued while every lane was busy or loading.
//! - **steady-state throughput**: see [`throughput`](metrics::throughput).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::timeline::read_timeline;

mod ascii;
mod intervals;
mod json;
mod metrics;
mod screen;
mod spans;
mod svg;
#[cfg(test)]
mod test_support;

use ascii::render_ascii;
use json::render_json;
use metrics::RunMetrics;
use screen::{screen, Screened};
use spans::RunSpans;
use svg::render_svg;

/// What to draw from a timeline.
#[derive(Clone, Debug)]
pub struct Request {
    /// Which runs of the file.
    pub selection: Selection,
    /// One row per partition instead of per job.
    pub per_partition: bool,
    /// The shortest idle stretch listed as a gap, in seconds.
    pub gap_s: f64,
    /// Columns of the ASCII drawing (at least 20).
    pub width: usize,
    /// Also write an SVG image here.
    pub svg: Option<PathBuf>,
    /// The metrics as JSON instead of the drawing.
    pub is_json: bool,
}

/// Reads the timeline at `path` and draws what `request` asks for: the text for stdout.
/// Warnings about unusable lines go to stderr first; they may explain an empty result.
pub fn draw(path: &Path, request: &Request) -> Result<String> {
    let timeline = read_timeline(path)?;
    let options = Options {
        per_partition: request.per_partition,
        gap_s: request.gap_s,
    };
    let screened = screen(&timeline);
    for warning in &screened.warnings {
        eprintln!("warning: {warning}");
    }
    let analysis = analyze(&screened, &request.selection, &options)
        .with_context(|| format!("{}", path.display()))?;
    if let Some(svg) = &request.svg {
        std::fs::write(svg, render_svg(&analysis.runs))
            .with_context(|| format!("writing SVG {}", svg.display()))?;
        eprintln!("wrote {}", svg.display());
    }
    if request.is_json {
        render_json(&path.display().to_string(), &analysis)
    } else {
        Ok(render_ascii(&analysis.runs, request.width))
    }
}

// ---------------------------------------------------------------------------------------------
// Analysis: the chosen runs, screened, folded into spans and measured.

/// Which runs of the file to show.
#[derive(Clone, Debug, PartialEq)]
pub enum Selection {
    /// The run that appears last in the file (the most recently started one).
    Last,
    /// The run with this id.
    Run(String),
    /// Every run, in file order.
    All,
}

/// How rows are drawn and gaps reported.
#[derive(Clone, Debug)]
struct Options {
    /// One row per partition instead of per job.
    per_partition: bool,
    /// The shortest idle stretch listed as a gap, in seconds.
    gap_s: f64,
}

/// What `analyze` found: the chosen runs' metrics and what had to be skipped on the way.
#[derive(Debug)]
struct Analysis {
    /// Every run id in the file, in order of first appearance.
    runs_in_file: Vec<String>,
    /// One line per kind of problem in the file (`warning: ` is added when printed).
    warnings: Vec<String>,
    /// The chosen runs.
    runs: Vec<RunMetrics>,
}

/// Picks runs from a screened file and computes their metrics.
fn analyze(screened: &Screened<'_>, selection: &Selection, options: &Options) -> Result<Analysis> {
    if screened.runs.is_empty() {
        bail!("no usable events: the file holds only a header or unreadable rows");
    }
    let runs_in_file: Vec<String> = screened.runs.iter().map(|r| r.id.to_owned()).collect();
    let chosen: Vec<usize> = match selection {
        Selection::Last => vec![screened.runs.len() - 1],
        Selection::All => (0..screened.runs.len()).collect(),
        Selection::Run(id) => match runs_in_file.iter().position(|r| r == id) {
            Some(index) => vec![index],
            None => bail!(
                "no run {id:?} in this timeline; its runs are: {}",
                runs_in_file.join(", ")
            ),
        },
    };
    let runs = chosen
        .into_iter()
        .map(|index| {
            let run = &screened.runs[index];
            let spans = RunSpans::from_events(run.id, &run.events);
            RunMetrics::compute(&spans, options, index + 1, runs_in_file.len())
        })
        .collect();
    Ok(Analysis {
        runs_in_file,
        warnings: screened.warnings.clone(),
        runs,
    })
}

// ---------------------------------------------------------------------------------------------
// Small helpers the submodules share.

/// `part / whole`, or 0 when there is no whole.
fn ratio(part: f64, whole: f64) -> f64 {
    if whole > 0.0 {
        part / whole
    } else {
        0.0
    }
}

/// A sum from +0.0 (`Sum` for floats starts from -0.0, which prints as "-0.00").
fn sum(values: impl IntoIterator<Item = f64>) -> f64 {
    values.into_iter().fold(0.0, |sum, v| sum + v)
}

fn plural(count: usize, word: &str) -> String {
    format!("{count} {word}{}", if count == 1 { "" } else { "s" })
}

#[cfg(test)]
mod tests {
    use super::test_support::{analysis, fixture, json_of, metrics, options};
    use super::*;
    use crate::timeline::Timeline;

    #[test]
    fn runs_are_chosen_last_by_id_or_all() {
        let last = analysis("runs.csv", Selection::Last, &options());
        assert_eq!(last.runs_in_file, ["r1", "r2"]);
        assert_eq!(last.runs.len(), 1);
        assert_eq!(
            (last.runs[0].run_id.as_str(), last.runs[0].position),
            ("r2", 2)
        );
        assert_eq!(last.runs[0].jobs, 2);

        let first = analysis("runs.csv", Selection::Run("r1".into()), &options());
        assert_eq!(first.runs[0].run_id, "r1");
        assert_eq!(
            json_of(&first.runs[..1]).replace("\"position\":1,\"runs_in_file\":2", ""),
            json_of(&[metrics("synthesis_bound.csv")])
                .replace("\"position\":1,\"runs_in_file\":1", "")
        );

        let all = analysis("runs.csv", Selection::All, &options());
        let ids: Vec<&str> = all.runs.iter().map(|r| r.run_id.as_str()).collect();
        assert_eq!(ids, ["r1", "r2"]);

        let error = analyze(
            &screen(&fixture("runs.csv")),
            &Selection::Run("r9".into()),
            &options(),
        )
        .expect_err("no such run");
        assert_eq!(
            error.to_string(),
            "no run \"r9\" in this timeline; its runs are: r1, r2"
        );
    }

    #[test]
    fn every_event_a_run_writes_is_understood() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.csv");
        let mut writer = crate::timeline::TimelineWriter::open(&path, "r1").expect("open");
        let events = crate::event::one_of_each();
        for (i, kind) in events.iter().enumerate() {
            writer
                .record(&crate::event::Event {
                    elapsed_ms: 100.0 * i as f64,
                    wall: std::time::SystemTime::UNIX_EPOCH,
                    kind: kind.clone(),
                })
                .expect("record");
        }
        let timeline = read_timeline(&path).expect("read");
        let screened = screen(&timeline);
        assert!(screened.warnings.is_empty(), "{:?}", screened.warnings);
        assert_eq!(screened.runs.len(), 1);
        let kinds: Vec<_> = screened.runs[0].events.iter().map(|e| &e.kind).collect();
        assert_eq!(kinds, events.iter().collect::<Vec<_>>());
        let analysis = analyze(&screened, &Selection::Last, &options()).expect("analysis");
        // s-t01000-3 was only deferred, never claimed: not a job of the run.
        let run = &analysis.runs[0];
        assert_eq!((run.jobs, run.proved, run.failed), (2, 1, 1));
    }

    #[test]
    fn a_file_with_only_a_header_is_an_error() {
        let error = analyze(&screen(&Timeline::default()), &Selection::Last, &options())
            .expect_err("nothing to show");
        assert!(error.to_string().contains("no usable events"), "{error}");
    }
}
