//! The JSON report: the chosen runs' metrics as computed, for scripts.

use anyhow::{Context, Result};
use serde::Serialize;

use super::analysis::Analysis;
use super::metrics::RunMetrics;

/// The metrics of the chosen runs as pretty-printed JSON.
pub(super) fn render_json(timeline: &str, analysis: &Analysis) -> Result<String> {
    #[derive(Serialize)]
    struct Report<'a> {
        timeline: &'a str,
        runs_in_file: &'a [String],
        warnings: &'a [String],
        runs: &'a [RunMetrics],
    }
    let report = Report {
        timeline,
        runs_in_file: &analysis.runs_in_file,
        warnings: &analysis.warnings,
        runs: &analysis.runs,
    };
    let mut text = serde_json::to_string_pretty(&report).context("encoding metrics as JSON")?;
    text.push('\n');
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::waterfall::shared::Selection;
    use crate::waterfall::test_support::{analysis, options};

    #[test]
    fn json_carries_the_metrics() {
        let analysis = analysis("gpu_bound.csv", Selection::Last, &options());
        let text = render_json("t.csv", &analysis).expect("json");
        let value: serde_json::Value = serde_json::from_str(&text).expect("parses");
        let run = &value["runs"][0];
        assert_eq!(run["lanes"][0]["busy_fraction"], 0.8);
        assert_eq!(run["lanes"][0]["gaps"][1]["waiting_for"], "drain");
        assert_eq!(run["throughput"]["seconds_per_proof"], 2.0);
        assert_eq!(run["throughput"]["basis"]["steady_state"]["from_s"], 3.0);
        assert_eq!(run["rows"][1]["phases"]["channel_s"], 2.0);
        assert_eq!(run["verdict"]["bound"], "prover");
        assert_eq!(value["runs_in_file"][0], "r1");
    }
}
