//! Screening: a timeline's rows grouped by run into time-ordered events, setting aside
//! rows that cannot be used with one warning per kind.

use std::collections::{BTreeMap, HashMap};

use crate::event::EventKind;
use crate::timeline::{RowError, Timeline};

use super::shared::plural;

/// A usable row: its event and its time in seconds since the run started.
#[derive(Clone, Debug)]
pub(super) struct Event {
    pub(super) kind: EventKind,
    pub(super) t: f64,
}

/// One run's events, sorted by time.
#[derive(Debug)]
pub(super) struct RunEvents<'a> {
    pub(super) id: &'a str,
    pub(super) events: Vec<Event>,
}

/// The file's usable rows grouped by run, and one warning per kind of unusable line or row.
#[derive(Debug)]
pub(super) struct Screened<'a> {
    /// Runs in order of first appearance.
    pub(super) runs: Vec<RunEvents<'a>>,
    pub(super) warnings: Vec<String>,
}

/// Groups rows by run and sorts each run by time, since rows may be written out of order.
pub(super) fn screen(timeline: &Timeline) -> Screened<'_> {
    let mut runs: Vec<RunEvents<'_>> = Vec::new();
    let mut run_index: HashMap<&str, usize> = HashMap::new();
    let mut unknown: BTreeMap<&str, usize> = BTreeMap::new();
    let mut unusable = 0;
    let mut first_unusable = None;
    for row in &timeline.rows {
        let usable = if row.t_ms.is_finite() {
            row.to_event_kind()
        } else {
            Err(RowError::Unusable("t_ms is not a finite number"))
        };
        let kind = match usable {
            Ok(kind) => kind,
            Err(RowError::UnknownEvent) => {
                *unknown.entry(row.event.as_str()).or_default() += 1;
                continue;
            }
            Err(RowError::Unusable(why)) => {
                unusable += 1;
                first_unusable.get_or_insert_with(|| {
                    format!(
                        "{} at t_ms {} in run {:?}: {why}",
                        row.event, row.t_ms, row.run_id
                    )
                });
                continue;
            }
        };
        let index = *run_index.entry(row.run_id.as_str()).or_insert_with(|| {
            runs.push(RunEvents {
                id: &row.run_id,
                events: Vec::new(),
            });
            runs.len() - 1
        });
        runs[index].events.push(Event {
            kind,
            t: row.t_ms / 1000.0,
        });
    }
    for run in &mut runs {
        // Stable, so events stamped in the same millisecond keep their file order.
        run.events.sort_by(|a, b| a.t.total_cmp(&b.t));
    }
    let mut warnings: Vec<String> = skipped_lines_warning(&timeline.skipped)
        .into_iter()
        .collect();
    if !unknown.is_empty() {
        let count: usize = unknown.values().sum();
        let names: Vec<String> = unknown.iter().map(|(n, c)| format!("{n} ({c})")).collect();
        warnings.push(format!(
            "ignored {} with unknown events: {}",
            plural(count, "row"),
            names.join(", ")
        ));
    }
    if let Some(first) = first_unusable {
        warnings.push(format!(
            "ignored {} missing a field their event needs (first: {first})",
            plural(unusable, "row")
        ));
    }
    Screened { runs, warnings }
}

/// The one warning for lines the reader could not parse (a torn last line, usually).
fn skipped_lines_warning(skipped: &[String]) -> Option<String> {
    let first = skipped.first()?;
    let more = match skipped.len() {
        1 => String::new(),
        n => format!("; and {} more", n - 1),
    };
    Some(format!(
        "skipped {} ({first}{more})",
        plural(skipped.len(), "malformed line")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::TimelineRow;
    use crate::waterfall::analysis::analyze;
    use crate::waterfall::shared::Selection;
    use crate::waterfall::test_support::{analysis, fixture, json_of, options};

    #[test]
    fn rows_out_of_order_give_the_same_metrics() {
        let mut timeline = fixture("gpu_bound.csv");
        let in_order = analyze(&screen(&timeline), &Selection::Last, &options()).expect("analysis");
        timeline.rows.reverse();
        timeline.rows.swap(3, 17);
        let shuffled = analyze(&screen(&timeline), &Selection::Last, &options()).expect("analysis");
        assert_eq!(json_of(&in_order.runs), json_of(&shuffled.runs));
    }

    #[test]
    fn unknown_events_are_ignored_with_one_warning() {
        let with_unknown = analysis("unknown_event.csv", Selection::Last, &options());
        assert_eq!(
            with_unknown.warnings,
            ["ignored 3 rows with unknown events: GPU_WARMUP (2), TEMPERATURE (1)"]
        );
        let plain = analysis("gpu_bound.csv", Selection::Last, &options());
        assert!(plain.warnings.is_empty(), "{:?}", plain.warnings);
        assert_eq!(json_of(&with_unknown.runs), json_of(&plain.runs));
    }

    #[test]
    fn a_torn_last_line_is_one_warning_and_changes_nothing() {
        let torn = analysis("torn_last_line.csv", Selection::Last, &options());
        assert_eq!(torn.warnings.len(), 1);
        assert!(
            torn.warnings[0].starts_with("skipped 1 malformed line (line 37: "),
            "{:?}",
            torn.warnings
        );
        let whole = analysis("synthesis_bound.csv", Selection::Last, &options());
        assert_eq!(json_of(&torn.runs), json_of(&whole.runs));
    }

    #[test]
    fn rows_missing_a_needed_field_are_ignored_with_one_warning() {
        let row = |event: &str, partition: Option<usize>| TimelineRow {
            run_id: "r".into(),
            t_ms: 5.0,
            wall_clock: String::new(),
            event: event.into(),
            job: "j".into(),
            partition,
            worker: "gpu-0".into(),
            detail: String::new(),
        };
        let timeline = Timeline {
            rows: vec![
                row("CLAIM", None),
                row("GPU_START", None),
                row("GPU_END", None),
            ],
            skipped: Vec::new(),
        };
        let analysis = analyze(&screen(&timeline), &Selection::Last, &options()).expect("analysis");
        assert_eq!(
            analysis.warnings,
            [
                "ignored 2 rows missing a field their event needs (first: GPU_START at t_ms 5 in \
              run \"r\": no partition)"
            ]
        );
        assert_eq!(analysis.runs[0].jobs, 1);
    }
}
