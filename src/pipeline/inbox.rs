//! The inbox as the feeder sees it between scans: which files have settled enough to claim,
//! which were handed back unfinished and when they are due again, and which could not be
//! claimed (said once per reason).
//!
//! A file has settled when its modification time is `--settle-secs` old, or when it was seen
//! unchanged that long: a clock ahead of ours (`rsync -t` from another host) must not hold a
//! file back until our clock catches up. A file whose JSON ended early is handed back and
//! deferred: it is due again when it changes, or once it has been unchanged for
//! `--incomplete-grace-secs` by its own clock or ours, whichever says longer; intake then
//! fails it as truncated. Its main type is [`InboxWatch`]; the clocks are arguments, so the
//! rules are tested without sleeping.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

/// What the feeder should do with an inbox entry now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Readiness {
    /// Claim it.
    Ready,
    /// Changed too recently, or incomplete and unchanged since: look again later.
    Waiting,
}

/// A file's size and modification time, as listed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileState {
    /// Bytes.
    pub len: u64,
    /// Its modification time (by the writer's clock).
    pub modified: SystemTime,
}

impl FileState {
    /// The state of the file at `path`, without following a link; `None` when it is gone.
    pub fn of(path: &Path) -> Option<FileState> {
        let meta = std::fs::symlink_metadata(path).ok()?;
        Some(FileState {
            len: meta.len(),
            modified: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
        })
    }
}

/// A file seen unchanged in `state` since `since`, by our clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seen {
    /// Its size and modification time.
    pub state: FileState,
    /// When it was first seen so.
    pub since: Instant,
}

/// The inbox files the feeder waits on, between scans.
#[derive(Debug)]
pub struct InboxWatch {
    /// `--settle-secs`.
    settle: Duration,
    /// `--incomplete-grace-secs`.
    incomplete_grace: Duration,
    /// Files still settling, as first seen unchanged.
    settling: HashMap<PathBuf, Seen>,
    /// Files that looked unfinished, as they were when handed back.
    deferred: HashMap<PathBuf, Seen>,
    /// When the next settling file is due, if one is waited for.
    next_settled: Option<Instant>,
    /// Files that could not be claimed, with the reason last reported.
    skipped: HashMap<PathBuf, String>,
}

impl InboxWatch {
    /// Nothing waited on yet, with these periods.
    pub fn new(settle: Duration, incomplete_grace: Duration) -> InboxWatch {
        InboxWatch {
            settle,
            incomplete_grace,
            settling: HashMap::new(),
            deferred: HashMap::new(),
            next_settled: None,
            skipped: HashMap::new(),
        }
    }

    /// A new scan listed `listed`: files no longer there are forgotten, and the next due
    /// time is found again by this scan.
    pub fn start_scan(&mut self, listed: &[PathBuf]) {
        self.settling.retain(|path, _| listed.contains(path));
        self.deferred.retain(|path, _| listed.contains(path));
        self.skipped.retain(|path, _| listed.contains(path));
        self.next_settled = None;
    }

    /// Whether the file at `path`, now in `state`, may be claimed at `now` (our clock) and
    /// `wall` (the wall clock its modification time is compared with).
    pub fn readiness(
        &mut self,
        path: &Path,
        state: FileState,
        wall: SystemTime,
        now: Instant,
    ) -> Readiness {
        let age = wall.duration_since(state.modified).unwrap_or_default();
        if age < self.settle {
            let seen = self
                .settling
                .entry(path.to_owned())
                .or_insert(Seen { state, since: now });
            if seen.state != state {
                *seen = Seen { state, since: now };
            }
            let unchanged = now.saturating_duration_since(seen.since);
            if unchanged < self.settle {
                let due = now + self.settle - age.max(unchanged);
                self.next_settled = Some(self.next_settled.map_or(due, |d| d.min(due)));
                return Readiness::Waiting;
            }
        }
        self.settling.remove(path);
        match self.deferred.get(path) {
            Some(seen) if seen.state == state => {
                let unchanged = now.saturating_duration_since(seen.since);
                if age.max(unchanged) < self.incomplete_grace {
                    Readiness::Waiting
                } else {
                    // Kept: intake asks how long it was waited for.
                    Readiness::Ready
                }
            }
            Some(_) => {
                self.deferred.remove(path);
                Readiness::Ready
            }
            None => Readiness::Ready,
        }
    }

    /// The deferral of the file at `path`, if it was deferred, taken as it is claimed.
    pub fn take_deferral(&mut self, path: &Path) -> Option<Seen> {
        self.deferred.remove(path)
    }

    /// Records that the file handed back to `path` (now in `state`) ended early: unchanged
    /// since `earlier`'s deferral, it keeps that deferral's start; otherwise it starts now.
    pub fn defer(&mut self, path: PathBuf, state: FileState, earlier: Option<Seen>, now: Instant) {
        let since = match earlier {
            Some(seen) if seen.state == state => seen.since,
            _ => now,
        };
        self.deferred.insert(path, Seen { state, since });
    }

    /// True while some file waits to be finished by its writer.
    pub fn has_deferred(&self) -> bool {
        !self.deferred.is_empty()
    }

    /// When the next settling file is due, if one is waited for.
    pub fn next_settled(&self) -> Option<Instant> {
        self.next_settled
    }

    /// True when `reason` is news for `path`: the first reason, or another than last time.
    /// The reason is remembered.
    pub fn is_new_skip(&mut self, path: &Path, reason: &str) -> bool {
        if self.skipped.get(path).map(String::as_str) == Some(reason) {
            return false;
        }
        self.skipped.insert(path.to_owned(), reason.to_owned());
        true
    }

    /// The file at `path` was claimed: a later failure to claim one of its name is news.
    pub fn claimed(&mut self, path: &Path) {
        self.skipped.remove(path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SETTLE: Duration = Duration::from_secs(1);
    const GRACE: Duration = Duration::from_secs(120);

    fn watch() -> InboxWatch {
        InboxWatch::new(SETTLE, GRACE)
    }

    fn state(len: u64, modified: SystemTime) -> FileState {
        FileState { len, modified }
    }

    fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }

    #[test]
    fn a_file_changed_just_now_waits_until_it_is_settle_seconds_old() {
        let mut inbox = watch();
        let path = Path::new("inbox/a.json");
        let (wall, now) = (SystemTime::now(), Instant::now());
        let file = state(10, wall - secs(0.25));
        assert_eq!(inbox.readiness(path, file, wall, now), Readiness::Waiting);
        assert_eq!(
            inbox.next_settled(),
            Some(now + secs(0.75)),
            "due when its modification time is a second old"
        );
        let later = (wall + secs(0.75), now + secs(0.75));
        assert_eq!(
            inbox.readiness(path, file, later.0, later.1),
            Readiness::Ready
        );
        // An old file is ready at once.
        let old = state(10, wall - secs(5.0));
        assert_eq!(
            inbox.readiness(Path::new("inbox/b.json"), old, wall, now),
            Readiness::Ready
        );
    }

    #[test]
    fn a_file_stamped_by_a_clock_ahead_settles_once_seen_unchanged() {
        let mut inbox = watch();
        let path = Path::new("inbox/ahead.json");
        let (wall, now) = (SystemTime::now(), Instant::now());
        // An hour ahead: by its modification time it would never be old enough.
        let file = state(10, wall + Duration::from_secs(3600));
        assert_eq!(inbox.readiness(path, file, wall, now), Readiness::Waiting);
        let then = (wall + secs(0.5), now + secs(0.5));
        assert_eq!(
            inbox.readiness(path, file, then.0, then.1),
            Readiness::Waiting
        );
        let settled = (wall + SETTLE, now + SETTLE);
        assert_eq!(
            inbox.readiness(path, file, settled.0, settled.1),
            Readiness::Ready
        );
    }

    #[test]
    fn a_file_changing_while_it_settles_starts_over() {
        let mut inbox = watch();
        let path = Path::new("inbox/growing.json");
        let (wall, now) = (SystemTime::now(), Instant::now());
        let ahead = wall + Duration::from_secs(3600);
        assert_eq!(
            inbox.readiness(path, state(10, ahead), wall, now),
            Readiness::Waiting
        );
        let grown = state(20, ahead);
        let then = now + secs(0.9);
        assert_eq!(
            inbox.readiness(path, grown, wall + secs(0.9), then),
            Readiness::Waiting
        );
        assert_eq!(
            inbox.readiness(path, grown, wall + secs(1.5), now + secs(1.5)),
            Readiness::Waiting,
            "unchanged only 0.6 s"
        );
        assert_eq!(
            inbox.readiness(path, grown, wall + secs(2.0), then + SETTLE),
            Readiness::Ready
        );
    }

    #[test]
    fn a_deferred_file_waits_for_a_change_or_the_grace() {
        let mut inbox = watch();
        let path = PathBuf::from("inbox/short.json");
        let (wall, now) = (SystemTime::now(), Instant::now());
        let file = state(10, wall - secs(5.0));
        inbox.defer(path.clone(), file, None, now);
        assert!(inbox.has_deferred());
        assert_eq!(inbox.readiness(&path, file, wall, now), Readiness::Waiting);
        // By its modification time the grace has passed.
        let late = wall + GRACE;
        assert_eq!(
            inbox.readiness(&path, file, late, now + secs(1.0)),
            Readiness::Ready
        );
        let deferral = inbox.take_deferral(&path).expect("kept for intake");
        assert_eq!(deferral.since, now);
        // Handed back again unchanged: the wait goes on from the first deferral.
        inbox.defer(path.clone(), file, Some(deferral), now + secs(2.0));
        assert_eq!(inbox.take_deferral(&path).map(|s| s.since), Some(now));
        // A change makes it due at once, and it is no longer deferred.
        inbox.defer(path.clone(), file, None, now);
        let changed = state(30, wall - secs(4.0));
        assert_eq!(inbox.readiness(&path, changed, wall, now), Readiness::Ready);
        assert!(!inbox.has_deferred());
    }

    #[test]
    fn a_deferred_file_with_a_clock_ahead_is_due_after_the_grace_by_our_clock() {
        let mut inbox = InboxWatch::new(Duration::ZERO, GRACE);
        let path = PathBuf::from("inbox/ahead.json");
        let (wall, now) = (SystemTime::now(), Instant::now());
        let file = state(10, wall + Duration::from_secs(3600));
        inbox.defer(path.clone(), file, None, now);
        assert_eq!(
            inbox.readiness(&path, file, wall, now + secs(119.0)),
            Readiness::Waiting
        );
        assert_eq!(
            inbox.readiness(&path, file, wall, now + GRACE),
            Readiness::Ready
        );
    }

    #[test]
    fn files_gone_from_the_listing_are_forgotten() {
        let mut inbox = watch();
        let (gone, kept) = (PathBuf::from("inbox/gone"), PathBuf::from("inbox/kept"));
        let now = Instant::now();
        let file = state(1, SystemTime::now());
        inbox.defer(gone.clone(), file, None, now);
        inbox.defer(kept.clone(), file, None, now);
        assert!(inbox.is_new_skip(&gone, "refused"));
        inbox.start_scan(std::slice::from_ref(&kept));
        assert!(inbox.take_deferral(&gone).is_none());
        assert!(inbox.take_deferral(&kept).is_some());
        assert!(
            inbox.is_new_skip(&gone, "refused"),
            "forgotten, so news again"
        );
    }

    #[test]
    fn a_skip_is_news_once_per_reason() {
        let mut inbox = watch();
        let path = Path::new("inbox/s-t01000-1.json");
        assert!(inbox.is_new_skip(path, "claiming it: Operation not permitted"));
        assert!(!inbox.is_new_skip(path, "claiming it: Operation not permitted"));
        assert!(inbox.is_new_skip(path, "claiming it: No space left on device"));
        inbox.claimed(path);
        assert!(inbox.is_new_skip(path, "claiming it: No space left on device"));
    }
}
