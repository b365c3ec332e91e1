//! This process as other runs sharing a directory see it: the host it runs on and its pid.
//!
//! Runs on several hosts may share a spool or a parameter cache over a network file system,
//! so a pid means something only together with its host: whether a process is gone can only
//! be told of a pid of this host. Everything named after a process (owner directories,
//! temporaries) carries both.

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
    fn the_host_name_has_no_dash() {
        let host = host_name();
        assert!(!host.is_empty() && !host.contains('-'), "{host}");
    }
}
