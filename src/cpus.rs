//! The CPUs this process runs on: the kernel's CPU list form (`0-3,8,10-11`, as
//! `Cpus_allowed_list` and cgroups' `cpuset.cpus` write it), and the affinity mask, read and
//! set, for the calling thread or for every thread of the process.
//!
//! Affinity is per thread, and a thread starts with its creator's: setting it on the first
//! thread before any other starts covers the whole process. Threads already running (a C++
//! library's pool started before `main`) are moved one by one ([`set_every_thread`]). Linux
//! only; elsewhere each call says so. This module imports nothing from the crate.

/// `0-3,8,10-11`: runs of consecutive CPUs as ranges, in the order given.
pub fn format_list(cpus: &[usize]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let start = cpus[i];
        let mut end = start;
        while i + 1 < cpus.len() && cpus[i + 1] == end + 1 {
            i += 1;
            end = cpus[i];
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    parts.join(",")
}

/// Reads [`format_list`]'s form (empty parts between commas are skipped); `None` when a part
/// is not a CPU or an increasing range of them.
pub fn parse_list(text: &str) -> Option<Vec<usize>> {
    let mut cpus = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
                if a > b {
                    return None;
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(part.parse().ok()?),
        }
    }
    Some(cpus)
}

pub use os::{allowed, set_every_thread, set_this_thread};

#[cfg(target_os = "linux")]
mod os {
    use std::io::Result;

    /// A kernel CPU mask of `cpus` (those beyond its size left out).
    fn mask(cpus: &[usize]) -> libc::cpu_set_t {
        // SAFETY: an all-zero cpu_set_t is the empty set; CPU_SET writes bits within
        // CPU_SETSIZE only.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            for &cpu in cpus.iter().filter(|&&c| c < libc::CPU_SETSIZE as usize) {
                libc::CPU_SET(cpu, &mut set);
            }
            set
        }
    }

    /// Sets the affinity of thread `tid` (0: the calling thread).
    fn set(tid: libc::pid_t, set: &libc::cpu_set_t) -> Result<()> {
        // SAFETY: an initialised set, its size passed along.
        let rc =
            unsafe { libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), set) };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }

    /// The CPUs the calling thread may run on.
    pub fn allowed() -> Result<Vec<usize>> {
        // SAFETY: `set` is a plain bit set that sched_getaffinity fills; its size is passed.
        let set = unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            set
        };
        // SAFETY: CPU_ISSET reads a bit of an initialised set, within CPU_SETSIZE.
        Ok((0..libc::CPU_SETSIZE as usize)
            .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
            .collect())
    }

    /// Lets the calling thread (and the threads it starts, and what it executes) run only
    /// on `cpus`.
    pub fn set_this_thread(cpus: &[usize]) -> Result<()> {
        set(0, &mask(cpus))
    }

    /// Lets every thread of this process run only on `cpus`: those running now, found in
    /// `/proc/self/task`, and through them every thread started later.
    pub fn set_every_thread(cpus: &[usize]) -> Result<()> {
        let set_of = mask(cpus);
        for task in std::fs::read_dir("/proc/self/task")? {
            let Some(tid) = task?.file_name().to_str().and_then(|t| t.parse().ok()) else {
                continue;
            };
            match set(tid, &set_of) {
                // A thread that ended since the listing needs nothing.
                Err(err) if err.raw_os_error() != Some(libc::ESRCH) => return Err(err),
                _ => {}
            }
        }
        Ok(())
    }
}

#[cfg(not(target_os = "linux"))]
mod os {
    use std::io::{Error, ErrorKind, Result};

    fn linux_only() -> Error {
        Error::new(ErrorKind::Unsupported, "CPU affinity is Linux's")
    }

    pub fn allowed() -> Result<Vec<usize>> {
        Err(linux_only())
    }

    pub fn set_this_thread(_cpus: &[usize]) -> Result<()> {
        Err(linux_only())
    }

    pub fn set_every_thread(_cpus: &[usize]) -> Result<()> {
        Err(linux_only())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_read_and_write_as_the_kernel_does() {
        assert_eq!(format_list(&[0, 1, 2, 3, 5, 7, 8, 9]), "0-3,5,7-9");
        assert_eq!(parse_list("0-3,5,7-9"), Some(vec![0, 1, 2, 3, 5, 7, 8, 9]));
        assert_eq!(parse_list(" 2 , 4-5\n"), Some(vec![2, 4, 5]));
        assert_eq!(parse_list(""), Some(vec![]));
        for bad in ["3-1", "x", "1-", "-1", "0-3;5"] {
            assert_eq!(parse_list(bad), None, "{bad}");
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_thread_started_later_runs_where_its_creator_may() {
        let mine = allowed().expect("affinity");
        let Some(&last) = mine.last() else {
            return;
        };
        // Run in a thread of its own so the test harness's threads are not narrowed.
        std::thread::spawn(move || {
            set_this_thread(&[last]).expect("narrow");
            let child = std::thread::spawn(allowed).join().expect("join");
            assert_eq!(child.expect("child's affinity"), [last]);
        })
        .join()
        .expect("join");
    }
}
