//! Device faults: whose fault a failed partition is.
//!
//! A partition can fail on its prover for the device's sake (a CUDA error, out of memory
//! when a PoSt took the GPU mid-call, a driver hiccup; SupraSeal fails a whole batch as a
//! unit) or for its file's (data the prover cannot take). The error alone rarely tells
//! which, so a failure is judged by what happens around it:
//!
//! - the first failure of a file hands it back to the inbox, counted in its attempt record
//!   apart from crashes, and marks it solo: its next try is the only file in flight;
//! - a solo try that fails again follows the file, and quarantines it, when the device is
//!   known to work (this prover proved partitions in this run, and every call that failed
//!   since its last good one was this file's) or another prover failed the file before.
//!   A file is known by its bytes' digest, not by its job: a file handed back is a new
//!   job at each try;
//!   otherwise it is handed back again, behind the files already waiting;
//! - a solo try that would be the file's `--max-device-faults`th fault, where every failed
//!   call since the prover's last good one was this file's, sets the file aside
//!   (`set-aside/`) instead: one file alone cannot show that the device is broken, and
//!   stopping the only prover for it would stop the run, and a service's next run, on the
//!   same file for ever. A prover sets at most one file aside between good calls: a second
//!   file failing the same way shows the device is at fault;
//! - a prover whose calls fail `--max-device-faults` times in a row stops: its device is
//!   taken to be broken; one whose device is lost (a sticky CUDA error broke its context,
//!   so every later call fails) stops at once, the file handed back unjudged. When the last prover stops, the run halts and hands every file in
//!   flight back ([`ProversStoppedError`]).
//!
//! So a broken device never sends a good file to `failed/`: at worst the run stops, naming
//! the prover, or a file waits in `set-aside/` for someone to move it back.

use std::collections::HashSet;

use super::job::Job;
use crate::spool::AttemptRecord;

/// What went wrong in a prover's call.
#[derive(Debug)]
pub struct CallFailure {
    /// What a failed partition said.
    pub message: String,
    /// The files whose partitions failed, by their C1 digest (a retry is a new job of the
    /// same file).
    pub files: Vec<String>,
    /// True when the call's file was set aside ([`Verdict::SetAside`]): the call does not
    /// count towards stopping the prover.
    pub is_set_aside: bool,
    /// True when the device is lost (a sticky error): the prover stops at once.
    pub is_device_lost: bool,
}

/// `--max-device-faults`' default: faulty calls in a row after which a prover stops.
pub const DEFAULT_MAX_DEVICE_FAULTS: u32 = 3;

/// What is done with a partition that failed on its prover.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The device may be to blame: the file goes back to the inbox, to be proved alone.
    HandBack,
    /// The fault follows the file: it fails, and why the device is not to blame.
    FollowsFile(&'static str),
    /// The file kept failing alone where nothing shows whose fault it is: it goes to
    /// `set-aside/`, and the prover goes on.
    SetAside,
}

/// One prover's record of its calls, for judging its failures and stopping it.
#[derive(Debug)]
pub struct DeviceHealth {
    /// Calls made so far.
    calls: u32,
    /// Calls in a row that had a failed partition, up to the last.
    streak: u32,
    /// The files (C1 digests) whose partitions failed in those calls.
    streak_files: HashSet<String>,
    /// True once a call proved every partition it was given.
    has_proved: bool,
    /// Faulty calls in a row after which the prover stops.
    max_faults: u32,
    /// What the last failed call said.
    last_error: String,
    /// True once a file was set aside since the last good call.
    has_set_aside: bool,
    /// True once a call found the device lost.
    is_device_lost: bool,
}

impl DeviceHealth {
    /// A prover's record before its first call; it stops after `max_faults` faulty calls in a
    /// row (at least one).
    pub fn new(max_faults: u32) -> DeviceHealth {
        DeviceHealth {
            calls: 0,
            streak: 0,
            streak_files: HashSet::new(),
            has_proved: false,
            max_faults: max_faults.max(1),
            last_error: String::new(),
            has_set_aside: false,
            is_device_lost: false,
        }
    }

    /// The number the next call will have, from 1.
    pub fn next_call(&self) -> u32 {
        self.calls + 1
    }

    /// Judges a partition of `job` that failed on `worker` in the call being recorded (call
    /// before [`DeviceHealth::record_call`]).
    pub fn judge(&self, job: &Job, worker: &str) -> Verdict {
        self.judge_file(&job.attempt, job.c1_digest.as_str(), worker)
    }

    /// [`DeviceHealth::judge`] for the file whose record is `attempt` and digest `digest`.
    fn judge_file(&self, attempt: &AttemptRecord, digest: &str, worker: &str) -> Verdict {
        if !(attempt.is_solo && attempt.device_faults > 0) {
            return Verdict::HandBack;
        }
        let only_this_file = self.streak_files.iter().all(|failed| failed == digest);
        if attempt.fault_provers.iter().any(|p| p != worker) {
            Verdict::FollowsFile("after it failed on another prover too")
        } else if self.has_proved && only_this_file {
            Verdict::FollowsFile("where that prover proves other files' partitions")
        } else if only_this_file
            && !self.has_set_aside
            && attempt.device_faults + 1 >= self.max_faults
        {
            Verdict::SetAside
        } else {
            Verdict::HandBack
        }
    }

    /// Records a call: `failure` is what went wrong in it, `None` when every partition was
    /// proved. True when the prover must stop.
    pub fn record_call(&mut self, failure: Option<CallFailure>) -> bool {
        self.calls += 1;
        match failure {
            None => {
                self.streak = 0;
                self.streak_files.clear();
                self.has_proved = true;
                self.has_set_aside = false;
            }
            Some(failure) if failure.is_set_aside => {
                // The file is out of the way: what the device does next tells.
                self.streak = 0;
                self.streak_files.clear();
                self.has_set_aside = true;
                self.last_error = failure.message;
            }
            Some(failure) => {
                self.streak += 1;
                self.streak_files.extend(failure.files);
                self.last_error = failure.message;
                if failure.is_device_lost {
                    self.is_device_lost = true;
                    return true;
                }
            }
        }
        self.streak >= self.max_faults
    }

    /// Faulty calls in a row, and what the last one said.
    pub fn streak(&self) -> (u32, &str) {
        (self.streak, &self.last_error)
    }

    /// True once a call found the device lost (the prover stopped for that).
    pub fn is_device_lost(&self) -> bool {
        self.is_device_lost
    }
}

/// Every prover stopped after faults of its device: the run cannot go on.
#[derive(Debug, thiserror::Error)]
#[error("every prover stopped after faults of its device: {worker}, the last, {}, the last with: {message} (hint: check the device with nvidia-smi and the kernel log's Xid errors, or leave it out with --gpus or CUDA_VISIBLE_DEVICES; the start-up note names the physical GPU behind {worker}; the C1 files in flight went back to the inbox, none was failed for it)", self.how())]
pub struct ProversStoppedError {
    /// The last prover that stopped.
    pub worker: String,
    /// Its faulty calls in a row.
    pub faults: u32,
    /// True when it stopped because its device was lost (a sticky CUDA error, a call past its
    /// deadline).
    pub is_device_lost: bool,
    /// What its last one said.
    pub message: String,
}

impl ProversStoppedError {
    /// Why the last prover stopped, in words.
    fn how(&self) -> String {
        if self.is_device_lost {
            "lost its device to a sticky CUDA error or a call that never answered (every later call on it would fail)".into()
        } else {
            format!(
                "failed {} calls in a row (--max-device-faults)",
                self.faults
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(message: &str, file: u64) -> Option<CallFailure> {
        Some(CallFailure {
            message: message.into(),
            files: vec![format!("digest-{file}")],
            is_set_aside: false,
            is_device_lost: false,
        })
    }

    #[test]
    fn a_prover_stops_after_its_limit_of_faulty_calls_in_a_row() {
        let mut health = DeviceHealth::new(3);
        assert!(!health.record_call(failed("a", 1)));
        assert!(!health.record_call(failed("b", 2)));
        assert!(!health.record_call(None), "a good call ends the streak");
        assert!(!health.record_call(failed("c", 1)));
        assert!(!health.record_call(failed("d", 1)));
        assert!(health.record_call(failed("e", 3)));
        assert_eq!(health.streak(), (3, "e"));
        assert_eq!(health.next_call(), 7);
        assert!(
            DeviceHealth::new(0).record_call(failed("x", 1)),
            "at least one"
        );
        let lost = CallFailure {
            is_device_lost: true,
            ..failed("lost", 1).unwrap()
        };
        assert!(
            DeviceHealth::new(3).record_call(Some(lost)),
            "a lost device stops its prover at once"
        );
    }

    /// The record of a file handed back `faults` times by `provers`, tried alone now.
    fn retried(faults: u32, provers: &[&str]) -> AttemptRecord {
        AttemptRecord {
            is_solo: true,
            device_faults: faults,
            fault_provers: provers.iter().map(|p| p.to_string()).collect(),
            ..AttemptRecord::default()
        }
    }

    #[test]
    fn a_file_that_keeps_failing_alone_is_set_aside_once_between_good_calls() {
        let mut health = DeviceHealth::new(3);
        let first = AttemptRecord::default();
        assert_eq!(
            health.judge_file(&first, "digest-1", "cuda-0"),
            Verdict::HandBack
        );
        assert!(!health.record_call(failed("a", 1)));
        assert_eq!(
            health.judge_file(&retried(1, &["cuda-0"]), "digest-1", "cuda-0"),
            Verdict::HandBack,
            "its second fault: tried alone again"
        );
        assert!(!health.record_call(failed("b", 1)));
        // Its third would stop the only prover, for one file: it is set aside instead.
        assert_eq!(
            health.judge_file(&retried(2, &["cuda-0"]), "digest-1", "cuda-0"),
            Verdict::SetAside
        );
        let set_aside = CallFailure {
            is_set_aside: true,
            ..failed("c", 1).unwrap()
        };
        assert!(!health.record_call(Some(set_aside)), "the prover goes on");
        assert_eq!(health.streak().0, 0);
        // A second file failing alone the same way is the device's doing: no second set-aside,
        // and the prover stops at its limit.
        assert_eq!(
            health.judge_file(&retried(2, &["cuda-0"]), "digest-2", "cuda-0"),
            Verdict::HandBack
        );
        assert!(!health.record_call(failed("d", 2)));
        assert!(!health.record_call(failed("e", 2)));
        assert!(health.record_call(failed("f", 2)));
        // A good call makes room for another set-aside.
        let mut health = DeviceHealth::new(3);
        health.has_set_aside = true;
        assert!(!health.record_call(None));
        assert!(!health.has_set_aside);
    }

    #[test]
    fn a_file_failing_among_others_or_where_the_device_works_is_not_set_aside() {
        let mut health = DeviceHealth::new(3);
        assert!(!health.record_call(failed("a", 2)));
        assert_eq!(
            health.judge_file(&retried(2, &["cuda-0"]), "digest-1", "cuda-0"),
            Verdict::HandBack,
            "another file failed since the last good call"
        );
        let mut health = DeviceHealth::new(3);
        assert!(!health.record_call(None));
        assert!(matches!(
            health.judge_file(&retried(2, &["cuda-0"]), "digest-1", "cuda-0"),
            Verdict::FollowsFile(_)
        ));
        assert!(matches!(
            health.judge_file(&retried(1, &["cuda-1"]), "digest-1", "cuda-0"),
            Verdict::FollowsFile(_)
        ));
    }
}
