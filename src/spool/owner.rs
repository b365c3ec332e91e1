//! Owner directories of `work/`: who holds the claims in one (its `.owner.json`), whether
//! that run is gone or stopped beating, and tidying one that holds nothing.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result};
use serde::Serialize;

use super::list_owner_claims;
use crate::process::{Liveness, ProcessIdentity};

/// Who holds the claims in an owner directory of `work/`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Owner {
    /// The process: host and pid, and what tells it from another with the same two (see
    /// [`ProcessIdentity`]).
    #[serde(flatten)]
    pub process: ProcessIdentity,
    /// When the run started, RFC 3339 UTC.
    pub started_at: String,
    /// The lease the run beats for: other runs wait at least this long before taking its
    /// claims over, whatever lease they were given themselves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_secs: Option<u64>,
}

impl Owner {
    /// This process.
    pub fn current() -> Owner {
        Owner {
            process: ProcessIdentity::current(),
            started_at: humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
            lease_secs: None,
        }
    }

    /// The owner directory's name: `<host>-<pid>-<nonce>`, so that two runs with the same
    /// host name and pid (containers) never share one.
    pub fn dir_name(&self) -> String {
        let ProcessIdentity {
            host, pid, nonce, ..
        } = &self.process;
        if nonce.is_empty() {
            format!("{host}-{pid}")
        } else {
            format!("{host}-{pid}-{nonce}")
        }
    }

    /// True when the owner is known to be gone: a process of this boot and pid namespace
    /// that no longer runs. Elsewhere only its heartbeat can tell.
    pub fn is_gone(&self) -> bool {
        self.process.liveness() == Liveness::Gone
    }
}

/// An owner directory found in `work/` and whether its claims may be taken over.
#[derive(Clone, Debug, Serialize)]
pub struct OwnerState {
    /// The directory.
    pub dir: PathBuf,
    /// Who wrote it, if its `.owner.json` is readable.
    pub owner: Option<Owner>,
    /// Seconds since the last heartbeat.
    pub heartbeat_age_s: f64,
    /// C1 files it holds.
    pub jobs: usize,
    /// True when its process is gone or its lease ran out.
    pub is_dead: bool,
}

pub(super) const OWNER_FILE: &str = ".owner.json";

/// Left in an owner directory by a run aborted on purpose (a second stop signal): its files
/// were not taken down by any of them.
pub(super) const ABORT_MARKER: &str = ".aborted";

/// How the run that held a claim before this one ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PreviousEnd {
    /// It died (killed, crashed, lost its host): the files in flight may be to blame.
    Crashed,
    /// It was aborted on purpose (a second Ctrl-C): nobody is to blame.
    Aborted,
}

/// The owner directories in `work/`, with whether each is dead.
pub fn owner_states(work: &Path, lease: Duration) -> Result<Vec<OwnerState>> {
    let mut states = Vec::new();
    for entry in fs::read_dir(work).with_context(|| format!("listing {}", work.display()))? {
        let entry = entry.with_context(|| format!("listing {}", work.display()))?;
        // Dot-directories (`.attempts`) are the spool's own bookkeeping, not owners.
        let is_hidden = entry.file_name().to_string_lossy().starts_with('.');
        if is_hidden || !entry.file_type().map(|t| t.is_dir()).unwrap_or(false) {
            continue;
        }
        let dir = entry.path();
        let owner_path = dir.join(OWNER_FILE);
        let owner: Option<Owner> = fs::read(&owner_path)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok());
        // Without a readable record the directory's own age stands in for the heartbeat.
        let beat = fs::metadata(&owner_path)
            .or_else(|_| fs::metadata(&dir))
            .and_then(|m| m.modified())
            .unwrap_or(SystemTime::UNIX_EPOCH);
        let heartbeat_age = beat.elapsed().unwrap_or_default();
        // A pid is looked at only where it is provably of this boot and pid namespace: a
        // container's run with this host's name and pid is not this host's process.
        let is_gone = owner.as_ref().is_some_and(Owner::is_gone);
        let owner_lease =
            Duration::from_secs(owner.as_ref().and_then(|o| o.lease_secs).unwrap_or(0));
        states.push(OwnerState {
            jobs: list_owner_claims(&dir)?.len(),
            dir,
            owner,
            heartbeat_age_s: heartbeat_age.as_secs_f64(),
            is_dead: is_gone || heartbeat_age > lease.max(owner_lease),
        });
    }
    states.sort_by(|a, b| a.dir.cmp(&b.dir));
    Ok(states)
}

/// Removes an owner directory that holds no claims: its `.owner.json` and any temporary
/// file a killed run left, then the directory. Races with another run tidying the same
/// directory are harmless, so errors are ignored.
pub(super) fn remove_owner_dir(dir: &Path) {
    if let Ok(entries) = fs::read_dir(dir) {
        for entry in entries.flatten() {
            if entry.file_name().to_string_lossy().starts_with('.') {
                let _ = fs::remove_file(entry.path());
            }
        }
    }
    let _ = fs::remove_dir(dir);
}
