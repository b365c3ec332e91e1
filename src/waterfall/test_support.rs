//! Fixtures and helpers shared by the unit tests of the waterfall's modules.

use std::path::Path;

use crate::timeline::{read_timeline, Timeline};

use super::analysis::{analyze, Analysis};
use super::metrics::{Gap, IdleCause, RunMetrics};
use super::screen::screen;
use super::shared::{Options, Selection};

pub(super) fn fixture(name: &str) -> Timeline {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/timelines")
        .join(name);
    read_timeline(&path).expect("fixture reads")
}

pub(super) fn options() -> Options {
    Options {
        per_partition: false,
        gap_s: 1.0,
    }
}

pub(super) fn analysis(name: &str, selection: Selection, options: &Options) -> Analysis {
    analyze(&screen(&fixture(name)), &selection, options).expect("analysis")
}

/// The last run of fixture `name` with default options.
pub(super) fn metrics(name: &str) -> RunMetrics {
    let mut runs = analysis(name, Selection::Last, &options()).runs;
    assert_eq!(runs.len(), 1);
    runs.remove(0)
}

pub(super) fn json_of(runs: &[RunMetrics]) -> String {
    serde_json::to_string(runs).expect("json")
}

pub(super) fn gap(start_s: f64, end_s: f64, waiting_for: IdleCause) -> Gap {
    Gap {
        start_s,
        end_s,
        length_s: end_s - start_s,
        waiting_for,
    }
}

pub(super) fn assert_close(actual: f64, expected: f64) {
    assert!(
        (actual - expected).abs() < 1e-9,
        "{actual} is not {expected}"
    );
}

/// Asserts that `text` says `wanted` (`true`) or does not (`false`), showing it if not.
pub(super) fn assert_says(text: &str, phrase: &str, wanted: bool) {
    assert_eq!(text.contains(phrase), wanted, "{phrase:?} in: {text}");
}
