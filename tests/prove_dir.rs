//! End to end: the real `cuzk prove-dir` on a temporary spool of real 2KiB C1 files, every
//! proof checked independently with filecoin-proofs' `verify_seal`.
//!
//! Needs the 2KiB Groth16 parameters in the parameter cache (`cuzk params gen --sector-size
//! 2KiB`, which `.ci/run` does first).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use cuzk::c1::{read_c1_file, resolve_identity, DEFAULT_MAX_C1_BYTES};
use filecoin_proofs_api::seal::verify_seal;
use filecoin_proofs_api::SectorId;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/c1")
        .join(name)
}

fn require_params() {
    let (params, vk) = cuzk::params::param_paths(2048).expect("param paths");
    assert!(
        params.is_file() && vk.is_file(),
        "2KiB parameters missing at {}: run `cargo run -- params gen --sector-size 2KiB` first (.ci/run does)",
        params.display()
    );
}

/// Runs the real binary and prints everything about it if `check` fails.
fn cuzk(args: &[&str], cwd: &Path, envs: &[(&str, &Path)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_cuzk"));
    cmd.args(args).current_dir(cwd);
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("running cuzk");
    eprintln!(
        "$ cuzk {}\n(cwd {})\nexit: {:?}\n--- stdout\n{}\n--- stderr\n{}",
        args.join(" "),
        cwd.display(),
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// `verify_seal` on `proof` for the sector the C1 file at `c1_path` belongs to.
fn verify_with_filecoin_proofs(c1_path: &Path, proof: &[u8], sector_offset: u64) -> bool {
    let c1 = read_c1_file(c1_path, DEFAULT_MAX_C1_BYTES).expect("C1");
    let id = resolve_identity(c1_path, &c1, None).expect("identity");
    let out = &c1.output;
    verify_seal(
        out.registered_proof,
        out.comm_r,
        out.comm_d,
        id.prover_id(),
        SectorId::from(id.sector_num + sector_offset),
        out.ticket,
        out.seed,
        proof,
    )
    .unwrap_or(false)
}

#[test]
fn proves_several_miners_in_both_forms_and_quarantines_bad_files() {
    require_params();
    let dir = tempfile::tempdir().expect("tempdir");
    let inbox = dir.path().join("inbox");
    fs::create_dir(&inbox).expect("inbox");
    let good = ["s-t01000-1.json", "s-t01000-2.json", "s-t02000-7.json"];
    for name in good {
        fs::copy(fixture(name), inbox.join(name)).expect("copy fixture");
    }
    // Garbage, and a real C1 file under another miner's name.
    fs::write(inbox.join("s-t01000-9.json"), b"\x00\x01 not a C1 file").expect("garbage");
    fs::copy(fixture("s-t01000-1.json"), inbox.join("s-t01001-1.json")).expect("copy");
    // rsync's temporary name: never touched.
    fs::write(inbox.join(".s-t01000-3.json.x7Yz9"), b"{").expect("rsync temp");

    let out = cuzk(
        &["prove-dir", "inbox", "--once", "--settle-secs", "0"],
        dir.path(),
        &[],
    );
    assert_eq!(out.status.code(), Some(1), "exit 1: some jobs failed");

    let outbox = dir.path().join("outbox");
    for name in good {
        let job = name.trim_end_matches(".json");
        let proof = fs::read(outbox.join(format!("{job}.proof"))).expect("proof written");
        assert_eq!(proof.len(), 192, "{job}: one partition, 192 bytes");
        let done = dir.path().join("done").join(name);
        assert!(
            verify_with_filecoin_proofs(&done, &proof, 0),
            "{job} verifies"
        );
        // The same proof for another sector, or with one byte flipped, must not verify.
        assert!(
            !verify_with_filecoin_proofs(&done, &proof, 1),
            "{job}: wrong sector"
        );
        let mut flipped = proof.clone();
        flipped[100] ^= 1;
        assert!(
            !verify_with_filecoin_proofs(&done, &flipped, 0),
            "{job}: flipped byte"
        );
        let meta: serde_json::Value =
            serde_json::from_slice(&fs::read(outbox.join(format!("{job}.json"))).expect("meta"))
                .expect("meta is JSON");
        assert_eq!(meta["sector_size"], 2048);
        assert_eq!(meta["registered_proof"], "StackedDrg2KiBV1_1");
        assert_eq!(meta["proof_len"], 192);
    }

    let failed = dir.path().join("failed");
    assert_eq!(
        names(&failed),
        vec![
            "s-t01000-9.error.json",
            "s-t01000-9.json",
            "s-t01001-1.error.json",
            "s-t01001-1.json"
        ]
    );
    let reason = |job: &str| -> serde_json::Value {
        serde_json::from_slice(&fs::read(failed.join(format!("{job}.error.json"))).expect("reason"))
            .expect("reason is JSON")
    };
    assert_eq!(reason("s-t01000-9")["stage"], "parse");
    assert_eq!(reason("s-t01001-1")["stage"], "bind");
    let mismatch = reason("s-t01001-1")["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        mismatch.contains("replica id") && mismatch.contains("s-t01001-1"),
        "{mismatch}"
    );

    // Nothing lost, nothing left behind.
    assert_eq!(names(&inbox), vec![".s-t01000-3.json.x7Yz9"]);
    assert!(names(&dir.path().join("work")).is_empty());
    assert_eq!(names(&dir.path().join("done")), good.to_vec());

    let timeline = fs::read_to_string(dir.path().join("timeline.csv")).expect("timeline");
    for event in [
        "RUN_START",
        "CLAIM",
        "PARSED",
        "SYNTH_START",
        "SYNTH_END",
        "CHAN_SEND",
        "GPU_PICKUP",
        "GPU_START",
        "GPU_END",
        "VERIFY_END",
        "DONE",
        "FAILED",
        "RUN_END",
    ] {
        assert!(
            timeline.contains(&format!(",{event},")),
            "timeline lacks {event}"
        );
    }
    assert_eq!(timeline.matches(",DONE,").count(), 3);

    let waterfall = cuzk(&["waterfall", "timeline.csv"], dir.path(), &[]);
    assert_eq!(waterfall.status.code(), Some(0));
    let text = String::from_utf8_lossy(&waterfall.stdout);
    for name in good {
        assert!(
            text.contains(name.trim_end_matches(".json")),
            "waterfall row for {name}"
        );
    }
}

#[test]
fn missing_parameters_stop_the_run_and_keep_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let inbox = dir.path().join("inbox");
    let empty_cache = dir.path().join("no-params");
    fs::create_dir_all(&inbox).expect("inbox");
    fs::create_dir_all(&empty_cache).expect("cache");
    fs::copy(fixture("s-t01000-1.json"), inbox.join("s-t01000-1.json")).expect("copy");
    let out = cuzk(
        &["prove-dir", "inbox", "--once", "--settle-secs", "0"],
        dir.path(),
        &[("FIL_PROOFS_PARAMETER_CACHE", &empty_cache)],
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("missing Groth16 parameters for 2KiB"),
        "{stderr}"
    );
    assert!(
        stderr.contains("v28-stacked-proof-of-replication"),
        "{stderr}"
    );
    assert!(
        stderr.contains("cuzk params gen --sector-size 2KiB"),
        "{stderr}"
    );
    assert!(stderr.contains("lotus fetch-params"), "{stderr}");
    // The file is handed back, not failed.
    assert_eq!(names(&inbox), vec!["s-t01000-1.json"]);
    assert!(names(&dir.path().join("failed")).is_empty());
}

#[test]
fn params_gen_refuses_production_sizes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = cuzk(
        &["params", "gen", "--sector-size", "32GiB"],
        dir.path(),
        &[("FIL_PROOFS_PARAMETER_CACHE", dir.path())],
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("refusing") && stderr.contains("lotus fetch-params 32GiB"),
        "{stderr}"
    );
    assert!(names(dir.path()).is_empty(), "nothing written");
}
