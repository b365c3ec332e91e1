//! Two runs on one spool as two containers of one host would run them: each in a pid and a
//! UTS namespace of its own (`unshare`), with the same host name, and cuzk as PID 1 in both.
//! Each must claim into a directory of its own, neither may take the other for dead or
//! resume its claims, and every file is proved exactly once. The files are the 2KiB
//! SnapDeals update fixtures of two miners (one partition each); the test needs the 2KiB
//! update parameters.
//!
//! `unshare` needs root (or user namespaces) to make the namespaces: where it is refused the
//! test says so on stderr, SKIPPED with the reason, and proves nothing.

mod common;

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{names, require_update_params, show, update_fixture, verifies_update};

const HOST: &str = "samehost";

/// Why `unshare` cannot make the namespaces here, if it cannot.
fn unshare_refused() -> Option<String> {
    match Command::new("unshare")
        .args(["--pid", "--uts", "--fork", "--mount-proc", "true"])
        .output()
    {
        Ok(out) if out.status.success() => None,
        Ok(out) => Some(format!(
            "`unshare --pid --uts --fork --mount-proc true` failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Err(err) => Some(format!("cannot run unshare: {err}")),
    }
}

/// `cuzk prove-dir inbox --once` as PID 1 of fresh pid and UTS namespaces named [`HOST`].
fn spawn_contained(root: &Path) -> Child {
    Command::new("unshare")
        .args(["--pid", "--uts", "--fork", "--mount-proc", "sh", "-c"])
        .arg(format!("hostname {HOST} && exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_cuzk"))
        .args([
            "prove-dir",
            "inbox",
            "--once",
            "--settle-secs",
            "0",
            "--incomplete-grace-secs",
            "0",
        ])
        .current_dir(root)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn unshare")
}

/// The owner directories in `work/` now.
fn owner_dirs(root: &Path) -> Vec<String> {
    names(&root.join("work"))
        .into_iter()
        .filter(|n| !n.starts_with('.'))
        .collect()
}

#[test]
fn two_runs_with_one_host_name_and_pid_1_never_share_or_take_each_others_claims() {
    if let Some(reason) = unshare_refused() {
        eprintln!("SKIPPED, not run: {reason} (run the test as root to make the namespaces)");
        return;
    }
    require_update_params();
    let (dir, inbox) = common::spool();
    let root = dir.path();
    // Two files are enough: each run makes its owner directory when it starts, and the
    // second starts while the first holds its first claim, long before that is proved.
    let files = ["s-t01000-11.json", "s-t02000-12.json"];
    for name in files {
        fs::copy(update_fixture(name), inbox.join(name)).expect("copy");
        std::thread::sleep(Duration::from_millis(20));
    }
    let first = spawn_contained(root);
    // The second starts once the first holds a claim: the moment a run with its host name
    // and pid used to resume the other's claims as its own.
    let deadline = Instant::now() + Duration::from_secs(300);
    let has_claim = || {
        owner_dirs(root).iter().any(|d| {
            names(&root.join("work").join(d))
                .iter()
                .any(|n| n.ends_with(".json") && !n.starts_with('.'))
        })
    };
    while !has_claim() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(has_claim(), "the first run claimed a file");
    let second = spawn_contained(root);
    let mut seen = BTreeSet::new();
    let mut owners = BTreeSet::new();
    let (mut first, mut second) = (Some(first), Some(second));
    let mut outputs = Vec::new();
    while first.is_some() || second.is_some() {
        for dir_name in owner_dirs(root) {
            if let Ok(record) = fs::read(root.join("work").join(&dir_name).join(".owner.json")) {
                let record: serde_json::Value =
                    serde_json::from_slice(&record).expect("owner record");
                owners.insert((record["pid"].to_string(), record["pid_ns"].to_string()));
            }
            seen.insert(dir_name);
        }
        for child in [&mut first, &mut second] {
            if child
                .as_mut()
                .is_some_and(|c| c.try_wait().ok().flatten().is_some())
            {
                let done = child.take().expect("a child");
                outputs.push(done.wait_with_output().expect("output"));
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    for out in &outputs {
        show(&["prove-dir (in namespaces)"], root, out);
        assert_eq!(out.status.code(), Some(0), "both runs succeed");
    }
    assert!(
        seen.iter().all(|d| d.starts_with(&format!("{HOST}-1-"))),
        "both are {HOST}, pid 1: {seen:?}"
    );
    assert!(seen.len() >= 2, "a directory each: {seen:?}");
    assert!(
        owners.len() >= 2 && owners.iter().all(|(pid, _)| pid == "1"),
        "pid 1 in two pid namespaces: {owners:?}"
    );
    let timeline = fs::read_to_string(root.join("timeline.csv")).expect("timeline");
    for name in files {
        let job = name.trim_end_matches(".json");
        let proved = timeline
            .lines()
            .filter(|l| l.contains(",DONE,") && l.contains(&format!(",{job},")))
            .count();
        assert_eq!(proved, 1, "{job} proved once:\n{timeline}");
        let proof = fs::read(root.join(format!("outbox/{job}.proof"))).expect("proof");
        assert!(
            verifies_update(&root.join("done").join(name), &proof),
            "{job} verifies"
        );
    }
    assert_eq!(names(&root.join("done")), files, "each once in done/");
    assert!(names(&root.join("failed")).is_empty());
    assert!(owner_dirs(root).is_empty(), "both tidied their own");
}
