//! bellperson's GPU priority lock, from the side that gives way.
//!
//! A WindowPoSt or WinningPoSt has a deadline; a C2 proof does not. lotus and curio (through
//! bellperson's `PriorityLock`, bellperson 0.27 `src/gpu/locks.rs`) take an exclusive `flock`
//! on `$TMPDIR/bellman.priority.lock` for the whole GPU phase of a PoSt, and bellperson's
//! ordinary provers check it with a non-blocking shared lock and step aside while it is held.
//! cuzk does the same before each GPU batch ([`wait_until_free`]): it waits, polling, while
//! the lock is taken, and never holds it itself while proving, so a PoSt waits at most for the
//! batch already running. CPU provers do not check it: they leave the GPU alone.
//!
//! The file is found as bellperson finds it, `std::env::temp_dir()` (so `TMPDIR` moves it),
//! and created when missing, as bellperson does.

use std::fs::{File, OpenOptions, TryLockError};
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The lock file's name, bellperson's `PRIORITY_LOCK_NAME`.
pub const PRIORITY_LOCK_NAME: &str = "bellman.priority.lock";

/// How often a waiting prover looks again: short next to a PoSt, long next to a syscall.
pub const POLL: Duration = Duration::from_millis(100);

/// Why the lock could not be checked.
#[derive(Debug, thiserror::Error)]
#[error("{path}: cannot check the GPU priority lock: {source} (hint: cuzk proves on without giving way to PoSt; make the directory writable, or point TMPDIR where lotus or curio keep it)", path = .path.display())]
pub struct PriorityLockError {
    /// The lock file.
    pub path: PathBuf,
    /// What opening or locking it said.
    #[source]
    pub source: io::Error,
}

/// Where bellperson's priority lock lives for this process: `$TMPDIR/bellman.priority.lock`.
pub fn priority_lock_path() -> PathBuf {
    std::env::temp_dir().join(PRIORITY_LOCK_NAME)
}

/// True while another process (a PoSt) holds the lock; checks with a shared lock that is
/// released at once.
pub fn is_taken(path: &Path) -> Result<bool, PriorityLockError> {
    let file = open(path)?;
    match file.try_lock_shared() {
        // Dropping the file releases the shared lock: it is only a look.
        Ok(()) => Ok(false),
        Err(TryLockError::WouldBlock) => Ok(true),
        Err(TryLockError::Error(source)) => Err(PriorityLockError {
            path: path.to_owned(),
            source,
        }),
    }
}

/// Waits until the priority lock at `path` is free, looking every `poll`. `on_wait` is
/// called once, when the lock is first found taken. Returns how long it waited, `None` when
/// the lock was free at once.
pub fn wait_until_free(
    path: &Path,
    poll: Duration,
    on_wait: impl FnOnce(),
) -> Result<Option<Duration>, PriorityLockError> {
    if !is_taken(path)? {
        return Ok(None);
    }
    on_wait();
    let started = Instant::now();
    while is_taken(path)? {
        std::thread::sleep(poll);
    }
    Ok(Some(started.elapsed()))
}

/// Opens the lock file, creating it (mode 0666 before the umask, as bellperson's
/// `File::create` does) when missing; never truncates a file another process may lock.
/// A file another user created (lotus under its own account, mode 0644 after its umask) is
/// opened read-only: a shared lock needs no write access.
fn open(path: &Path) -> Result<File, PriorityLockError> {
    let mut options = OpenOptions::new();
    options.read(true).write(true).create(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o666);
    }
    let opened = match options.open(path) {
        Err(err) if err.kind() == io::ErrorKind::PermissionDenied => File::open(path),
        opened => opened,
    };
    opened.map_err(|source| PriorityLockError {
        path: path.to_owned(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn a_missing_lock_file_is_created_and_free() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(PRIORITY_LOCK_NAME);
        assert!(!is_taken(&path).expect("checked"));
        assert!(path.is_file());
        let waited = wait_until_free(&path, POLL, || panic!("nothing to wait for"));
        assert_eq!(waited.expect("checked"), None);
    }

    #[test]
    fn a_prover_waits_until_the_post_releases_the_lock() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(PRIORITY_LOCK_NAME);
        // The PoSt: an exclusive lock through another open file, as another process holds it.
        let post = File::create(&path).expect("lock file");
        post.lock().expect("exclusive lock");
        assert!(is_taken(&path).expect("checked"));

        let (waiting_tx, waiting_rx) = mpsc::channel();
        let waiter = {
            let path = path.clone();
            std::thread::spawn(move || {
                wait_until_free(&path, Duration::from_millis(10), || {
                    waiting_tx.send(()).expect("test alive")
                })
            })
        };
        waiting_rx
            .recv_timeout(Duration::from_secs(10))
            .expect("the prover noticed the lock");
        std::thread::sleep(Duration::from_millis(300));
        assert!(!waiter.is_finished(), "the prover went ahead of the PoSt");
        post.unlock().expect("unlock");
        let waited = waiter
            .join()
            .expect("waiter thread")
            .expect("checked")
            .expect("it waited");
        assert!(waited >= Duration::from_millis(300), "{waited:?}");
        // The waiter holds nothing afterwards: the PoSt can take the lock again at once.
        post.try_lock().expect("the lock is free again");
    }

    #[test]
    fn a_lock_file_without_write_access_is_still_checked() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(PRIORITY_LOCK_NAME);
        let post = File::create(&path).expect("lock file");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).expect("read-only");
        post.lock().expect("exclusive lock");
        // As root the read-write open succeeds anyway; as anyone else the fall back is used.
        assert!(is_taken(&path).expect("checked"));
        post.unlock().expect("unlock");
        assert!(!is_taken(&path).expect("checked"));
    }

    #[test]
    fn an_unusable_path_is_an_error_naming_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("missing-dir").join(PRIORITY_LOCK_NAME);
        let err = is_taken(&path).expect_err("no directory");
        let text = err.to_string();
        assert!(text.contains("missing-dir"), "{text}");
        assert!(text.contains("(hint: "), "{text}");
    }
}
