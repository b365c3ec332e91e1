//! Timeline: the CSV record of a run, one row per event, appended and flushed as it happens.
//!
//! This module owns the file format both ways: [`TimelineWriter`] turns events into rows and
//! [`read_timeline`] reads them back for `cuzk waterfall`. Several runs may append to one
//! file; each row carries its run id. Columns:
//!
//! | column | meaning |
//! |---|---|
//! | `run_id` | the run that wrote the row |
//! | `t_ms` | milliseconds since that run started |
//! | `wall_clock` | UTC time, RFC 3339 with milliseconds |
//! | `event` | one of [`EVENT_NAMES`] |
//! | `job` | the C1 file's name without `.json`, empty for run events |
//! | `partition` | partition index, empty when the event is about the whole job |
//! | `worker` | `synth-N`, `cpu-N` or `gpu-N`, empty when no worker is involved |
//! | `detail` | free text: constraints, step timings, error messages |

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::c1::SectorSizeName;
use crate::event::{Event, EventKind};

/// The header line, also the column order.
pub const HEADER: [&str; 8] = [
    "run_id",
    "t_ms",
    "wall_clock",
    "event",
    "job",
    "partition",
    "worker",
    "detail",
];

/// Every event name a timeline may hold, in pipeline order.
pub const EVENT_NAMES: [&str; 19] = [
    "RUN_START",
    "CLAIM",
    "PARSED",
    "SYNTH_START",
    "SYNTH_END",
    "CHAN_SEND",
    "GPU_PICKUP",
    "PARAMS_GEN",
    "PARAMS_START",
    "PARAMS_END",
    "GPU_START",
    "GPU_END",
    "VERIFY_START",
    "VERIFY_END",
    "DONE",
    "FAILED",
    "DEFERRED",
    "STOP",
    "RUN_END",
];

/// One row of a timeline.
#[derive(Clone, Debug, PartialEq)]
pub struct TimelineRow {
    /// The run that wrote the row.
    pub run_id: String,
    /// Milliseconds since the run started.
    pub t_ms: f64,
    /// UTC wall-clock time.
    pub wall_clock: String,
    /// The event name.
    pub event: String,
    /// The job, or empty.
    pub job: String,
    /// The partition, if the event concerns one.
    pub partition: Option<usize>,
    /// The worker, or empty.
    pub worker: String,
    /// Free text.
    pub detail: String,
}

impl TimelineRow {
    /// The row for `event` in run `run_id`.
    pub fn from_event(run_id: &str, event: &Event) -> TimelineRow {
        let (name, job, partition, worker, detail): (&str, &str, Option<usize>, &str, String) =
            match &event.kind {
                EventKind::RunStarted { settings } => ("RUN_START", "", None, "", settings.clone()),
                EventKind::JobClaimed { job, is_resumed } => (
                    "CLAIM",
                    job,
                    None,
                    "",
                    if *is_resumed {
                        "resumed".into()
                    } else {
                        String::new()
                    },
                ),
                EventKind::JobParsed {
                    job,
                    sector,
                    sector_size,
                    partitions,
                } => (
                    "PARSED",
                    job,
                    None,
                    "",
                    format!(
                        "sector={sector};size={};partitions={partitions}",
                        SectorSizeName(*sector_size)
                    ),
                ),
                EventKind::SynthStarted {
                    job,
                    partition,
                    worker,
                } => ("SYNTH_START", job, Some(*partition), worker, String::new()),
                EventKind::SynthFinished {
                    job,
                    partition,
                    worker,
                    constraints,
                } => (
                    "SYNTH_END",
                    job,
                    Some(*partition),
                    worker,
                    format!("constraints={constraints}"),
                ),
                EventKind::PartitionQueued {
                    job,
                    partition,
                    worker,
                } => ("CHAN_SEND", job, Some(*partition), worker, String::new()),
                EventKind::ProverPickedUp {
                    job,
                    partition,
                    worker,
                } => ("GPU_PICKUP", job, Some(*partition), worker, String::new()),
                EventKind::ParamsLoadStarted { worker, path } => {
                    ("PARAMS_START", "", None, worker, path.clone())
                }
                EventKind::ParamsGenerating { path } => ("PARAMS_GEN", "", None, "", path.clone()),
                EventKind::ParamsLoadFinished { worker, path } => {
                    ("PARAMS_END", "", None, worker, path.clone())
                }
                EventKind::ProveStarted {
                    job,
                    partition,
                    worker,
                } => ("GPU_START", job, Some(*partition), worker, String::new()),
                EventKind::ProveFinished {
                    job,
                    partition,
                    worker,
                    timings,
                } => (
                    "GPU_END",
                    job,
                    Some(*partition),
                    worker,
                    timings.to_detail(),
                ),
                EventKind::VerifyStarted { job } => ("VERIFY_START", job, None, "", String::new()),
                EventKind::VerifyFinished { job, is_valid } => {
                    ("VERIFY_END", job, None, "", format!("valid={is_valid}"))
                }
                EventKind::ProofWritten { job, path } => ("DONE", job, None, "", path.clone()),
                EventKind::JobFailed {
                    job,
                    stage,
                    message,
                } => ("FAILED", job, None, "", format!("{stage}: {message}")),
                EventKind::FileDeferred { job, reason } => {
                    ("DEFERRED", job, None, "", reason.clone())
                }
                EventKind::StopRequested => ("STOP", "", None, "", String::new()),
                EventKind::RunFinished { proved, failed } => (
                    "RUN_END",
                    "",
                    None,
                    "",
                    format!("proved={proved};failed={failed}"),
                ),
            };
        TimelineRow {
            run_id: run_id.to_owned(),
            t_ms: (event.elapsed_ms * 10.0).round() / 10.0,
            wall_clock: humantime::format_rfc3339_millis(event.wall).to_string(),
            event: name.to_owned(),
            job: job.to_owned(),
            partition,
            worker: worker.to_owned(),
            // One row per line keeps torn-line recovery simple for readers.
            detail: detail.replace(['\r', '\n'], " "),
        }
    }

    fn to_record(&self) -> [String; 8] {
        [
            self.run_id.clone(),
            format!("{:.1}", self.t_ms),
            self.wall_clock.clone(),
            self.event.clone(),
            self.job.clone(),
            self.partition.map(|p| p.to_string()).unwrap_or_default(),
            self.worker.clone(),
            self.detail.clone(),
        ]
    }
}

/// Appends a run's rows to a timeline file.
pub struct TimelineWriter {
    path: PathBuf,
    file: File,
    run_id: String,
}

impl TimelineWriter {
    /// Opens `path` for appending (creating it with a header) for run `run_id`.
    pub fn open(path: &Path, run_id: &str) -> Result<TimelineWriter> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .with_context(|| format!("opening timeline {}", path.display()))?;
        let mut writer = TimelineWriter {
            path: path.to_owned(),
            file,
            run_id: run_id.to_owned(),
        };
        let is_empty = writer
            .file
            .metadata()
            .map(|m| m.len() == 0)
            .unwrap_or(false);
        if is_empty {
            writer.write_record(&HEADER.map(String::from))?;
        }
        Ok(writer)
    }

    /// Appends the row for `event`.
    pub fn record(&mut self, event: &Event) -> Result<()> {
        let row = TimelineRow::from_event(&self.run_id, event);
        self.write_record(&row.to_record())
    }

    /// One `write` per row, so rows of runs appending to the same file stay whole.
    fn write_record(&mut self, fields: &[String]) -> Result<()> {
        let mut line = csv::Writer::from_writer(Vec::with_capacity(128));
        line.write_record(fields)?;
        let bytes = line.into_inner().map_err(|e| anyhow::anyhow!("{e}"))?;
        self.file
            .write_all(&bytes)
            .with_context(|| format!("appending to timeline {}", self.path.display()))
    }
}

/// A timeline read back, with the lines that could not be read.
#[derive(Debug, Default)]
pub struct Timeline {
    /// Rows in file order.
    pub rows: Vec<TimelineRow>,
    /// `line N: why` for each line skipped.
    pub skipped: Vec<String>,
}

/// Reads a timeline, skipping (and listing) lines that are torn or malformed.
pub fn read_timeline(path: &Path) -> Result<Timeline> {
    let file = File::open(path).with_context(|| {
        format!(
            "{}: cannot open timeline (hint: `cuzk prove-dir` writes it beside the inbox as timeline.csv, or where --timeline says)",
            path.display()
        )
    })?;
    let mut timeline = Timeline::default();
    let mut saw_header = false;
    for (index, line) in BufReader::new(file).split(b'\n').enumerate() {
        let line_no = index + 1;
        let line = line.with_context(|| format!("reading {}", path.display()))?;
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        // Rows without quotes (nearly all) split on commas directly; building a CSV reader
        // per line would dominate reading a large timeline.
        let record = if line.contains(&b'"') {
            let mut reader = csv::ReaderBuilder::new()
                .has_headers(false)
                .flexible(true)
                .from_reader(&line[..]);
            match reader.records().next() {
                Some(Ok(record)) => record,
                Some(Err(e)) => {
                    timeline.skipped.push(format!("line {line_no}: {e}"));
                    continue;
                }
                None => continue,
            }
        } else {
            match std::str::from_utf8(&line) {
                Ok(text) => csv::StringRecord::from(
                    text.trim_end_matches('\r').split(',').collect::<Vec<_>>(),
                ),
                Err(e) => {
                    timeline.skipped.push(format!("line {line_no}: {e}"));
                    continue;
                }
            }
        };
        if record.get(0) == Some("run_id") {
            saw_header = true;
            continue;
        }
        match parse_row(&record) {
            Ok(row) => timeline.rows.push(row),
            Err(why) => timeline.skipped.push(format!("line {line_no}: {why}")),
        }
    }
    if !saw_header && timeline.rows.is_empty() {
        bail!(
            "{}: empty or not a cuzk timeline (expected a header starting with run_id)",
            path.display()
        );
    }
    Ok(timeline)
}

fn parse_row(record: &csv::StringRecord) -> Result<TimelineRow, String> {
    if record.len() != HEADER.len() {
        return Err(format!(
            "{} fields, expected {} (torn or foreign line)",
            record.len(),
            HEADER.len()
        ));
    }
    let field = |i: usize| record.get(i).unwrap_or_default().to_owned();
    let t_ms = field(1)
        .parse::<f64>()
        .map_err(|_| format!("t_ms {:?} is not a number", field(1)))?;
    let partition = match field(5).as_str() {
        "" => None,
        p => Some(
            p.parse()
                .map_err(|_| format!("partition {p:?} is not a number"))?,
        ),
    };
    Ok(TimelineRow {
        run_id: field(0),
        t_ms,
        wall_clock: field(2),
        event: field(3),
        job: field(4),
        partition,
        worker: field(6),
        detail: field(7),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::SystemTime;

    fn event(elapsed_ms: f64, kind: EventKind) -> Event {
        Event {
            elapsed_ms,
            wall: SystemTime::UNIX_EPOCH,
            kind,
        }
    }

    #[test]
    fn rows_round_trip_and_runs_append() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.csv");
        for run in ["r1", "r2"] {
            let mut w = TimelineWriter::open(&path, run).expect("open");
            w.record(&event(
                1.25,
                EventKind::JobFailed {
                    job: "s-t01000-1".into(),
                    stage: "parse".into(),
                    message: "bad, \"quoted\"\nline".into(),
                },
            ))
            .expect("record");
            w.record(&event(
                2.0,
                EventKind::SynthStarted {
                    job: "j".into(),
                    partition: 3,
                    worker: "synth-0".into(),
                },
            ))
            .expect("record");
        }
        let text = std::fs::read_to_string(&path).expect("read");
        assert_eq!(text.matches("run_id,").count(), 1, "one header: {text}");
        let t = read_timeline(&path).expect("timeline");
        let failed: Vec<_> = t.rows.iter().filter(|r| r.event == "FAILED").collect();
        assert_eq!(failed.len(), 2);
        assert_eq!(failed[0].detail, "parse: bad, \"quoted\" line");
        assert_eq!(failed[0].t_ms, 1.3);
        assert!(t.skipped.is_empty(), "{:?}", t.skipped);
        let synth: Vec<_> = t.rows.iter().filter(|r| r.event == "SYNTH_START").collect();
        assert_eq!(synth.len(), 2);
        assert_eq!(synth[1].run_id, "r2");
        assert_eq!(synth[1].partition, Some(3));
        assert_eq!(synth[1].t_ms, 2.0);
        assert_eq!(synth[1].wall_clock, "1970-01-01T00:00:00.000Z");
    }

    #[test]
    fn torn_last_line_is_skipped_not_fatal() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.csv");
        std::fs::write(
            &path,
            "run_id,t_ms,wall_clock,event,job,partition,worker,detail\n\
             r,1.0,x,CLAIM,j,,,\n\
             r,2.0,x,SYNTH_ST",
        )
        .expect("write");
        let t = read_timeline(&path).expect("timeline");
        assert_eq!(t.rows.len(), 1);
        assert_eq!(t.skipped.len(), 1);
        assert!(t.skipped[0].starts_with("line 3"), "{:?}", t.skipped);
    }

    #[test]
    fn empty_or_missing_file_is_an_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.csv");
        assert!(read_timeline(&path).is_err());
        std::fs::write(&path, "").expect("write");
        assert!(read_timeline(&path).is_err());
    }
}
