//! Attempts: how many runs started a claimed file, across restarts, and where the last one
//! was seen, so that a file that takes the prover down again and again (killed for memory, a
//! driver fault, a panic inside a dependency) is quarantined instead of killing every run
//! after it under a service manager.
//!
//! One small record per claimed job, `work/.attempts/<job>.json`, written atomically. A fresh
//! claim from the inbox starts it at one run; a resume or a take-over adds one, because the
//! run that held the file before ended without finishing it. The record goes when the file
//! leaves `work/`.

use std::fs;
use std::path::PathBuf;
use std::time::SystemTime;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::event::JobStage;

use super::{ClaimedJob, Spool};
use crate::atomic_file;

/// The attempts directory inside `work/`; a dotfile, so never taken for a claim.
const ATTEMPTS_DIR: &str = ".attempts";

/// What is known of the runs that started a claimed file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttemptRecord {
    /// Runs that started the file, this one included.
    pub runs: u32,
    /// The stage it was last seen in.
    pub stage: Option<String>,
    /// The partition, when the stage works on one.
    pub partition: Option<usize>,
    /// The run (`<host>-<pid>`) that saw it last.
    pub owner: String,
    /// When, RFC 3339 UTC.
    pub updated_at: String,
}

impl AttemptRecord {
    /// Runs before this one, all of which ended without finishing the file.
    pub fn crashes(&self) -> u32 {
        self.runs.saturating_sub(1)
    }

    /// `stage prove (partition 3)` or `stage claim`.
    pub fn last_seen(&self) -> String {
        let stage = self.stage.as_deref().unwrap_or("claim");
        match self.partition {
            Some(p) => format!("stage {stage} (partition {p})"),
            None => format!("stage {stage}"),
        }
    }
}

impl Spool {
    fn attempts_path(&self, job: &str) -> PathBuf {
        self.layout
            .work
            .join(ATTEMPTS_DIR)
            .join(format!("{job}.json"))
    }

    fn read_attempts(&self, job: &str) -> Option<AttemptRecord> {
        let bytes = fs::read(self.attempts_path(job)).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    fn write_attempts(&self, job: &str, record: &AttemptRecord) -> Result<()> {
        let path = self.attempts_path(job);
        let bytes = serde_json::to_vec_pretty(record).context("encoding attempt record")?;
        let dir = self.layout.work.join(ATTEMPTS_DIR);
        // Twice: another run tidying up may remove the empty directory in between.
        for _ in 0..2 {
            fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
            if atomic_file::write(&path, &bytes).is_ok() {
                return Ok(());
            }
        }
        atomic_file::write(&path, &bytes)
    }

    /// Counts this run's start of `job`: a fresh claim starts at one, a resume adds one to
    /// what earlier runs left. Returns the record as it now stands.
    pub fn start_attempt(&self, job: &ClaimedJob, is_resumed: bool) -> Result<AttemptRecord> {
        let before = if is_resumed {
            self.read_attempts(&job.name)
        } else {
            None
        };
        let record = AttemptRecord {
            runs: before.as_ref().map_or(0, |r| r.runs) + 1,
            // Keep where the last run was seen: that is what the operator needs.
            stage: before.as_ref().and_then(|r| r.stage.clone()),
            partition: before.as_ref().and_then(|r| r.partition),
            owner: before
                .as_ref()
                .map_or_else(|| self.owner.dir_name(), |r| r.owner.clone()),
            updated_at: now(),
        };
        self.write_attempts(&job.name, &record)?;
        Ok(record)
    }

    /// Notes that this run has `job` at `stage` now. Best effort: the record only explains a
    /// crash, so failing to write it must not fail the job.
    pub fn note_attempt_stage(&self, job: &ClaimedJob, stage: JobStage, partition: Option<usize>) {
        let Some(mut record) = self.read_attempts(&job.name) else {
            return;
        };
        record.stage = Some(stage.as_str().to_owned());
        record.partition = partition;
        record.owner = self.owner.dir_name();
        record.updated_at = now();
        if let Err(err) = self.write_attempts(&job.name, &record) {
            log::warn!("{}: {err:#}", job.name);
        }
    }

    /// Removes the attempts directory once it holds no record (another run may still be
    /// writing one: then it is not empty, and stays).
    pub(super) fn tidy_attempts(&self) {
        let _ = fs::remove_dir(self.layout.work.join(ATTEMPTS_DIR));
    }

    /// Drops the record of a job whose file left `work/`.
    pub(super) fn forget_attempts(&self, job: &str) {
        let _ = fs::remove_file(self.attempts_path(job));
    }
}

fn now() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}
