//! What every step of the waterfall shares: which runs to show, the options an analysis runs
//! with, and three small helpers for shares, sums and counted words.
//!
//! The submodules import these from here, never from the parent, so the parent stays the
//! entry point and nothing else.

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
pub(super) struct Options {
    /// One row per partition instead of per job.
    pub(super) per_partition: bool,
    /// The shortest idle stretch listed as a gap, in seconds.
    pub(super) gap_s: f64,
}

/// `part / whole`, or 0 when there is no whole.
pub(super) fn ratio(part: f64, whole: f64) -> f64 {
    if whole > 0.0 {
        part / whole
    } else {
        0.0
    }
}

/// A sum from +0.0 (`Sum` for floats starts from -0.0, which prints as "-0.00").
pub(super) fn sum(values: impl IntoIterator<Item = f64>) -> f64 {
    values.into_iter().fold(0.0, |sum, v| sum + v)
}

/// `1 job`, `2 jobs`: a count and its word, plural when it is not one.
pub(super) fn plural(count: usize, word: &str) -> String {
    format!("{count} {word}{}", if count == 1 { "" } else { "s" })
}
