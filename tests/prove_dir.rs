//! End to end: the real `cuzk prove-dir` on a temporary spool of real 2KiB C1 files, their
//! partitions synthesized from recorded constraints, every proof checked independently with
//! filecoin-proofs' `verify_seal`.
//!
//! Needs the 2KiB Groth16 parameters in the parameter cache (`cuzk params gen --sector-size
//! 2KiB`, which `.ci/run` does first).

mod common;

use std::fs;

use common::{
    cuzk, exposition, fixture, names, prove_inbox_once, require_params, spool_label,
    verifies_for_sector,
};

#[test]
fn proves_several_miners_in_both_forms_and_quarantines_bad_files() {
    require_params();
    let dir = tempfile::tempdir().expect("tempdir");
    let inbox = dir.path().join("inbox");
    fs::create_dir(&inbox).expect("inbox");
    // Both forms (s-t01000-2 bare, s-t02000-7 a lotus-bench wrapper) of two miners.
    let good = ["s-t01000-2.json", "s-t02000-7.json"];
    for name in good {
        fs::copy(fixture(name), inbox.join(name)).expect("copy fixture");
    }
    // Garbage, and a real C1 file under another miner's name.
    fs::write(inbox.join("s-t01000-9.json"), b"\x00\x01 not a C1 file").expect("garbage");
    fs::copy(fixture("s-t01000-1.json"), inbox.join("s-t01001-1.json")).expect("copy");
    // rsync's temporary name: never touched.
    fs::write(inbox.join(".s-t01000-3.json.x7Yz9"), b"{").expect("rsync temp");

    // Constraints recorded ahead, as an operator would, so every partition takes the
    // witness-only pass over the mapped R1CS (a no-op when the cache has them already).
    let out = cuzk(
        &["params", "constraints", "--sector-size", "2KiB"],
        dir.path(),
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "constraints recorded");

    fs::create_dir(dir.path().join("collector")).expect("collector");
    let out = prove_inbox_once(
        dir.path(),
        &["--metrics-textfile", "collector/cuzk-run.prom"],
        &[],
    );
    assert_eq!(out.status.code(), Some(1), "exit 1: some jobs failed");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("proofs are verified against these locally generated keys only"),
        "the run says what its verification is worth: {stderr}"
    );

    // The run's own metrics, as the run left them: what it did, nothing in flight, and only
    // the textfile in the collector's directory (no temporary beside it).
    assert_eq!(names(&dir.path().join("collector")), ["cuzk-run.prom"]);
    let text = fs::read_to_string(dir.path().join("collector/cuzk-run.prom")).expect("metrics");
    let metrics = exposition(&text, &spool_label(dir.path()));
    assert_eq!(
        metrics["cuzk_run_proofs_total{result=\"proved\"}"], 2.0,
        "{text}"
    );
    assert_eq!(
        metrics["cuzk_run_proofs_total{result=\"failed\"}"], 2.0,
        "{text}"
    );
    assert_eq!(metrics["cuzk_run_jobs_in_flight"], 0.0, "{text}");
    assert_eq!(metrics["cuzk_run_partitions_in_flight"], 0.0, "{text}");
    assert_eq!(
        metrics["cuzk_run_proof_duration_seconds_count{kind=\"c2\"}"], 2.0,
        "{text}"
    );
    let slowest_bucket = metrics["cuzk_run_proof_duration_seconds_bucket{kind=\"c2\",le=\"3600\"}"];
    assert_eq!(slowest_bucket, 2.0, "every proof under an hour: {text}");
    assert!(
        metrics["cuzk_run_proof_duration_seconds_sum{kind=\"c2\"}"] > 0.0,
        "{text}"
    );
    assert!(metrics["cuzk_run_memory_budget_bytes"] > 0.0, "{text}");
    // What a provider alerts on: the two failures by their stage, the prover up, its
    // parameters loaded once.
    let failures = |stage: &str| metrics[&format!("cuzk_run_failures_total{{stage=\"{stage}\"}}")];
    assert_eq!(
        (failures("parse"), failures("bind")),
        (1.0, 1.0),
        "garbage, another miner's: {text}"
    );
    assert_eq!(failures("prove"), 0.0, "{text}");
    assert_eq!(
        metrics["cuzk_run_prover_up{prover=\"cpu-0\"}"], 1.0,
        "{text}"
    );
    assert_eq!(metrics["cuzk_run_params_loads_total"], 1.0, "{text}");
    assert!(metrics["cuzk_run_resident_memory_bytes"] > 1e6, "{text}");

    let outbox = dir.path().join("outbox");
    for name in good {
        let job = name.trim_end_matches(".json");
        let proof = fs::read(outbox.join(format!("{job}.proof"))).expect("proof written");
        assert_eq!(proof.len(), 192, "{job}: one partition, 192 bytes");
        let done = dir.path().join("done").join(name);
        assert!(verifies_for_sector(&done, &proof, 0), "{job} verifies");
        // The same proof for another sector, or with one byte flipped, must not verify.
        assert!(
            !verifies_for_sector(&done, &proof, 1),
            "{job}: wrong sector"
        );
        let mut flipped = proof.clone();
        flipped[100] ^= 1;
        assert!(
            !verifies_for_sector(&done, &flipped, 0),
            "{job}: flipped byte"
        );
        let meta: serde_json::Value =
            serde_json::from_slice(&fs::read(outbox.join(format!("{job}.json"))).expect("meta"))
                .expect("meta is JSON");
        assert_eq!(meta["sector_size"], 2048);
        assert_eq!(meta["registered_proof"], "StackedDrg2KiBV1_1");
        assert_eq!(meta["proof_len"], 192);
        // The test cache's parameters were generated here: "verified" says against what.
        let verified_with = meta["verified_with"].as_str().unwrap_or_default();
        assert!(
            verified_with.contains("locally generated INSECURE test keys"),
            "{verified_with}"
        );
        // The sector and the proof as lotus-bench prints them.
        let c1 = cuzk::c1::read_c1_file(&done, cuzk::c1::DEFAULT_MAX_C1_BYTES).expect("C1");
        let id = cuzk::c1::resolve_identity(&done, &c1, None).expect("identity");
        assert_eq!(meta["miner_id"], id.miner_id, "{job}");
        assert_eq!(meta["sector_num"], id.sector_num, "{job}");
        assert_eq!(meta["comm_r"], hex::encode(c1.output.comm_r));
        assert_eq!(meta["comm_d"], hex::encode(c1.output.comm_d));
        assert_eq!(meta["proof_hex"], hex::encode(&proof));
        let cid = meta["comm_r_cid"].as_str().unwrap_or_default();
        assert!(cid.starts_with("bagboea4b5abc"), "{cid}");
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
    assert_eq!(timeline.matches(",DONE,").count(), 2);
    // Every partition was synthesized from the recorded constraints (the bad files fail
    // before synthesis).
    let synth_ends: Vec<&str> = timeline
        .lines()
        .filter(|l| l.contains(",SYNTH_END,"))
        .collect();
    assert_eq!(synth_ends.len(), good.len(), "{timeline}");
    assert!(
        synth_ends.iter().all(|l| l.contains("precompiled=true")),
        "{timeline}"
    );
    // Each waited for the CPU prover as its witness alone, and the prover's thread made its
    // a, b and c right before its proof, growing its budget to the whole partition.
    assert!(
        synth_ends.iter().all(|l| l.contains("deferred=true")),
        "{timeline}"
    );
    let eval_ends: Vec<&str> = timeline
        .lines()
        .filter(|l| l.contains(",EVAL_END,"))
        .collect();
    assert_eq!(eval_ends.len(), good.len(), "{timeline}");
    assert_eq!(timeline.matches(",EVAL_START,").count(), good.len());
    let bytes = |line: &str, key: &str| -> u64 {
        let detail = line.rsplit(',').next().unwrap_or_default();
        detail
            .split(';')
            .find_map(|pair| pair.strip_prefix(key))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{key} in {line}"))
    };
    for (synth, eval) in synth_ends.iter().zip(&eval_ends) {
        assert!(eval.contains(",cpu-"), "evaluated by the prover: {eval}");
        assert!(
            bytes(eval, "bytes=") > 2 * bytes(synth, "bytes="),
            "a, b and c are held only at the prover: {synth} then {eval}"
        );
    }

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
    let out = prove_inbox_once(
        dir.path(),
        &[],
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
fn synthetic_parameters_are_refused_for_real_files() {
    require_params();
    let dir = tempfile::tempdir().expect("tempdir");
    let inbox = dir.path().join("inbox");
    fs::create_dir_all(&inbox).expect("inbox");
    fs::copy(fixture("s-t01000-1.json"), inbox.join("s-t01000-1.json")).expect("copy");
    // A benchmark directory that happens to hold the 2KiB set: usable files, but marked.
    let bench_params = dir.path().join("bench-params");
    fs::create_dir_all(&bench_params).expect("cache");
    let (params, vk) = cuzk::porep::param_paths(2048).expect("param paths");
    for real in [&params, &vk] {
        let name = real.file_name().expect("file name");
        std::os::unix::fs::symlink(real, bench_params.join(name)).expect("link");
    }
    fs::write(
        bench_params.join(cuzk::params::SYNTHETIC_MARKER),
        b"synthetic",
    )
    .expect("marker");

    let out = prove_inbox_once(
        dir.path(),
        &[],
        &[("FIL_PROOFS_PARAMETER_CACHE", &bench_params)],
    );
    assert_eq!(
        out.status.code(),
        Some(2),
        "a fault of the run, not the file"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "{} holds SYNTHETIC benchmark parameters",
            bench_params.display()
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("point --params or FIL_PROOFS_PARAMETER_CACHE at the real parameter cache"),
        "{stderr}"
    );
    // The file is handed back, not failed, and nothing was proved.
    assert_eq!(names(&inbox), vec!["s-t01000-1.json"]);
    assert!(names(&dir.path().join("failed")).is_empty());
    assert!(names(&dir.path().join("outbox")).is_empty());
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
