//! Where a served job stands, read from the spool itself, which is the only record: what
//! the server answers survives its restart because nothing is kept anywhere else.
//!
//! A job's file moves one way, inbox → `work/<owner>/` → `outbox/` (with `done/`) or
//! `failed/` or `set-aside/`, and back to the inbox only when a device fault hands it back.
//! So [`standing`] looks in that order: a file caught moving is found in the next place it
//! looks, and a job found live is never answered from an older result of its name (a
//! resubmission with new bytes supersedes a proof).

use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::Deserialize;

use crate::event::JobStage;
use crate::input;
use crate::proof_kind::ProofKind;
use crate::spool::SpoolLayout;

/// Where a job stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Standing {
    /// Its file waits in the inbox.
    Queued,
    /// A run has claimed it.
    InFlight,
    /// Its proof is in the outbox.
    Proved(PathBuf),
    /// It failed at `stage`, for `message`.
    Failed {
        /// The stage.
        stage: String,
        /// Why.
        message: String,
    },
    /// Its file was set aside, neither proved nor failed, for `reason`.
    SetAside(String),
    /// The spool knows no job of this name.
    Unknown,
}

impl Standing {
    /// True for a failure the client asked for (`CancelProof`).
    pub fn is_withdrawn(&self) -> bool {
        matches!(self, Standing::Failed { stage, .. } if stage == JobStage::Withdrawn.as_str())
    }
}

/// A failure record's fields that matter here.
#[derive(Deserialize)]
struct FailureFields {
    stage: String,
    message: String,
}

/// A set-aside record's.
#[derive(Deserialize)]
struct SetAsideFields {
    reason: String,
}

/// Where the job named `job` stands in `layout`.
pub fn standing(layout: &SpoolLayout, job: &str) -> Standing {
    let file = format!("{job}.json");
    if layout.inbox.join(&file).is_file() {
        return Standing::Queued;
    }
    if claimed_path(layout, &file).is_some() {
        return Standing::InFlight;
    }
    let proof = layout.outbox.join(format!("{job}.proof"));
    // The record is written after the proof: a proof without one is not finished.
    if proof.is_file() && layout.outbox.join(&file).is_file() {
        return Standing::Proved(proof);
    }
    if let Some(record) =
        read_json::<FailureFields>(&layout.failed.join(format!("{job}.error.json")))
    {
        return Standing::Failed {
            stage: record.stage,
            message: record.message,
        };
    }
    if let Some(record) =
        read_json::<SetAsideFields>(&layout.set_aside.join(format!("{job}.set-aside.json")))
    {
        return Standing::SetAside(record.reason);
    }
    Standing::Unknown
}

/// The claimed file `file` in `work/` (loose, or in an owner's directory), if a run holds it.
fn claimed_path(layout: &SpoolLayout, file: &str) -> Option<PathBuf> {
    let loose = layout.work.join(file);
    if loose.is_file() {
        return Some(loose);
    }
    owner_dirs(layout)
        .into_iter()
        .map(|owner| owner.join(file))
        .find(|path| path.is_file())
}

/// The owners' directories in `work/`; its dot-directories are the spool's bookkeeping
/// (`.attempts` keeps a record per claimed job), not claims.
fn owner_dirs(layout: &SpoolLayout) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(&layout.work) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect()
}

fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Option<T> {
    serde_json::from_slice(&fs::read(path).ok()?).ok()
}

/// Removes what an ended, failed or set-aside job left in `failed/` or `set-aside/`, so that
/// a resubmission starts afresh.
pub fn clear_failure(layout: &SpoolLayout, job: &str) {
    for path in [
        layout.failed.join(format!("{job}.json")),
        layout.failed.join(format!("{job}.error.json")),
        layout.set_aside.join(format!("{job}.json")),
        layout.set_aside.join(format!("{job}.set-aside.json")),
    ] {
        let _ = fs::remove_file(path);
    }
}

/// Input files waiting in the inbox and claimed in `work/`, by proof kind.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct QueueCounts {
    /// `(kind, waiting, claimed)`, PoRep first.
    pub by_kind: Vec<(ProofKind, u32, u32)>,
}

/// Counts the spool's waiting and claimed input files by kind, told from each file's ends.
pub fn queue_counts(layout: &SpoolLayout) -> QueueCounts {
    let mut counts = [(ProofKind::Seal, 0u32, 0u32), (ProofKind::Update, 0, 0)];
    let mut count = |path: &Path, is_claimed: bool| {
        let kind = input::peek_circuit(path).map_or(ProofKind::Seal, |c| c.kind);
        let entry = counts
            .iter_mut()
            .find(|(k, _, _)| *k == kind)
            .expect("both kinds are listed");
        if is_claimed {
            entry.2 += 1;
        } else {
            entry.1 += 1;
        }
    };
    for (path, _) in inputs_in(&layout.inbox) {
        count(&path, false);
    }
    for dir in std::iter::once(layout.work.clone()).chain(owner_dirs(layout)) {
        for (path, _) in inputs_in(&dir) {
            count(&path, true);
        }
    }
    QueueCounts {
        by_kind: counts.to_vec(),
    }
}

/// The jobs ahead of `job` in the inbox's order (oldest first), if it is there.
pub fn queue_position(layout: &SpoolLayout, job: &str) -> u32 {
    let mut files = inputs_in(&layout.inbox);
    files.sort_by_key(|(path, time)| (*time, path.clone()));
    let own = layout.inbox.join(format!("{job}.json"));
    files
        .iter()
        .position(|(path, _)| *path == own)
        .unwrap_or(files.len()) as u32
}

/// The input files directly in `dir` (`.json` names, temporaries left out), with their
/// modification times.
fn inputs_in(dir: &Path) -> Vec<(PathBuf, SystemTime)> {
    crate::spool::list_files(dir, |name| name.ends_with(".json"))
        .unwrap_or_default()
        .into_iter()
        .map(|(name, time)| (dir.join(name), time))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spool() -> (tempfile::TempDir, SpoolLayout) {
        let dir = tempfile::tempdir().unwrap();
        let layout = SpoolLayout::beside(&dir.path().join("inbox"));
        for d in [&layout.inbox, &layout.work, &layout.outbox, &layout.failed] {
            fs::create_dir_all(d).unwrap();
        }
        (dir, layout)
    }

    #[test]
    fn a_job_is_found_where_its_file_is_and_live_before_ended() {
        let (_dir, layout) = spool();
        let job = "s-t01000-1.porep-1000-1";
        assert_eq!(standing(&layout, job), Standing::Unknown);
        fs::write(
            layout.failed.join(format!("{job}.error.json")),
            br#"{"stage":"withdrawn","message":"asked"}"#,
        )
        .unwrap();
        assert!(standing(&layout, job).is_withdrawn());
        // An old proof of the name, and the name queued again: it is queued.
        fs::write(layout.outbox.join(format!("{job}.proof")), b"p").unwrap();
        fs::write(layout.outbox.join(format!("{job}.json")), b"{}").unwrap();
        assert!(matches!(standing(&layout, job), Standing::Proved(_)));
        fs::write(layout.inbox.join(format!("{job}.json")), b"{}").unwrap();
        assert_eq!(standing(&layout, job), Standing::Queued);
        let owner = layout.work.join("host-1");
        fs::create_dir_all(&owner).unwrap();
        fs::rename(
            layout.inbox.join(format!("{job}.json")),
            owner.join(format!("{job}.json")),
        )
        .unwrap();
        assert_eq!(standing(&layout, job), Standing::InFlight);
        // The spool's record of the claim is not a second claim.
        let attempts = layout.work.join(".attempts");
        fs::create_dir_all(&attempts).unwrap();
        fs::write(attempts.join(format!("{job}.json")), b"{}").unwrap();
        let counts = queue_counts(&layout);
        assert_eq!(counts.by_kind[0], (ProofKind::Seal, 0, 1));
        clear_failure(&layout, job);
        fs::remove_file(owner.join(format!("{job}.json"))).unwrap();
        assert!(
            matches!(standing(&layout, job), Standing::Proved(_)),
            "not in flight by its record"
        );
    }

    #[test]
    fn queue_position_counts_the_older_files() {
        let (_dir, layout) = spool();
        let at = |secs| SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(secs);
        for (name, secs) in [("a", 30), ("b", 10), ("c", 20)] {
            let path = layout.inbox.join(format!("{name}.json"));
            fs::write(&path, b"{}").unwrap();
            fs::File::options()
                .write(true)
                .open(&path)
                .unwrap()
                .set_modified(at(secs))
                .unwrap();
        }
        assert_eq!(queue_position(&layout, "b"), 0);
        assert_eq!(queue_position(&layout, "c"), 1);
        assert_eq!(queue_position(&layout, "a"), 2);
    }
}
