//! Metrics where providers look: a spool's state and its timeline in Prometheus' text
//! exposition format, for node_exporter's textfile collector or any scraper
//! (`cuzk status --prometheus`, `--textfile PATH`).
//!
//! Read-only, like `status`: counters come from the timeline (which is only ever appended
//! to, so they only grow, and reset only if the file is replaced), gauges from the spool's
//! directories now and from the last run's waterfall metrics. Every sample is labelled with
//! its spool's directory, so two spools on one host never export the same series. Its main
//! type is [`SpoolMetrics`].
//!
//! Its rooms: [`exposition`] writes the text format; [`run`] is a run's own metrics, written
//! as it goes (`prove-dir --metrics-textfile`, `damocles-c2 --metrics-textfile`) from the
//! pipeline's events.

use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

use anyhow::Result;

use crate::status::{inspect_with, locate_spool, Results};
use crate::timeline::{read_timeline, Timeline};
use crate::waterfall::last_run_digest;

pub mod exposition;
pub mod run;

use exposition::{Family, Kind};

/// What is exported.
#[derive(Clone, Debug, PartialEq)]
pub struct SpoolMetrics {
    /// The `spool` label: the spool's directory (see [`spool_label`]).
    pub spool: String,
    /// Proofs written, over every run in the timeline (benchmark shapes left out).
    pub proved_total: u64,
    /// Jobs failed, over every run in the timeline.
    pub failed_total: u64,
    /// C1 files waiting in the inbox.
    pub inbox_files: usize,
    /// C1 files claimed by runs.
    pub work_files: usize,
    /// Failed jobs lying in `failed/`.
    pub failed_files: usize,
    /// Age of the oldest file waiting in the inbox, 0 when it is empty.
    pub oldest_waiting_s: f64,
    /// The last run in the timeline, if there is one.
    pub last_run: Option<LastRunMetrics>,
}

/// What is exported of the last run.
#[derive(Clone, Debug, PartialEq)]
pub struct LastRunMetrics {
    /// Its id.
    pub run_id: String,
    /// Unix time of its latest timeline row.
    pub timestamp_s: f64,
    /// Seconds per proof over its steady state, if it proved anything.
    pub seconds_per_proof: Option<f64>,
    /// Each prover lane's share of the run spent proving.
    pub prover_busy: Vec<(String, f64)>,
}

/// Collects the metrics of the spool at `spool` (the directory holding `inbox/`, or the
/// inbox itself) and its timeline (default: `timeline.csv` in the spool directory).
pub fn collect(spool: &Path, timeline: Option<&Path>, lease: Duration) -> Result<SpoolMetrics> {
    let (layout, timeline_path) = locate_spool(spool, timeline)?;
    // Counters must never drop: Prometheus would read a timeline that failed to read as a
    // reset and count the whole history again. Only a timeline not written yet counts as none.
    let timeline = match std::fs::metadata(&timeline_path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Ok(meta) if meta.len() == 0 => None,
        _ => Some(read_timeline(&timeline_path)?),
    };
    let status = inspect_with(&layout, timeline.as_ref(), lease)?;
    let (proved_total, failed_total) = timeline.as_ref().map_or((0, 0), totals);
    Ok(SpoolMetrics {
        spool: spool_label(&crate::spool::spool_dir_of(&layout.inbox)),
        proved_total,
        failed_total,
        inbox_files: status.inbox,
        work_files: status.work,
        failed_files: status.failed,
        oldest_waiting_s: status.oldest_waiting.map_or(0.0, |(_, age)| age),
        last_run: timeline.as_ref().and_then(last_run),
    })
}

/// Proofs written and jobs failed over every run; a benchmark shape's result is no proof
/// (counted as `cuzk status` counts it).
fn totals(timeline: &Timeline) -> (u64, u64) {
    let results = Results::of(&timeline.rows);
    (results.proved as u64, results.failed as u64)
}

fn last_run(timeline: &Timeline) -> Option<LastRunMetrics> {
    let digest = last_run_digest(timeline)?;
    let timestamp_s = timeline
        .rows
        .iter()
        .filter(|r| r.run_id == digest.run_id)
        .filter_map(|r| humantime::parse_rfc3339(&r.wall_clock).ok())
        .filter_map(|t| t.duration_since(UNIX_EPOCH).ok())
        .map(|d| d.as_secs_f64())
        .fold(None, |latest: Option<f64>, t| {
            Some(latest.map_or(t, |l| l.max(t)))
        })?;
    Some(LastRunMetrics {
        run_id: digest.run_id,
        timestamp_s,
        seconds_per_proof: digest.seconds_per_proof,
        prover_busy: digest.prover_busy,
    })
}

/// The metrics in Prometheus' text exposition format, every sample labelled with the spool
/// it speaks for.
pub fn render(metrics: &SpoolMetrics) -> String {
    let mut families = vec![
        Family::new(
            "cuzk_proofs_total",
            Kind::Counter,
            "Jobs finished over every run in the timeline: proofs written (proved, checked with verify_seal) and jobs failed.",
        )
        .with(vec![("result", "proved".into())], metrics.proved_total as f64)
        .with(vec![("result", "failed".into())], metrics.failed_total as f64),
        Family::new(
            "cuzk_spool_files",
            Kind::Gauge,
            "C1 files in the spool now: inbox (waiting), work (claimed, being proved), failed (needing attention).",
        )
        .with(vec![("dir", "inbox".into())], metrics.inbox_files as f64)
        .with(vec![("dir", "work".into())], metrics.work_files as f64)
        .with(vec![("dir", "failed".into())], metrics.failed_files as f64),
        Family::new(
            "cuzk_oldest_waiting_seconds",
            Kind::Gauge,
            "Age of the oldest C1 file waiting in the inbox (0 when it is empty).",
        )
        .value(metrics.oldest_waiting_s),
    ];
    if let Some(run) = &metrics.last_run {
        families.push(
            Family::new(
                "cuzk_last_run_info",
                Kind::Gauge,
                "The last run in the timeline, by id (always 1).",
            )
            .with(vec![("run_id", run.run_id.clone())], 1.0),
        );
        families.push(
            Family::new(
                "cuzk_last_run_timestamp_seconds",
                Kind::Gauge,
                "Unix time of the last run's latest timeline row.",
            )
            .value(run.timestamp_s),
        );
        if let Some(seconds) = run.seconds_per_proof {
            families.push(
                Family::new(
                    "cuzk_last_run_time_per_proof_seconds",
                    Kind::Gauge,
                    "Seconds per proof in the last run, over its steady state (see cuzk waterfall).",
                )
                .value(seconds),
            );
        }
        let mut busy = Family::new(
            "cuzk_last_run_prover_busy_ratio",
            Kind::Gauge,
            "Share of the last run each prover (gpu-N, cpu-N) spent proving.",
        );
        for (lane, share) in &run.prover_busy {
            busy = busy.with(vec![("prover", lane.clone())], *share);
        }
        families.push(busy);
    }
    exposition::render(&families, &[("spool", metrics.spool.clone())])
}

/// The `spool` label of a spool's metrics: its directory, absolute where it can be resolved,
/// so that two spools on one host export different series.
pub fn spool_label(spool_dir: &Path) -> String {
    std::fs::canonicalize(spool_dir)
        .unwrap_or_else(|_| spool_dir.to_owned())
        .display()
        .to_string()
}

/// Writes `text` to `path` for node_exporter's textfile collector: to a temporary dotfile
/// in the same directory (never named `*.prom`, so the collector never reads half a file),
/// fsynced, then renamed over `path`.
pub fn write_textfile(path: &Path, text: &str) -> Result<()> {
    crate::atomic_file::write(path, text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metrics() -> SpoolMetrics {
        SpoolMetrics {
            spool: "/srv/c1".into(),
            proved_total: 12,
            failed_total: 1,
            inbox_files: 3,
            work_files: 2,
            failed_files: 1,
            oldest_waiting_s: 42.5,
            last_run: Some(LastRunMetrics {
                run_id: "20261130T051500Z-7".into(),
                timestamp_s: 1_796_000_000.25,
                seconds_per_proof: Some(61.5),
                prover_busy: vec![("gpu-0".into(), 0.8), ("gpu-1".into(), 0.75)],
            }),
        }
    }

    #[test]
    fn the_exposition_has_help_type_and_samples() {
        let text = render(&metrics());
        let want = "\
# HELP cuzk_proofs_total Jobs finished over every run in the timeline: proofs written (proved, checked with verify_seal) and jobs failed.
# TYPE cuzk_proofs_total counter
cuzk_proofs_total{spool=\"/srv/c1\",result=\"proved\"} 12
cuzk_proofs_total{spool=\"/srv/c1\",result=\"failed\"} 1
# HELP cuzk_spool_files C1 files in the spool now: inbox (waiting), work (claimed, being proved), failed (needing attention).
# TYPE cuzk_spool_files gauge
cuzk_spool_files{spool=\"/srv/c1\",dir=\"inbox\"} 3
cuzk_spool_files{spool=\"/srv/c1\",dir=\"work\"} 2
cuzk_spool_files{spool=\"/srv/c1\",dir=\"failed\"} 1
# HELP cuzk_oldest_waiting_seconds Age of the oldest C1 file waiting in the inbox (0 when it is empty).
# TYPE cuzk_oldest_waiting_seconds gauge
cuzk_oldest_waiting_seconds{spool=\"/srv/c1\"} 42.5
# HELP cuzk_last_run_info The last run in the timeline, by id (always 1).
# TYPE cuzk_last_run_info gauge
cuzk_last_run_info{spool=\"/srv/c1\",run_id=\"20261130T051500Z-7\"} 1
# HELP cuzk_last_run_timestamp_seconds Unix time of the last run's latest timeline row.
# TYPE cuzk_last_run_timestamp_seconds gauge
cuzk_last_run_timestamp_seconds{spool=\"/srv/c1\"} 1796000000.25
# HELP cuzk_last_run_time_per_proof_seconds Seconds per proof in the last run, over its steady state (see cuzk waterfall).
# TYPE cuzk_last_run_time_per_proof_seconds gauge
cuzk_last_run_time_per_proof_seconds{spool=\"/srv/c1\"} 61.5
# HELP cuzk_last_run_prover_busy_ratio Share of the last run each prover (gpu-N, cpu-N) spent proving.
# TYPE cuzk_last_run_prover_busy_ratio gauge
cuzk_last_run_prover_busy_ratio{spool=\"/srv/c1\",prover=\"gpu-0\"} 0.8
cuzk_last_run_prover_busy_ratio{spool=\"/srv/c1\",prover=\"gpu-1\"} 0.75
";
        assert_eq!(text, want);
    }

    #[test]
    fn without_a_run_only_the_spool_is_exported() {
        let mut quiet = metrics();
        quiet.last_run = None;
        let text = render(&quiet);
        assert!(!text.contains("last_run"), "{text}");
        assert!(text.ends_with(" 42.5\n"), "{text}");
        // A run that proved nothing has no seconds per proof, and a NaN is never written.
        let mut idle = metrics();
        if let Some(run) = idle.last_run.as_mut() {
            run.seconds_per_proof = None;
            run.prover_busy = vec![("cpu-0".into(), f64::NAN)];
        }
        let text = render(&idle);
        assert!(!text.contains("time_per_proof"), "{text}");
        assert!(!text.contains("busy"), "{text}");
    }

    #[test]
    fn a_timeline_not_written_yet_counts_none_and_one_that_cannot_be_read_fails() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join("inbox")).expect("inbox");
        let lease = Duration::from_secs(60);
        let collected = collect(dir.path(), None, lease).expect("no timeline yet");
        assert_eq!((collected.proved_total, collected.failed_total), (0, 0));
        let timeline = dir.path().join("timeline.csv");
        std::fs::write(&timeline, b"").expect("created, header not yet written");
        assert!(collect(dir.path(), None, lease)
            .expect("empty")
            .last_run
            .is_none());
        std::fs::write(&timeline, b"not,a,timeline\n").expect("foreign");
        let err = collect(dir.path(), None, lease).expect_err("never reported as zero");
        assert!(
            format!("{err:#}").contains("not a cuzk timeline"),
            "{err:#}"
        );
    }

    #[test]
    fn totals_count_every_run_but_not_benchmarks() {
        let timeline = Timeline {
            rows: [
                ("r1", "PARSED", "a", "sector=s;size=2KiB;partitions=1"),
                ("r1", "DONE", "a", "outbox/a.proof"),
                ("r1", "FAILED", "b", "parse: x"),
                (
                    "r2",
                    "PARSED",
                    "c",
                    "sector=s;size=32GiB;partitions=10;benchmark=true",
                ),
                ("r2", "DONE", "c", ""),
                ("r2", "DONE", "d", ""),
            ]
            .into_iter()
            .map(|(run, event, job, detail)| crate::timeline::TimelineRow {
                run_id: run.into(),
                t_ms: 0.0,
                wall_clock: String::new(),
                event: event.into(),
                job: job.into(),
                partition: None,
                worker: String::new(),
                detail: detail.into(),
            })
            .collect(),
            skipped: Vec::new(),
        };
        assert_eq!(totals(&timeline), (2, 1));
    }

    #[test]
    fn status_and_metrics_agree_that_a_benchmark_result_is_no_proof() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join("inbox")).expect("inbox");
        std::fs::write(
            dir.path().join("timeline.csv"),
            "run_id,t_ms,wall_clock,event,job,partition,worker,detail\n\
             r1,0.0,2026-11-30T00:00:00.000Z,RUN_START,,,,\n\
             r1,1.0,2026-11-30T00:00:00.001Z,PARSED,real,,,sector=s-t01000-1;size=2KiB;partitions=1\n\
             r1,2.0,2026-11-30T00:00:00.002Z,PARSED,shape,,,sector=s-t01000-2;size=32GiB;partitions=10;benchmark=true\n\
             r1,3.0,2026-11-30T00:00:00.003Z,DONE,real,,,outbox/real.proof\n\
             r1,4.0,2026-11-30T00:00:00.004Z,DONE,shape,,,outbox/shape.benchmark.json\n\
             r1,5.0,2026-11-30T00:00:00.005Z,RUN_END,,,,proved=2;failed=0\n",
        )
        .expect("timeline");
        let lease = Duration::from_secs(60);
        let metrics = collect(dir.path(), None, lease).expect("metrics");
        let status = crate::status::inspect_spool(dir.path(), None, lease).expect("status");
        let last = status.last_run.expect("a run");
        assert_eq!((metrics.proved_total, last.proved as u64), (1, 1));
        assert_eq!(last.benchmarks, 1);
        assert!(last.is_finished);
        let text = crate::status::render(&crate::status::SpoolStatus {
            last_run: Some(last),
            ..status
        });
        assert!(
            text.contains("1 proved, 1 benchmark(s) timed, 0 failed"),
            "{text}"
        );
    }
}
