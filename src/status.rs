//! Status: what a spool holds right now and how its last run went (`cuzk status`).
//!
//! Read-only: it lists the spool's directories and reads the timeline, and never claims,
//! moves or creates anything.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Result;
use serde::Serialize;

use std::collections::HashSet;

use crate::event::EventKind;
use crate::spool::{list_files as files, spool_dir_of, OwnerState, SpoolLayout};
use crate::timeline::{read_timeline, Timeline, TimelineRow};

/// What `cuzk status` reports.
#[derive(Debug, Serialize)]
pub struct SpoolStatus {
    /// C1 files waiting in the inbox.
    pub inbox: usize,
    /// C1 files claimed by runs.
    pub work: usize,
    /// Proofs in the outbox.
    pub outbox: usize,
    /// Failed jobs.
    pub failed: usize,
    /// C1 files whose proof is written.
    pub done: usize,
    /// C1 files set aside (they kept failing alone on a prover not known to work).
    pub set_aside: usize,
    /// The oldest file waiting in the inbox and its age in seconds.
    pub oldest_waiting: Option<(String, f64)>,
    /// The runs holding claims.
    pub owners: Vec<OwnerState>,
    /// The last run in the timeline.
    pub last_run: Option<LastRun>,
}

/// The last run recorded in the timeline.
#[derive(Debug, Serialize)]
pub struct LastRun {
    /// Its id.
    pub run_id: String,
    /// When it started.
    pub started: String,
    /// Proofs written.
    pub proved: usize,
    /// Benchmark shape jobs timed (their results are no proofs).
    pub benchmarks: usize,
    /// Jobs failed.
    pub failed: usize,
    /// Seconds from start to its last row.
    pub elapsed_s: f64,
    /// True when the run wrote RUN_END (false: still running, or it crashed).
    pub is_finished: bool,
}

/// The status of the spool at `spool` (the directory holding `inbox/`, or the inbox itself),
/// with the last run read from `timeline` (default: `timeline.csv` in the spool directory).
pub fn inspect_spool(
    spool: &Path,
    timeline: Option<&Path>,
    lease: Duration,
) -> Result<SpoolStatus> {
    let (layout, timeline) = locate_spool(spool, timeline)?;
    inspect(&layout, &timeline, lease)
}

/// The layout of the spool at `spool` (the directory holding `inbox/`, or the inbox itself)
/// and its timeline: `timeline`, else `timeline.csv` in the spool directory.
pub fn locate_spool(spool: &Path, timeline: Option<&Path>) -> Result<(SpoolLayout, PathBuf)> {
    let (root, inbox) = if spool.join("inbox").is_dir() {
        (spool.to_owned(), spool.join("inbox"))
    } else {
        (spool_dir_of(spool), spool.to_owned())
    };
    anyhow::ensure!(
        inbox.is_dir(),
        "{}: no inbox there (hint: pass the spool directory that holds inbox/)",
        spool.display()
    );
    let timeline = timeline.map_or_else(|| root.join("timeline.csv"), Path::to_owned);
    Ok((SpoolLayout::beside(&inbox), timeline))
}

/// Collects the status of the spool at `layout`.
pub fn inspect(layout: &SpoolLayout, timeline: &Path, lease: Duration) -> Result<SpoolStatus> {
    inspect_with(layout, read_timeline(timeline).ok().as_ref(), lease)
}

/// Collects the status of the spool at `layout` with its timeline already read (`None`:
/// there is none yet).
pub fn inspect_with(
    layout: &SpoolLayout,
    timeline: Option<&Timeline>,
    lease: Duration,
) -> Result<SpoolStatus> {
    let inbox = files(&layout.inbox, |_| true)?;
    let oldest_waiting =
        inbox
            .iter()
            .min_by_key(|(_, modified)| *modified)
            .map(|(name, modified)| {
                let age = modified.elapsed().unwrap_or_default().as_secs_f64();
                (name.clone(), age)
            });
    let owners = if layout.work.is_dir() {
        crate::spool::owner_states(&layout.work, lease)?
    } else {
        Vec::new()
    };
    let loose = files(&layout.work, |_| true)?.len();
    Ok(SpoolStatus {
        inbox: inbox.len(),
        work: loose + owners.iter().map(|o| o.jobs).sum::<usize>(),
        outbox: files(&layout.outbox, |n| n.ends_with(".proof"))?.len(),
        failed: files(&layout.failed, |n| n.ends_with(".error.json"))?.len(),
        done: files(&layout.done, |_| true)?.len(),
        set_aside: files(&layout.set_aside, |n| n.ends_with(".set-aside.json"))?.len(),
        oldest_waiting,
        owners,
        last_run: timeline.and_then(last_run),
    })
}

/// What timeline rows say was achieved, read through the timeline's codec.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Results {
    /// Proofs written.
    pub proved: usize,
    /// Benchmark shape jobs timed: their DONE rows record timings, never a proof.
    pub benchmarks: usize,
    /// Jobs failed.
    pub failed: usize,
    /// True when a run's RUN_END is among the rows.
    pub is_finished: bool,
}

impl Results {
    /// Counts the results `rows` record, of one run or many: a job parsed as a benchmark
    /// shape in its run counts as a benchmark when done, not as proved. Rows that are no
    /// event cuzk knows are left out.
    pub fn of<'a>(rows: impl IntoIterator<Item = &'a TimelineRow>) -> Results {
        let mut benchmarks: HashSet<(&str, &str)> = HashSet::new();
        let mut results = Results::default();
        for row in rows {
            let Ok(event) = row.to_event_kind() else {
                continue;
            };
            match event {
                EventKind::JobParsed {
                    is_benchmark: true, ..
                } => {
                    benchmarks.insert((&row.run_id, &row.job));
                }
                EventKind::ProofWritten { .. } => {
                    if benchmarks.contains(&(row.run_id.as_str(), row.job.as_str())) {
                        results.benchmarks += 1;
                    } else {
                        results.proved += 1;
                    }
                }
                EventKind::JobFailed { .. } => results.failed += 1,
                EventKind::RunFinished { .. } => results.is_finished = true,
                _ => {}
            }
        }
        results
    }
}

fn last_run(timeline: &Timeline) -> Option<LastRun> {
    let run_id = timeline.rows.last()?.run_id.clone();
    let rows: Vec<_> = timeline
        .rows
        .iter()
        .filter(|r| r.run_id == run_id)
        .collect();
    let results = Results::of(rows.iter().copied());
    Some(LastRun {
        started: rows
            .first()
            .map(|r| r.wall_clock.clone())
            .unwrap_or_default(),
        proved: results.proved,
        benchmarks: results.benchmarks,
        failed: results.failed,
        elapsed_s: rows.iter().map(|r| r.t_ms).fold(0.0, f64::max) / 1e3,
        is_finished: results.is_finished,
        run_id,
    })
}

/// The status as the lines `cuzk status` prints.
pub fn render(status: &SpoolStatus) -> String {
    let mut out = format!(
        "inbox {}  work {}  outbox {}  failed {}  done {}",
        status.inbox, status.work, status.outbox, status.failed, status.done
    );
    if status.set_aside > 0 {
        out += &format!("  set aside {}", status.set_aside);
    }
    out.push('\n');
    if let Some((name, age)) = &status.oldest_waiting {
        out += &format!("oldest waiting: {name} ({age:.0} s)\n");
    }
    for owner in &status.owners {
        let who = owner
            .owner
            .as_ref()
            .map(|o| format!("{} pid {}", o.process.host, o.process.pid))
            .unwrap_or_else(|| owner.dir.display().to_string());
        let state = if owner.is_dead {
            "dead, will be taken over"
        } else {
            "alive"
        };
        out += &format!(
            "claims: {who}: {} job(s), heartbeat {:.0} s ago, {state}\n",
            owner.jobs, owner.heartbeat_age_s
        );
    }
    match &status.last_run {
        Some(run) => {
            let state = if run.is_finished {
                "finished"
            } else {
                "running or interrupted"
            };
            let benchmarks = match run.benchmarks {
                0 => String::new(),
                n => format!(", {n} benchmark(s) timed"),
            };
            out += &format!(
                "last run {} ({}): {} proved{benchmarks}, {} failed in {:.1} s, {state}\n",
                run.run_id, run.started, run.proved, run.failed, run.elapsed_s
            );
        }
        None => out += "last run: none recorded\n",
    }
    out
}
