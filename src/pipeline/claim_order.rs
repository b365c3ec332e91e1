//! The order the feeder claims inbox files in: the spool's (oldest first, a higher priority
//! dated earlier, a file handed back counted from then), with one exception that saves
//! parameter switches. A file of the circuit the last job was of goes before the files of
//! other circuits queued less than [`SAME_SET_WINDOW`] before it: that circuit's parameters
//! are loaded, on the host and on the GPUs, and a mixed inbox (PoRep sectors and updates
//! arriving together) then switches sets once a window instead of at every file, which
//! costs a card that cannot keep both sets 27-43 s of uploads at 32GiB, and a host whose
//! budget holds one set a load from disk. No file waits behind more than one window of
//! later arrivals, and priorities, a million seconds apart, never mix.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// How much later a file of the last job's circuit may be queued and still go first.
pub const SAME_SET_WINDOW: Duration = Duration::from_secs(300);

/// Files of a window whose circuit is told at most, so that an inbox of thousands costs
/// each claim a bounded number of small reads.
const MAX_TOLD: usize = 64;

/// `listed` (queue time and path, in the spool's order) in the order to claim them, given
/// the circuit of the last job admitted (`last`) and a way to tell a file's circuit
/// (`circuit_of`, `None` when it cannot be told without parsing: such a file keeps its
/// place among the others). The feeder orders what is left after each claim, since each
/// may change the last job's circuit.
pub fn claim_order<C: PartialEq>(
    listed: Vec<(SystemTime, PathBuf)>,
    last: Option<C>,
    circuit_of: impl Fn(&Path) -> Option<C>,
) -> Vec<(SystemTime, PathBuf)> {
    let (Some(last), Some(&(oldest, _))) = (last, listed.first()) else {
        return listed;
    };
    let window_end = oldest + SAME_SET_WINDOW;
    let mut same = Vec::new();
    let mut others = Vec::new();
    let mut rest = Vec::new();
    for (k, (time, path)) in listed.into_iter().enumerate() {
        if time > window_end || k >= MAX_TOLD {
            rest.push((time, path));
        } else if circuit_of(&path).as_ref() == Some(&last) {
            same.push((time, path));
        } else {
            others.push((time, path));
        }
    }
    same.into_iter().chain(others).chain(rest).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000 + secs)
    }

    /// Files named by their circuit and number: "p1" a PoRep sector, "u2" an update.
    fn listed(files: &[(u64, &str)]) -> Vec<(SystemTime, PathBuf)> {
        files
            .iter()
            .map(|&(secs, name)| (at(secs), PathBuf::from(name)))
            .collect()
    }

    fn names(order: Vec<(SystemTime, PathBuf)>) -> Vec<String> {
        order
            .into_iter()
            .map(|(_, p)| p.display().to_string())
            .collect()
    }

    fn circuit(path: &Path) -> Option<char> {
        path.to_str()?.chars().next().filter(|c| *c != '?')
    }

    #[test]
    fn the_last_jobs_circuit_goes_first_within_the_window() {
        let inbox = listed(&[(0, "u1"), (10, "p2"), (20, "u3"), (30, "p4"), (400, "p5")]);
        assert_eq!(
            names(claim_order(inbox.clone(), Some('p'), circuit)),
            ["p2", "p4", "u1", "u3", "p5"],
            "PoRep files queued within the window go before the older update; one queued past it does not"
        );
        assert_eq!(
            names(claim_order(inbox.clone(), Some('u'), circuit)),
            ["u1", "u3", "p2", "p4", "p5"]
        );
        assert_eq!(
            names(claim_order(inbox, None, circuit)),
            ["u1", "p2", "u3", "p4", "p5"],
            "before any job, the spool's order"
        );
    }

    #[test]
    fn a_file_whose_circuit_cannot_be_told_keeps_its_place_among_the_others() {
        let inbox = listed(&[(0, "?a"), (1, "u1"), (2, "p2")]);
        assert_eq!(
            names(claim_order(inbox, Some('p'), circuit)),
            ["p2", "?a", "u1"]
        );
    }

    #[test]
    fn a_priority_dated_a_million_seconds_earlier_is_never_overtaken() {
        // A CRITICAL update is dated 2,000,000 s before the NORMAL PoRep files.
        let inbox = listed(&[(0, "u1"), (2_000_000, "p2"), (2_000_001, "p3")]);
        assert_eq!(
            names(claim_order(inbox, Some('p'), circuit)),
            ["u1", "p2", "p3"]
        );
    }

    #[test]
    fn only_the_first_files_of_a_long_inbox_are_told() {
        let mut files: Vec<(u64, String)> = (0..100).map(|k| (k, format!("u{k}"))).collect();
        files.push((100, "p100".into()));
        let inbox: Vec<_> = files
            .iter()
            .map(|(s, n)| (at(*s), PathBuf::from(n)))
            .collect();
        let order = names(claim_order(inbox, Some('p'), circuit));
        assert_eq!(order[0], "u0", "p100 lies past the files told");
        assert_eq!(order.len(), 101);
    }
}
