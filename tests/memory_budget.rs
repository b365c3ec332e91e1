//! The memory budget seen from outside: a sector whose parameters and one partition cannot
//! fit `--max-memory` stops the run before its file is claimed, naming both numbers and the
//! flag. (Partitions taking turns under a tight budget are checked in multi_partition.rs.)

mod common;

use std::fs;

use common::{c1_locations, fixture, prove_inbox_once, require_params, spool};

#[test]
fn a_sector_that_cannot_fit_stops_the_run_before_its_file_is_claimed() {
    require_params();
    let (dir, inbox) = spool();
    let name = "s-t01000-1.json";
    fs::copy(fixture(name), inbox.join(name)).expect("copy");
    let out = prove_inbox_once(dir.path(), &["--max-memory", "1GB"], &[]);
    assert_eq!(out.status.code(), Some(2), "the run cannot go on");
    let stderr = String::from_utf8_lossy(&out.stderr);
    for words in [
        "a 2KiB sector needs 1.1 GB of Groth16 parameters plus 489 MB for each partition in flight",
        "the memory budget is 1.0 GB",
        "--max-memory",
    ] {
        assert!(stderr.contains(words), "{words:?} in {stderr}");
    }
    assert_eq!(
        c1_locations(dir.path()),
        vec![(name.to_owned(), "inbox".to_owned())],
        "never claimed"
    );
    assert!(
        !fs::read_to_string(dir.path().join("timeline.csv"))
            .unwrap_or_default()
            .contains(",CLAIM,"),
        "no claim in the timeline"
    );
}
