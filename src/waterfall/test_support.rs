//! Fixtures and helpers shared by the unit tests of the waterfall's modules.

use std::path::Path;

use crate::timeline::{read_timeline, Timeline};

use super::metrics::RunMetrics;
use super::screen::screen;
use super::{analyze, Analysis, Options, Selection};

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
