//! Call deadlines: a prover's call runs on a thread of its own, and the prover's thread waits
//! for it only until the call's deadline. A call that outlives it (a hung kernel holding the
//! device, a driver that never answers) keeps the prover: the thread is left to the call with
//! everything the call borrows (its partitions, the next witness, their memory), the
//! partitions' files go back to the inbox as a device fault, and the prover stops as one whose
//! device is lost. So `--once` ends, the other provers go on, and nothing the device may still
//! read is freed under it.
//!
//! A call's deadline comes from what the prover's calls of the same circuit cost before:
//! [`SLOWER`] times the slowest per partition, at least [`FLOOR`] and at most the
//! `--call-deadline-secs` per partition, which alone bounds a circuit's first call (that one may
//! upload its constraints). GPU provers are always watched; a CPU prover only when
//! `--call-deadline-secs` is given: its calls cannot hang on a device, and a small machine's first
//! 32GiB call may take longer than any default would allow.

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::backend::Prover;
use crate::proof_kind::CircuitId;
use crate::util::panic_message;

/// `--call-deadline-secs`'s default for GPU provers, per partition in a call: a 32GiB partition's
/// first call on a 16 GB card, constraints uploaded, takes well under a minute.
pub const DEFAULT_CALL_DEADLINE: Duration = Duration::from_secs(30 * 60);

/// How many times slower than the slowest call measured a call may be: a PoSt sharing the
/// card, a clock throttled by heat, a slow pool of host threads.
pub const SLOWER: u32 = 10;

/// The shortest deadline a measured call gets: a 2KiB partition's 0.1 s says little about a
/// hiccup of the driver.
pub const FLOOR: Duration = Duration::from_secs(60);

/// The deadlines of one prover's calls, learnt from the calls it made.
#[derive(Debug)]
pub struct CallDeadlines {
    /// The most a call may take per partition; `None`: the calls are not watched.
    most: Option<Duration>,
    /// The slowest call so far per partition, by circuit.
    slowest: HashMap<CircuitId, Duration>,
}

impl CallDeadlines {
    /// Deadlines of at most `most` per partition, or none (calls run on the prover's thread).
    pub fn new(most: Option<Duration>) -> CallDeadlines {
        CallDeadlines {
            most,
            slowest: HashMap::new(),
        }
    }

    /// The deadline of a call proving `partitions` partitions of `circuit`, if it is watched.
    pub fn for_call(&self, circuit: CircuitId, partitions: usize) -> Option<Duration> {
        let most = self.most?;
        let per_partition = match self.slowest.get(&circuit) {
            Some(slowest) => (*slowest * SLOWER).clamp(FLOOR.min(most), most),
            None => most,
        };
        Some(per_partition * partitions.max(1) as u32)
    }

    /// Records that a call proving `partitions` partitions of `circuit` took `took`.
    pub fn record(&mut self, circuit: CircuitId, partitions: usize, took: Duration) {
        let per_partition = took / partitions.max(1) as u32;
        let slowest = self.slowest.entry(circuit).or_default();
        *slowest = (*slowest).max(per_partition);
    }
}

/// What a watched call gave back.
pub enum Answer<T> {
    /// The prover, and what the call returned, or what it panicked with.
    Returned(Prover, Result<T, String>),
    /// The prover is gone: the call gave no answer within its deadline (it keeps the prover
    /// and what it owns), or no thread could be started for it. Why, in words.
    Lost(String),
}

/// Set once a call was left behind: the process must not wait for it when it ends.
static CALLS_LOST: AtomicBool = AtomicBool::new(false);

/// True once a prover's call was left behind for want of an answer: it may still hold its
/// device, so the process ends without the CUDA runtime's teardown.
pub fn has_lost_calls() -> bool {
    CALLS_LOST.load(Ordering::SeqCst)
}

/// Runs `call` with `prover` on a thread of its own named `thread`, waiting until `deadline`
/// at most (`None`: on this thread, as long as it takes). `call` owns what it uses, so a call
/// that hangs keeps it alive.
pub fn call_within<T: Send + 'static>(
    mut prover: Prover,
    thread: String,
    deadline: Option<Duration>,
    call: impl FnOnce(&mut Prover) -> T + Send + 'static,
) -> Answer<T> {
    let Some(deadline) = deadline else {
        let answer = answer_of(&mut prover, call);
        return Answer::Returned(prover, answer);
    };
    let (tx, rx) = crossbeam_channel::bounded(1);
    let started = Instant::now();
    let spawned = std::thread::Builder::new().name(thread).spawn(move || {
        let mut prover = prover;
        let answer = answer_of(&mut prover, call);
        // The prover's thread may have stopped waiting: then the prover ends here.
        let _ = tx.send((prover, answer));
    });
    if let Err(err) = spawned {
        return Answer::Lost(format!("cannot start a thread for a prover's call: {err}"));
    }
    match rx.recv_timeout(deadline) {
        Ok((prover, answer)) => Answer::Returned(prover, answer),
        Err(_) => Answer::Lost({
            CALLS_LOST.store(true, Ordering::SeqCst);
            format!(
            "no answer after {:.0} s, past the call's deadline of {:.0} s (--call-deadline-secs): taken to be hung in a kernel or the driver, the prover stays with it",
            started.elapsed().as_secs_f64(),
            deadline.as_secs_f64()
            )
        }),
    }
}

/// `call`'s answer, or what it panicked with.
fn answer_of<T>(prover: &mut Prover, call: impl FnOnce(&mut Prover) -> T) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(|| call(prover))).map_err(|p| panic_message(p.as_ref()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::kernels::ProverKernels;

    #[test]
    fn a_deadline_is_learnt_from_the_slowest_call_of_its_circuit() {
        let (small, large) = (CircuitId::seal(2048), CircuitId::seal(32 << 30));
        assert_eq!(CallDeadlines::new(None).for_call(small, 1), None);
        let most = Duration::from_secs(1800);
        let mut deadlines = CallDeadlines::new(Some(most));
        assert_eq!(deadlines.for_call(large, 2), Some(most * 2), "first call");
        deadlines.record(small, 1, Duration::from_millis(100));
        assert_eq!(
            deadlines.for_call(small, 1),
            Some(FLOOR),
            "at least the floor"
        );
        deadlines.record(large, 2, Duration::from_secs(40));
        deadlines.record(large, 1, Duration::from_secs(5));
        assert_eq!(
            deadlines.for_call(large, 3),
            Some(Duration::from_secs(20) * SLOWER * 3),
            "the slowest per partition, whatever came after"
        );
        deadlines.record(large, 1, Duration::from_secs(600));
        assert_eq!(
            deadlines.for_call(large, 1),
            Some(most),
            "at most --call-deadline"
        );
        let short = CallDeadlines::new(Some(Duration::from_secs(5)));
        assert_eq!(
            short.for_call(small, 1),
            Some(Duration::from_secs(5)),
            "a deadline below the floor is kept"
        );
    }

    fn prover() -> Prover {
        Prover::Kernels(ProverKernels::cpu(0))
    }

    #[test]
    fn a_call_that_answers_gives_the_prover_back_and_one_that_hangs_is_left() {
        let answered = call_within(prover(), "t".into(), Some(Duration::from_secs(60)), |p| {
            p.name().to_owned()
        });
        assert!(matches!(answered, Answer::Returned(_, Ok(ref name)) if name == "cpu-0"));
        let panicked = call_within(prover(), "t".into(), Some(Duration::from_secs(60)), |_| {
            panic!("a kernel's assertion")
        });
        assert!(
            matches!(panicked, Answer::Returned(_, Err(ref why)) if why.contains("a kernel's assertion"))
        );
        let unwatched = call_within(prover(), "t".into(), None, |_| 7);
        assert!(matches!(unwatched, Answer::Returned(_, Ok(7))));
        let started = Instant::now();
        let hung = call_within(
            prover(),
            "t".into(),
            Some(Duration::from_millis(200)),
            |_| std::thread::sleep(Duration::from_secs(3600)),
        );
        assert!(started.elapsed() < Duration::from_secs(30));
        assert!(matches!(hung, Answer::Lost(ref why) if why.contains("hung")));
    }
}
