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
//! | `event` | an [`EventName`] |
//! | `job` | the C1 file's name without `.json`, empty for run events |
//! | `partition` | partition index, empty when the event is about the whole job |
//! | `worker` | `synth-N`, `cpu-N` or `gpu-N`, empty when no worker is involved |
//! | `detail` | free text: constraints, step timings, error messages |

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::c1::{parse_sector_size, SectorSizeName};
use crate::event::ProveTimings;
use crate::event::{Event, EventKind, EventName, JobStage};
use crate::proof_kind::ProofKind;
use crate::synth::{SynthesisProfile, WitnessPath};

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
        let fields = encode(&event.kind);
        TimelineRow {
            run_id: run_id.to_owned(),
            t_ms: (event.elapsed_ms * 10.0).round() / 10.0,
            wall_clock: humantime::format_rfc3339_millis(event.wall).to_string(),
            event: event.kind.name().as_str().to_owned(),
            job: fields.job.to_owned(),
            partition: fields.partition,
            worker: fields.worker.to_owned(),
            // One row per line keeps torn-line recovery simple for readers.
            detail: fields.detail.replace(['\r', '\n'], " "),
        }
    }

    /// The event this row records, or why it cannot be read as one (an unknown event name,
    /// a field its event needs that is missing or malformed).
    pub fn to_event_kind(&self) -> Result<EventKind, RowError> {
        let name = EventName::parse(&self.event).ok_or(RowError::UnknownEvent)?;
        decode(name, self).map_err(RowError::Unusable)
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

/// An event's fields as they sit in a row's columns.
struct Fields<'a> {
    job: &'a str,
    partition: Option<usize>,
    worker: &'a str,
    detail: String,
}

/// Lays an event out in a row's columns; [`decode`] reads it back.
fn encode(kind: &EventKind) -> Fields<'_> {
    let fields = |job: &'static str, partition, worker: &'static str, detail| Fields {
        job,
        partition,
        worker,
        detail,
    };
    match kind {
        EventKind::RunStarted { settings } => fields("", None, "", settings.clone()),
        EventKind::JobClaimed { job, is_resumed } => Fields {
            job,
            partition: None,
            worker: "",
            detail: if *is_resumed { "resumed" } else { "" }.to_owned(),
        },
        EventKind::JobParsed {
            job,
            sector,
            sector_size,
            kind,
            partitions,
            is_benchmark,
        } => Fields {
            job,
            partition: None,
            worker: "",
            // A C2 says nothing of its kind, as timelines always had it.
            detail: format!(
                "sector={sector};size={};partitions={partitions}{}{}",
                SectorSizeName(*sector_size),
                match kind {
                    ProofKind::Seal => String::new(),
                    ProofKind::Update => format!(";kind={kind}"),
                },
                if *is_benchmark { ";benchmark=true" } else { "" }
            ),
        },
        EventKind::SynthStarted {
            job,
            partition,
            worker,
        }
        | EventKind::PartitionQueued {
            job,
            partition,
            worker,
        }
        | EventKind::ProverPickedUp {
            job,
            partition,
            worker,
        }
        | EventKind::ProveStarted {
            job,
            partition,
            worker,
        } => Fields {
            job,
            partition: Some(*partition),
            worker,
            detail: String::new(),
        },
        EventKind::SynthFinished {
            job,
            partition,
            worker,
            constraints,
            is_precompiled,
            is_deferred,
            profile: p,
        } => Fields {
            job,
            partition: Some(*partition),
            worker,
            detail: format!(
                "constraints={constraints};precompiled={is_precompiled};deferred={is_deferred};\
                 witness_ms={:.1};witness_cpu_ms={:.1};eval_ms={:.1};eval_cpu_ms={:.1};bytes={};witness={};\
                 compact_ms={:.1};compact_cpu_ms={:.1}",
                p.witness_ms,
                p.witness_cpu_ms,
                p.evaluate_ms,
                p.evaluate_cpu_ms,
                p.bytes,
                p.witness_path.name(),
                p.compact_ms,
                p.compact_cpu_ms
            ),
        },
        EventKind::MemoryWait {
            job,
            partition,
            needed_bytes,
            in_use_bytes,
            budget_bytes,
        } => Fields {
            job,
            partition: Some(*partition),
            worker: "",
            detail: format!("needed={needed_bytes};in_use={in_use_bytes};budget={budget_bytes}"),
        },
        EventKind::ParamsGenerating { path } => fields("", None, "", path.clone()),
        EventKind::ParamsLoadStarted { worker, path }
        | EventKind::ParamsLoadFinished { worker, path } => Fields {
            job: "",
            partition: None,
            worker,
            detail: path.clone(),
        },
        EventKind::ConstraintsReady {
            path,
            is_recorded,
            bytes,
            ms,
        } => fields(
            "",
            None,
            "",
            // The path last: it may hold any character.
            format!("recorded={is_recorded};bytes={bytes};ms={ms:.1};path={path}"),
        ),
        EventKind::FullSynthesis { path, reason } => {
            fields("", None, "", format!("{path}: {reason}"))
        }
        EventKind::DeviceFault {
            job,
            partition,
            worker,
            message,
        } => Fields {
            job,
            partition: Some(*partition),
            worker,
            detail: message.clone(),
        },
        EventKind::ProverStopped {
            worker,
            faults,
            message,
        } => Fields {
            job: "",
            partition: None,
            worker,
            // The message last: it may hold any character.
            detail: format!("faults={faults};last={message}"),
        },
        EventKind::CpuFallback {
            job,
            partition,
            worker,
            reason,
        } => Fields {
            job,
            partition: Some(*partition),
            worker,
            detail: reason.clone(),
        },
        EventKind::PriorityWaitStarted { worker, path } => Fields {
            job: "",
            partition: None,
            worker,
            detail: path.clone(),
        },
        EventKind::PriorityWaitFinished { worker, waited_ms } => Fields {
            job: "",
            partition: None,
            worker,
            detail: format!("waited_ms={waited_ms:.1}"),
        },
        EventKind::ProveFinished {
            job,
            partition,
            worker,
            timings,
        } => Fields {
            job,
            partition: Some(*partition),
            worker,
            detail: timings.as_ref().map(encode_timings).unwrap_or_default(),
        },
        EventKind::GpuBusy {
            gpu,
            busy_pct,
            period_ms,
        } => fields(
            "",
            None,
            "",
            format!("gpu={gpu};busy_pct={busy_pct:.1};period_ms={period_ms:.1}"),
        ),
        EventKind::VerifyStarted { job } => Fields {
            job,
            partition: None,
            worker: "",
            detail: String::new(),
        },
        EventKind::VerifyFinished { job, is_valid } => Fields {
            job,
            partition: None,
            worker: "",
            detail: format!("valid={is_valid}"),
        },
        EventKind::ProofWritten { job, path } => Fields {
            job,
            partition: None,
            worker: "",
            detail: path.clone(),
        },
        EventKind::JobFailed {
            job,
            stage,
            message,
        } => Fields {
            job,
            partition: None,
            worker: "",
            detail: format!("{stage}: {message}"),
        },
        EventKind::ResultSuperseded { job, kept_as } => Fields {
            job,
            partition: None,
            worker: "",
            detail: kept_as.clone(),
        },
        EventKind::FileDeferred { job, reason } | EventKind::FileSkipped { job, reason } => {
            Fields {
                job,
                partition: None,
                worker: "",
                detail: reason.clone(),
            }
        }
        EventKind::StopRequested => fields("", None, "", String::new()),
        EventKind::RunFinished { proved, failed } => {
            fields("", None, "", format!("proved={proved};failed={failed}"))
        }
    }
}

/// Reads the event `name` back from `row`'s columns, as [`encode`] laid it out.
fn decode(name: EventName, row: &TimelineRow) -> Result<EventKind, &'static str> {
    let job = || -> Result<String, &'static str> {
        (!row.job.is_empty())
            .then(|| row.job.clone())
            .ok_or("no job")
    };
    let partition = || row.partition.ok_or("no partition");
    let worker = || -> Result<String, &'static str> {
        (!row.worker.is_empty())
            .then(|| row.worker.clone())
            .ok_or("no worker")
    };
    let detail = || row.detail.clone();
    let bytes = |key: &'static str| -> Result<u64, &'static str> {
        detail_value(&row.detail, key)
            .and_then(|v| v.parse().ok())
            .ok_or(key)
    };
    let number = |key: &'static str| -> Result<usize, &'static str> {
        detail_value(&row.detail, key)
            .and_then(|v| v.parse().ok())
            .ok_or(key)
    };
    let finite = |key: &'static str| -> Result<f64, &'static str> {
        detail_value(&row.detail, key)
            .and_then(|v| v.parse::<f64>().ok())
            .filter(|v| v.is_finite())
            .ok_or(key)
    };
    Ok(match name {
        EventName::RunStart => EventKind::RunStarted { settings: detail() },
        EventName::Claim => EventKind::JobClaimed {
            job: job()?,
            is_resumed: row.detail == "resumed",
        },
        EventName::Parsed => EventKind::JobParsed {
            job: job()?,
            sector: detail_value(&row.detail, "sector")
                .unwrap_or_default()
                .to_owned(),
            sector_size: detail_value(&row.detail, "size")
                .and_then(|s| parse_sector_size(s).ok())
                .unwrap_or_default(),
            kind: detail_value(&row.detail, "kind")
                .and_then(ProofKind::from_name)
                .unwrap_or_default(),
            partitions: number("partitions")?,
            is_benchmark: detail_value(&row.detail, "benchmark") == Some("true"),
        },
        EventName::SynthStart => EventKind::SynthStarted {
            job: job()?,
            partition: partition()?,
            worker: row.worker.clone(),
        },
        EventName::SynthEnd => EventKind::SynthFinished {
            job: job()?,
            partition: partition()?,
            worker: row.worker.clone(),
            constraints: number("constraints").unwrap_or_default(),
            is_precompiled: detail_value(&row.detail, "precompiled") == Some("true"),
            // Absent from older timelines: no profile, nothing deferred.
            is_deferred: detail_value(&row.detail, "deferred") == Some("true"),
            profile: decode_synthesis_profile(&row.detail),
        },
        EventName::ChanSend => EventKind::PartitionQueued {
            job: job()?,
            partition: partition()?,
            worker: row.worker.clone(),
        },
        EventName::MemoryWait => EventKind::MemoryWait {
            job: job()?,
            partition: partition()?,
            needed_bytes: bytes("needed")?,
            in_use_bytes: bytes("in_use")?,
            budget_bytes: bytes("budget")?,
        },
        EventName::GpuPickup => EventKind::ProverPickedUp {
            job: job()?,
            partition: partition()?,
            worker: row.worker.clone(),
        },
        EventName::ParamsGen => EventKind::ParamsGenerating { path: detail() },
        EventName::ParamsStart => EventKind::ParamsLoadStarted {
            worker: worker()?,
            path: detail(),
        },
        EventName::ParamsEnd => EventKind::ParamsLoadFinished {
            worker: worker()?,
            path: detail(),
        },
        EventName::FullSynth => {
            // The path is a file name in the cache, so the first ": " ends it.
            let (path, reason) = row.detail.split_once(": ").ok_or("no reason")?;
            EventKind::FullSynthesis {
                path: path.to_owned(),
                reason: reason.to_owned(),
            }
        }
        EventName::CpuFallback => EventKind::CpuFallback {
            job: job()?,
            partition: partition()?,
            worker: worker()?,
            reason: detail(),
        },
        EventName::DeviceFault => EventKind::DeviceFault {
            job: job()?,
            partition: partition()?,
            worker: worker()?,
            message: detail(),
        },
        EventName::ProverStopped => {
            let rest = row.detail.strip_prefix("faults=").ok_or("no faults=")?;
            let (faults, message) = rest.split_once(";last=").ok_or("no last=")?;
            EventKind::ProverStopped {
                worker: worker()?,
                faults: faults.parse().map_err(|_| "faults is not a count")?,
                message: message.to_owned(),
            }
        }
        EventName::ConstraintsReady => EventKind::ConstraintsReady {
            path: row
                .detail
                .split_once("path=")
                .map(|(_, path)| path.to_owned())
                .ok_or("path")?,
            is_recorded: detail_value(&row.detail, "recorded") == Some("true"),
            bytes: bytes("bytes")?,
            ms: detail_value(&row.detail, "ms")
                .and_then(|v| v.parse().ok())
                .ok_or("ms")?,
        },
        EventName::PriorityWaitStart => EventKind::PriorityWaitStarted {
            worker: worker()?,
            path: detail(),
        },
        EventName::PriorityWaitEnd => EventKind::PriorityWaitFinished {
            worker: worker()?,
            waited_ms: detail_value(&row.detail, "waited_ms")
                .and_then(|v| v.parse::<f64>().ok())
                .filter(|ms| ms.is_finite())
                .ok_or("waited_ms")?,
        },
        EventName::GpuStart => EventKind::ProveStarted {
            job: job()?,
            partition: partition()?,
            worker: row.worker.clone(),
        },
        EventName::GpuEnd => EventKind::ProveFinished {
            job: job()?,
            partition: partition()?,
            worker: row.worker.clone(),
            timings: decode_timings(&row.detail),
        },
        EventName::GpuBusy => EventKind::GpuBusy {
            gpu: number("gpu")?,
            busy_pct: finite("busy_pct")?,
            period_ms: finite("period_ms")?,
        },
        EventName::VerifyStart => EventKind::VerifyStarted { job: job()? },
        EventName::VerifyEnd => EventKind::VerifyFinished {
            job: job()?,
            is_valid: detail_value(&row.detail, "valid") == Some("true"),
        },
        EventName::Done => EventKind::ProofWritten {
            job: job()?,
            path: detail(),
        },
        EventName::Failed => {
            let (stage, message) = row.detail.split_once(": ").ok_or("no stage")?;
            EventKind::JobFailed {
                job: job()?,
                stage: JobStage::parse(stage).ok_or("no stage")?,
                message: message.to_owned(),
            }
        }
        EventName::Superseded => EventKind::ResultSuperseded {
            job: job()?,
            kept_as: detail(),
        },
        EventName::Deferred => EventKind::FileDeferred {
            job: job()?,
            reason: detail(),
        },
        EventName::Skipped => EventKind::FileSkipped {
            job: job()?,
            reason: detail(),
        },
        EventName::Stop => EventKind::StopRequested,
        EventName::RunEnd => EventKind::RunFinished {
            proved: number("proved").unwrap_or_default(),
            failed: number("failed").unwrap_or_default(),
        },
    })
}

/// The prover's step timings as `fft_ms=..;msm_g1_ms=..;msm_g2_ms=..;cpu_ms=..`, and
/// `;call_ms=..` for a backend that proves in one call, `;upload_ms=..`, `;eval_ms=..` and
/// `;h_ms=..;l_ms=..;a_ms=..;b_g1_ms=..` for one that times those apart.
fn encode_timings(t: &ProveTimings) -> String {
    let mut detail = format!(
        "fft_ms={:.1};msm_g1_ms={:.1};msm_g2_ms={:.1};cpu_ms={:.1}",
        t.fft_ms, t.msm_g1_ms, t.msm_g2_ms, t.cpu_tail_ms
    );
    if t.gpu_call_ms > 0.0 {
        detail += &format!(";call_ms={:.1}", t.gpu_call_ms);
    }
    if t.upload_ms > 0.0 {
        detail += &format!(";upload_ms={:.1}", t.upload_ms);
    }
    if t.evaluate_ms > 0.0 {
        detail += &format!(";eval_ms={:.1}", t.evaluate_ms);
    }
    if t.msm_g1_split_ms.iter().any(|&ms| ms > 0.0) {
        let [h, l, a, b_g1] = t.msm_g1_split_ms;
        detail += &format!(";h_ms={h:.1};l_ms={l:.1};a_ms={a:.1};b_g1_ms={b_g1:.1}");
    }
    detail
}

/// The synthesis profile in a `SYNTH_END` detail; zeros where a key is missing.
fn decode_synthesis_profile(detail: &str) -> SynthesisProfile {
    let ms = |key: &str| -> f64 {
        detail_value(detail, key)
            .and_then(|v| v.parse::<f64>().ok())
            .filter(|v| v.is_finite())
            .unwrap_or(0.0)
    };
    SynthesisProfile {
        witness_ms: ms("witness_ms"),
        witness_cpu_ms: ms("witness_cpu_ms"),
        evaluate_ms: ms("eval_ms"),
        evaluate_cpu_ms: ms("eval_cpu_ms"),
        compact_ms: ms("compact_ms"),
        compact_cpu_ms: ms("compact_cpu_ms"),
        bytes: detail_value(detail, "bytes")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0),
        // Absent from older timelines, whose witnesses all came from the gadgets.
        witness_path: match detail_value(detail, "witness") {
            Some("native") => WitnessPath::Native,
            _ => WitnessPath::Gadget,
        },
    }
}

/// Reads [`encode_timings`] back; `None` unless every step is there.
fn decode_timings(detail: &str) -> Option<ProveTimings> {
    let ms = |key: &str| -> Option<f64> {
        let ms: f64 = detail_value(detail, key)?.parse().ok()?;
        ms.is_finite().then_some(ms)
    };
    Some(ProveTimings {
        fft_ms: ms("fft_ms")?,
        msm_g1_ms: ms("msm_g1_ms")?,
        msm_g2_ms: ms("msm_g2_ms")?,
        cpu_tail_ms: ms("cpu_ms")?,
        // Absent from timelines of the kernel backends and of older versions.
        gpu_call_ms: ms("call_ms").unwrap_or(0.0),
        // Only the cuda backend times its uploads, evaluations and multiexps apart.
        upload_ms: ms("upload_ms").unwrap_or(0.0),
        evaluate_ms: ms("eval_ms").unwrap_or(0.0),
        msm_g1_split_ms: ["h_ms", "l_ms", "a_ms", "b_g1_ms"].map(|key| ms(key).unwrap_or(0.0)),
    })
}

/// The value of `key` in a `key=value;key=value` detail.
fn detail_value<'d>(detail: &'d str, key: &str) -> Option<&'d str> {
    detail.split(';').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        (k.trim() == key).then_some(v.trim())
    })
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
                            worker: "synth-0".into(),
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
