//! Why a run stops: stop signals from the operator, a [`Halt`] when the run itself cannot
//! go on (the outbox cannot be written, the parameters cannot be loaded), and a [`Drain`]
//! asked for by the program that feeds the inbox.
//!
//! The first SIGINT or SIGTERM stops claiming and lets the work in flight finish; the second
//! exits at once with code 130, leaving claimed files in `work/` to be resumed by the next
//! run, and a marker beside them ([`set_abort_marker`]) that tells that run the files were
//! not what ended this one. A halt stops claiming too, and hands back the files it has not started on. A drain
//! turns a watching run into a `--once` run: it proves what the inbox holds, then ends.

use std::ffi::{c_char, CString};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Stop signals received so far.
static STOP_SIGNALS: AtomicUsize = AtomicUsize::new(0);

/// The file a second stop signal creates before exiting (a NUL-terminated path, leaked so
/// the handler can read it without allocating); null for none.
static ABORT_MARKER: AtomicPtr<c_char> = AtomicPtr::new(std::ptr::null_mut());

extern "C" fn on_stop_signal(_: libc::c_int) {
    if STOP_SIGNALS.fetch_add(1, Ordering::SeqCst) >= 1 {
        let marker = ABORT_MARKER.load(Ordering::SeqCst);
        if !marker.is_null() {
            // SAFETY: open and close are async-signal-safe; `marker` is a leaked CString
            // that is never freed.
            unsafe {
                let fd = libc::open(
                    marker,
                    libc::O_CREAT | libc::O_WRONLY | libc::O_CLOEXEC,
                    0o644,
                );
                if fd >= 0 {
                    libc::close(fd);
                }
            }
        }
        // SAFETY: _exit is async-signal-safe.
        unsafe { libc::_exit(130) };
    }
}

/// Sets the file a second stop signal creates before the process exits: the run's own
/// claims directory holds it, so the run that takes the claims over counts the abort
/// against none of them. A later call replaces it (a process that runs one run after
/// another); the earlier path's few bytes are leaked, since a handler may be reading them.
pub fn set_abort_marker(path: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let Ok(path) = CString::new(path.as_os_str().as_bytes()) else {
        return;
    };
    ABORT_MARKER.store(path.into_raw(), Ordering::SeqCst);
}

/// Installs the SIGINT and SIGTERM handlers.
pub fn install_signal_handlers() {
    let handler = on_stop_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: the handler only touches an atomic and calls _exit.
    unsafe {
        libc::signal(libc::SIGINT, handler);
        libc::signal(libc::SIGTERM, handler);
    }
}

/// True once a stop was asked for.
pub fn is_stopping() -> bool {
    STOP_SIGNALS.load(Ordering::SeqCst) > 0
}

/// Why the whole run must stop, shared by the stage that finds it and the feeder that must
/// stop claiming; the first error wins, and the run ends with it.
#[derive(Clone, Debug, Default)]
pub struct Halt(Arc<Mutex<Option<anyhow::Error>>>);

impl Halt {
    /// Asks the run to stop with `error`, unless it already stops for another.
    pub fn set(&self, error: impl Into<anyhow::Error>) {
        if let Ok(mut slot) = self.0.lock() {
            slot.get_or_insert(error.into());
        }
    }

    /// True once the run must stop.
    pub fn is_set(&self) -> bool {
        self.0.lock().map_or(true, |slot| slot.is_some())
    }

    /// The error the run stops with, if it must; taken once, at the end of the run.
    pub fn take(&self) -> Option<anyhow::Error> {
        self.0.lock().ok().and_then(|mut slot| slot.take())
    }
}

/// A request to drain: claim and prove what the inbox holds now (files still settling
/// included), then end the run as `--once` does. Made by a program that feeds the inbox
/// itself (the damocles processor at the end of its input); cheap to clone.
#[derive(Clone, Debug, Default)]
pub struct Drain(Arc<AtomicBool>);

impl Drain {
    /// Asks the run to drain; it cannot be taken back.
    pub fn request(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// True once a drain was asked for.
    pub fn is_requested(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}
