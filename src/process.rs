//! This process as other runs sharing a directory see it: the host it runs on, its pid, and
//! what makes the pid mean something ([`ProcessIdentity`]).
//!
//! Runs on several hosts may share a spool or a parameter cache over a network file system,
//! and containers on one host may share a host name and even a pid (cuzk as PID 1 in each).
//! So a pid is looked at only where it is provably of this boot and pid namespace; elsewhere
//! a heartbeat decides. Everything named after a process (owner directories, temporaries)
//! carries enough to tell two such processes apart.

/// The name of this host, made safe for file names: letters, digits, `.` and `_` (every other
/// character becomes `_`, so a `-` can separate it from what follows). Read once per process,
/// since every temporary file is named with it.
pub fn host_name() -> String {
    static NAME: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    NAME.get_or_init(read_host_name).clone()
}

fn read_host_name() -> String {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".into());
    let cleaned: String = name
        .trim()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if cleaned.is_empty() {
        "localhost".into()
    } else {
        cleaned
    }
}

/// True if process `pid` of this host exists.
pub fn is_alive_here(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // Signal 0 checks existence; EPERM means it exists but belongs to someone else.
    // SAFETY: kill with signal 0 sends nothing.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// What a run records of its process so that another process can later tell whether it
/// still runs: the host and pid for people, and what makes the pid mean something.
///
/// A pid names a process only inside its pid namespace, and only until the process ends.
/// Two containers on one host (same host name with host networking, cuzk as PID 1 in both)
/// have the same host and pid, and a container's pid means another process on the host. So
/// a run is told apart by a random `nonce`, and a pid is looked at only when the boot id
/// (`/proc/sys/kernel/random/boot_id`) and the pid namespace (the inode of `/proc/self/ns/pid`)
/// are both this process's: then the process is alive if that pid exists with the same start
/// time. Otherwise nothing can be told from the pid, and the caller judges by a heartbeat.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProcessIdentity {
    /// Host name ([`host_name`]).
    pub host: String,
    /// Process id, in `pid_ns`.
    pub pid: u32,
    /// Random per process: two processes with the same host and pid differ here.
    #[serde(default)]
    pub nonce: String,
    /// The kernel's boot id; `None` where it cannot be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot_id: Option<String>,
    /// The inode of the process's pid namespace; `None` where it cannot be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid_ns: Option<u64>,
    /// The process's start time in clock ticks after boot (`/proc/<pid>/stat`, field 22):
    /// a pid reused by a later process has another.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_ticks: Option<u64>,
}

/// Whether a recorded process still runs, as far as this process can tell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Liveness {
    /// It runs: same boot, same pid namespace, its pid exists and started when it did.
    Alive,
    /// It is gone: same boot and pid namespace, and its pid is free or another process's.
    Gone,
    /// Another boot, another pid namespace, or a record too old to say: only a heartbeat
    /// can tell.
    Unknown,
}

impl ProcessIdentity {
    /// This process, read once.
    pub fn current() -> ProcessIdentity {
        static CURRENT: std::sync::OnceLock<ProcessIdentity> = std::sync::OnceLock::new();
        CURRENT
            .get_or_init(|| {
                let pid = std::process::id();
                ProcessIdentity {
                    host: host_name(),
                    pid,
                    nonce: new_nonce(),
                    boot_id: boot_id(),
                    pid_ns: pid_namespace(),
                    start_ticks: start_ticks(pid),
                }
            })
            .clone()
    }

    /// True when this process can look at the recorded pid: the same boot and the same pid
    /// namespace as this process, both known.
    pub fn shares_pid_namespace(&self) -> bool {
        let here = ProcessIdentity::current();
        matches!((&self.boot_id, &here.boot_id), (Some(a), Some(b)) if a == b)
            && matches!((self.pid_ns, here.pid_ns), (Some(a), Some(b)) if a == b)
    }

    /// Whether the recorded process still runs (see [`Liveness`]).
    pub fn liveness(&self) -> Liveness {
        if !self.shares_pid_namespace() {
            return Liveness::Unknown;
        }
        if !is_alive_here(self.pid) {
            return Liveness::Gone;
        }
        match (self.start_ticks, start_ticks(self.pid)) {
            (Some(recorded), Some(now)) if recorded != now => Liveness::Gone,
            _ => Liveness::Alive,
        }
    }

    /// A short tag of this boot and pid namespace, for names of files whose writer must be
    /// told apart without a record (temporaries): `x` where either is unknown, which no
    /// other process's tag equals.
    pub fn namespace_tag(&self) -> String {
        match (&self.boot_id, self.pid_ns) {
            (Some(boot), Some(ns)) => {
                let digest = blake3::hash(format!("{boot}:{ns}").as_bytes());
                digest.to_hex()[..8].to_owned()
            }
            _ => "x".to_owned(),
        }
    }
}

/// Eight random hex digits.
fn new_nonce() -> String {
    format!("{:08x}", rand::random::<u32>())
}

/// The kernel's boot id, which changes at every boot and is shared by every container on it.
fn boot_id() -> Option<String> {
    let id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let id = id.trim();
    (!id.is_empty()).then(|| id.to_owned())
}

/// The inode of this process's pid namespace (`/proc/self/ns/pid`).
fn pid_namespace() -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self/ns/pid").ok().map(|m| m.ino())
}

/// Process `pid`'s start time in clock ticks after boot, from `/proc/<pid>/stat`.
fn start_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: count from its end.
    let after_name = &stat[stat.rfind(')')? + 1..];
    // Field 3 is the first after the name; the start time is field 22.
    after_name.split_whitespace().nth(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_a_pid_beyond_the_kernels_limit_is_not() {
        assert!(is_alive_here(std::process::id()));
        assert!(!is_alive_here(4_194_304 + 7));
        assert!(!is_alive_here(u32::MAX));
    }

    #[test]
    fn this_process_is_alive_and_its_double_in_another_namespace_is_unknown() {
        let here = ProcessIdentity::current();
        assert!(here.boot_id.is_some() && here.pid_ns.is_some(), "{here:?}");
        assert_eq!(here.nonce.len(), 8);
        assert_eq!(here.liveness(), Liveness::Alive);
        // Same host and pid, another pid namespace (a container): its pid says nothing here.
        let twin = ProcessIdentity {
            pid_ns: here.pid_ns.map(|ns| ns + 1),
            ..here.clone()
        };
        assert_eq!(twin.liveness(), Liveness::Unknown);
        // Another boot of this machine: the same.
        let earlier = ProcessIdentity {
            boot_id: Some("another-boot".into()),
            ..here.clone()
        };
        assert_eq!(earlier.liveness(), Liveness::Unknown);
        // A record without them (written by an older cuzk) cannot be judged by its pid.
        let old = ProcessIdentity {
            boot_id: None,
            pid_ns: None,
            ..here.clone()
        };
        assert_eq!(old.liveness(), Liveness::Unknown);
        assert_eq!(old.namespace_tag(), "x");
        assert_ne!(here.namespace_tag(), twin.namespace_tag());
    }

    #[test]
    fn a_pid_reused_by_a_later_process_or_free_is_gone() {
        let here = ProcessIdentity::current();
        let reused = ProcessIdentity {
            start_ticks: here.start_ticks.map(|t| t + 1),
            ..here.clone()
        };
        assert_eq!(reused.liveness(), Liveness::Gone);
        let free = ProcessIdentity {
            pid: 4_194_304 + 7,
            ..here.clone()
        };
        assert_eq!(free.liveness(), Liveness::Gone);
    }

    #[test]
    fn the_host_name_has_no_dash() {
        let host = host_name();
        assert!(!host.is_empty() && !host.contains('-'), "{host}");
    }
}
