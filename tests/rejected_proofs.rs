//! A proof that verification rejects, made so through the real binary by a wrong witness value
//! (`CUZK_TEST_WRONG_WITNESS`, as a bug in a fast path would make one): the first rejection
//! hands the file back to be proved alone through the gadgets in full, and only a second
//! rejection fails it, naming how both tries were made and on which prover.
//!
//! Needs the 2KiB parameters (`cuzk params gen --sector-size 2KiB`).

mod common;

use std::fs;
use std::path::Path;
use std::process::Output;

use common::{cuzk, fixture, names, require_params, verifies_for_sector};

const NAME: &str = "s-t01000-1.json";

/// A spool holding the 2KiB C1 fixture, with the constraints recorded ahead so that its first
/// try takes the native witness over them.
fn spool_with_fixture() -> tempfile::TempDir {
    let (dir, inbox) = common::spool();
    fs::copy(fixture(NAME), inbox.join(NAME)).expect("copy fixture");
    let out = cuzk(
        &["params", "constraints", "--sector-size", "2KiB"],
        dir.path(),
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "constraints recorded");
    dir
}

/// `cuzk prove-dir inbox --once` on the CPU with witnesses spoiled as `wrong` says.
fn run_with_wrong_witness(root: &Path, wrong: &str) -> Output {
    common::prove_once_on_cpu_with(root, cuzk::pipeline::WRONG_WITNESS_VARIABLE, wrong, &[])
}

fn rows<'a>(timeline: &'a str, event: &str) -> Vec<&'a str> {
    timeline
        .lines()
        .filter(|l| l.contains(&format!(",{event},")))
        .collect()
}

#[test]
fn a_first_rejected_proof_is_proved_again_alone_through_the_gadgets_in_full() {
    require_params();
    let dir = spool_with_fixture();
    let root = dir.path();
    // Only the native witness is wrong: the try through the gadgets in full is right.
    let out = run_with_wrong_witness(root, "native");
    assert_eq!(out.status.code(), Some(0), "the file proved");
    assert!(names(&root.join("failed")).is_empty(), "nothing failed");
    let proof = fs::read(root.join("outbox/s-t01000-1.proof")).expect("proof");
    assert!(
        verifies_for_sector(&root.join("done").join(NAME), &proof, 0),
        "the proof written verifies"
    );
    let timeline = fs::read_to_string(root.join("timeline.csv")).expect("timeline");
    let verified: Vec<_> = rows(&timeline, "VERIFY_END");
    assert_eq!(verified.len(), 2, "verified twice: {timeline}");
    assert!(verified[0].contains("valid=false"), "{}", verified[0]);
    assert!(verified[1].contains("valid=true"), "{}", verified[1]);
    let handed_back = rows(&timeline, "DEFERRED");
    assert_eq!(handed_back.len(), 1, "{timeline}");
    assert!(
        handed_back[0].contains("native witness over the recorded constraints")
            && handed_back[0].contains("on cpu-0")
            && handed_back[0].contains("through the gadgets in full"),
        "the hand-back says how the proof was made and what comes next: {}",
        handed_back[0]
    );
    // The first try took the native witness over the recorded constraints, the second the
    // gadgets in full.
    let synth_ends = rows(&timeline, "SYNTH_END");
    assert_eq!(synth_ends.len(), 2, "{timeline}");
    assert!(
        synth_ends[0].contains("precompiled=true") && synth_ends[0].contains("witness=native"),
        "{}",
        synth_ends[0]
    );
    assert!(
        synth_ends[1].contains("precompiled=false") && synth_ends[1].contains("witness=gadget"),
        "{}",
        synth_ends[1]
    );
    assert_eq!(rows(&timeline, "CLAIM").len(), 2, "claimed twice");
    assert!(
        names(&root.join("work")).iter().all(|n| n.starts_with('.')),
        "nothing left claimed"
    );
    assert!(
        !root.join("work/.attempts/s-t01000-1.json").exists(),
        "the attempt record went with the file"
    );
}

#[test]
fn a_second_rejection_fails_the_file_naming_both_tries_and_the_prover() {
    require_params();
    let dir = spool_with_fixture();
    let root = dir.path();
    let out = run_with_wrong_witness(root, "all");
    assert_eq!(out.status.code(), Some(1), "the file failed");
    assert_eq!(
        names(&root.join("failed")),
        ["s-t01000-1.error.json", NAME],
        "failed once, with its reason"
    );
    assert!(!root.join("outbox/s-t01000-1.proof").exists(), "no proof");
    let record: serde_json::Value = serde_json::from_slice(
        &fs::read(root.join("failed/s-t01000-1.error.json")).expect("error record"),
    )
    .expect("error record is JSON");
    assert_eq!(record["stage"], "verify", "{record}");
    let message = record["message"].as_str().expect("message");
    for part in [
        "did not pass verify_seal",
        "made with the gadgets in full (witness and a, b, c on the host) on cpu-0",
        "its try before, made with native witness over the recorded constraints",
        "cuzk params check",
    ] {
        assert!(message.contains(part), "{part:?} in {message}");
    }
    let timeline = fs::read_to_string(root.join("timeline.csv")).expect("timeline");
    assert_eq!(rows(&timeline, "VERIFY_END").len(), 2, "{timeline}");
    assert_eq!(rows(&timeline, "DEFERRED").len(), 1, "{timeline}");
    assert_eq!(rows(&timeline, "FAILED").len(), 1, "{timeline}");
}
