//! Timeline: the CSV record of a run, one row per event, appended and flushed as it happens.
//!
//! This module owns the file format both ways: [`TimelineWriter`] turns events into rows and
//! [`read_timeline`] reads them back for `cuzk waterfall`; `codec.rs` lays each event's fields
//! out in a row's columns, as the event table says. Several runs may append to one
//! file; each row carries its run id. Columns:
//!
//! | column | meaning |
//! |---|---|
//! | `run_id` | the run that wrote the row |
//! | `t_ms` | milliseconds since that run started |
//! | `wall_clock` | UTC time, RFC 3339 with milliseconds |
//! | `event` | an [`EventName`] |
//! | `job` | the C1 file's name without `.json`, empty for run events |
//! | `partition` | partition index, empty when the event is about the whole job |
//! | `worker` | a [`crate::event::WorkerName`] (`synth-N`, `gpu-N`, ...), empty when no worker is involved |
//! | `detail` | free text: constraints, step timings, error messages |

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::event::{Event, EventKind, EventName};

mod codec;

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
        let columns = codec::encode(&event.kind);
        TimelineRow {
            run_id: run_id.to_owned(),
            t_ms: (event.elapsed_ms * 10.0).round() / 10.0,
            wall_clock: humantime::format_rfc3339_millis(event.wall).to_string(),
            event: event.kind.name().as_str().to_owned(),
            job: columns.job,
            partition: columns.partition,
            worker: columns.worker,
            // One row per line keeps torn-line recovery simple for readers.
            detail: columns.detail.text.replace(['\r', '\n'], " "),
        }
    }

    /// The event this row records, or why it cannot be read as one (an unknown event name,
    /// a field its event needs that is missing or malformed).
    pub fn to_event_kind(&self) -> Result<EventKind, RowError> {
        let name = EventName::parse(&self.event).ok_or(RowError::UnknownEvent)?;
        codec::decode(name, self).map_err(RowError::Unusable)
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

/// Why a row cannot be read as an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowError {
    /// The `event` column holds no [`EventName`] (a newer cuzk, or a foreign line).
    UnknownEvent,
    /// A field the event needs is missing or malformed; says which.
    Unusable(&'static str),
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
        // Runs started together on one spool would each see an empty file and each write a
        // header; the lock makes "is it empty, then write the header" one step.
        writer
            .file
            .lock()
            .with_context(|| format!("locking timeline {}", path.display()))?;
        let header = match writer.file.metadata() {
            Ok(m) if m.len() == 0 => writer.write_record(&HEADER.map(String::from)),
            Ok(_) => Ok(()),
            Err(e) => Err(anyhow::Error::new(e).context(format!("reading {}", path.display()))),
        };
        let unlocked = writer
            .file
            .unlock()
            .with_context(|| format!("unlocking timeline {}", path.display()));
        header.and(unlocked)?;
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
    use crate::event::{JobStage, WorkerName};
    use crate::proof_kind::ProofKind;
    use std::time::SystemTime;

    fn event(elapsed_ms: f64, kind: EventKind) -> Event {
        Event {
            elapsed_ms,
            wall: SystemTime::UNIX_EPOCH,
            kind,
        }
    }

    #[test]
    fn runs_opening_a_new_timeline_together_write_one_header() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.csv");
        let start = std::sync::Barrier::new(8);
        std::thread::scope(|scope| {
            for run in 0..8 {
                let (path, start) = (&path, &start);
                scope.spawn(move || {
                    start.wait();
                    let mut w = TimelineWriter::open(path, &format!("r{run}")).expect("open");
                    w.record(&event(
                        1.0,
                        EventKind::SynthStarted {
                            job: "j".into(),
                            partition: 0,
                            worker: WorkerName::Synthesis(0),
                        },
                    ))
                    .expect("record");
                });
            }
        });
        let text = std::fs::read_to_string(&path).expect("read");
        assert_eq!(text.matches("run_id,").count(), 1, "one header: {text}");
        assert!(text.starts_with("run_id,"), "header first: {text}");
        assert_eq!(read_timeline(&path).expect("timeline").rows.len(), 8);
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
                    stage: JobStage::Parse,
                    message: "bad, \"quoted\"\nline".into(),
                },
            ))
            .expect("record");
            w.record(&event(
                2.0,
                EventKind::SynthStarted {
                    job: "j".into(),
                    partition: 3,
                    worker: WorkerName::Synthesis(0),
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
    fn every_event_round_trips_through_a_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.csv");
        let events = crate::event::one_of_each();
        let mut w = TimelineWriter::open(&path, "r1").expect("open");
        for (i, kind) in events.iter().enumerate() {
            w.record(&event(i as f64, kind.clone())).expect("record");
        }
        let t = read_timeline(&path).expect("timeline");
        assert!(t.skipped.is_empty(), "{:?}", t.skipped);
        let read: Vec<EventKind> = t
            .rows
            .iter()
            .map(|row| row.to_event_kind().expect("a known, usable row"))
            .collect();
        assert_eq!(read, events);
    }

    /// The columns every event is written to, as timelines have always held them: a change
    /// here breaks `cuzk waterfall` and `cuzk status` on timelines already written.
    #[test]
    fn every_event_is_laid_out_as_timelines_hold_it() {
        let rows: Vec<String> = crate::event::one_of_each()
            .into_iter()
            .map(|kind| {
                let row = TimelineRow::from_event("r", &event(0.0, kind));
                let partition = row.partition.map(|p| p.to_string()).unwrap_or_default();
                [row.event, row.job, partition, row.worker, row.detail].join("|")
            })
            .collect();
        let expected = [
            "RUN_START||||cuzk=0.1.0;provers=gpu-0,cuda-1;synth_jobs=2;synthesis_threads=14;\
             prover_cpus=2;queue_depth=1;max_memory=128849018880;benchmark=true;params=/var/tmp/a;b=c",
            "CLAIM|s-t01000-1|||resumed",
            "PARSED|s-t01000-1|||sector=s-t01000-1;size=32GiB;partitions=10;kind=update;benchmark=true",
            "SYNTH_START|s-t01000-1|3|synth-1|",
            "SYNTH_END|s-t01000-1|3|synth-1|constraints=130278869;precompiled=true;deferred=true;\
             witness_ms=25000.5;witness_cpu_ms=24000.5;eval_ms=0.0;eval_cpu_ms=0.0;bytes=92000000;\
             witness=native;compact_ms=1500.5;compact_cpu_ms=1400.5",
            "CHAN_SEND|s-t01000-1|3|synth-1|",
            "MEMORY_WAIT|s-t01000-1|4||needed=18253611008;in_use=85899345920;budget=96636764160",
            "GPU_PICKUP|s-t01000-1|3|gpu-0|",
            "EVAL_START|s-t01000-1|3|gpu-0|",
            "EVAL_END|s-t01000-1|3|gpu-0|memory_wait_ms=250.5;ms=1312.5;bytes=17100000000",
            "PARAMS_GEN||||/p/v28.params",
            "PARAMS_START|||params|/p/v28.params",
            "PARAMS_END|||gpu-0|/p/v28.params",
            "CONSTRAINTS_READY||||recorded=true;bytes=9663676416;ms=61000.5;path=/p/cuzk-r1cs-v1-v28.r1cs",
            "FULL_SYNTH||||/p/cuzk-r1cs-v1-v28.r1cs: does not fit the memory budget now: 9 GiB \
             (hint: raise --max-memory)",
            "PRIORITY_WAIT_START|||gpu-0|/tmp/bellman.priority.lock",
            "PRIORITY_WAIT_END|||gpu-0|waited_ms=4200.5",
            "GPU_START|s-t01000-1|3|gpu-0|",
            "GPU_END|s-t01000-1|3|gpu-0|fft_ms=1.5;msm_g1_ms=20.0;msm_g2_ms=7.5;cpu_ms=0.5;\
             call_ms=12.5;upload_ms=3.5;eval_ms=0.5;h_ms=10.5;l_ms=4.5;a_ms=3.0;b_g1_ms=2.0;\
             pcie_mb=25312.4;beside_h_ms=6.5",
            "CPU_FALLBACK|s-t01000-1|3|gpu-0|GPU quotient failed, done again on the CPU: out of memory",
            "DEVICE_FAULT|s-t01000-1|3|gpu-0|CUDA error 2: out of memory; a, b",
            "PROVER_STOPPED|||gpu-0|faults=3;last=CUDA error 999: unknown error; last=x",
            "GPU_BUSY||||gpu=1;busy_pct=46.5;period_ms=1000.5",
            "VERIFY_START|s-t01000-1|||",
            "VERIFY_END|s-t01000-1|||valid=true",
            "DONE|s-t01000-1|||/o/s-t01000-1.proof",
            "SUPERSEDED|s-t01000-1|||/o/superseded/s-t01000-1.c1-0123456789abcdef.proof",
            "FAILED|s-t01000-2|||verify: did not verify: a, b; c=d",
            "DEFERRED|s-t01000-3|||JSON ends early",
            "SET_ASIDE|s-t01000-4|||failed alone on cuda-0 3 times",
            "CLAIM_TAKEN|s-t01000-1|||another run took this claim over",
            "SKIPPED|s-t01000-\u{fffd}|||claiming it: Operation not permitted (os error 1)",
            "STOP||||",
            "RUN_END||||proved=1;failed=1",
        ];
        assert_eq!(rows, expected);
    }

    #[test]
    fn older_rows_read_with_defaults_for_what_they_lack() {
        let row = |event: &str, worker: &str, detail: &str| TimelineRow {
            run_id: "r".into(),
            t_ms: 1.0,
            wall_clock: String::new(),
            event: event.into(),
            job: "j".into(),
            partition: Some(0),
            worker: worker.into(),
            detail: detail.into(),
        };
        let Ok(EventKind::RunStarted { settings }) =
            row("RUN_START", "", "synth_jobs=2;queue_depth=1;once=true").to_event_kind()
        else {
            panic!("RUN_START reads");
        };
        assert_eq!((settings.synth_jobs, settings.queue_depth), (2, 1));
        assert!(settings.provers.is_empty() && settings.version.is_empty());
        assert_eq!(
            row("RUN_START", "", "synth_jobs=many").to_event_kind(),
            Err(RowError::Unusable("settings"))
        );
        assert!(matches!(
            row("SYNTH_START", "", "").to_event_kind(),
            Ok(EventKind::SynthStarted { worker, .. }) if worker.is_empty()
        ));
        assert!(matches!(
            row("PARSED", "", "partitions=1").to_event_kind(),
            Ok(EventKind::JobParsed {
                kind: ProofKind::Seal,
                is_benchmark: false,
                sector_size: 0,
                ..
            })
        ));
    }

    #[test]
    fn rows_that_are_no_event_say_why() {
        let row = |event: &str, partition: Option<usize>, detail: &str| TimelineRow {
            run_id: "r".into(),
            t_ms: 1.0,
            wall_clock: String::new(),
            event: event.into(),
            job: "j".into(),
            partition,
            worker: String::new(),
            detail: detail.into(),
        };
        assert_eq!(
            row("GPU_WARMUP", None, "").to_event_kind(),
            Err(RowError::UnknownEvent)
        );
        assert_eq!(
            row("GPU_START", None, "").to_event_kind(),
            Err(RowError::Unusable("no partition"))
        );
        assert_eq!(
            row("PARAMS_START", None, "/p").to_event_kind(),
            Err(RowError::Unusable("no worker"))
        );
        assert_eq!(
            row("FAILED", None, "lunch: no").to_event_kind(),
            Err(RowError::Unusable("no stage"))
        );
        assert_eq!(
            row("GPU_BUSY", None, "gpu=0;busy_pct=NaN;period_ms=1000.0").to_event_kind(),
            Err(RowError::Unusable("busy_pct"))
        );
        // Timings are the prover's to give; a row without them still marks the proof.
        assert!(matches!(
            row("GPU_END", Some(0), "").to_event_kind(),
            Ok(EventKind::ProveFinished { timings: None, .. })
        ));
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
