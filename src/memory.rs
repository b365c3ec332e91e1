//! Memory budget: bytes are reserved before they are used and given back when dropped.
//!
//! Design note. At production size a run holds two kinds of big things: parameter sets
//! (~47 GB for 32GiB sectors, kept for the whole run) and partitions (~17 GB each for 32GiB,
//! from the start of their synthesis until their prover is done with them). Each takes a
//! [`Reservation`] of its size from one [`MemoryBudget`] first; a partition that does not fit
//! waits for one that ends instead of over-committing, so a run never asks the kernel for
//! more than the budget and is never killed for memory at the defaults. Sizes come from the
//! parameter file's counts ([`Footprint`](crate::footprint::Footprint)), which say exactly how long every vector is.
//! The default budget is what the process may use now: the memory available on the host or
//! in its cgroup, whichever is less, minus a margin for everything not counted here.
//!
//! A partition whose a, b and c are evaluated on the host just before its proof waits as its
//! witness alone and grows at its prover ([`Reservation::grow_to`]). The bytes it grows by
//! come from room the budget keeps for the provers ([`MemoryBudget::keep_for_provers`]):
//! every other reservation leaves that room free, so a prover never waits on partitions that
//! can only end after it has proved.

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::Sender;

/// The share of the available memory kept out of the default budget, in percent.
pub const MARGIN_PERCENT: u64 = 5;
/// The least kept out of the default budget, in bytes (a whole number of GiB, as
/// `--max-memory`'s help says it).
pub const MIN_MARGIN_BYTES: u64 = 2 << 30;

/// Bytes kept out of the default budget: allocator slack, thread stacks, C1 files, the
/// page cache a parameter load streams through.
pub fn default_margin(available: u64) -> u64 {
    (available / (100 / MARGIN_PERCENT)).max(MIN_MARGIN_BYTES)
}

/// A budget of bytes shared by a run.
#[derive(Clone)]
pub struct MemoryBudget {
    inner: Arc<Inner>,
}

struct Inner {
    total: u64,
    used: Mutex<Used>,
    freed: Condvar,
    /// Told each time bytes come back, so a waiting feeder looks again.
    wake: Option<Sender<()>>,
}

/// What is reserved, and what ordinary reservations leave free.
#[derive(Default)]
struct Used {
    bytes: u64,
    /// Room kept for partitions growing at their provers.
    kept_for_provers: u64,
}

/// Bytes held from a [`MemoryBudget`]; returned when dropped.
pub struct Reservation {
    budget: MemoryBudget,
    bytes: u64,
}

impl MemoryBudget {
    /// A budget of `total` bytes; `wake` is told whenever bytes are returned.
    pub fn new(total: u64, wake: Option<Sender<()>>) -> MemoryBudget {
        MemoryBudget {
            inner: Arc::new(Inner {
                total,
                used: Mutex::new(Used::default()),
                freed: Condvar::new(),
                wake,
            }),
        }
    }

    /// The budget's size.
    pub fn total(&self) -> u64 {
        self.inner.total
    }

    /// Bytes reserved now.
    pub fn in_use(&self) -> u64 {
        self.used().bytes
    }

    /// Room ordinary reservations leave free for partitions growing at their provers.
    pub fn kept_for_provers(&self) -> u64 {
        self.used().kept_for_provers
    }

    fn used(&self) -> std::sync::MutexGuard<'_, Used> {
        self.inner.used.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Keeps at least `bytes` free of ordinary reservations from now on, for the partitions
    /// that grow at their provers ([`Reservation::grow_to`]): as much as those may grow by
    /// at once. Set before such partitions are reserved; it never shrinks.
    pub fn keep_for_provers(&self, bytes: u64) {
        let mut used = self.used();
        used.kept_for_provers = used.kept_for_provers.max(bytes);
    }

    /// Reserves `bytes` if they fit now beside the room kept for the provers.
    pub fn try_reserve(&self, bytes: u64) -> Option<Reservation> {
        self.try_reserve_within(bytes, |used| {
            self.inner.total.saturating_sub(used.kept_for_provers)
        })
    }

    /// Reserves `bytes` if they fit now in the whole budget, the room kept for the provers
    /// included, without waiting: for something a partition at a prover will hold (a set
    /// for its a, b and c made ahead), as that partition would grow there.
    pub fn try_reserve_at_prover(&self, bytes: u64) -> Option<Reservation> {
        self.try_reserve_within(bytes, |_| self.inner.total)
    }

    /// Reserves `bytes` if what is used stays within `limit` of it.
    fn try_reserve_within(&self, bytes: u64, limit: impl Fn(&Used) -> u64) -> Option<Reservation> {
        let mut used = self.used();
        if used.bytes + bytes > limit(&used) {
            return None;
        }
        used.bytes += bytes;
        Some(Reservation {
            budget: self.clone(),
            bytes,
        })
    }

    fn release(&self, bytes: u64) {
        let mut used = self.used();
        used.bytes = used.bytes.saturating_sub(bytes);
        self.inner.freed.notify_all();
        if let Some(wake) = &self.inner.wake {
            let _ = wake.try_send(());
        }
    }
}

impl Reservation {
    /// Bytes held.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The budget it holds its bytes from.
    pub fn budget(&self) -> &MemoryBudget {
        &self.budget
    }

    /// Gives back what is held beyond `bytes` (a partition whose witness became smaller);
    /// holds on to everything when `bytes` is more.
    pub fn shrink_to(&mut self, bytes: u64) {
        if bytes < self.bytes {
            self.budget.release(self.bytes - bytes);
            self.bytes = bytes;
        }
    }

    /// Moves up to `bytes` of what is held into a reservation of its own (a part of a
    /// partition that outlives it: a lent set of a, b and c goes back to its lender counted).
    pub fn split_off(&mut self, bytes: u64) -> Reservation {
        let moved = bytes.min(self.bytes);
        self.bytes -= moved;
        Reservation {
            budget: self.budget.clone(),
            bytes: moved,
        }
    }

    /// Holds `other`'s bytes too, from now on in this one reservation. One of another budget
    /// is left to give its bytes back to its own.
    pub fn absorb(&mut self, mut other: Reservation) {
        if Arc::ptr_eq(&self.budget.inner, &other.budget.inner) {
            self.bytes += other.bytes;
            other.bytes = 0;
        }
    }

    /// Holds `bytes` in all (nothing changes when it holds that much already), waiting while
    /// they do not fit the whole budget, the room kept for the provers included, until they
    /// do or `give_up` says to stop (checked every [`GROW_POLL`]). Returns how long it
    /// waited, or `None` when it gave up holding what it held before. Bytes that could never
    /// fit (more than the budget) are taken at once rather than waited for forever.
    pub fn grow_to(&mut self, bytes: u64, give_up: impl Fn() -> bool) -> Option<Duration> {
        let started = Instant::now();
        let inner = &self.budget.inner;
        let mut used = self.budget.used();
        while bytes > self.bytes {
            let extra = bytes - self.bytes;
            let would_fit = used.bytes + extra <= inner.total;
            let could_ever_fit = bytes <= inner.total;
            if would_fit || !could_ever_fit {
                used.bytes += extra;
                self.bytes = bytes;
                break;
            }
            if give_up() {
                return None;
            }
            used = inner
                .freed
                .wait_timeout(used, GROW_POLL)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        Some(started.elapsed())
    }
}

/// How often a waiting [`Reservation::grow_to`] asks whether to give up.
pub const GROW_POLL: Duration = Duration::from_millis(200);

impl Drop for Reservation {
    fn drop(&mut self) {
        self.budget.release(self.bytes);
    }
}

/// Bytes this process may use now: available memory on the host, or what is left under the
/// cgroup's limit, whichever is smaller. `None` when neither can be read (not Linux).
pub fn available_bytes() -> Option<u64> {
    let host = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| meminfo_available(&text));
    let cgroup = cgroup_room();
    match (host, cgroup) {
        (Some(h), Some(c)) => Some(h.min(c)),
        (h, c) => h.or(c),
    }
}

/// `MemAvailable` from `/proc/meminfo`, in bytes.
fn meminfo_available(meminfo: &str) -> Option<u64> {
    meminfo.lines().find_map(|line| {
        let rest = line.strip_prefix("MemAvailable:")?;
        let kib: u64 = rest.trim().trim_end_matches("kB").trim().parse().ok()?;
        Some(kib * 1024)
    })
}

/// Bytes left under this process's cgroup memory limit (v2 `memory.max`, else v1
/// `memory.limit_in_bytes`), if it has one.
fn cgroup_room() -> Option<u64> {
    let read_u64 =
        |path: &str| -> Option<u64> { std::fs::read_to_string(path).ok()?.trim().parse().ok() };
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    if let Some(path) = own.lines().find_map(|l| l.strip_prefix("0::")) {
        let dir = format!("/sys/fs/cgroup{}", path.trim_end_matches('/'));
        // "max" (no limit) does not parse: no cgroup bound.
        let limit = read_u64(&format!("{dir}/memory.max"))?;
        let current = read_u64(&format!("{dir}/memory.current")).unwrap_or(0);
        return Some(limit.saturating_sub(current));
    }
    let limit = read_u64("/sys/fs/cgroup/memory/memory.limit_in_bytes")?;
    // v1 reports "no limit" as a huge number.
    if limit >= 1 << 60 {
        return None;
    }
    let usage = read_u64("/sys/fs/cgroup/memory/memory.usage_in_bytes").unwrap_or(0);
    Some(limit.saturating_sub(usage))
}

/// Parses a byte count with an optional unit: `64GiB`, `500MB`, `1.5T`, `1073741824`.
/// Binary units (`KiB`, `MiB`, `GiB`, `TiB`, and bare `K`, `M`, `G`, `T`) are powers of 1024;
/// `KB`, `MB`, `GB`, `TB` are powers of 1000, as storage providers read them on their tools.
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a size like 64GiB or 500MB"))?;
    let scale: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kib" => 1024.0,
        "m" | "mib" => 1024f64.powi(2),
        "g" | "gib" => 1024f64.powi(3),
        "t" | "tib" => 1024f64.powi(4),
        "kb" => 1e3,
        "mb" => 1e6,
        "gb" => 1e9,
        "tb" => 1e12,
        other => {
            return Err(format!(
                "{text:?}: unknown unit {other:?}; use GiB, GB, MiB, ..."
            ))
        }
    };
    Ok((value * scale).round() as u64)
}

/// Bytes as operators read them: `17.1 GB`.
pub fn show_bytes(bytes: u64) -> String {
    let b = bytes as f64;
    if b >= 1e9 {
        format!("{:.1} GB", b / 1e9)
    } else if b >= 1e6 {
        format!("{:.0} MB", b / 1e6)
    } else {
        format!("{bytes} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shrunk_reservation_gives_back_the_rest_at_once_and_its_own_on_drop() {
        let (tx, rx) = crossbeam_channel::bounded(1);
        let budget = MemoryBudget::new(100, Some(tx));
        let mut partition = budget.try_reserve(80).expect("fits");
        assert!(budget.try_reserve(30).is_none());
        partition.shrink_to(10);
        assert_eq!((partition.bytes(), budget.in_use()), (10, 10));
        assert!(rx.try_recv().is_ok(), "the feeder is woken");
        partition.shrink_to(50);
        assert_eq!(partition.bytes(), 10, "it never grows");
        let other = budget.try_reserve(90).expect("room now");
        drop((partition, other));
        assert_eq!(budget.in_use(), 0);
    }

    #[test]
    fn a_split_off_part_and_an_absorbed_one_count_once() {
        let budget = MemoryBudget::new(100, None);
        let mut partition = budget.try_reserve(70).expect("fits");
        let set = partition.split_off(50);
        assert_eq!(
            (partition.bytes(), set.bytes(), budget.in_use()),
            (20, 50, 70)
        );
        drop(partition);
        assert_eq!(budget.in_use(), 50, "the part outlives its partition");
        let mut next = budget.try_reserve(5).expect("fits");
        next.absorb(set);
        assert_eq!((next.bytes(), budget.in_use()), (55, 55));
        let other_budget = MemoryBudget::new(100, None);
        next.absorb(other_budget.try_reserve(9).expect("fits"));
        assert_eq!(
            (next.bytes(), other_budget.in_use()),
            (55, 0),
            "another budget's goes home"
        );
        assert_eq!(next.split_off(500).bytes(), 55, "no more than it holds");
        assert_eq!(next.bytes(), 0);
    }

    #[test]
    fn reservations_wait_for_room_and_come_back_on_drop() {
        let (tx, rx) = crossbeam_channel::bounded(1);
        let budget = MemoryBudget::new(100, Some(tx));
        let params = budget.try_reserve(60).expect("fits");
        let partition = budget.try_reserve(30).expect("fits");
        assert_eq!(budget.in_use(), 90);
        assert!(budget.try_reserve(20).is_none(), "would over-commit");
        drop(partition);
        assert!(rx.try_recv().is_ok(), "the feeder is woken");
        assert_eq!(budget.in_use(), 60);
        let again = budget.try_reserve(40).expect("room again");
        assert_eq!(again.bytes(), 40);
        drop((params, again));
        assert_eq!(budget.in_use(), 0);
    }

    #[test]
    fn what_a_partition_at_a_prover_will_hold_may_take_the_room_kept_for_provers() {
        let budget = MemoryBudget::new(100, None);
        budget.keep_for_provers(40);
        let ordinary = budget.try_reserve(50).expect("fits beside the kept room");
        assert!(budget.try_reserve(20).is_none(), "ordinary room is gone");
        let at_prover = budget.try_reserve_at_prover(40).expect("the kept room");
        assert!(
            budget.try_reserve_at_prover(20).is_none(),
            "never past the total"
        );
        assert_eq!(budget.in_use(), 90);
        drop((ordinary, at_prover));
        assert_eq!(budget.in_use(), 0);
    }

    #[test]
    fn the_room_kept_for_provers_is_theirs_alone_and_a_grown_partition_waits_for_it() {
        let budget = MemoryBudget::new(100, None);
        budget.keep_for_provers(40);
        let params = budget.try_reserve(50).expect("fits beside the room");
        let mut witness = budget.try_reserve(10).expect("fits beside the room");
        // Two more partitions waiting as witnesses (of no bytes here).
        let mut other = budget.try_reserve(0).expect("fits");
        let mut third = budget.try_reserve(0).expect("fits");
        assert!(
            budget.try_reserve(1).is_none(),
            "the room is not for ordinary reservations"
        );
        // At its prover the witness grows into the room at once.
        assert!(witness.grow_to(45, || false).is_some());
        assert_eq!((witness.bytes(), budget.in_use()), (45, 95));
        // A second partition at a prover waits until the first is proved (dropped) and
        // takes its place, woken by the drop.
        let waited = std::thread::scope(|scope| {
            let grow = scope.spawn(|| other.grow_to(40, || false));
            std::thread::sleep(Duration::from_millis(50));
            drop(witness);
            grow.join().expect("grows")
        });
        assert!(
            waited.is_some_and(|w| w >= Duration::from_millis(40)),
            "{waited:?}"
        );
        assert_eq!((other.bytes(), budget.in_use()), (40, 90));
        // One that would wait is given up when asked, holding what it held.
        assert_eq!(third.grow_to(20, || true), None);
        assert_eq!((third.bytes(), budget.in_use()), (0, 90));
        // Bytes that could never fit are taken rather than waited on forever.
        assert!(third.grow_to(200, || false).is_some());
        drop((params, other, third));
        assert_eq!(budget.in_use(), 0);
        assert_eq!(budget.kept_for_provers(), 40);
    }

    #[test]
    fn sizes_parse_with_binary_and_decimal_units() {
        assert_eq!(parse_bytes("64GiB"), Ok(64 << 30));
        assert_eq!(parse_bytes("64G"), Ok(64 << 30));
        assert_eq!(parse_bytes("500MB"), Ok(500_000_000));
        assert_eq!(parse_bytes("1.5TiB"), Ok(3 << 39));
        assert_eq!(parse_bytes("1024"), Ok(1024));
        assert!(parse_bytes("lots").is_err());
        assert!(parse_bytes("5 parsecs").is_err());
    }

    #[test]
    fn meminfo_available_is_read_in_bytes() {
        let text = "MemTotal:       131072000 kB\nMemFree:         1000 kB\nMemAvailable:   120000000 kB\n";
        assert_eq!(meminfo_available(text), Some(120_000_000 * 1024));
        assert_eq!(meminfo_available("MemTotal: 5 kB\n"), None);
    }
}
