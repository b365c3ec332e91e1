//! Files that readers see whole or not at all.
//!
//! Every file cuzk writes for a reader to take (proofs, their notes, metrics, recorded
//! constraints, parameters of a benchmark shape) is written under a temporary name, synced,
//! renamed over its target, and the directory synced. The temporary is
//! `.<name>.tmp-<pid>-<n>`: unique to the process and the call, so two writers of one target
//! (two runs on one spool recording the same constraints, threads writing one note) never
//! write into one file, and a target that is memory-mapped is only ever replaced, never
//! changed in place. A writer killed half-way leaves its temporary behind; the next writer of
//! that target removes the temporaries of processes that are gone, so a run killed while
//! writing gigabytes of constraints does not leave them on disk for ever.

use std::ffi::OsStr;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Context, Result};

/// Writes `bytes` to `path` atomically.
pub fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    write_with(path, |file| {
        file.write_all(bytes)?;
        Ok(())
    })
}

/// Writes `path` atomically with `fill`, which writes the whole content into the temporary
/// file it is given (buffering is the caller's choice). Nothing is renamed if `fill` fails.
pub fn write_with(path: &Path, fill: impl FnOnce(&mut File) -> Result<()>) -> Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .and_then(OsStr::to_str)
        .with_context(|| format!("{}: not a file path", path.display()))?;
    remove_stale_temporaries_of(dir, Some(name));
    let tmp = temporary_path(dir, name);
    let written = (|| -> Result<()> {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .with_context(|| format!("creating {}", tmp.display()))?;
        fill(&mut file)?;
        file.sync_all()?;
        fs::rename(&tmp, path)?;
        Ok(())
    })();
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(e).with_context(|| format!("writing {}", path.display()));
    }
    sync_dir(dir)
}

/// Removes the temporaries in `dir` that writers which are gone left behind.
pub fn remove_stale_temporaries(dir: &Path) -> Result<()> {
    fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))?;
    remove_stale_temporaries_of(dir, None);
    Ok(())
}

/// True if process `pid` exists on this host.
pub(crate) fn is_process_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // Signal 0 checks existence; EPERM means it exists but belongs to someone else.
    // SAFETY: kill with signal 0 sends nothing.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Makes renames in `dir` durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .with_context(|| format!("syncing directory {}", dir.display()))
}

fn temporary_path(dir: &Path, name: &str) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    dir.join(format!(".{name}.tmp-{}-{n}", std::process::id()))
}

/// The target name and writer of a temporary: `.<name>.tmp-<pid>-<n>`, or `.<name>.tmp-<pid>`
/// from older versions.
fn parse_temporary(file_name: &str) -> Option<(&str, u32)> {
    let rest = file_name.strip_prefix('.')?;
    let (name, owner) = rest.rsplit_once(".tmp-")?;
    let pid = owner.split('-').next()?;
    Some((name, pid.parse().ok()?))
}

/// Best effort: a temporary that cannot be listed or removed only costs disk space.
fn remove_stale_temporaries_of(dir: &Path, target: Option<&str>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some((name, pid)) = file_name.to_str().and_then(parse_temporary) else {
            continue;
        };
        if target.is_none_or(|t| t == name) && !is_process_alive(pid) {
            let _ = fs::remove_file(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pid that no process has: above the kernel's limit.
    const GONE: u32 = 4_194_304 + 7;

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .expect("list")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_failed_fill_leaves_the_old_file_and_no_temporary() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("proof");
        write(&path, b"old").expect("write");
        let err = write_with(&path, |file| {
            file.write_all(b"half")?;
            anyhow::bail!("disk full")
        })
        .expect_err("fails");
        assert!(format!("{err:#}").contains("disk full"), "{err:#}");
        assert_eq!(fs::read(&path).expect("read"), b"old");
        assert_eq!(names(dir.path()), vec!["proof"]);
    }

    #[test]
    fn writers_of_one_target_at_once_never_share_a_temporary() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("constraints.r1cs");
        let start = std::sync::Barrier::new(8);
        std::thread::scope(|scope| {
            for writer in 0..8u8 {
                let (path, start) = (&path, &start);
                scope.spawn(move || {
                    write_with(path, |file| {
                        start.wait();
                        // Long enough that the writes overlap.
                        for _ in 0..64 {
                            file.write_all(&[writer; 4096])?;
                        }
                        Ok(())
                    })
                    .expect("write");
                });
            }
        });
        let content = fs::read(&path).expect("read");
        assert_eq!(content.len(), 64 * 4096, "one writer's whole file");
        assert!(content.iter().all(|&b| b == content[0]), "not interleaved");
        assert_eq!(names(dir.path()), vec!["constraints.r1cs"]);
    }

    #[test]
    fn temporaries_of_gone_writers_are_removed_and_live_ones_kept() {
        let dir = tempfile::tempdir().expect("tempdir");
        let live = std::process::id();
        for name in [
            format!(".a.r1cs.tmp-{GONE}-3"),
            format!(".a.r1cs.tmp-{live}-9"),
            format!(".b.json.tmp-{GONE}"),
            format!("c.tmp-{GONE}-1"),
        ] {
            fs::write(dir.path().join(name), b"partial").expect("write");
        }
        write(&dir.path().join("a.r1cs"), b"whole").expect("write");
        assert_eq!(
            names(dir.path()),
            vec![
                format!(".a.r1cs.tmp-{live}-9"),
                format!(".b.json.tmp-{GONE}"),
                "a.r1cs".to_owned(),
                format!("c.tmp-{GONE}-1"),
            ],
            "writing a.r1cs removes only a.r1cs's stale temporary"
        );
        remove_stale_temporaries(dir.path()).expect("tidy");
        assert_eq!(
            names(dir.path()),
            vec![
                format!(".a.r1cs.tmp-{live}-9"),
                "a.r1cs".to_owned(),
                format!("c.tmp-{GONE}-1"),
            ],
            "tidying the directory removes every stale temporary, and nothing else"
        );
    }

    #[test]
    fn parses_the_temporary_names_it_writes() {
        let dir = Path::new("/x");
        let tmp = temporary_path(dir, "s-1.proof");
        let file_name = tmp.file_name().and_then(OsStr::to_str).expect("name");
        assert_eq!(
            parse_temporary(file_name),
            Some(("s-1.proof", std::process::id()))
        );
        assert_eq!(parse_temporary("s-1.proof"), None);
        assert_eq!(parse_temporary(".s-1.proof.tmp-x"), None);
    }
}
