//! The GPU conventions of Filecoin's other provers, through the real binary on a machine (or
//! build) without a GPU: `--require-gpu` stops before claiming anything, `BELLMAN_NO_GPU` is
//! honoured, `RUST_GPU_TOOLS_CUSTOM_GPU` is said to be ignored, and a CPU run never waits for
//! bellperson's GPU priority lock.

mod common;

use std::fs::{self, File};
use std::path::Path;
use std::process::Output;

use common::{
    copy_update_fixture, cuzk_command, fixture, names, require_update_params, show, spool,
};

/// Runs `cuzk args` in `cwd` with `envs` set, showing the whole story.
fn run(args: &[&str], cwd: &Path, envs: &[(&str, &str)]) -> Output {
    let mut cmd = cuzk_command(args, cwd);
    for var in [
        "BELLMAN_NO_GPU",
        "RUST_GPU_TOOLS_CUSTOM_GPU",
        "BELLMAN_CUSTOM_GPU",
    ] {
        cmd.env_remove(var);
    }
    cmd.envs(envs.iter().copied());
    let out = cmd.output().expect("running cuzk");
    show(args, cwd, &out);
    out
}

/// A spool whose inbox holds one real C1 file; returns its bytes.
fn spool_with_a_file() -> (tempfile::TempDir, Vec<u8>) {
    let (dir, inbox) = spool();
    let bytes = fs::read(fixture("s-t01000-1.json")).expect("fixture");
    fs::write(inbox.join("s-t01000-1.json"), &bytes).expect("copy");
    (dir, bytes)
}

/// The file is where it was, byte for byte, and the run made no spool around it.
fn assert_untouched(root: &Path, bytes: &[u8]) {
    assert_eq!(names(&root.join("inbox")), ["s-t01000-1.json"]);
    let now = fs::read(root.join("inbox/s-t01000-1.json")).expect("still there");
    assert!(now == bytes, "the inbox file changed");
    assert_eq!(names(root), ["inbox"], "the run touched the spool");
}

#[test]
fn require_gpu_stops_before_claiming_when_the_run_would_prove_on_the_cpu() {
    // This test runs on the default build, which has no GPU support at all.
    if cfg!(feature = "cuda") {
        return;
    }
    let (dir, bytes) = spool_with_a_file();
    let out = run(
        &["prove-dir", "inbox", "--once", "--require-gpu"],
        dir.path(),
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "cuzk: error: --require-gpu: this run would prove on the CPU (this cuzk was built without the `cuda` feature), and a CPU proof of a 32GiB sector takes hours"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("(hint: "), "{stderr}");
    assert_untouched(dir.path(), &bytes);
}

#[test]
fn require_gpu_names_bellman_no_gpu_and_gpus_none() {
    let (dir, bytes) = spool_with_a_file();
    let out = run(
        &["prove-dir", "inbox", "--once", "--require-gpu"],
        dir.path(),
        &[("BELLMAN_NO_GPU", "1")],
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("would prove on the CPU (BELLMAN_NO_GPU=\"1\" is set"),
        "{stderr}"
    );
    assert_untouched(dir.path(), &bytes);

    let out = run(
        &[
            "prove-dir",
            "inbox",
            "--once",
            "--require-gpu",
            "--gpus",
            "none",
        ],
        dir.path(),
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("would prove on the CPU (--gpus none)"),
        "{stderr}"
    );
    assert_untouched(dir.path(), &bytes);
}

#[test]
fn a_cpu_run_notes_ignored_variables_and_never_waits_for_the_priority_lock() {
    // A SnapDeals update input: its proof goes through the same prover (and would through
    // the same lock) as a C1 file's, in about half the time.
    require_update_params();
    let (dir, inbox) = spool();
    copy_update_fixture(&inbox, "s-t01000-11.json");
    // A PoSt holding bellperson's priority lock for the whole run: in the TMPDIR the run
    // sees, so the lock is this test's alone.
    let tmp = tempfile::tempdir().expect("tmp");
    let lock_path = tmp.path().join("bellman.priority.lock");
    let post = File::create(&lock_path).expect("lock file");
    post.lock().expect("exclusive lock");
    let tmp_dir = tmp.path().to_str().expect("utf-8 temp path");
    let out = run(
        &["prove-dir", "inbox", "--once", "--settle-secs", "0"],
        dir.path(),
        &[
            ("TMPDIR", tmp_dir),
            ("BELLMAN_NO_GPU", "1"),
            ("RUST_GPU_TOOLS_CUSTOM_GPU", "GeForce RTX 3090:10496"),
        ],
    );
    assert_eq!(out.status.code(), Some(0));
    assert!(dir.path().join("outbox/s-t01000-11.proof").is_file());
    let stderr = String::from_utf8_lossy(&out.stderr);
    let notes: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("cuzk: note: "))
        .collect();
    assert!(
        notes
            .iter()
            .any(|l| l.contains("RUST_GPU_TOOLS_CUSTOM_GPU=\"GeForce RTX 3090:10496\" is ignored")),
        "{stderr}"
    );
    // Said once.
    assert_eq!(
        notes
            .iter()
            .filter(|l| l.contains("BELLMAN_NO_GPU=\"1\" is set")
                && l.ends_with(": proving on the CPU"))
            .count(),
        1,
        "{stderr}"
    );
    let timeline = fs::read_to_string(dir.path().join("timeline.csv")).expect("timeline");
    assert!(!timeline.contains("PRIORITY_WAIT"), "{timeline}");
    assert!(timeline.contains(",GPU_END,"), "{timeline}");
    post.unlock().expect("unlock");
}

#[test]
fn every_run_flag_can_come_from_its_cuzk_variable_and_the_command_line_wins() {
    // A service sets CUZK_REQUIRE_GPU and CUZK_GPUS in its environment, as it would pass
    // --require-gpu --gpus none: the run refuses the CPU just the same.
    let (dir, bytes) = spool_with_a_file();
    let env = [
        ("CUZK_REQUIRE_GPU", "true"),
        ("CUZK_GPUS", "none"),
        ("CUZK_ONCE", "1"),
    ];
    let out = run(&["prove-dir", "inbox"], dir.path(), &env);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--require-gpu: this run would prove on the CPU"),
        "{stderr}"
    );
    assert_untouched(dir.path(), &bytes);
    // A bad value is named with its variable.
    let out = run(
        &["prove-dir", "inbox", "--once"],
        dir.path(),
        &[("CUZK_BACKEND", "quantum")],
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("quantum") && stderr.contains("--backend"),
        "{stderr}"
    );
    assert_untouched(dir.path(), &bytes);
    // The command line wins over the environment: the bad variable is not even read.
    let out = run(
        &[
            "prove-dir",
            "inbox",
            "--once",
            "--backend",
            "cpu",
            "--require-gpu",
        ],
        dir.path(),
        &[("CUZK_BACKEND", "quantum")],
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("quantum")
            && stderr.contains("--require-gpu: this run would prove on the CPU"),
        "{stderr}"
    );
    assert_untouched(dir.path(), &bytes);
}
