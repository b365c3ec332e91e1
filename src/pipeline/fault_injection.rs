//! Injected prover faults, so that the test suite can drive the real binary through a
//! device's fault on a machine without a GPU (CUDA faults cannot be had on demand).
//!
//! `CUZK_TEST_DEVICE_FAULTS` lists, comma-separated, which prover calls fail as a device
//! would, before the prover is called:
//!
//! - `call=N`: every prover's Nth call (from 1);
//! - `job=NAME`: every call proving a partition of the job NAME;
//! - `all`: every call.
//!
//! Nothing else reads it, and a run without it (every production run) never fails this way.

use std::sync::OnceLock;

/// The variable that injects faults.
pub const VARIABLE: &str = "CUZK_TEST_DEVICE_FAULTS";

#[derive(Debug, Default, PartialEq, Eq)]
struct Faults {
    calls: Vec<u32>,
    jobs: Vec<String>,
    all: bool,
}

fn parse(spec: &str) -> Faults {
    let mut faults = Faults::default();
    for item in spec.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        if item == "all" {
            faults.all = true;
        } else if let Some(job) = item.strip_prefix("job=") {
            faults.jobs.push(job.to_owned());
        } else if let Some(call) = item.strip_prefix("call=").and_then(|n| n.parse().ok()) {
            faults.calls.push(call);
        } else {
            log::warn!("{VARIABLE}: {item:?} is not call=N, job=NAME or all; ignored");
        }
    }
    faults
}

fn faults() -> &'static Faults {
    static FAULTS: OnceLock<Faults> = OnceLock::new();
    FAULTS.get_or_init(|| std::env::var(VARIABLE).map_or_else(|_| Faults::default(), |s| parse(&s)))
}

/// The injected fault's message when call number `call` of prover `worker`, proving
/// partitions of `jobs`, is to fail.
pub fn fault_for<'a>(
    worker: &str,
    call: u32,
    jobs: impl Iterator<Item = &'a str>,
) -> Option<String> {
    injected(faults(), worker, call, jobs)
}

fn injected<'a>(
    faults: &Faults,
    worker: &str,
    call: u32,
    mut jobs: impl Iterator<Item = &'a str>,
) -> Option<String> {
    let hit = faults.all
        || faults.calls.contains(&call)
        || jobs.any(|job| faults.jobs.iter().any(|j| j == job));
    hit.then(|| format!("injected device fault on {worker} at call {call} ({VARIABLE})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faults_hit_the_calls_and_jobs_named_and_nothing_else() {
        let faults = parse("call=2, job=s-t01000-1,bogus");
        assert_eq!(faults.calls, vec![2]);
        let hit =
            |call, jobs: &[&str]| injected(&faults, "cpu-0", call, jobs.iter().copied()).is_some();
        assert!(!hit(1, &["s-t01000-2"]));
        assert!(hit(2, &["s-t01000-2"]));
        assert!(hit(3, &["s-t01000-2", "s-t01000-1"]));
        assert!(injected(&parse(""), "cpu-0", 1, ["a"].into_iter()).is_none());
        assert!(injected(&parse("all"), "cpu-0", 9, std::iter::empty()).is_some());
    }
}
