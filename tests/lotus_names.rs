//! lotus naming: `--miner-addr t0…/f0…` as lotus-bench takes it, and files named anything
//! else than a lotus sector name. Nothing here proves: a wrong miner fails at binding, before
//! any parameter is read.

mod common;

use std::fs;

use common::{cuzk, fixture, names, prove_inbox_once, spool};

#[test]
fn miner_addr_names_the_miner_of_a_file_with_any_name() {
    let (dir, inbox) = spool();
    // lotus-bench's commit2 input under its own name: SectorNum says sector 1.
    fs::copy(fixture("s-t01000-1.json"), inbox.join("commit2-in.json")).expect("copy");
    let out = prove_inbox_once(
        dir.path(),
        &["--gpus", "none", "--miner-addr", "f01001"],
        &[],
    );
    assert_eq!(out.status.code(), Some(1), "the job failed");
    let reason: serde_json::Value = serde_json::from_slice(
        &fs::read(dir.path().join("failed/commit2-in.error.json")).expect("reason"),
    )
    .expect("JSON");
    assert_eq!(reason["stage"], "bind");
    let message = reason["message"].as_str().unwrap_or_default();
    // Miner 1001 from the flag, sector 1 from the wrapper: not whom the file was sealed for.
    assert!(message.contains("s-t01001-1"), "{message}");
    assert!(message.contains("--miner-addr"), "{message}");
}

#[test]
fn a_file_without_a_miner_says_which_flags_give_one() {
    let (dir, inbox) = spool();
    fs::copy(fixture("s-t01000-1.json"), inbox.join("commit2-in.json")).expect("copy");
    let out = prove_inbox_once(dir.path(), &["--gpus", "none"], &[]);
    assert_eq!(out.status.code(), Some(1));
    let reason =
        fs::read_to_string(dir.path().join("failed/commit2-in.error.json")).expect("reason");
    assert!(
        reason.contains("--miner-addr") && reason.contains("--miner-id"),
        "{reason}"
    );
}

#[test]
fn malformed_miner_addresses_are_command_line_errors() {
    let (dir, inbox) = spool();
    fs::copy(fixture("s-t01000-1.json"), inbox.join("s-t01000-1.json")).expect("copy");
    for (addr, words) in [
        ("t3vvmn62lofvhjd2ugzca6sof2j2ubwok6cj4xxbfzz4yuxfkgobpihhd2thlanmsh3w2ptld2gqkn2jvlss4a", "ID address"),
        ("1000", "not a miner address"),
        ("t01000x", "not a miner address"),
    ] {
        let out = cuzk(&["prove-dir", "inbox", "--once", "--miner-addr", addr], dir.path(), &[]);
        assert_eq!(out.status.code(), Some(2), "{addr}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("--miner-addr") && stderr.contains(words), "{stderr}");
    }
    let out = cuzk(
        &[
            "reference",
            "--miner-addr",
            "t01000",
            "--miner-id",
            "1000",
            "x.json",
        ],
        dir.path(),
        &[],
    );
    assert_eq!(out.status.code(), Some(2), "one or the other");
    // Nothing was claimed by the refused runs.
    assert_eq!(names(&inbox), ["s-t01000-1.json"]);
}
