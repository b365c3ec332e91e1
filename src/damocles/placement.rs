//! damocles' processor settings, applied by the processor itself. damocles-worker passes a
//! processor's `cgroup.cpuset` and `numa_preferred` to the child in its environment
//! (vc-processors' `VC_CG_NAME` and `VC_CG_CPUSET`, and `VENUS_WORKER_NUMA_PREFERRED`), and
//! leaves applying them to the child, as vc-processors' own processors do first thing.
//!
//! - The cpuset becomes the CPU affinity of every thread of the process
//!   (`sched_setaffinity`). vc-processors instead creates the cgroup `VC_CG_NAME` with that
//!   cpuset and moves itself into it; that needs write access to the cgroup hierarchy, and
//!   leaves the group behind when damocles-worker kills the processor (it does, with SIGKILL).
//!   The affinity keeps the process on the same CPUs, needs no privilege and ends with it;
//!   the cgroup's name is only reported.
//! - The NUMA node becomes the process's preferred node for memory (`set_mempolicy` with
//!   `MPOL_PREFERRED`, what vc-processors' `numa_set_preferred` does): pages come from that
//!   node while it has free memory, from the others after.
//!
//! Threads inherit both, and the memory policy of a running thread cannot be changed from
//! another, so `cuzk damocles-c2` applies them before it starts any thread. A setting that
//! cannot be read or applied stops the processor before its ready line, naming the variable
//! and the fix: damocles-worker then logs why instead of proving on the wrong CPUs. One case
//! only is let pass, as vc-processors lets it: a kernel without NUMA support, where a
//! preferred node means nothing.

use std::fmt;

use crate::cpus;

/// The cgroup damocles-worker names for the processor (reported, not created).
pub const CGROUP_ENV: &str = "VC_CG_NAME";
/// The processor's `cgroup.cpuset`: a CPU list such as `0-7,16-23`.
pub const CPUSET_ENV: &str = "VC_CG_CPUSET";
/// The processor's `numa_preferred`: a NUMA node number.
pub const NUMA_ENV: &str = "VENUS_WORKER_NUMA_PREFERRED";

/// Where damocles wants the processor to run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Placement {
    /// The CPUs of `cgroup.cpuset`.
    pub cpus: Option<Vec<usize>>,
    /// The cgroup's name, for the note.
    pub cgroup: Option<String>,
    /// The preferred NUMA node for memory.
    pub numa_node: Option<u32>,
}

/// Why damocles' settings cannot be applied.
#[derive(Debug, thiserror::Error)]
pub enum PlacementError {
    /// The cpuset is not a CPU list.
    #[error("{CPUSET_ENV}={value:?} is not a CPU list like 0-7,16-23 (hint: fix cgroup.cpuset of this processor in damocles-worker's configuration)")]
    BadCpuset {
        /// The variable's value.
        value: String,
    },
    /// The NUMA node is not a number.
    #[error("{NUMA_ENV}={value:?} is not a NUMA node number (hint: fix numa_preferred of this processor in damocles-worker's configuration)")]
    BadNode {
        /// The variable's value.
        value: String,
    },
    /// The kernel refused the CPUs.
    #[error("{CPUSET_ENV}: cannot run on CPUs {cpus}: {source} (hint: this process may run on {allowed}; give cgroup.cpuset CPUs among them)")]
    Cpus {
        /// The CPUs asked for.
        cpus: String,
        /// The CPUs this process may use.
        allowed: String,
        /// What the kernel said.
        #[source]
        source: std::io::Error,
    },
    /// The kernel refused the memory policy.
    #[error("{NUMA_ENV}={node}: cannot prefer memory of NUMA node {node}: {source} (hint: give numa_preferred a node this machine has; `numactl --hardware` lists them)")]
    Node {
        /// The node asked for.
        node: u32,
        /// What the kernel said.
        #[source]
        source: std::io::Error,
    },
}

impl Placement {
    /// The settings in this process's environment.
    pub fn from_env() -> Result<Placement, PlacementError> {
        Placement::from_vars(|name| std::env::var(name).ok())
    }

    /// The settings from `var`, which reads an environment variable (empty counts as unset).
    fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Placement, PlacementError> {
        let var = |name: &str| var(name).filter(|value| !value.trim().is_empty());
        let cpus = match var(CPUSET_ENV) {
            None => None,
            Some(value) => match cpus::parse_list(&value) {
                Some(cpus) if !cpus.is_empty() => Some(cpus),
                _ => return Err(PlacementError::BadCpuset { value }),
            },
        };
        let numa_node = match var(NUMA_ENV) {
            None => None,
            Some(value) => Some(
                value
                    .trim()
                    .parse()
                    .map_err(|_| PlacementError::BadNode { value })?,
            ),
        };
        Ok(Placement {
            cpus,
            cgroup: var(CGROUP_ENV),
            numa_node,
        })
    }

    /// True when damocles asked for nothing.
    pub fn is_empty(&self) -> bool {
        self.cpus.is_none() && self.numa_node.is_none()
    }

    /// Applies the settings to this process; says what now holds. Must run before the
    /// process starts threads of its own.
    pub fn apply(&self) -> Result<Applied, PlacementError> {
        let mut applied = Applied::default();
        if let Some(cpus) = &self.cpus {
            let allowed = cpus::allowed().map(|a| cpus::format_list(&a));
            cpus::set_every_thread(cpus).map_err(|source| PlacementError::Cpus {
                cpus: cpus::format_list(cpus),
                allowed: allowed.unwrap_or_else(|_| "unknown CPUs".into()),
                source,
            })?;
            applied.cpus = Some(Granted {
                asked: cpus::format_list(cpus),
                // The kernel drops CPUs outside what the process may use (its own cgroup's).
                got: cpus::allowed()
                    .map(|a| cpus::format_list(&a))
                    .unwrap_or_else(|_| "unknown".into()),
                cgroup: self.cgroup.clone(),
            });
        }
        if let Some(node) = self.numa_node {
            match prefer_node(node) {
                Ok(()) => applied.numa = Some(NumaPreference::Preferred(node)),
                Err(err) if err.raw_os_error() == Some(libc::ENOSYS) => {
                    applied.numa = Some(NumaPreference::Unavailable(node))
                }
                Err(source) => return Err(PlacementError::Node { node, source }),
            }
        }
        Ok(applied)
    }
}

/// What [`Placement::apply`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Applied {
    /// The CPUs asked for and those the process now runs on.
    pub cpus: Option<Granted>,
    /// The memory policy.
    pub numa: Option<NumaPreference>,
}

/// CPUs asked for and granted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Granted {
    /// The list asked for.
    pub asked: String,
    /// The list the kernel reports now.
    pub got: String,
    /// The cgroup damocles named.
    pub cgroup: Option<String>,
}

/// The memory policy set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NumaPreference {
    /// Memory comes from this node first.
    Preferred(u32),
    /// The kernel has no NUMA support: nothing to prefer.
    Unavailable(u32),
}

impl fmt::Display for Applied {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if let Some(cpus) = &self.cpus {
            let cgroup = cpus
                .cgroup
                .as_ref()
                .map(|name| {
                    format!(", set as every thread's CPU affinity; cgroup {name} not created")
                })
                .unwrap_or_default();
            let narrowed = if cpus.got == cpus.asked {
                String::new()
            } else {
                format!("; of those this process may use only {}", cpus.got)
            };
            parts.push(format!(
                "runs on CPUs {} ({CPUSET_ENV}{cgroup}){narrowed}",
                cpus.asked
            ));
        }
        match self.numa {
            Some(NumaPreference::Preferred(node)) => parts.push(format!(
                "takes memory from NUMA node {node} first ({NUMA_ENV})"
            )),
            Some(NumaPreference::Unavailable(node)) => parts.push(format!(
                "{NUMA_ENV}={node} has no effect: this kernel has no NUMA support"
            )),
            None => {}
        }
        f.write_str(&parts.join("; "))
    }
}

/// Makes `node` this thread's preferred node for memory, and so that of every thread it
/// starts.
#[cfg(target_os = "linux")]
fn prefer_node(node: u32) -> std::io::Result<()> {
    const BITS: usize = libc::c_ulong::BITS as usize;
    let node = node as usize;
    let mut mask = vec![0 as libc::c_ulong; node / BITS + 1];
    mask[node / BITS] |= 1 << (node % BITS);
    // The kernel reads `maxnode - 1` bits of the mask (as libnuma passes it, one more than
    // the mask holds).
    let max_node = (mask.len() * BITS + 1) as libc::c_ulong;
    // SAFETY: the mask holds `max_node - 1` bits and lives across the call.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_set_mempolicy,
            libc::MPOL_PREFERRED,
            mask.as_ptr(),
            max_node,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn prefer_node(_node: u32) -> std::io::Result<()> {
    Err(std::io::Error::from_raw_os_error(libc::ENOSYS))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn placement(vars: &[(&str, &str)]) -> Result<Placement, PlacementError> {
        Placement::from_vars(|name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        })
    }

    #[test]
    fn damocles_variables_are_read_as_vc_processors_writes_them() {
        let read = placement(&[
            (CGROUP_ENV, "vc-worker/sub-c2-4242-0"),
            (CPUSET_ENV, "0-3,8"),
            (NUMA_ENV, "1"),
        ])
        .expect("placement");
        assert_eq!(
            read,
            Placement {
                cpus: Some(vec![0, 1, 2, 3, 8]),
                cgroup: Some("vc-worker/sub-c2-4242-0".into()),
                numa_node: Some(1),
            }
        );
        assert!(placement(&[]).expect("none").is_empty());
        assert!(placement(&[(CPUSET_ENV, " "), (NUMA_ENV, "")])
            .expect("empty is unset")
            .is_empty());
    }

    #[test]
    fn a_setting_that_cannot_be_read_names_its_variable() {
        for (vars, words) in [
            (vec![(CPUSET_ENV, "0-3;5")], "VC_CG_CPUSET=\"0-3;5\""),
            (vec![(CPUSET_ENV, ",")], "VC_CG_CPUSET"),
            (vec![(NUMA_ENV, "first")], "VENUS_WORKER_NUMA_PREFERRED"),
        ] {
            let err = placement(&vars).expect_err("bad");
            assert!(err.to_string().contains(words), "{err}");
            assert!(err.to_string().contains("hint"), "{err}");
        }
    }

    #[test]
    fn the_note_says_what_was_asked_and_what_holds() {
        let applied = Applied {
            cpus: Some(Granted {
                asked: "0-7".into(),
                got: "0-1".into(),
                cgroup: Some("vc-worker/sub-c2-1-0".into()),
            }),
            numa: Some(NumaPreference::Preferred(0)),
        };
        let note = applied.to_string();
        assert!(note.contains("runs on CPUs 0-7"), "{note}");
        assert!(note.contains("may use only 0-1"), "{note}");
        assert!(
            note.contains("cgroup vc-worker/sub-c2-1-0 not created"),
            "{note}"
        );
        assert!(note.contains("NUMA node 0 first"), "{note}");
    }
}
