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

use std::io::Write;
use std::path::PathBuf;

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

/// Arguments of `cuzk waterfall`.
#[derive(Debug, clap::Args)]
pub struct WaterfallArgs {
    /// The timeline CSV written by `cuzk prove-dir`.
    pub timeline: PathBuf,

    /// Show the run with this id instead of the last one in the file.
    #[arg(long, value_name = "ID", conflicts_with = "all")]
    pub run: Option<String>,

    /// Show every run in the file, one after another, each on its own time axis.
    #[arg(long)]
    pub all: bool,

    /// Width of the drawing in columns [default: $COLUMNS, else 100; at least 20].
    #[arg(long, value_name = "N")]
    pub width: Option<usize>,

    /// One row per partition instead of one per job.
    #[arg(long)]
    pub partitions: bool,

    /// List the prover lanes' idle gaps at least this long, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 1000.0)]
    pub gap_ms: f64,

    /// Also write the waterfall as a standalone SVG image to FILE.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,

    /// Print the computed metrics as JSON instead of drawing them.
    #[arg(long)]
    pub json: bool,
}

/// The top-level entry point for `cuzk waterfall`; returns the exit code.
pub fn run(args: WaterfallArgs) -> Result<u8> {
    if !(args.gap_ms.is_finite() && args.gap_ms >= 0.0) {
        bail!(
            "--gap-ms wants a non-negative number of milliseconds, not {}",
            args.gap_ms
        );
    }
    let timeline = read_timeline(&args.timeline)?;
    let selection = match (&args.run, args.all) {
        (Some(id), _) => Selection::Run(id.clone()),
        (None, true) => Selection::All,
        (None, false) => Selection::Last,
    };
    let options = Options {
        per_partition: args.partitions,
        gap_s: args.gap_ms / 1000.0,
    };
    let screened = screen(&timeline);
    // Warnings first: they may explain why nothing could be shown.
    for warning in &screened.warnings {
        eprintln!("warning: {warning}");
    }
    let analysis = analyze(&screened, &selection, &options)
        .with_context(|| format!("{}", args.timeline.display()))?;
    if let Some(path) = &args.svg {
        std::fs::write(path, render_svg(&analysis.runs))
            .with_context(|| format!("writing SVG {}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    let text = if args.json {
        render_json(&args.timeline.display().to_string(), &analysis)?
    } else {
        render_ascii(&analysis.runs, resolve_width(args.width))
    };
    print(&text)?;
    Ok(0)
}

/// `--width`, else `$COLUMNS`, else 100; narrower than 20 columns cannot hold a row.
fn resolve_width(flag: Option<usize>) -> usize {
    flag.or_else(|| std::env::var("COLUMNS").ok()?.trim().parse().ok())
        .unwrap_or(100)
        .max(MIN_WIDTH)
}

const MIN_WIDTH: usize = 20;

/// Writes `text` to stdout; a closed pipe (`cuzk waterfall t.csv | head`) is not an error.
fn print(text: &str) -> Result<()> {
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.context("writing to stdout"),
    }
}

// ---------------------------------------------------------------------------------------------
// Analysis: the chosen runs, screened, folded into spans and measured.

/// Which runs of the file to show.
#[derive(Clone, Debug, PartialEq)]
enum Selection {
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
    fn a_file_with_only_a_header_is_an_error() {
        let error = analyze(&screen(&Timeline::default()), &Selection::Last, &options())
            .expect_err("nothing to show");
        assert!(error.to_string().contains("no usable events"), "{error}");
    }
}
