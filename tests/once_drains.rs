//! `--once` drains the inbox, it does not skip: a file still settling is waited for, a file
//! stamped by a clock ahead of ours is not waited for forever, and a file that cannot be
//! claimed makes the run say why and exit 1 instead of 0 having done nothing.
//!
//! The first test proves one 2KiB SnapDeals update on the CPU (about 25 s on 2 cores) and
//! needs the 2KiB update parameters.

mod common;

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::process::Command;
use std::time::{Duration, Instant, SystemTime};

use common::{
    cuzk, cuzk_command, fixture, names, prove_inbox_once, read_update, require_update_params, show,
    spool, update_fixture, verifies_update,
};

#[test]
fn a_file_copied_just_before_a_once_run_is_proved() {
    require_update_params();
    let (dir, inbox) = spool();
    // As an operator does it: cp, then at once the run, with the default --settle-secs 1.
    let copied = Command::new("cp")
        .arg(update_fixture("s-t01000-11.json"))
        .arg(&inbox)
        .status()
        .expect("cp");
    assert!(copied.success());
    let out = cuzk(
        &["prove-dir", "inbox", "--once", "--gpus", "none"],
        dir.path(),
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "proved, not skipped");
    assert!(names(&inbox).is_empty(), "drained: {:?}", names(&inbox));
    let outbox = dir.path().join("outbox");
    let proof = fs::read(outbox.join("s-t01000-11.proof")).expect("proof");
    assert!(verifies_update(
        &dir.path().join("done/s-t01000-11.json"),
        &proof
    ));
    // The metadata names the sector (by the file's name: the damocles form does not say)
    // and carries the proof and the update's commitments.
    let meta: serde_json::Value =
        serde_json::from_slice(&fs::read(outbox.join("s-t01000-11.json")).expect("meta"))
            .expect("JSON");
    let update = read_update(&update_fixture("s-t01000-11.json"));
    assert_eq!(meta["proof_kind"], "update");
    assert_eq!(meta["miner_id"], 1000);
    assert_eq!(meta["sector_num"], 11);
    assert_eq!(meta["comm_r_old"], hex::encode(update.comm_r_old));
    assert_eq!(meta["comm_r_new"], hex::encode(update.comm_r_new));
    assert_eq!(meta["comm_d_new"], hex::encode(update.comm_d_new));
    assert_eq!(meta["proof_hex"], hex::encode(&proof));
}

#[test]
fn a_once_run_that_cannot_claim_a_file_says_why_and_exits_1() {
    let (dir, inbox) = spool();
    // A name that is not UTF-8: it can be neither a job name nor a result's.
    let name = OsStr::from_bytes(b"s-t01000-\xff.json");
    fs::write(inbox.join(name), b"{}").expect("file");
    let out = prove_inbox_once(dir.path(), &["--gpus", "none"], &[]);
    assert_eq!(out.status.code(), Some(1), "not a silent 0");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("not UTF-8"), "the reason: {stderr}");
    assert!(
        stderr.contains("1 file(s) in") && stderr.contains("could not be claimed"),
        "{stderr}"
    );
    assert_eq!(
        fs::read_dir(&inbox).expect("inbox").count(),
        1,
        "still there"
    );
    let timeline = fs::read_to_string(dir.path().join("timeline.csv")).expect("timeline");
    assert_eq!(timeline.matches(",SKIPPED,").count(), 1, "{timeline}");
}

#[test]
fn a_file_from_a_clock_ahead_is_not_waited_for_forever() {
    let (dir, inbox) = spool();
    stamp_an_hour_ahead(&inbox.join("s-t01000-1.json"), b"not a C1 file");
    let args = [
        "prove-dir",
        "inbox",
        "--once",
        "--settle-secs",
        "1",
        "--gpus",
        "none",
    ];
    let out = run_ending_within_a_minute(&args, dir.path(), "a file stamped an hour ahead");
    // Seen unchanged for --settle-secs, claimed, and failed for what it is.
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        names(&dir.path().join("failed")),
        ["s-t01000-1.error.json", "s-t01000-1.json"]
    );
}

#[test]
fn an_unfinished_file_from_a_clock_ahead_is_failed_after_the_grace_period() {
    let (dir, inbox) = spool();
    // JSON that ends early looks like a file still being written.
    stamp_an_hour_ahead(
        &inbox.join("s-t01000-1.json"),
        br#"{"SectorNum": 1, "Phase1Out": "eyJyZWdp"#,
    );
    let args = [
        "prove-dir",
        "inbox",
        "--once",
        "--settle-secs",
        "1",
        "--incomplete-grace-secs",
        "3",
        "--gpus",
        "none",
    ];
    let out = run_ending_within_a_minute(
        &args,
        dir.path(),
        "an unfinished file stamped an hour ahead",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("waiting for s-t01000-1"),
        "first waited for: {stderr}"
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        names(&dir.path().join("failed")),
        ["s-t01000-1.error.json", "s-t01000-1.json"]
    );
}

#[test]
fn a_work_directory_on_another_file_system_is_refused_at_start() {
    use std::os::unix::fs::MetadataExt;
    let (dir, inbox) = spool();
    let shm = std::path::Path::new("/dev/shm");
    let device = |p: &std::path::Path| fs::metadata(p).map(|m| m.dev()).ok();
    if device(shm).is_none() || device(shm) == device(dir.path()) {
        eprintln!("skipped: no second file system at /dev/shm to put --work on");
        return;
    }
    let work = tempfile::tempdir_in(shm).expect("work on /dev/shm");
    fs::copy(fixture("s-t01000-1.json"), inbox.join("s-t01000-1.json")).expect("copy");
    let work_arg = work.path().display().to_string();
    let out = cuzk(
        &["prove-dir", "inbox", "--once", "--work", &work_arg],
        dir.path(),
        &[],
    );
    assert_eq!(out.status.code(), Some(2), "the run cannot work");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("not on the file system of the inbox") && stderr.contains("--work"),
        "{stderr}"
    );
    assert_eq!(names(&inbox), ["s-t01000-1.json"]);
}

/// Writes `body` at `path` with a modification time an hour ahead of our clock.
fn stamp_an_hour_ahead(path: &std::path::Path, body: &[u8]) {
    fs::write(path, body).expect("file");
    let file = fs::File::options().write(true).open(path).expect("open");
    file.set_modified(SystemTime::now() + Duration::from_secs(3600))
        .expect("mtime an hour ahead");
}

/// Runs cuzk in `dir`, killing it and failing the test if it still waits for `what` after
/// a minute.
fn run_ending_within_a_minute(
    args: &[&str],
    dir: &std::path::Path,
    what: &str,
) -> std::process::Output {
    let mut child = cuzk_command(args, dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("cuzk");
    let started = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if started.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("the run still waits for {what}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = child.wait_with_output().expect("output");
    show(args, dir, &out);
    out
}
