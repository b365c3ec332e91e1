//! The processor's private spools: made fresh under `--tmp-dir` for each processor, and
//! tidied by later processors once their own has died.
//!
//! A processor holds an exclusive `flock` on `<spool>/.processor.lock` for its whole life, and
//! the kernel lets it go when the process ends, however it ends (damocles-worker stops
//! processors with SIGKILL). So a spool whose lock can be taken belongs to no live
//! processor, whatever its pid says: a shared `/tmp` may hold spools of processors in other
//! containers, whose pids mean nothing in this one. The lock is taken before the spool's
//! inbox exists, and only directories with an inbox are spools, so a spool being made is
//! never taken for a dead one. A spool without a lock file (an older cuzk's) is left alone:
//! whether its processor runs cannot be told.

use std::fs::{self, File, TryLockError};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// The name prefix of private spools, so a later processor can tidy those of dead ones.
pub const SPOOL_PREFIX: &str = "cuzk-damocles-";

/// The lock a live processor holds in its spool.
const LOCK_FILE: &str = ".processor.lock";

/// A processor's own spool directory, locked while it lives and removed when dropped.
pub struct PrivateSpool {
    dir: tempfile::TempDir,
    _lock: File,
}

impl PrivateSpool {
    /// Makes and locks a fresh spool under `tmp_dir`, its inbox included.
    pub fn create(tmp_dir: &Path) -> Result<PrivateSpool> {
        let dir = tempfile::Builder::new()
            .prefix(&format!("{SPOOL_PREFIX}{}-", std::process::id()))
            .tempdir_in(tmp_dir)
            .with_context(|| {
                format!(
                    "{}: cannot make the processor's spool there (hint: give --tmp-dir a writable directory)",
                    tmp_dir.display()
                )
            })?;
        let lock_path = dir.path().join(LOCK_FILE);
        let lock = File::create(&lock_path)
            .with_context(|| format!("creating {}", lock_path.display()))?;
        lock.lock()
            .with_context(|| format!("locking {}", lock_path.display()))?;
        let inbox = dir.path().join("inbox");
        fs::create_dir(&inbox).with_context(|| format!("creating {}", inbox.display()))?;
        Ok(PrivateSpool { dir, _lock: lock })
    }

    /// The spool's directory.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// Whether a spool's processor still runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Owner {
    /// Its lock is held.
    Alive,
    /// Its lock was free: the processor is gone.
    Dead,
    /// No lock file (an older cuzk's spool) or it cannot be opened: cannot be told.
    Unknown,
}

fn owner_of(spool: &Path) -> Owner {
    let Ok(file) = File::open(spool.join(LOCK_FILE)) else {
        return Owner::Unknown;
    };
    match file.try_lock() {
        // Released again when `file` drops, at once.
        Ok(()) => Owner::Dead,
        Err(TryLockError::WouldBlock) => Owner::Alive,
        Err(TryLockError::Error(_)) => Owner::Unknown,
    }
}

/// The private spools in `dir`, other than this process's own.
fn spools(dir: &Path, own: Option<&Path>) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|entry| {
            entry
                .file_name()
                .to_str()
                .is_some_and(|name| name.starts_with(SPOOL_PREFIX))
        })
        .map(|entry| entry.path())
        .filter(|path| path.join("inbox").is_dir() && Some(path.as_path()) != own)
        .collect()
}

/// Removes the private spools in `dir` whose processors died (damocles-worker stops them
/// with SIGKILL, which leaves the spool behind).
pub fn remove_stale(dir: &Path) {
    for spool in spools(dir, None) {
        if owner_of(&spool) != Owner::Dead {
            continue;
        }
        match fs::remove_dir_all(&spool) {
            Ok(()) => log::info!("removed {}, left by a processor that died", spool.display()),
            Err(err) => log::warn!("{}: not removed: {err}", spool.display()),
        }
    }
}

/// How many other processors have a live spool in `dir`.
pub fn live_others(dir: &Path, own: &Path) -> usize {
    spools(dir, Some(own))
        .iter()
        .filter(|spool| owner_of(spool) == Owner::Alive)
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_spools_whose_lock_is_free_are_removed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let live = PrivateSpool::create(dir.path()).expect("a live spool");
        // A dead processor's spool: its lock file is there, nobody holds it.
        let dead = dir.path().join(format!("{SPOOL_PREFIX}1-dead"));
        fs::create_dir_all(dead.join("inbox")).expect("spool");
        File::create(dead.join(LOCK_FILE)).expect("lock file");
        // A live processor in another container, whose pid (1) is this namespace's init:
        // its lock is held, here by this test, and that alone keeps it.
        let elsewhere = PrivateSpool::create(dir.path()).expect("another live spool");
        // An older cuzk's spool, without a lock: cannot be told, kept.
        let old = dir.path().join(format!("{SPOOL_PREFIX}4999999-old"));
        fs::create_dir_all(old.join("inbox")).expect("spool");
        // Not a spool at all.
        let foreign = dir.path().join(format!("{SPOOL_PREFIX}4999999-notaspool"));
        fs::create_dir_all(&foreign).expect("dir");
        assert_eq!(
            live_others(dir.path(), live.path()),
            1,
            "the other live one"
        );
        remove_stale(dir.path());
        assert!(!dead.exists(), "the dead processor's spool is removed");
        for kept in [live.path(), elsewhere.path(), &old, &foreign] {
            assert!(kept.exists(), "{} kept", kept.display());
        }
        let gone = elsewhere.path().to_owned();
        drop(elsewhere);
        assert!(!gone.exists(), "a processor removes its own spool at exit");
    }
}
