//! `--prover-cpus`: the run restarts itself with SupraSeal's CPUs set apart, and says so.
#![cfg(target_os = "linux")]

use std::process::Command;

fn cuzk() -> Command {
    Command::new(env!("CARGO_BIN_EXE_cuzk"))
}

/// The CPUs this test process may run on (its affinity, as cuzk splits them; a cgroup's CPU
/// quota does not count).
fn allowed_cpus() -> usize {
    // SAFETY: a zeroed set filled by sched_getaffinity, its size passed along.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return 1;
        }
        libc::CPU_COUNT(&set) as usize
    }
}

#[test]
fn a_run_with_prover_cpus_restarts_split_and_records_it() {
    if allowed_cpus() < 2 {
        eprintln!("skipped: --prover-cpus needs two CPUs and this process has one");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let inbox = dir.path().join("inbox");
    std::fs::create_dir(&inbox).expect("inbox");
    let out = cuzk()
        .args([
            "prove-dir",
            "--once",
            "--settle-secs",
            "0",
            "--prover-cpus",
            "1",
        ])
        .arg(&inbox)
        .output()
        .expect("run cuzk");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // Printed only by the restarted process, once it moved itself off the prover's CPU.
    let n = allowed_cpus();
    assert!(
        stderr.contains("CPUs split: SupraSeal's host threads on 1 CPU(s) ("),
        "{stderr}"
    );
    let rest = format!("synthesis and the rest of cuzk on {} (", n - 1);
    assert!(stderr.contains(&rest), "{stderr}");
    // Without SupraSeal in the build nothing uses those CPUs, and the run says so.
    if !cfg!(feature = "supraseal") {
        assert!(stderr.contains("they stay idle"), "{stderr}");
    }
    let timeline = std::fs::read_to_string(dir.path().join("timeline.csv")).expect("timeline");
    let run_start = timeline
        .lines()
        .find(|line| line.contains(",RUN_START,"))
        .expect("RUN_START row");
    assert!(run_start.contains(";prover_cpus=1;"), "{run_start}");
    // The defaults count the synthesis side only: a quarter and half of its n - 1 CPUs
    // (available_parallelism, which they use, may be lower still under a cgroup quota).
    let synthesis = std::thread::available_parallelism()
        .map_or(1, |c| c.get())
        .min(n - 1);
    assert!(
        run_start.contains(&format!(";synth_jobs={};", (synthesis / 4).max(1))),
        "{run_start}"
    );
    assert!(
        run_start.contains(&format!(";synthesis_threads={};", (synthesis / 2).max(1))),
        "{run_start}"
    );
}

#[test]
fn too_many_prover_cpus_is_refused_before_anything_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let inbox = dir.path().join("inbox");
    std::fs::create_dir(&inbox).expect("inbox");
    let out = cuzk()
        .args(["prove-dir", "--once", "--prover-cpus", "100000"])
        .arg(&inbox)
        .output()
        .expect("run cuzk");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--prover-cpus 100000"), "{stderr}");
    assert!(!dir.path().join("timeline.csv").exists(), "nothing ran");
}
