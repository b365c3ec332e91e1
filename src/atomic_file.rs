//! Files that readers see whole or not at all.
//!
//! Every file cuzk writes for a reader to take (proofs, their notes, metrics, recorded
//! constraints, parameters of a benchmark shape) is written under a temporary name, synced,
//! renamed over its target (or, for recorded constraints, linked in only where no file is:
//! [`write_new_with`]), and the directory synced. The temporary is
//! `.<name>.tmp-<host>-<pid>-<tag>-<n>`, where the tag stands for the writer's boot and pid
//! namespace ([`ProcessIdentity::namespace_tag`]): unique to the process and the call, so two writers of one
//! target (two runs on one spool recording the same constraints, threads writing one note)
//! never write into one file, and a target that is memory-mapped is only ever replaced, never
//! changed in place. A writer killed half-way leaves its temporary behind. The spool removes
//! those of its outbox at start, and writers of large files (gigabytes of constraints) remove
//! those of their target first, so neither stays on disk for ever; small writes skip that,
//! since listing a directory of thousands of proofs for each proof would cost more than the
//! leftovers. Only temporaries of processes of this boot and pid namespace that are gone are
//! removed: whether another host's or another container's writer still runs cannot be told
//! from its pid (a container's pid 1 is not this host's), and the names of older cuzk
//! versions' temporaries, which carry no tag, are left alone for the same reason.

use std::ffi::OsStr;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Context, Result};

use crate::process::{is_alive_here, ProcessIdentity};

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
    let tmp = write_temporary(path, fill).with_context(|| format!("writing {}", path.display()))?;
    if let Err(e) = fs::rename(&tmp, path) {
        let _ = fs::remove_file(&tmp);
        return Err(e).with_context(|| format!("writing {}", path.display()));
    }
    sync_dir(parent_dir(path))
}

/// Writes `path` atomically with `fill` as [`write_with`] does, but only if no file is there:
/// an existing one is never replaced (a large file other processes map). Two writers at once
/// are fine: the first one's file stays. True when this call wrote it.
pub fn write_new_with(path: &Path, fill: impl FnOnce(&mut File) -> Result<()>) -> Result<bool> {
    if fs::symlink_metadata(path).is_ok() {
        return Ok(false);
    }
    let tmp = write_temporary(path, fill).with_context(|| format!("writing {}", path.display()))?;
    // A link, unlike a rename, fails if the target exists: never over another's file.
    let linked = match fs::hard_link(&tmp, path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(e),
    };
    let _ = fs::remove_file(&tmp);
    let is_written = linked.with_context(|| format!("writing {}", path.display()))?;
    sync_dir(parent_dir(path))?;
    Ok(is_written)
}

/// The directory `path` is in (`.` for a bare name).
fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    }
}

/// A temporary beside `path`, written by `fill` and synced; removed again if that fails.
fn write_temporary(path: &Path, fill: impl FnOnce(&mut File) -> Result<()>) -> Result<PathBuf> {
    let name = path
        .file_name()
        .and_then(OsStr::to_str)
        .with_context(|| format!("{}: not a file path", path.display()))?;
    let tmp = temporary_path(parent_dir(path), name);
    let written = (|| -> Result<()> {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .with_context(|| format!("creating {}", tmp.display()))?;
        fill(&mut file)?;
        file.sync_all()?;
        Ok(())
    })();
    match written {
        Ok(()) => Ok(tmp),
        Err(e) => {
            let _ = fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// Removes the temporaries in `dir` that writers of this host which are gone left behind.
pub fn remove_stale_temporaries(dir: &Path) -> Result<()> {
    remove_stale(dir, None).with_context(|| format!("listing {}", dir.display()))
}

/// Removes the temporaries of `path` that writers of this host which are gone left behind,
/// before writing a large file there. Best effort: a leftover only costs disk space.
pub fn remove_stale_temporaries_of(path: &Path) {
    let dir = parent_dir(path);
    if let Some(name) = path.file_name().and_then(OsStr::to_str) {
        let _ = remove_stale(dir, Some(name));
    }
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
    let me = ProcessIdentity::current();
    dir.join(format!(
        ".{name}.tmp-{}-{}-{}-{n}",
        me.host,
        me.pid,
        me.namespace_tag()
    ))
}

/// A temporary's writer, as its name says.
#[derive(Debug, PartialEq, Eq)]
struct Temporary<'a> {
    /// The file it was to become.
    target: &'a str,
    /// The writer's pid.
    pid: u32,
    /// The writer's boot and pid namespace; `None` in an older cuzk's names.
    tag: Option<&'a str>,
}

/// A temporary's target name and writer.
fn parse_temporary(file_name: &str) -> Option<Temporary<'_>> {
    let rest = file_name.strip_prefix('.')?;
    let (target, writer) = rest.rsplit_once(".tmp-")?;
    let parts: Vec<&str> = writer.split('-').collect();
    let (pid, tag) = match parts.as_slice() {
        [_host, pid, tag, _n] => (pid, Some(*tag)),
        [_host, pid, _n] => (pid, None),
        _ => return None,
    };
    Some(Temporary {
        target,
        pid: pid.parse().ok()?,
        tag,
    })
}

/// Lists `dir` once; a temporary that cannot be removed only costs disk space.
fn remove_stale(dir: &Path, target: Option<&str>) -> std::io::Result<()> {
    let here = ProcessIdentity::current().namespace_tag();
    // Without a boot id and pid namespace of its own, this process can tell no writer gone.
    if here == "x" {
        return Ok(());
    }
    for entry in fs::read_dir(dir)?.flatten() {
        let file_name = entry.file_name();
        let Some(temporary) = file_name.to_str().and_then(parse_temporary) else {
            continue;
        };
        if target.is_none_or(|t| t == temporary.target)
            && temporary.tag == Some(here.as_str())
            && !is_alive_here(temporary.pid)
        {
            let _ = fs::remove_file(entry.path());
        }
    }
    Ok(())
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
    fn a_file_others_may_map_is_never_replaced() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("constraints.r1cs");
        let fill = |bytes: &'static [u8]| {
            move |file: &mut File| -> Result<()> {
                file.write_all(bytes)?;
                Ok(())
            }
        };
        assert!(write_new_with(&path, fill(b"first")).expect("write"));
        let inode = |p: &Path| std::os::unix::fs::MetadataExt::ino(&fs::metadata(p).expect("meta"));
        let before = inode(&path);
        assert!(!write_new_with(&path, fill(b"second")).expect("write"));
        assert_eq!(fs::read(&path).expect("read"), b"first");
        assert_eq!(inode(&path), before, "the same file, not a replacement");
        assert_eq!(
            names(dir.path()),
            vec!["constraints.r1cs"],
            "no temporary left"
        );
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
    fn temporaries_of_gone_writers_of_this_namespace_are_removed_and_others_kept() {
        let dir = tempfile::tempdir().expect("tempdir");
        let me = ProcessIdentity::current();
        let (here, live, tag) = (me.host.clone(), me.pid, me.namespace_tag());
        let kept = [
            format!(".a.r1cs.tmp-{here}-{live}-{tag}-9"),
            format!(".a.r1cs.tmp-other.host-{GONE}-0badc0de-2"),
            // Another container of this host: its pid means nothing here.
            format!(".a.r1cs.tmp-{here}-{GONE}-0badc0de-4"),
            // An older cuzk's name, without a tag: whose pid it is cannot be told.
            format!(".a.r1cs.tmp-{here}-{GONE}-5"),
            format!(".b.json.tmp-{GONE}"),
            format!("c.tmp-{here}-{GONE}-{tag}-1"),
        ];
        let stale = [
            format!(".a.r1cs.tmp-{here}-{GONE}-{tag}-3"),
            format!(".b.json.tmp-{here}-{GONE}-{tag}-0"),
        ];
        for name in kept.iter().chain(&stale) {
            fs::write(dir.path().join(name), b"partial").expect("write");
        }
        let sorted = |mut names: Vec<String>| {
            names.sort();
            names
        };
        let target = dir.path().join("a.r1cs");
        remove_stale_temporaries_of(&target);
        write(&target, b"whole").expect("write");
        let mut expected: Vec<String> = kept.to_vec();
        expected.extend([stale[1].clone(), "a.r1cs".to_owned()]);
        assert_eq!(
            names(dir.path()),
            sorted(expected),
            "a.r1cs's writer removes only a.r1cs's stale temporary of this namespace"
        );
        remove_stale_temporaries(dir.path()).expect("tidy");
        let mut expected: Vec<String> = kept.to_vec();
        expected.push("a.r1cs".to_owned());
        assert_eq!(
            names(dir.path()),
            sorted(expected),
            "tidying removes every stale temporary of this namespace, and nothing else"
        );
    }

    #[test]
    fn parses_the_temporary_names_it_writes() {
        let tmp = temporary_path(Path::new("/x"), "s-t01000-1.proof");
        let file_name = tmp.file_name().and_then(OsStr::to_str).expect("name");
        let tag = ProcessIdentity::current().namespace_tag();
        assert_eq!(
            parse_temporary(file_name),
            Some(Temporary {
                target: "s-t01000-1.proof",
                pid: std::process::id(),
                tag: Some(tag.as_str()),
            })
        );
        assert_eq!(
            parse_temporary(".s-1.proof.tmp-host-42-7"),
            Some(Temporary {
                target: "s-1.proof",
                pid: 42,
                tag: None
            }),
            "an older cuzk's name"
        );
        assert_eq!(parse_temporary("s-1.proof"), None);
        assert_eq!(parse_temporary(".s-1.proof.tmp-x"), None);
        assert_eq!(parse_temporary(".s-1.proof.tmp-4242"), None, "no host");
    }
}
