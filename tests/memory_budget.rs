//! The memory budget seen from outside: a sector whose parameters and one partition cannot
//! fit `--max-memory` stops the run before its file is claimed, naming both numbers and the
//! flag; sizes whose parameter sets do not fit together take turns. (Partitions taking turns
//! under a tight budget are checked in multi_partition.rs.)

mod common;

use std::fs;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{
    c1_locations, cuzk, cuzk_command, fixture, names, prove_inbox_once, require_params, show, spool,
};

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

/// Benchmark shapes of two sizes whose parameter sets do not fit the budget together (2KiB:
/// 1.1 GB, 8MiB: 1.4 GB, each with a partition under 2.2 GB, both sets 2.5 GB): the set of
/// the size done is given back for the other, and a `--once` run ends with both.
#[test]
fn sizes_whose_parameters_do_not_fit_together_take_turns() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bench = dir.path().join("bench");
    let bench_arg = bench.display().to_string();
    let (spool_dir, inbox) = spool();
    // A sector of each size, under names of their own (a shape file is bound to its name).
    for (size, sectors, name) in [
        ("2KiB", "1", "s-t01000-1.json"),
        ("8MiB", "2", "s-t01000-2.json"),
    ] {
        let out = cuzk(
            &[
                "bench",
                "--sector-size",
                size,
                "--sectors",
                sectors,
                "--prepare-only",
                "--dir",
                &bench_arg,
            ],
            dir.path(),
            &[],
        );
        assert_eq!(out.status.code(), Some(0));
        let runs = bench.join("runs");
        let newest = names(&runs).pop().expect("a run directory");
        fs::copy(runs.join(newest).join("inbox").join(name), inbox.join(name)).expect("copy");
    }
    let params = bench.join("params");
    let mut child = cuzk_command(
        &[
            "prove-dir",
            "inbox",
            "--once",
            "--settle-secs",
            "0",
            "--benchmark",
            "--synthesis",
            "full",
            "--max-memory",
            "2.2GB",
        ],
        spool_dir.path(),
    )
    .env("FIL_PROOFS_PARAMETER_CACHE", &params)
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .expect("spawn cuzk");
    // Without turns the second size waits for the first's room for ever.
    let deadline = Instant::now() + Duration::from_secs(480);
    while child.try_wait().expect("wait").is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
    }
    let _ = child.kill();
    let out = child.wait_with_output().expect("output");
    show(
        &["prove-dir (two sizes, one set's room)"],
        spool_dir.path(),
        &out,
    );
    assert_eq!(out.status.code(), Some(0), "the run ends by itself");
    let timeline = fs::read_to_string(spool_dir.path().join("timeline.csv")).expect("timeline");
    assert!(
        timeline.contains(",MEMORY_WAIT,"),
        "the second size waited for the first one's room:\n{timeline}"
    );
    let outbox = names(&spool_dir.path().join("outbox"));
    for job in ["s-t01000-1", "s-t01000-2"] {
        assert!(
            outbox.contains(&format!("{job}.benchmark.json")),
            "{job} done: {outbox:?}"
        );
    }
}
