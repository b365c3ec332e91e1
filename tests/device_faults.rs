//! Faults of the prover's device, injected into the real binary (`CUZK_TEST_DEVICE_FAULTS`,
//! since a CPU build has no GPU to fail): a fault that may be the device's hands the file
//! back to be proved alone, a fault that follows the file fails it with a reason that does
//! not blame the parameters, and a device whose calls keep failing stops the run naming the
//! prover, failing no file.
//!
//! The verdicts do not look at what a job proves, so the files are the 2KiB SnapDeals update
//! fixtures (one partition each, about half a C1 file's proving time); the tests need the
//! 2KiB update parameters.

mod common;

use std::fs;
use std::path::Path;
use std::process::Output;
use std::time::Duration;

use common::{c1_locations, names, require_update_params, update_fixture, verifies_update};

/// A spool with the update fixtures `files`, written in that order: the first is the oldest,
/// and claims go oldest first.
fn spool_with_fixtures(files: &[&str]) -> tempfile::TempDir {
    let (dir, inbox) = common::spool();
    for name in files {
        fs::copy(update_fixture(name), inbox.join(name)).expect("copy");
        std::thread::sleep(Duration::from_millis(20));
    }
    dir
}

/// `cuzk prove-dir inbox --once` with `faults` injected.
fn run_with_faults(root: &Path, faults: &str, extra: &[&str]) -> Output {
    common::prove_once_on_cpu_with(
        root,
        cuzk::pipeline::FAULT_INJECTION_VARIABLE,
        faults,
        extra,
    )
}

/// Nothing failed or set aside, and each of `files` is back in the inbox.
fn assert_back_in_the_inbox(root: &Path, files: &[&str]) {
    assert!(names(&root.join("failed")).is_empty(), "no file failed");
    assert!(!root.join("set-aside").exists(), "none set aside");
    assert_eq!(
        c1_locations(root),
        files
            .iter()
            .map(|f| (f.to_string(), "inbox".to_owned()))
            .collect::<Vec<_>>(),
        "the files back in the inbox"
    );
}

fn rows<'a>(timeline: &'a str, event: &str) -> Vec<&'a str> {
    timeline
        .lines()
        .filter(|l| l.contains(&format!(",{event},")))
        .collect()
}

fn assert_proved(root: &Path, name: &str) {
    let job = name.trim_end_matches(".json");
    let proof = fs::read(root.join(format!("outbox/{job}.proof"))).expect("proof");
    assert!(
        verifies_update(&root.join("done").join(name), &proof),
        "{job} verifies"
    );
}

#[test]
fn a_passing_device_fault_hands_the_file_back_and_it_is_proved_alone() {
    require_update_params();
    let name = "s-t01000-11.json";
    let dir = spool_with_fixtures(&[name]);
    let root = dir.path();
    // The prover's first call fails, as a CUDA error while a PoSt held the GPU would.
    let out = run_with_faults(root, "call=1", &[]);
    assert_eq!(out.status.code(), Some(0), "the file proved");
    assert!(names(&root.join("failed")).is_empty(), "nothing failed");
    assert_proved(root, name);
    let timeline = fs::read_to_string(root.join("timeline.csv")).expect("timeline");
    let faults = rows(&timeline, "DEVICE_FAULT");
    assert_eq!(faults.len(), 1, "{timeline}");
    assert!(
        faults[0].contains(",s-t01000-11,0,cpu-0,"),
        "the file's partition, on cpu-0: {}",
        faults[0]
    );
    let handed_back: Vec<_> = rows(&timeline, "DEFERRED")
        .into_iter()
        .filter(|l| l.contains("device faults of this file: 1"))
        .collect();
    assert_eq!(handed_back.len(), 1, "handed back, counted: {timeline}");
    assert_eq!(rows(&timeline, "FAILED").len(), 0);
    assert!(
        !timeline.contains(",PROVER_STOPPED,"),
        "one fault does not stop the prover"
    );
    // It was claimed again and proved by itself.
    let claims: Vec<_> = rows(&timeline, "CLAIM")
        .into_iter()
        .filter(|l| l.contains(",s-t01000-11,"))
        .collect();
    assert_eq!(claims.len(), 2, "claimed twice: {timeline}");
    assert!(names(&root.join("work")).iter().all(|n| n.starts_with('.')));
}

#[test]
fn a_fault_that_follows_the_file_fails_it_without_blaming_the_parameters() {
    require_update_params();
    // The faulty file is the oldest, so it is claimed first: its first fault hands it back,
    // the other file's good proof comes between its two faults (the prover is known to work,
    // and its streak of faults is cleared), and its try alone then fails again.
    let dir = spool_with_fixtures(&["s-t01000-11.json", "s-t02000-12.json"]);
    assert_fault_follows_the_file(dir.path());
}

#[test]
fn a_file_retried_as_a_new_job_is_still_known_by_its_bytes() {
    require_update_params();
    // The faulty file is claimed last: the good file proves first, then the faulty one's
    // fault starts the prover's streak, and its try alone is another job of the same
    // bytes. Judged by the file's digest, the streak is this file's, and it fails; judged
    // by the job, it would be handed back until the prover stopped.
    let dir = spool_with_fixtures(&["s-t02000-12.json", "s-t01000-11.json"]);
    assert_fault_follows_the_file(dir.path());
}

/// Runs `root`'s spool with every call of s-t01000-11 failing and checks the fault followed
/// that file: it failed once proved alone, s-t02000-12 was proved, nothing else was blamed.
fn assert_fault_follows_the_file(root: &Path) {
    // Every call with a partition of s-t01000-11 fails; the other file proves on the same
    // prover, so the device works.
    let out = run_with_faults(root, "job=s-t01000-11", &[]);
    assert_eq!(out.status.code(), Some(1), "one file failed");
    assert_proved(root, "s-t02000-12.json");
    assert_eq!(
        names(&root.join("failed")),
        ["s-t01000-11.error.json", "s-t01000-11.json"]
    );
    let reason: serde_json::Value = serde_json::from_slice(
        &fs::read(root.join("failed/s-t01000-11.error.json")).expect("reason"),
    )
    .expect("JSON");
    assert_eq!(reason["stage"], "prove", "{reason}");
    let message = reason["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("when proved alone") && message.contains("the fault follows this file"),
        "{message}"
    );
    assert!(
        !message.contains("parameters"),
        "the parameters are not blamed: {message}"
    );
    let timeline = fs::read_to_string(root.join("timeline.csv")).expect("timeline");
    assert_eq!(
        rows(&timeline, "DEVICE_FAULT").len(),
        1,
        "handed back once, then failed: {timeline}"
    );
}

#[test]
fn a_device_that_keeps_failing_stops_the_run_naming_it_and_fails_no_file() {
    require_update_params();
    // Two files: the first's fault hands it back, the second (now first in the queue) fails
    // too. The device has proved nothing in this run and two files failed on it: the
    // prover's second fault in a row stops it.
    let files = ["s-t01000-11.json", "s-t02000-12.json"];
    let dir = spool_with_fixtures(&files);
    let root = dir.path();
    let out = run_with_faults(root, "all", &["--max-device-faults", "2"]);
    assert_eq!(out.status.code(), Some(2), "the run cannot go on");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("every prover stopped after faults of its device: cpu-0")
            && stderr.contains("--max-device-faults"),
        "{stderr}"
    );
    assert_back_in_the_inbox(root, &files);
    let timeline = fs::read_to_string(root.join("timeline.csv")).expect("timeline");
    let stopped = rows(&timeline, "PROVER_STOPPED");
    assert_eq!(stopped.len(), 1, "{timeline}");
    assert!(
        stopped[0].contains(",cpu-0,faults=2;last=injected device fault"),
        "{}",
        stopped[0]
    );
    // The device faults were counted in the files' records, apart from crashes: the next
    // run, on a working device, proves them and fails nothing.
    let out = run_with_faults(root, "", &[]);
    assert_eq!(out.status.code(), Some(0));
    for name in files {
        assert_proved(root, name);
    }
}

#[test]
fn a_file_that_keeps_failing_alone_is_set_aside_and_the_run_goes_on() {
    require_update_params();
    // One file, and every call fails: it is tried alone until its third fault would stop
    // the only prover, and a service's next run, on it for ever. Nothing shows whether the
    // file or the device is to blame, so it is set aside instead.
    let name = "s-t01000-11.json";
    let dir = spool_with_fixtures(&[name]);
    let root = dir.path();
    let out = run_with_faults(root, "all", &[]);
    assert_eq!(out.status.code(), Some(1), "not proved, and the run ended");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("1 file(s) set aside in") && stderr.contains("move them back"),
        "{stderr}"
    );
    assert!(names(&root.join("failed")).is_empty(), "not failed");
    assert_eq!(
        names(&root.join("set-aside")),
        ["s-t01000-11.json", "s-t01000-11.set-aside.json"]
    );
    let record: serde_json::Value = serde_json::from_slice(
        &fs::read(root.join("set-aside/s-t01000-11.set-aside.json")).expect("record"),
    )
    .expect("JSON");
    let reason = record["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("failed alone on cpu-0 3 times") && reason.contains("move the file back"),
        "{reason}"
    );
    let timeline = fs::read_to_string(root.join("timeline.csv")).expect("timeline");
    assert_eq!(rows(&timeline, "DEVICE_FAULT").len(), 3, "{timeline}");
    assert_eq!(rows(&timeline, "SET_ASIDE").len(), 1, "{timeline}");
    assert!(!timeline.contains(",PROVER_STOPPED,"), "the prover went on");
    assert!(
        !root.join("work/.attempts/s-t01000-11.json").exists(),
        "its record went with it"
    );
    let status = common::cuzk(&["status", "."], root, &[]);
    assert!(
        String::from_utf8_lossy(&status.stdout).contains("set aside 1"),
        "cuzk status counts it"
    );
    // A service's next run is not caught on it; moved back, it proves as a new file.
    let out = run_with_faults(root, "", &[]);
    assert_eq!(out.status.code(), Some(0), "nothing to do");
    fs::rename(
        root.join("set-aside").join(name),
        root.join("inbox").join(name),
    )
    .expect("move back");
    let out = run_with_faults(root, "", &[]);
    assert_eq!(out.status.code(), Some(0));
    assert_proved(root, name);
}

#[test]
fn a_file_handed_back_waits_behind_the_files_already_there_without_being_touched() {
    require_update_params();
    // The first file's first call fails; it goes back to the inbox, read-only as a C1 file
    // another user wrote may be, and its bytes and time untouched. The second file, which
    // was waiting, is claimed before its retry.
    let files = ["s-t01000-11.json", "s-t02000-12.json"];
    let dir = spool_with_fixtures(&files);
    let root = dir.path();
    let first = root.join("inbox").join(files[0]);
    let mut permissions = fs::metadata(&first).expect("meta").permissions();
    permissions.set_readonly(true);
    fs::set_permissions(&first, permissions).expect("read-only");
    let modified = fs::metadata(&first)
        .and_then(|m| m.modified())
        .expect("mtime");
    let out = run_with_faults(root, "call=1", &[]);
    assert_eq!(out.status.code(), Some(0), "both proved");
    for name in files {
        assert_proved(root, name);
    }
    let done = root.join("done").join(files[0]);
    assert_eq!(
        fs::metadata(&done)
            .and_then(|m| m.modified())
            .expect("mtime"),
        modified,
        "the C1 file was not re-stamped"
    );
    let timeline = fs::read_to_string(root.join("timeline.csv")).expect("timeline");
    let claims: Vec<&str> = rows(&timeline, "CLAIM");
    let order: Vec<&str> = claims
        .iter()
        .map(|l| {
            if l.contains(",s-t01000-11,") {
                "11"
            } else {
                "12"
            }
        })
        .collect();
    assert_eq!(order, ["11", "12", "11"], "the retry went last: {timeline}");
}

#[test]
fn a_lost_device_stops_its_prover_at_once_and_fails_no_file() {
    require_update_params();
    // The first call finds the device lost (a sticky CUDA error): every later call would fail
    // too, so the prover stops there, not after --max-device-faults calls, and the file goes
    // back unjudged.
    let files = ["s-t01000-11.json", "s-t02000-12.json"];
    let dir = spool_with_fixtures(&files);
    let root = dir.path();
    let out = run_with_faults(root, "lost=1", &[]);
    assert_eq!(out.status.code(), Some(2), "the only prover stopped");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cpu-0, the last, lost its device to a sticky CUDA error"),
        "{stderr}"
    );
    assert_back_in_the_inbox(root, &files);
    let timeline = fs::read_to_string(root.join("timeline.csv")).expect("timeline");
    let stopped = rows(&timeline, "PROVER_STOPPED");
    assert_eq!(stopped.len(), 1, "{timeline}");
    assert!(
        stopped[0].contains(",cpu-0,faults=1;last=injected lost device"),
        "{}",
        stopped[0]
    );
}

#[test]
fn a_call_that_never_answers_stops_its_prover_by_its_deadline_and_fails_no_file() {
    require_update_params();
    // The second call hangs, as a kernel that never ends would: it gets a deadline learnt from
    // the first call (at most --call-deadline-secs, which also bounds the first call: a minute
    // leaves room for a debug build sharing two cores with other tests), after which the
    // prover is taken to be lost with its device. The file in the call goes back, the first one's proof stands, and
    // the run ends instead of waiting for ever.
    let files = ["s-t01000-11.json", "s-t02000-12.json"];
    let dir = spool_with_fixtures(&files);
    let root = dir.path();
    let started = std::time::Instant::now();
    let out = run_with_faults(root, "hang=2", &["--call-deadline-secs", "60"]);
    assert!(
        started.elapsed() < Duration::from_secs(300),
        "ended by the deadline"
    );
    assert_eq!(out.status.code(), Some(2), "the only prover stopped");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cpu-0, the last, lost its device") && stderr.contains("never answered"),
        "{stderr}"
    );
    let timeline = fs::read_to_string(root.join("timeline.csv")).expect("timeline");
    let faults = rows(&timeline, "DEVICE_FAULT");
    assert_eq!(faults.len(), 1, "{timeline}");
    assert!(
        faults[0].contains("past the call's deadline"),
        "{}",
        faults[0]
    );
    // Synthesis may finish either file first: the hung call is the second one proved.
    let (hung, proved) = if faults[0].contains(",s-t02000-12,") {
        (files[1], files[0])
    } else {
        (files[0], files[1])
    };
    assert_proved(root, proved);
    assert!(names(&root.join("failed")).is_empty(), "no file failed");
    let mut expected = vec![
        (proved.to_owned(), "done".to_owned()),
        (hung.to_owned(), "inbox".to_owned()),
    ];
    expected.sort();
    assert_eq!(c1_locations(root), expected);
    assert_eq!(rows(&timeline, "PROVER_STOPPED").len(), 1, "{timeline}");
}
