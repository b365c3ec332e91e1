//! Renames that never replace a file, and the check that makes them possible: a C1 file
//! moves between the spool's directories only by renames, so these are the spool's only
//! primitives for moving one.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::SpoolLayout;

pub(super) fn is_not_found(err: &anyhow::Error) -> bool {
    err.downcast_ref::<std::io::Error>()
        .is_some_and(|e| e.kind() == std::io::ErrorKind::NotFound)
}

/// True if an entry named `path` exists, links included (a dangling link exists too; `Path::
/// exists` would follow it and say no).
pub(super) fn is_present(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok()
}

/// Moves `from` to `dir/name`, or to `dir/name.N` if that exists, never replacing a file:
/// runs retiring files of one name at once, or a new file dropped into the inbox while one of
/// its name was claimed, must not cost a C1 file.
pub(super) fn move_to_free_name(from: &Path, dir: &Path, name: &str) -> std::io::Result<PathBuf> {
    let candidates =
        std::iter::once(dir.join(name)).chain((1..).map(|n| dir.join(format!("{name}.{n}"))));
    for target in candidates {
        match rename_no_replace(from, &target) {
            Ok(()) => return Ok(target),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    unreachable!("the candidate names never end")
}

/// Renames `from` to `to` unless an entry named `to` exists (`AlreadyExists`, and nothing
/// moved), atomically where the file system can tell.
pub(super) fn rename_no_replace(from: &Path, to: &Path) -> std::io::Result<()> {
    use std::ffi::CString;
    use std::io::{Error, ErrorKind};
    use std::os::unix::ffi::OsStrExt;
    let c_path = |p: &Path| {
        CString::new(p.as_os_str().as_bytes())
            .map_err(|_| Error::new(ErrorKind::InvalidInput, "a path with a NUL byte"))
    };
    let (from_c, to_c) = (c_path(from)?, c_path(to)?);
    // SAFETY: both are NUL-terminated paths that outlive the call.
    let rc = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            from_c.as_ptr(),
            libc::AT_FDCWD,
            to_c.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    if rc == 0 {
        return Ok(());
    }
    let err = Error::last_os_error();
    if !matches!(
        err.raw_os_error(),
        Some(libc::EINVAL | libc::ENOSYS | libc::EOPNOTSUPP)
    ) {
        return Err(err);
    }
    // A file system without RENAME_NOREPLACE (NFS, say): a hard link fails atomically if
    // the target exists. A crash between link and unlink leaves the file in both places,
    // which costs a duplicate job, never a lost file.
    match fs::hard_link(from, to) {
        Ok(()) => fs::remove_file(from),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => Err(e),
        // No hard links either: check, then rename (racy, but the best this file system allows).
        Err(_) if is_present(to) => Err(Error::from(ErrorKind::AlreadyExists)),
        Err(_) => fs::rename(from, to),
    }
}

/// Fails unless the inbox, work, done and failed directories share a file system: a C1 file
/// moves between them by renames, which cannot cross file systems (every claim would fail).
/// The outbox may live anywhere: results are written inside it.
pub(super) fn same_file_system(layout: &SpoolLayout) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let device = |dir: &Path| {
        fs::metadata(dir)
            .map(|m| m.dev())
            .with_context(|| format!("reading {}", dir.display()))
    };
    let inbox = device(&layout.inbox)?;
    for (flag, dir) in [
        ("--work", &layout.work),
        ("--done", &layout.done),
        ("--failed", &layout.failed),
    ] {
        if device(dir)? != inbox {
            anyhow::bail!(
                "{}: not on the file system of the inbox {}; C1 files move between them by renames, which cannot cross file systems (hint: give {flag} a directory on the inbox's file system, or leave it out to use the one beside the inbox)",
                dir.display(),
                layout.inbox.display()
            );
        }
    }
    Ok(())
}
