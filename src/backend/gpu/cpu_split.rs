//! The CPU split (`--prover-cpus N`): SupraSeal's host threads on N CPUs of their own, cuzk's
//! threads (synthesis, the pre-compiled constraint pool, the other provers) on the rest, so
//! that the two stop fighting for the same cores.
//!
//! Why a restart: SupraSeal's CPU work (its preprocessing and the B-in-G2 multiexp) runs on a
//! thread pool that its C++ library builds while the process starts, before `main`, with one
//! thread per CPU the process may run on. Its size and its CPUs are fixed from then on. So
//! cuzk narrows its own CPU affinity to the prover's CPUs and executes itself again (same
//! pid, same arguments, `CUZK_CPU_SPLIT` in the environment): the new image's pool is born on
//! those CPUs. Its `main` then moves itself to the other CPUs before it starts any thread,
//! and every thread it starts inherits that. Linux only; elsewhere the flag is refused.
//!
//! What it does not do: only SupraSeal's pool moves. The threads SupraSeal starts per call
//! (one per GPU, and its multiexp preparation) come from cuzk's prover thread and run on the
//! synthesis side. And CPUs are split by number, the last N the process may use: on a
//! machine with two hardware threads per core these are often the siblings of the first N,
//! so the two sides still share those cores' execution units (`taskset` can narrow the
//! process to one thread per core first).

use std::fmt;

use anyhow::{bail, Context, Result};

use crate::cpus::{self, format_list, parse_list};

/// Carries the split into the restarted process.
pub const SPLIT_ENV: &str = "CUZK_CPU_SPLIT";

/// Which CPUs each side runs on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuSplit {
    /// SupraSeal's pool.
    pub prover: Vec<usize>,
    /// Everything cuzk starts.
    pub synthesis: Vec<usize>,
}

impl CpuSplit {
    /// Gives the last `prover_cpus` of `allowed` (the CPUs this process may use) to the
    /// prover and the others to synthesis; both sides need at least one.
    pub fn plan(allowed: &[usize], prover_cpus: usize) -> Result<CpuSplit> {
        let n = allowed.len();
        if n < 2 {
            bail!("--prover-cpus {prover_cpus}: this process may use {n} CPU, and the prover and synthesis need one each (hint: leave --prover-cpus at 0)");
        }
        if prover_cpus == 0 || prover_cpus >= n {
            let range = if n == 2 {
                "1".to_owned()
            } else {
                format!("1 to {}", n - 1)
            };
            bail!("--prover-cpus {prover_cpus}: this process may use {n} CPUs, and the prover and synthesis need at least one each (hint: give {range}, or 0 to share every CPU)");
        }
        let (synthesis, prover) = allowed.split_at(allowed.len() - prover_cpus);
        Ok(CpuSplit {
            prover: prover.to_vec(),
            synthesis: synthesis.to_vec(),
        })
    }

    /// `prover=12-15;synthesis=0-11`, as [`CpuSplit::parse`] reads it.
    fn encode(&self) -> String {
        format!(
            "prover={};synthesis={}",
            format_list(&self.prover),
            format_list(&self.synthesis)
        )
    }

    /// Reads [`CpuSplit::encode`]'s form.
    fn parse(text: &str) -> Option<CpuSplit> {
        let mut prover = None;
        let mut synthesis = None;
        for pair in text.split(';') {
            match pair.split_once('=')? {
                ("prover", list) => prover = Some(parse_list(list)?),
                ("synthesis", list) => synthesis = Some(parse_list(list)?),
                _ => return None,
            }
        }
        let split = CpuSplit {
            prover: prover?,
            synthesis: synthesis?,
        };
        (!split.prover.is_empty() && !split.synthesis.is_empty()).then_some(split)
    }
}

impl fmt::Display for CpuSplit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "SupraSeal's host threads on {} CPU(s) ({}), synthesis and the rest of cuzk on {} ({})",
            self.prover.len(),
            format_list(&self.prover),
            self.synthesis.len(),
            format_list(&self.synthesis)
        )
    }
}

/// Applies `--prover-cpus`: in a process restarted for it, moves this thread to the synthesis
/// CPUs and returns the split; otherwise, with `prover_cpus > 0`, restarts the process
/// narrowed to the prover's CPUs (and returns only on failure). Must run before any thread
/// is started.
pub fn apply(prover_cpus: usize) -> Result<Option<CpuSplit>> {
    let restarted = std::env::var_os(SPLIT_ENV);
    // Not inherited by anything this run starts.
    std::env::remove_var(SPLIT_ENV);
    // Only a restart for `--prover-cpus` carries the split; a stray variable is ignored.
    if let Some(text) = restarted.filter(|_| prover_cpus > 0) {
        let text = text.to_string_lossy();
        let split = CpuSplit::parse(&text)
            .with_context(|| format!("{SPLIT_ENV}={text:?} is not a CPU split"))?;
        cpus::set_this_thread(&split.synthesis).context("moving cuzk to its synthesis CPUs")?;
        return Ok(Some(split));
    }
    if prover_cpus == 0 {
        return Ok(None);
    }
    let split = CpuSplit::plan(
        &cpus::allowed().context("reading the CPU affinity")?,
        prover_cpus,
    )?;
    cpus::set_this_thread(&split.prover).context("narrowing cuzk to the prover's CPUs")?;
    Err(os::restart(&split.encode()))
}

#[cfg(target_os = "linux")]
mod os {
    use std::os::unix::process::CommandExt;

    use anyhow::anyhow;

    /// Executes this program again with the same arguments and `split` in the environment;
    /// returns only the error when that fails.
    pub fn restart(split: &str) -> anyhow::Error {
        // The running binary itself, even if its file was replaced since it started; and the
        // arguments as they came, the program name included.
        let mut args = std::env::args_os();
        let mut command = std::process::Command::new("/proc/self/exe");
        if let Some(name) = args.next() {
            command.arg0(name);
        }
        let err = command.args(args).env(super::SPLIT_ENV, split).exec();
        anyhow!(err).context("restarting cuzk (/proc/self/exe) for --prover-cpus")
    }
}

#[cfg(not(target_os = "linux"))]
mod os {
    pub fn restart(_split: &str) -> anyhow::Error {
        anyhow::anyhow!("--prover-cpus needs Linux's CPU affinity")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prover_gets_the_last_cpus_and_synthesis_the_rest() {
        let allowed: Vec<usize> = (0..16).collect();
        let split = CpuSplit::plan(&allowed, 4).expect("split");
        assert_eq!(split.prover, [12, 13, 14, 15]);
        assert_eq!(split.synthesis, (0..12).collect::<Vec<_>>());
        // A sparse mask (taskset -c 0,2,4,6) is split the same way.
        let split = CpuSplit::plan(&[0, 2, 4, 6], 1).expect("split");
        assert_eq!((split.prover, split.synthesis), (vec![6], vec![0, 2, 4]));
    }

    #[test]
    fn each_side_needs_a_cpu() {
        for wanted in [0, 2, 3] {
            let err = CpuSplit::plan(&[0, 1], wanted).expect_err("no room");
            assert!(err.to_string().contains("may use 2 CPUs"), "{err}");
            assert!(err.to_string().contains("give 1,"), "{err}");
        }
        let err = CpuSplit::plan(&[0, 1, 2, 3], 4).expect_err("no room");
        assert!(err.to_string().contains("give 1 to 3,"), "{err}");
        let err = CpuSplit::plan(&[3], 1).expect_err("one CPU");
        assert!(
            err.to_string().contains("leave --prover-cpus at 0"),
            "{err}"
        );
    }

    #[test]
    fn a_split_survives_the_environment() {
        let split = CpuSplit::plan(&[0, 1, 2, 3, 5, 7, 8, 9], 3).expect("split");
        assert_eq!(split.encode(), "prover=7-9;synthesis=0-3,5");
        assert_eq!(CpuSplit::parse(&split.encode()), Some(split));
        for bad in [
            "",
            "prover=1",
            "prover=3-1;synthesis=0",
            "prover=x;synthesis=0",
            "prover=;synthesis=0",
        ] {
            assert_eq!(CpuSplit::parse(bad), None, "{bad}");
        }
    }
}
