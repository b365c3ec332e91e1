//! `cuzk waterfall`: where every second of a run went, read back from its timeline CSV.
//!
//! This module owns the analysis and its three drawings, each step in a submodule of its own.
//! The data flows one way:
//!
//! 1. [`read_timeline`] reads the rows; [`screen`](screen::screen) groups them by run, in time
//!    order, and sets aside rows it cannot use (unknown events, missing fields) with one warning
//!    per kind;
//! 2. [`analyze`](analysis::analyze) picks the runs asked for; for each,
//!    [`RunSpans::from_events`](spans::RunSpans::from_events) folds its events into per-job and
//!    per-partition spans;
//! 3. [`RunMetrics::compute`](metrics::RunMetrics::compute) derives everything reported, as
//!    plain data: each row's phases, the prover lanes and their idle gaps, the queue,
//!    steady-state throughput and the verdict;
//! 4. [`render_ascii`](ascii::render_ascii), [`render_svg`](svg::render_svg) and
//!    [`render_json`](json::render_json) draw [`RunMetrics`](metrics::RunMetrics) and compute
//!    nothing themselves, so tests check the numbers once and the drawings only for shape.
//!    Glyphs and colours belong to the drawing that shows them; what both drawings show the
//!    same way, the stages' names and the time axis with its ticks, is shared (the names in
//!    the metrics, the axis in [`axis`]).
//!
//! [`intervals`] holds the interval arithmetic behind busy, idle and queued time; [`shared`]
//! the options and the small helpers every step uses. [`last_run_digest`] hands the few
//! numbers a monitor wants of the last run to `cuzk status --prometheus`.
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
//!   *gpu lock (PoSt)* (the lane gave way to a WindowPoSt or WinningPoSt holding bellperson's
//!   GPU priority lock, PRIORITY_WAIT_START to PRIORITY_WAIT_END: idle on purpose),
//!   *scheduling* (a partition was queued, so the lane should have been proving), *synthesis*
//!   (a job in flight still had partitions to synthesize), *drain* (jobs in flight, nothing
//!   left to synthesize: other lanes' last proofs, verification, writing) and *input* (no job in
//!   flight: the inbox was empty). A **gap** is a stretch of idle time with one cause, at least
//!   `--gap-ms` long; an idle lane that first waits for synthesis and then ignores a queued
//!   partition shows two gaps, because the two want different fixes.
//! - **prover-bound time**: a partition was queued while every lane was busy or loading.
//! - **parameter loading** of the run: the union of every lane's loads and those of the
//!   `params` preload worker, over the span; from 40% of it the run is called
//!   parameter-bound (see [`verdict`](metrics::verdict)).
//! - **steady-state throughput**: see [`throughput`](metrics::throughput::throughput).
//! - **kernel-busy**: from GPU_BUSY rows, the share of time a GPU ran kernels (NVML's count),
//!   over the span and over the time its prover lanes were proving. A lane's busy time is
//!   its thread's wall time, host work included; when a GPU-bound run's kernels ran less than
//!   70% of it, the run is called host-bound (see [`gpu_busy`](metrics::gpu_busy)).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::timeline::{read_timeline, Timeline};

mod analysis;
mod ascii;
mod axis;
mod intervals;
mod json;
mod metrics;
mod screen;
mod shared;
mod spans;
mod svg;
#[cfg(test)]
mod test_support;

pub use shared::Selection;

use analysis::analyze;
use ascii::render_ascii;
use json::render_json;
use screen::screen;
use shared::Options;
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
        log::warn!("{warning}");
    }
    let analysis = analyze(&screened, &request.selection, &options)
        .with_context(|| format!("{}", path.display()))?;
    if let Some(svg) = &request.svg {
        std::fs::write(svg, render_svg(&analysis.runs))
            .with_context(|| format!("writing SVG {}", svg.display()))?;
        log::info!("wrote {}", svg.display());
    }
    if request.is_json {
        render_json(&path.display().to_string(), &analysis)
    } else {
        Ok(render_ascii(&analysis.runs, request.width))
    }
}

/// The numbers a monitor wants of a run, from the same metrics the waterfall draws.
#[derive(Clone, Debug, PartialEq)]
pub struct RunDigest {
    /// The run's id.
    pub run_id: String,
    /// Seconds per proof over the steady state (the whole span for fewer than two proofs);
    /// `None` when the run proved nothing.
    pub seconds_per_proof: Option<f64>,
    /// Each prover lane (`gpu-0`, `cpu-0`) with the share of the run's span it spent proving.
    pub prover_busy: Vec<(String, f64)>,
}

/// The digest of the last run in `timeline`, if it has one with usable events.
pub fn last_run_digest(timeline: &Timeline) -> Option<RunDigest> {
    let screened = screen(timeline);
    let options = Options {
        per_partition: false,
        gap_s: 1.0,
    };
    let analysis = analyze(&screened, &Selection::Last, &options).ok()?;
    let run = analysis.runs.into_iter().next()?;
    Some(RunDigest {
        seconds_per_proof: run.throughput.map(|t| t.seconds_per_proof),
        prover_busy: run
            .lanes
            .iter()
            .map(|lane| (lane.name.clone(), lane.busy_fraction))
            .collect(),
        run_id: run.run_id,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::waterfall::test_support::fixture;

    #[test]
    fn the_digest_is_the_last_runs_metrics() {
        let digest = last_run_digest(&fixture("gpu_bound.csv")).expect("a run");
        assert_eq!(digest.seconds_per_proof, Some(2.0));
        assert_eq!(digest.prover_busy, [("gpu-0".to_owned(), 0.8)]);
        let runs = last_run_digest(&fixture("runs.csv")).expect("a run");
        assert_eq!(runs.run_id, "r2");
        assert_eq!(last_run_digest(&Timeline::default()), None);
    }
}
