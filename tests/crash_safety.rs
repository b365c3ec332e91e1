//! Crash safety and signals on real input files: kill -9 at random moments, a double Ctrl-C,
//! a graceful SIGTERM, a file still being written, and an outbox that stops accepting
//! results. After every interruption each input file is in exactly one place, and at the end
//! each valid one is exactly one verified proof.
//!
//! The claims, kills, attempt records and digests are the same for every kind of input, so
//! most tests prove the 2KiB SnapDeals update fixtures (one partition, about half a C1 file's
//! proving time) and need the 2KiB update parameters; the crash-quarantine test keeps a C1
//! file (it never finishes a proof) and needs the 2KiB PoRep parameters.

mod common;

use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant, SystemTime};

use common::{
    c1_locations, copy_update_fixture, cuzk, cuzk_command, fixture, names, require_params,
    require_update_params, show, spool, update_fixture, verifies_update, wait_for_text,
};

const ONCE: [&str; 7] = [
    "prove-dir",
    "inbox",
    "--once",
    "--settle-secs",
    "0",
    "--incomplete-grace-secs",
    "0",
];

/// `ONCE` for tests that kill runs on purpose more often than `--max-attempts` allows.
const ONCE_UNLIMITED: [&str; 9] = [
    "prove-dir",
    "inbox",
    "--once",
    "--settle-secs",
    "0",
    "--incomplete-grace-secs",
    "0",
    "--max-attempts",
    "1000",
];

fn spawn(args: &[&str], cwd: &Path) -> Child {
    cuzk_command(args, cwd)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn cuzk")
}

fn signal(child: &Child, signal: libc::c_int) {
    // SAFETY: sending a signal to our own child process.
    unsafe { libc::kill(child.id() as libc::pid_t, signal) };
}

/// Each of `expected` is in exactly one place, and the outbox holds only whole results.
fn assert_nothing_lost(root: &Path, expected: &[&str], when: &str) {
    let found = c1_locations(root);
    for name in expected {
        let places: Vec<_> = found.iter().filter(|(n, _)| n == name).collect();
        assert_eq!(
            places.len(),
            1,
            "{when}: {name} is in {places:?} (all: {found:?})"
        );
    }
    for name in names(&root.join("outbox")) {
        if name.starts_with('.') {
            continue; // a temporary file of the killed run, never a result
        }
        let path = root.join("outbox").join(&name);
        if let Some(job) = name.strip_suffix(".json") {
            let proof = fs::read(root.join("outbox").join(format!("{job}.proof")))
                .unwrap_or_else(|_| panic!("{when}: {name} without its proof"));
            assert_eq!(proof.len(), 192, "{when}: {job}.proof is whole");
        } else {
            assert!(name.ends_with(".proof"), "{when}: stray {}", path.display());
        }
    }
}

#[test]
fn kill_nine_at_random_moments_loses_nothing() {
    require_update_params();
    let (dir, inbox) = spool();
    let root = dir.path();
    // One valid file and one that fails: the runs killed here have both kinds of outcome to
    // lose (chaos.rs kills runs with many files in flight).
    let files = ["s-t01000-11.json", "garbage.json"];
    fs::copy(update_fixture(files[0]), inbox.join(files[0])).expect("copy");
    fs::write(inbox.join(files[1]), b"not json").expect("garbage");

    // A small generator seeded by the clock; the seed is printed to replay a failure.
    let mut seed = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64)
        | 1;
    eprintln!("kill schedule seed: {seed}");
    let mut next_ms = |max: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % max
    };
    for round in 0..6 {
        let child = spawn(&ONCE_UNLIMITED, root);
        // Early kills land in claim/parse/synthesis, later ones in parameter loading and proving.
        let delay = Duration::from_millis(next_ms(if round % 2 == 0 { 3_000 } else { 30_000 }));
        std::thread::sleep(delay);
        let mut child = child;
        let _ = child.kill(); // SIGKILL
        let out = child.wait_with_output().expect("wait");
        show(
            &["prove-dir (killed after", &format!("{delay:?})")],
            root,
            &out,
        );
        assert_nothing_lost(root, &files, &format!("after kill {round} at {delay:?}"));
    }

    // Ctrl-C twice: the second aborts at once, claimed work stays for the next run. The
    // killed runs may have finished everything (a late kill on a fast machine), so a second
    // valid file gives this run work to be interrupted in.
    let files = ["s-t01000-11.json", "garbage.json", "s-t02000-12.json"];
    fs::copy(update_fixture(files[2]), inbox.join(files[2])).expect("copy");
    let child = spawn(&ONCE_UNLIMITED, root);
    // Long enough to claim and start synthesis, short of finishing a proof.
    std::thread::sleep(Duration::from_millis(2_500));
    signal(&child, libc::SIGINT);
    std::thread::sleep(Duration::from_millis(200));
    signal(&child, libc::SIGINT);
    let out = child.wait_with_output().expect("wait");
    show(&["prove-dir (two SIGINTs)"], root, &out);
    assert_eq!(
        out.status.code(),
        Some(130),
        "the second SIGINT aborts at once"
    );
    assert_nothing_lost(root, &files, "after two SIGINTs");

    // A clean run finishes everything, resuming what the dead runs claimed.
    let out = cuzk(&ONCE_UNLIMITED, root, &[]);
    // 1 if the garbage file fails in this run, 0 if a killed run already failed it.
    assert!(matches!(out.status.code(), Some(0 | 1)), "{:?}", out.status);
    assert_nothing_lost(root, &files, "at the end");
    assert_eq!(
        c1_locations(root)
            .iter()
            .filter(|(_, at)| at == "done")
            .count(),
        2
    );
    assert!(names(&root.join("failed")).contains(&"garbage.json".to_owned()));
    for name in [files[0], files[2]] {
        let job = name.trim_end_matches(".json");
        let proof = fs::read(root.join("outbox").join(format!("{job}.proof"))).expect("proof");
        assert!(
            verifies_update(&root.join("done").join(name), &proof),
            "{job} verifies"
        );
    }
    assert!(
        names(&root.join("work")).is_empty(),
        "no claims left: {:?}",
        names(&root.join("work"))
    );
}

#[test]
fn a_file_that_keeps_killing_the_prover_alone_is_quarantined() {
    require_params();
    let (dir, inbox) = spool();
    let root = dir.path();
    let name = "s-t01000-1.json";
    fs::copy(fixture(name), inbox.join(name)).expect("copy");
    let record_path = root.join("work/.attempts/s-t01000-1.json");
    let record = || -> Option<serde_json::Value> {
        serde_json::from_slice(&fs::read(&record_path).ok()?).ok()
    };
    // The first kill finds it as a fresh claim, not known to be alone in flight: that crash
    // is nobody's, and it is proved alone from then on. The next three are its own.
    for round in 1..=4u64 {
        let mut child = spawn(&ONCE, root);
        // Kill the run once it has the file at the prover, as a driver fault or the
        // out-of-memory killer would.
        let deadline = Instant::now() + Duration::from_secs(180);
        while Instant::now() < deadline {
            if record().is_some_and(|r| {
                r["runs"] == round && r["stage"] == "prove" && r["is_started"] == true
            }) {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        let out = child.wait_with_output().expect("wait");
        show(&["prove-dir (killed at the prover)"], root, &out);
        let seen = record().expect("an attempt record survives the kill");
        assert_eq!(seen["runs"], round, "{seen}");
        assert_eq!(seen["stage"], "prove", "{seen}");
        assert_eq!(seen["partition"], 0, "{seen}");
        assert_eq!(seen["is_solo"], round > 1, "solo after the first: {seen}");
        assert_eq!(seen["crashes"], round.saturating_sub(2), "{seen}");
        assert_nothing_lost(root, &[name], &format!("after kill {round}"));
    }
    // The fifth run does not try again.
    let out = cuzk(&ONCE, root, &[]);
    assert_eq!(out.status.code(), Some(1), "the job failed");
    assert_eq!(
        c1_locations(root),
        vec![(name.to_owned(), "failed".to_owned())]
    );
    let reason: serde_json::Value = serde_json::from_slice(
        &fs::read(root.join("failed/s-t01000-1.error.json")).expect("reason"),
    )
    .expect("JSON");
    assert_eq!(reason["stage"], "crash");
    let message = reason["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("took the prover down 3 times while it was the only file in flight: last seen at stage prove (partition 0)"),
        "{message}"
    );
    assert!(record().is_none(), "the record left with the file");
}

/// Files in flight together when a run dies are not blamed: each is proved alone next, and a
/// run aborted on purpose (a second Ctrl-C) blames nobody at all.
#[test]
fn a_crash_blames_no_file_in_flight_with_others_and_an_abort_blames_nobody() {
    require_update_params();
    let (dir, inbox) = spool();
    let root = dir.path();
    let files = ["s-t01000-11.json", "s-t02000-12.json"];
    for name in files {
        fs::copy(update_fixture(name), inbox.join(name)).expect("copy");
        std::thread::sleep(Duration::from_millis(20));
    }
    let record = |name: &str| -> Option<serde_json::Value> {
        let path = root.join("work/.attempts").join(name);
        serde_json::from_slice(&fs::read(path).ok()?).ok()
    };
    // Both in flight (one synthesizing, one at the prover or queued), then SIGKILL.
    let mut child = spawn(&ONCE, root);
    let deadline = Instant::now() + Duration::from_secs(180);
    while Instant::now() < deadline
        && !files
            .iter()
            .all(|f| record(f).is_some_and(|r| r["is_started"] == true))
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let out = child.wait_with_output().expect("wait");
    show(&["prove-dir (killed with two files in flight)"], root, &out);
    assert_nothing_lost(root, &files, "after the kill");
    // Two Ctrl-Cs while the next run proves them alone: the abort leaves its marker.
    let child = spawn(&ONCE, root);
    let deadline = Instant::now() + Duration::from_secs(180);
    while Instant::now() < deadline
        && !files
            .iter()
            .any(|f| record(f).is_some_and(|r| r["runs"] == 2 && r["is_started"] == true))
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    signal(&child, libc::SIGINT);
    std::thread::sleep(Duration::from_millis(200));
    signal(&child, libc::SIGINT);
    let out = child.wait_with_output().expect("wait");
    show(&["prove-dir (two SIGINTs)"], root, &out);
    assert_eq!(out.status.code(), Some(130));
    assert_nothing_lost(root, &files, "after the abort");
    // With --max-attempts 1 a single crash blamed on either would fail it: none is.
    let strict = [&ONCE[..], &["--max-attempts", "1"]].concat();
    let out = cuzk(&strict, root, &[]);
    assert_eq!(out.status.code(), Some(0), "both proved, neither blamed");
    for name in files {
        let job = name.trim_end_matches(".json");
        let proof = fs::read(root.join("outbox").join(format!("{job}.proof"))).expect("proof");
        assert!(
            verifies_update(&root.join("done").join(name), &proof),
            "{job}"
        );
    }
}

#[test]
fn sigterm_stops_a_watching_run_cleanly() {
    let (dir, _inbox) = spool();
    let mut child = spawn(&["prove-dir", "inbox", "--poll-secs", "0.2"], dir.path());
    assert!(wait_for_text(
        &dir.path().join("timeline.csv"),
        "RUN_START",
        30
    ));
    let started = Instant::now();
    signal(&child, libc::SIGTERM);
    let status = child.wait().expect("wait");
    assert!(status.success(), "{status:?}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "stopped promptly"
    );
    let timeline = fs::read_to_string(dir.path().join("timeline.csv")).expect("timeline");
    assert!(
        timeline.contains(",STOP,") && timeline.contains(",RUN_END,"),
        "{timeline}"
    );
}

#[test]
fn a_file_still_being_written_is_waited_for_then_proved() {
    require_update_params();
    let (dir, inbox) = spool();
    let bytes = fs::read(update_fixture("s-t01000-11.json")).expect("fixture");
    let path = inbox.join("s-t01000-11.json");
    let (head, tail) = bytes.split_at(bytes.len() / 2);
    let mut writer = fs::File::create(&path).expect("create");
    writer.write_all(head).expect("head");
    writer.flush().expect("flush");
    let mut child = spawn(
        &[
            "prove-dir",
            "inbox",
            "--poll-secs",
            "0.2",
            "--settle-secs",
            "0.1",
        ],
        dir.path(),
    );
    let timeline = dir.path().join("timeline.csv");
    assert!(
        wait_for_text(&timeline, ",DEFERRED,", 60),
        "the half file is deferred"
    );
    writer.write_all(tail).expect("tail");
    drop(writer);
    let proved = wait_for_text(&timeline, ",DONE,", 600);
    signal(&child, libc::SIGTERM);
    let status = child.wait().expect("wait");
    assert!(proved, "the completed file is proved");
    assert!(status.success(), "{status:?}");
    assert!(
        names(&dir.path().join("failed")).is_empty(),
        "nothing failed"
    );
    let proof = fs::read(dir.path().join("outbox/s-t01000-11.proof")).expect("proof");
    assert!(verifies_update(
        &dir.path().join("done/s-t01000-11.json"),
        &proof
    ));
}

#[test]
fn an_outbox_that_stops_taking_results_hands_the_file_back() {
    require_update_params();
    let (dir, inbox) = spool();
    copy_update_fixture(&inbox, "s-t01000-11.json");
    let child = spawn(&ONCE, dir.path());
    let timeline = dir.path().join("timeline.csv");
    assert!(
        wait_for_text(&timeline, ",GPU_START,", 300),
        "proving started"
    );
    // The outbox disappears under the run (as a full or unmounted disk would fail writes).
    let outbox = dir.path().join("outbox");
    fs::remove_dir_all(&outbox).expect("remove outbox");
    fs::write(&outbox, b"not a directory").expect("block outbox");
    let out = child.wait_with_output().expect("wait");
    show(&ONCE, dir.path(), &out);
    assert_eq!(out.status.code(), Some(2), "the run stops with an error");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("cannot write results"), "{stderr}");
    assert_eq!(
        names(&inbox),
        vec!["s-t01000-11.json"],
        "handed back, not lost or failed"
    );
    assert!(names(&dir.path().join("failed")).is_empty());
}

#[test]
fn two_runs_on_one_spool_prove_each_file_exactly_once() {
    require_update_params();
    let (dir, inbox) = spool();
    // Two files for two runs racing to claim them.
    let files = ["s-t01000-11.json", "s-t02000-12.json"];
    for name in files {
        fs::copy(update_fixture(name), inbox.join(name)).expect("copy");
    }
    let first = spawn(&ONCE, dir.path());
    let second = spawn(&ONCE, dir.path());
    for (i, child) in [first, second].into_iter().enumerate() {
        let out = child.wait_with_output().expect("wait");
        show(&["prove-dir (run", &format!("{i})")], dir.path(), &out);
        assert_eq!(out.status.code(), Some(0), "run {i}");
    }
    let timeline = fs::read_to_string(dir.path().join("timeline.csv")).expect("timeline");
    for name in files {
        let job = name.trim_end_matches(".json");
        let done = timeline
            .lines()
            .filter(|l| l.contains(",DONE,") && l.contains(&format!(",{job},")))
            .count();
        assert_eq!(done, 1, "{job} proved once across both runs:\n{timeline}");
        let proof =
            fs::read(dir.path().join("outbox").join(format!("{job}.proof"))).expect("proof");
        assert!(
            verifies_update(&dir.path().join("done").join(name), &proof),
            "{job} verifies"
        );
    }
    assert_nothing_lost(dir.path(), &files, "after both runs");
    let runs: std::collections::BTreeSet<&str> = timeline
        .lines()
        .skip(1)
        .filter_map(|l| l.split(',').next())
        .collect();
    assert_eq!(runs.len(), 2, "both runs appended to one timeline");
}

#[test]
fn a_run_whose_claim_was_taken_over_while_it_stood_still_leaves_the_file_to_the_taker() {
    require_update_params();
    let (dir, inbox) = spool();
    let root = dir.path();
    let name = "s-t01000-11.json";
    fs::copy(update_fixture(name), inbox.join(name)).expect("copy");
    // Run A stands still in its first call (stopped, as a frozen VM would be) past its lease:
    // run B takes its claim over and proves the file. A, resumed, proves it too but finds its
    // claim gone before writing: it writes nothing and says so, with no "free space" halt.
    let with_lease = |timeline: &'static str| {
        [
            &ONCE[..],
            &[
                "--backend",
                "cpu",
                "--lease-secs",
                "1",
                "--timeline",
                timeline,
            ],
        ]
        .concat()
    };
    let a_args = with_lease("a.csv");
    let a = cuzk_command(&a_args, root)
        .env(cuzk::pipeline::FAULT_INJECTION_VARIABLE, "stall=1:6")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn run A");
    assert!(
        wait_for_text(&root.join("a.csv"), ",GPU_START,", 120),
        "run A started proving"
    );
    signal(&a, libc::SIGSTOP);
    std::thread::sleep(Duration::from_secs(3));
    let b = cuzk(&with_lease("b.csv"), root, &[]);
    signal(&a, libc::SIGCONT);
    assert_eq!(b.status.code(), Some(0), "run B proved the file");
    let b_timeline = fs::read_to_string(root.join("b.csv")).expect("B's timeline");
    assert!(b_timeline.contains(",DONE,"), "{b_timeline}");
    let a = a.wait_with_output().expect("wait for run A");
    show(&a_args, root, &a);
    let stderr = String::from_utf8_lossy(&a.stderr);
    assert_eq!(
        a.status.code(),
        Some(0),
        "run A ends as a run that had nothing to do"
    );
    assert!(!stderr.contains("free space"), "{stderr}");
    assert_eq!(
        stderr
            .matches("this run's claims were taken over by another run")
            .count(),
        1,
        "said once, when it woke: {stderr}"
    );
    assert!(!stderr.contains("left in the inbox"), "{stderr}");
    let a_timeline = fs::read_to_string(root.join("a.csv")).expect("A's timeline");
    assert!(
        a_timeline
            .lines()
            .any(|l| l.contains(",CLAIM_TAKEN,") && l.contains("another run took this claim over")),
        "{a_timeline}"
    );
    assert!(
        !a_timeline.contains(",DONE,"),
        "A wrote nothing: {a_timeline}"
    );
    let proof = fs::read(root.join("outbox/s-t01000-11.proof")).expect("B's proof");
    assert!(verifies_update(&root.join("done").join(name), &proof));
    assert_nothing_lost(root, &[name], "after both runs");
}

/// Leaves `bytes` as a claim of a run on another host that stopped beating an hour ago, as a
/// run killed while proving it would (taken over by the next run given `--lease-secs 1`).
fn leave_dead_claim(root: &Path, name: &str, bytes: &[u8]) {
    let owner = root.join("work/otherhost-42");
    fs::create_dir_all(&owner).expect("owner dir");
    let record = owner.join(".owner.json");
    fs::write(
        &record,
        br#"{"host":"otherhost","pid":42,"started_at":"2026-01-01T00:00:00Z"}"#,
    )
    .expect("owner record");
    fs::write(owner.join(name), bytes).expect("claim");
    // The record's age is the heartbeat, and the directory's stands in for an unreadable one.
    let hour_ago = SystemTime::now() - Duration::from_secs(3600);
    for beat in [&record, &owner] {
        fs::File::open(beat)
            .and_then(|f| f.set_modified(hour_ago))
            .expect("age the heartbeat");
    }
}

fn recorded_digest(outbox_record: &Path) -> String {
    let record: serde_json::Value =
        serde_json::from_slice(&fs::read(outbox_record).expect("record")).expect("json");
    record["c1_blake3"]
        .as_str()
        .unwrap_or_else(|| panic!("no c1_blake3 in {record}"))
        .to_owned()
}

#[test]
fn a_resumed_claim_is_retired_only_onto_its_own_c1s_proof() {
    // An update input: its digest is recorded and compared as a C1 file's is.
    require_update_params();
    let (dir, inbox) = spool();
    let root = dir.path();
    let name = "s-t01000-11.json";
    let first = fs::read(update_fixture(name)).expect("fixture");
    fs::write(inbox.join(name), &first).expect("copy");
    let out = cuzk(&ONCE, root, &[]);
    assert_eq!(out.status.code(), Some(0));
    let (proof_path, record_path) = (
        root.join("outbox/s-t01000-11.proof"),
        root.join("outbox/s-t01000-11.json"),
    );
    let first_proof = fs::read(&proof_path).expect("first proof");
    let first_record = fs::read(&record_path).expect("first record");
    assert_eq!(
        recorded_digest(&record_path),
        blake3::hash(&first).to_hex().to_string(),
        "the record names the bytes it was proved from"
    );

    // Killed after writing the proof, before moving the input: the same bytes are retired
    // onto the proof there, which is not made again.
    leave_dead_claim(root, name, &first);
    let resume = [&ONCE[..], &["--lease-secs", "1"]].concat();
    let out = cuzk(&resume, root, &[]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(fs::read(&record_path).expect("record"), first_record);
    assert!(!root.join("outbox/superseded").exists());
    assert_eq!(
        c1_locations(root),
        vec![
            (name.to_owned(), "done".to_owned()),
            (format!("{name}.1"), "done".to_owned())
        ]
    );

    // The input was made again for the sector (here: the same input written out anew,
    // pretty-printed, so the bytes differ), and the run proving it was killed. The earlier
    // proof is not this file's.
    let value: serde_json::Value = serde_json::from_slice(&first).expect("update JSON");
    let second = serde_json::to_vec_pretty(&value).expect("rewrite");
    assert_ne!(second, first, "the rewrite differs in bytes");
    leave_dead_claim(root, name, &second);
    let out = cuzk(&resume, root, &[]);
    assert_eq!(out.status.code(), Some(0));
    let log =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    assert!(
        log.contains("made from another C1 file"),
        "the log says why"
    );
    assert_superseded_and_proved(root, name, (&first, &first_proof, &first_record), &second);
}

#[test]
fn a_new_inbox_file_whose_name_has_a_proof_is_judged_by_its_digest() {
    // As a resumed claim is: the same bytes go to done/ at once, other bytes (lotus ran C1
    // again for the sector) set the earlier proof aside and are proved.
    require_update_params();
    let (dir, inbox) = spool();
    let root = dir.path();
    let name = "s-t01000-11.json";
    let first = fs::read(update_fixture(name)).expect("fixture");
    fs::write(inbox.join(name), &first).expect("copy");
    assert_eq!(cuzk(&ONCE, root, &[]).status.code(), Some(0));
    let (proof_path, record_path) = (
        root.join("outbox/s-t01000-11.proof"),
        root.join("outbox/s-t01000-11.json"),
    );
    let first_proof = fs::read(&proof_path).expect("first proof");
    let first_record = fs::read(&record_path).expect("first record");

    // The same bytes dropped again: retired onto the proof there, not proved again.
    fs::write(inbox.join(name), &first).expect("copy again");
    let out = cuzk(&ONCE, root, &[]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(fs::read(&record_path).expect("record"), first_record);
    assert_eq!(fs::read(&proof_path).expect("proof"), first_proof);
    assert!(!root.join("outbox/superseded").exists());
    assert!(names(&root.join("failed")).is_empty(), "nothing failed");
    assert_eq!(
        c1_locations(root),
        vec![
            (name.to_owned(), "done".to_owned()),
            (format!("{name}.1"), "done".to_owned())
        ]
    );

    // New bytes for the sector: the earlier proof is kept aside and the new file proved.
    let value: serde_json::Value = serde_json::from_slice(&first).expect("update JSON");
    let second = serde_json::to_vec_pretty(&value).expect("rewrite");
    assert_ne!(second, first, "the rewrite differs in bytes");
    fs::write(inbox.join(name), &second).expect("new bytes");
    let out = cuzk(&ONCE, root, &[]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_superseded_and_proved(root, name, (&first, &first_proof, &first_record), &second);
}

/// After the update C1 file `name` first proved from `first` (its proof and record given)
/// came again as `second`: the earlier proof and record are kept under outbox/superseded/
/// by the old digest, the outbox holds a proof of `second` that verifies, `second` is the
/// third `name` in done/, nothing failed and the timeline says SUPERSEDED.
fn assert_superseded_and_proved(
    root: &Path,
    name: &str,
    (first, first_proof, first_record): (&[u8], &[u8], &[u8]),
    second: &[u8],
) {
    let (proof_path, record_path) = (
        root.join("outbox/s-t01000-11.proof"),
        root.join("outbox/s-t01000-11.json"),
    );
    let old16 = &blake3::hash(first).to_hex()[..16];
    let kept = root.join(format!("outbox/superseded/s-t01000-11.c1-{old16}.proof"));
    assert_eq!(fs::read(&kept).expect("old proof kept"), first_proof);
    assert_eq!(
        fs::read(kept.with_extension("json")).expect("old record kept"),
        first_record
    );
    assert_eq!(
        recorded_digest(&record_path),
        blake3::hash(second).to_hex().to_string(),
        "the outbox now holds the new file's proof"
    );
    let proved = root.join(format!("done/{name}.2"));
    assert_eq!(fs::read(&proved).expect("new input in done"), second);
    assert!(verifies_update(
        &proved,
        &fs::read(&proof_path).expect("new proof")
    ));
    assert!(names(&root.join("failed")).is_empty(), "nothing failed");
    let timeline = fs::read_to_string(root.join("timeline.csv")).expect("timeline");
    assert!(
        timeline.contains(",SUPERSEDED,s-t01000-11,"),
        "the timeline says so:\n{timeline}"
    );
}
