//! Attempts: what happened to a claimed file across runs, so that a file that takes the
//! prover down again and again (killed for memory, a driver fault, a panic inside a
//! dependency) is quarantined instead of killing every run after it under a service manager,
//! and so that nobody else is blamed for it.
//!
//! One small record per claimed job, `work/.attempts/<job>.json`, written atomically. A run
//! that dies takes down every file in flight, and only one of them (if any) was the cause.
//! So a crash counts against a file only when the file was alone in flight: a file that was
//! in flight with others when its run died is marked solo, and the next run proves it alone
//! (no other file in flight) until it has passed or failed by itself. A run ended on purpose
//! (a second stop signal leaves a marker, [`super::PreviousEnd::Aborted`]) counts for nobody.
//!
//! Faults of the prover's device (a GPU's transient error, a batch that failed as a unit) are
//! counted apart, in `device_faults`: the file goes back to the inbox with its record kept,
//! marked solo, so that its next try is alone and tells the file's fault from the device's.
//! A proof that verification rejected is counted in `rejections` the same way: the file's
//! next try is alone, and goes through the gadgets in full.
//! The record goes when the file leaves `work/` for good (done or failed).

use std::collections::HashMap;
use std::fs;
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::event::JobStage;

use super::{ClaimedJob, PreviousEnd, Spool};
use crate::atomic_file;

/// The attempts directory inside `work/`; a dotfile, so never taken for a claim.
const ATTEMPTS_DIR: &str = ".attempts";

/// What is known of the runs that started a claimed file.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttemptRecord {
    /// Runs that started the file, this one included.
    pub runs: u32,
    /// Runs that died while the file was alone in flight: the crashes it is blamed for.
    #[serde(default)]
    pub crashes: u32,
    /// The file is proved alone in flight: it was in flight with others when a run died, or
    /// its last try failed on the prover's device.
    #[serde(default)]
    pub is_solo: bool,
    /// This run has started the file's synthesis: it is in flight.
    #[serde(default)]
    pub is_started: bool,
    /// Prove-stage faults that handed the file back (not counted as crashes).
    #[serde(default)]
    pub device_faults: u32,
    /// The provers those faults happened on (`gpu-0`, `supraseal`), each once.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fault_provers: Vec<String>,
    /// Proofs of the file that verification rejected: after the first, the file is proved
    /// alone with the gadgets in full; a second fails it.
    #[serde(default)]
    pub rejections: u32,
    /// How each rejected proof was made, and on which provers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rejected_with: Vec<String>,
    /// When the file was last handed back to the inbox for a retry, in milliseconds since
    /// the Unix epoch (0: never): the inbox is claimed oldest first, and it counts from then.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub handed_back_at_ms: u64,
    /// The stage it was last seen in.
    pub stage: Option<String>,
    /// The partition, when the stage works on one.
    pub partition: Option<usize>,
    /// The run (`<host>-<pid>-<nonce>`) that saw it last.
    pub owner: String,
    /// When, RFC 3339 UTC.
    pub updated_at: String,
}

impl AttemptRecord {
    /// `stage prove (partition 3)` or `stage claim`.
    pub fn last_seen(&self) -> String {
        let stage = self.stage.as_deref().unwrap_or("claim");
        match self.partition {
            Some(p) => format!("stage {stage} (partition {p})"),
            None => format!("stage {stage}"),
        }
    }

    /// The record after a run's end that left the file claimed, as the next run starts it.
    fn after(mut self, previous: PreviousEnd) -> AttemptRecord {
        self.runs += 1;
        if previous == PreviousEnd::Crashed && self.is_started {
            // Alone in flight, the crash was this file's doing; with others, it may have
            // been theirs: prove it alone to tell.
            if self.is_solo {
                self.crashes += 1;
            }
            self.is_solo = true;
        }
        self.is_started = false;
        self
    }
}

impl Spool {
    fn attempts_path(&self, job: &str) -> PathBuf {
        self.layout
            .work
            .join(ATTEMPTS_DIR)
            .join(format!("{job}.json"))
    }

    pub(super) fn read_attempts(&self, job: &str) -> Option<AttemptRecord> {
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

    /// Counts this run's start of `job`: a fresh claim starts at one run (keeping the device
    /// faults of a file handed back for one); a file left claimed by an earlier run that
    /// ended as `previous` says adds one run, and a crash while it was alone in flight. Returns
    /// the record as it now stands.
    pub fn start_attempt(
        &self,
        job: &ClaimedJob,
        previous: Option<PreviousEnd>,
    ) -> Result<AttemptRecord> {
        let before = self.read_attempts(&job.name);
        let record = match (before, previous) {
            (Some(before), Some(previous)) => before.after(previous),
            // Only a file handed back for a device fault or a rejected proof keeps its record
            // in the inbox.
            (Some(before), None) => AttemptRecord {
                runs: 1,
                is_started: false,
                ..before
            },
            (None, _) => AttemptRecord {
                runs: 1,
                owner: self.owner.dir_name(),
                ..AttemptRecord::default()
            },
        };
        let record = AttemptRecord {
            updated_at: now(),
            ..record
        };
        self.write_attempts(&job.name, &record)?;
        Ok(record)
    }

    /// Notes that this run has `job` at `stage` now: it is in flight. Best effort: the record
    /// only explains a crash, so failing to write it must not fail the job.
    pub fn note_attempt_stage(&self, job: &ClaimedJob, stage: JobStage, partition: Option<usize>) {
        let Some(mut record) = self.read_attempts(&job.name) else {
            return;
        };
        record.is_started = true;
        record.stage = Some(stage.as_str().to_owned());
        record.partition = partition;
        record.owner = self.owner.dir_name();
        record.updated_at = now();
        if let Err(err) = self.write_attempts(&job.name, &record) {
            log::warn!("{}: {err:#}", job.name);
        }
    }

    /// Notes that `job` is no longer in flight (read and bound, it waits for its partitions
    /// to start): a crash now is not its doing. Best effort, as [`Spool::note_attempt_stage`].
    pub fn note_attempt_waiting(&self, job: &ClaimedJob) {
        let Some(mut record) = self.read_attempts(&job.name) else {
            return;
        };
        if !record.is_started {
            return;
        }
        record.is_started = false;
        record.updated_at = now();
        if let Err(err) = self.write_attempts(&job.name, &record) {
            log::warn!("{}: {err:#}", job.name);
        }
    }

    /// Counts a fault of the prover's device on `job` (proved by `prover`) and marks the file
    /// solo for its next try; returns the record as it now stands. The record is kept when
    /// the file goes back to the inbox ([`Spool::hand_back_for_retry`]).
    pub fn note_device_fault(&self, job: &ClaimedJob, prover: &str) -> Result<AttemptRecord> {
        let mut record = self
            .read_attempts(&job.name)
            .unwrap_or_else(|| AttemptRecord {
                runs: 1,
                ..AttemptRecord::default()
            });
        record.device_faults += 1;
        if !record.fault_provers.iter().any(|p| p == prover) {
            record.fault_provers.push(prover.to_owned());
        }
        record.is_solo = true;
        record.is_started = false;
        record.stage = Some(JobStage::Prove.as_str().to_owned());
        record.owner = self.owner.dir_name();
        record.updated_at = now();
        self.write_attempts(&job.name, &record)?;
        Ok(record)
    }

    /// Counts a rejected proof of `job` (`made_with` says how it was made, and where) and
    /// marks the file solo for its next try, which proves it with the gadgets in full; returns
    /// the record as it now stands. The record is kept when the file goes back to the inbox.
    pub fn note_rejected_proof(&self, job: &ClaimedJob, made_with: &str) -> Result<AttemptRecord> {
        let mut record = self
            .read_attempts(&job.name)
            .unwrap_or_else(|| AttemptRecord {
                runs: 1,
                ..AttemptRecord::default()
            });
        record.rejections += 1;
        record.rejected_with.push(made_with.to_owned());
        record.is_solo = true;
        record.is_started = false;
        record.stage = Some(JobStage::Verify.as_str().to_owned());
        record.owner = self.owner.dir_name();
        record.updated_at = now();
        self.write_attempts(&job.name, &record)?;
        Ok(record)
    }

    /// Notes in `job`'s record that it goes back to the inbox now (see
    /// [`AttemptRecord::handed_back_at_ms`]). Best effort: without it the file is only
    /// claimed earlier than it should be.
    pub(super) fn note_handed_back(&self, job: &ClaimedJob) {
        let mut record = self.read_attempts(&job.name).unwrap_or_default();
        record.handed_back_at_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        record.updated_at = now();
        if let Err(err) = self.write_attempts(&job.name, &record) {
            log::warn!("{}: not queued behind the files waiting: {err:#}", job.name);
        }
    }

    /// When each file handed back for a retry went back, by job name.
    pub(super) fn handed_back_times(&self) -> HashMap<String, SystemTime> {
        let Ok(entries) = fs::read_dir(self.layout.work.join(ATTEMPTS_DIR)) else {
            return HashMap::new();
        };
        entries
            .flatten()
            .filter_map(|entry| {
                let file_name = entry.file_name().to_string_lossy().into_owned();
                let job = file_name.strip_suffix(".json")?.to_owned();
                let record: AttemptRecord =
                    serde_json::from_slice(&fs::read(entry.path()).ok()?).ok()?;
                (record.handed_back_at_ms > 0).then(|| {
                    (
                        job,
                        UNIX_EPOCH + Duration::from_millis(record.handed_back_at_ms),
                    )
                })
            })
            .collect()
    }

    /// Removes the attempts directory once it holds no record (another run may still be
    /// writing one: then it is not empty, and stays). A run killed while it wrote a record
    /// left that write's temporary behind; those of writers that are gone go first.
    pub(super) fn tidy_attempts(&self) {
        let dir = self.layout.work.join(ATTEMPTS_DIR);
        if !dir.is_dir() {
            return;
        }
        let _ = atomic_file::remove_stale_temporaries(&dir);
        let _ = fs::remove_dir(dir);
    }

    /// Drops the record of a job whose file left `work/`.
    pub(super) fn forget_attempts(&self, job: &str) {
        let _ = fs::remove_file(self.attempts_path(job));
    }

    /// Drops the record of a job whose file went back to the inbox, unless it counts device
    /// faults or a rejected proof: those decide how the file's next try is proved.
    pub(super) fn forget_attempts_unless_retried(&self, job: &str) {
        if self
            .read_attempts(job)
            .is_none_or(|r| r.device_faults == 0 && r.rejections == 0)
        {
            self.forget_attempts(job);
        }
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn now() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn started(is_solo: bool) -> AttemptRecord {
        AttemptRecord {
            runs: 1,
            is_solo,
            is_started: true,
            ..AttemptRecord::default()
        }
    }

    #[test]
    fn a_crash_counts_only_against_a_file_alone_in_flight() {
        // In flight with others: not blamed, but proved alone from now on.
        let shared = started(false).after(PreviousEnd::Crashed);
        assert_eq!((shared.runs, shared.crashes, shared.is_solo), (2, 0, true));
        assert!(!shared.is_started, "not in flight in the new run yet");
        // Alone in flight: blamed.
        let alone = started(true).after(PreviousEnd::Crashed);
        assert_eq!((alone.crashes, alone.is_solo), (1, true));
        // Claimed but never started: not in flight, nothing changes but the run count.
        let waiting = AttemptRecord {
            is_started: false,
            ..started(false)
        }
        .after(PreviousEnd::Crashed);
        assert_eq!((waiting.crashes, waiting.is_solo), (0, false));
    }

    #[test]
    fn a_deliberate_abort_counts_for_nobody() {
        for is_solo in [false, true] {
            let aborted = started(is_solo).after(PreviousEnd::Aborted);
            assert_eq!(aborted.crashes, 0);
            assert_eq!(aborted.is_solo, is_solo, "nothing learnt about the file");
        }
    }
}
