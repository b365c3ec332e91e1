//! Analysis: the chosen runs of a screened file, each folded into spans and measured, with
//! the warnings the file gave on the way. Its main type is [`Analysis`]; the drawings and the
//! JSON report take it from here.

use anyhow::{bail, Result};

use super::metrics::RunMetrics;
use super::screen::Screened;
use super::shared::{Options, Selection};
use super::spans::RunSpans;

/// What [`analyze`] found: the chosen runs' metrics and what had to be skipped on the way.
#[derive(Debug)]
pub(super) struct Analysis {
    /// Every run id in the file, in order of first appearance.
    pub(super) runs_in_file: Vec<String>,
    /// One line per kind of problem in the file (`warning: ` is added when printed).
    pub(super) warnings: Vec<String>,
    /// The chosen runs.
    pub(super) runs: Vec<RunMetrics>,
}

/// Picks runs from a screened file and computes their metrics.
pub(super) fn analyze(
    screened: &Screened<'_>,
    selection: &Selection,
    options: &Options,
) -> Result<Analysis> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::{read_timeline, Timeline};
    use crate::waterfall::screen::screen;
    use crate::waterfall::test_support::{analysis, fixture, json_of, metrics, options};

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
