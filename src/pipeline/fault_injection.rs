//! Injected prover faults, so that the test suite can drive the real binary through a
//! device's fault on a machine without a GPU (CUDA faults cannot be had on demand).
//!
//! `CUZK_TEST_DEVICE_FAULTS` lists, comma-separated, which prover calls fail as a device
//! would, before the prover is called:
//!
//! - `call=N`: every prover's Nth call (from 1);
//! - `lost=N`: every prover's Nth call, as a device whose context a sticky error broke;
//! - `hang=N`: every prover's Nth call never answers, as a hung kernel would not;
//! - `stall=N:SECS`: every prover's Nth call waits SECS seconds first, then proves, as a
//!   host that froze for a while would;
//! - `job=NAME`: every call proving a partition of the job NAME;
//! - `all`: every call.
//!
//! `CUZK_TEST_WRONG_WITNESS` makes synthesis get one witness value wrong, as a bug in a
//! fast path would, so that verification rejects the proof: `native` spoils partitions whose
//! witness was computed natively, `all` every partition.
//!
//! Nothing else reads them, and a run without them (every production run) never fails this
//! way.

use std::sync::OnceLock;

use super::job::PartitionPath;
use crate::backend::ProveError;
use crate::synth::{SynthesizedPartition, WitnessPath};

/// The variable that injects faults.
pub const VARIABLE: &str = "CUZK_TEST_DEVICE_FAULTS";

/// The variable that spoils witnesses.
pub const WRONG_WITNESS_VARIABLE: &str = "CUZK_TEST_WRONG_WITNESS";

/// Which partitions get a wrong witness value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum WrongWitness {
    None,
    Native,
    All,
}

impl WrongWitness {
    fn parse(spec: &str) -> WrongWitness {
        match spec.trim() {
            "" => WrongWitness::None,
            "native" => WrongWitness::Native,
            "all" => WrongWitness::All,
            other => {
                log::warn!("{WRONG_WITNESS_VARIABLE}: {other:?} is not native or all; ignored");
                WrongWitness::None
            }
        }
    }

    fn hits(self, path: &PartitionPath) -> bool {
        match self {
            WrongWitness::None => false,
            WrongWitness::Native => path.is_precompiled && path.witness == WitnessPath::Native,
            WrongWitness::All => true,
        }
    }
}

/// Gets one witness value of `synthesized` wrong when the test variable asks for it for
/// partitions made as `path` says (before its witness is compacted).
pub fn spoil_witness(synthesized: &mut SynthesizedPartition, path: &PartitionPath) {
    static WRONG: OnceLock<WrongWitness> = OnceLock::new();
    let wrong = WRONG.get_or_init(|| {
        std::env::var(WRONG_WITNESS_VARIABLE)
            .map_or(WrongWitness::None, |s| WrongWitness::parse(&s))
    });
    if wrong.hits(path) {
        if let Some(value) = synthesized.aux_assignment.last_mut() {
            *value += blstrs::Scalar::from(1u64);
        }
    }
}

#[derive(Debug, Default, PartialEq, Eq)]
struct Faults {
    calls: Vec<u32>,
    lost: Vec<u32>,
    hangs: Vec<u32>,
    stalls: Vec<(u32, u64)>,
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
        } else if let Some(call) = item.strip_prefix("lost=").and_then(|n| n.parse().ok()) {
            faults.lost.push(call);
        } else if let Some(call) = item.strip_prefix("hang=").and_then(|n| n.parse().ok()) {
            faults.hangs.push(call);
        } else if let Some(stall) = item.strip_prefix("stall=").and_then(parse_stall) {
            faults.stalls.push(stall);
        } else {
            log::warn!(
                "{VARIABLE}: {item:?} is not call=N, lost=N, hang=N, stall=N:SECS, job=NAME or all; ignored"
            );
        }
    }
    faults
}

/// `N:SECS` of `stall=N:SECS`.
fn parse_stall(spec: &str) -> Option<(u32, u64)> {
    let (call, secs) = spec.split_once(':')?;
    Some((call.parse().ok()?, secs.parse().ok()?))
}

fn faults() -> &'static Faults {
    static FAULTS: OnceLock<Faults> = OnceLock::new();
    FAULTS.get_or_init(|| std::env::var(VARIABLE).map_or_else(|_| Faults::default(), |s| parse(&s)))
}

/// True when call number `call` of every prover is to hang (never answer).
pub fn hangs(call: u32) -> bool {
    faults().hangs.contains(&call)
}

/// How long call number `call` of every prover is to wait before it proves.
pub fn stall(call: u32) -> Option<std::time::Duration> {
    let faults = faults();
    let (_, secs) = faults.stalls.iter().find(|(c, _)| *c == call)?;
    Some(std::time::Duration::from_secs(*secs))
}

/// Blocks for ever, as a call stuck in a kernel would.
pub fn hang() -> ! {
    loop {
        std::thread::park();
    }
}

/// The injected fault when call number `call` of prover `worker`, proving partitions of
/// `jobs`, is to fail.
pub fn fault_for<'a>(
    worker: &str,
    call: u32,
    jobs: impl Iterator<Item = &'a str>,
) -> Option<ProveError> {
    injected(faults(), worker, call, jobs)
}

fn injected<'a>(
    faults: &Faults,
    worker: &str,
    call: u32,
    mut jobs: impl Iterator<Item = &'a str>,
) -> Option<ProveError> {
    if faults.lost.contains(&call) {
        return Some(ProveError::InjectedLoss(format!(
            "injected lost device on {worker} at call {call} ({VARIABLE})"
        )));
    }
    let hit = faults.all
        || faults.calls.contains(&call)
        || jobs.any(|job| faults.jobs.iter().any(|j| j == job));
    hit.then(|| {
        ProveError::Injected(format!(
            "injected device fault on {worker} at call {call} ({VARIABLE})"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faults_hit_the_calls_and_jobs_named_and_nothing_else() {
        let faults = parse("call=2, job=s-t01000-1,bogus,hang=3,stall=4:7,stall=5");
        assert_eq!(faults.calls, vec![2]);
        assert_eq!(faults.hangs, vec![3]);
        assert_eq!(
            faults.stalls,
            vec![(4, 7)],
            "a stall without seconds is ignored"
        );
        let hit =
            |call, jobs: &[&str]| injected(&faults, "cpu-0", call, jobs.iter().copied()).is_some();
        assert!(!hit(1, &["s-t01000-2"]));
        assert!(hit(2, &["s-t01000-2"]));
        assert!(hit(3, &["s-t01000-2", "s-t01000-1"]));
        assert!(injected(&parse(""), "cpu-0", 1, ["a"].into_iter()).is_none());
        assert!(injected(&parse("all"), "cpu-0", 9, std::iter::empty()).is_some());
        let lost = injected(&parse("lost=2"), "cpu-0", 2, std::iter::empty()).expect("lost");
        assert!(lost.is_device_lost());
        assert!(!injected(&faults, "cpu-0", 2, std::iter::empty())
            .expect("a fault")
            .is_device_lost());
    }

    #[test]
    fn a_wrong_witness_hits_the_paths_named() {
        use crate::footprint::Evaluation;
        let path = |witness, is_precompiled| PartitionPath {
            witness,
            is_precompiled,
            evaluation: Evaluation::InSynthesis,
        };
        let native = path(WitnessPath::Native, true);
        let gadget = path(WitnessPath::Gadget, true);
        let full = path(WitnessPath::Gadget, false);
        let native_only = WrongWitness::parse("native");
        assert!(native_only.hits(&native));
        assert!(!native_only.hits(&gadget) && !native_only.hits(&full));
        assert!([native, gadget, full]
            .iter()
            .all(|p| WrongWitness::parse("all").hits(p)));
        assert!(!WrongWitness::parse("").hits(&native));
        assert!(!WrongWitness::parse("bogus").hits(&native));
    }
}
