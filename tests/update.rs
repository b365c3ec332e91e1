//! SnapDeals update proofs end to end, through the real binary: real ProveReplicaUpdate1
//! outputs (tests/fixtures/update, made by examples/make_update with filecoin-proofs' own
//! sealing and update API) in damocles' form and in lotus' base64-and-CIDs form, proved by
//! `prove-dir` beside bad update inputs that must be quarantined with their reasons, and by
//! the damocles `snap_prove` processor; every proof is checked again here with
//! filecoin-proofs' `verify_empty_sector_update_proof`, and the waterfall shows the jobs as
//! updates.
//!
//! Proves three 2KiB update partitions on the CPU (about 25 s each on 2 cores); needs the
//! 2KiB update parameters (`cuzk params gen --sector-size 2KiB --update`, which
//! scripts/test.sh runs).

mod common;

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{
    cuzk, names, prove_inbox_once, read_update, require_update_params, update_fixture,
    verifies_update,
};

fn reason(failed: &Path, job: &str) -> String {
    let path = failed.join(format!("{job}.error.json"));
    let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let value: serde_json::Value = serde_json::from_str(&text).expect("reason JSON");
    format!("{} {}", value["stage"], value["message"])
}

#[test]
fn update_inputs_prove_and_verify_and_bad_ones_are_quarantined_with_reasons() {
    require_update_params();
    let (dir, inbox) = common::spool();
    let damocles_form = update_fixture("s-t01000-11.json");
    let lotus_form = update_fixture("s-t02000-12.json");
    fs::copy(&damocles_form, inbox.join("s-t01000-11.json")).expect("copy");
    fs::copy(&lotus_form, inbox.join("s-t02000-12.json")).expect("copy");

    // Bad update inputs, each made from a good one.
    let good: serde_json::Value =
        serde_json::from_slice(&fs::read(&damocles_form).expect("read")).expect("JSON");
    let other = read_update(&lotus_form);
    let mut wrong_comm_r_new = good.clone();
    wrong_comm_r_new["comm_r_new"] = serde_json::json!(other.comm_r_new.to_vec());
    let mut truncated = good.clone();
    let proof = truncated["vannilla_proofs"][0]
        .as_array()
        .expect("vanilla proof bytes")
        .clone();
    truncated["vannilla_proofs"][0] = serde_json::Value::Array(proof[..proof.len() / 2].to_vec());
    // A C1 file that claims to be an update: a seal proof's name and no vanilla proofs of
    // an update.
    let c1: serde_json::Value =
        serde_json::from_slice(&fs::read(common::fixture("s-t01000-2.json")).expect("C1 fixture"))
            .expect("C1 JSON");
    let mut claims_update = c1.clone();
    claims_update["comm_r_old"] = good["comm_r_old"].clone();
    for (name, value) in [
        ("wrong-comm-r-new", &wrong_comm_r_new),
        ("truncated", &truncated),
        ("c1-claims-update", &claims_update),
    ] {
        fs::write(
            inbox.join(format!("{name}.json")),
            serde_json::to_vec(value).expect("JSON"),
        )
        .expect("write");
    }

    let out = prove_inbox_once(dir.path(), &["--gpus", "none"], &[]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "bad files make the exit nonzero"
    );
    let outbox = dir.path().join("outbox");
    let failed = dir.path().join("failed");
    for (job, source) in [
        ("s-t01000-11", &damocles_form),
        ("s-t02000-12", &lotus_form),
    ] {
        let proof = fs::read(outbox.join(format!("{job}.proof"))).expect("proof written");
        assert_eq!(proof.len(), 192, "one partition");
        assert!(verifies_update(source, &proof), "{job} verifies");
        let record: serde_json::Value =
            serde_json::from_slice(&fs::read(outbox.join(format!("{job}.json"))).expect("record"))
                .expect("record JSON");
        assert_eq!(record["proof_kind"], "update", "{job}");
        assert_eq!(record["registered_proof"], "StackedDrg2KiBV1", "{job}");
        assert!(
            record["verified_with"]
                .as_str()
                .is_some_and(|v| v.contains("verify_empty_sector_update_proof")),
            "{record}"
        );
        assert!(
            record.get("comm_r").is_none(),
            "an update has no comm_r: {record}"
        );
        assert_eq!(
            record["comm_r_new_cid"].as_str().map(|c| &c[..13]),
            Some("bagboea4b5abc")
        );
    }
    assert_eq!(
        names(&failed),
        [
            "c1-claims-update.error.json",
            "c1-claims-update.json",
            "truncated.error.json",
            "truncated.json",
            "wrong-comm-r-new.error.json",
            "wrong-comm-r-new.json",
        ]
    );
    let wrong = reason(&failed, "wrong-comm-r-new");
    assert!(
        wrong.contains("\"bind\"")
            && wrong.contains("does not open comm_r_old, comm_r_new and comm_d_new"),
        "{wrong}"
    );
    let cut = reason(&failed, "truncated");
    assert!(
        cut.contains("\"bind\"")
            && cut.contains("vanilla proof 0 is not a partition proof of a 2KiB update"),
        "{cut}"
    );
    let claims = reason(&failed, "c1-claims-update");
    assert!(
        claims.contains("\"parse\"") && claims.contains("is proved as a C2 and has no comm_r_old"),
        "{claims}"
    );

    // Both updates' partitions were synthesized over the recorded constraints with their
    // witnesses computed natively (no fallback to the gadgets), and their proofs verified.
    let timeline = dir.path().join("timeline.csv");
    let rows = fs::read_to_string(&timeline).expect("timeline");
    for job in ["s-t01000-11", "s-t02000-12"] {
        let synth_ends: Vec<&str> = rows
            .lines()
            .filter(|row| row.contains(",SYNTH_END,") && row.contains(&format!(",{job},")))
            .collect();
        assert_eq!(synth_ends.len(), 1, "{job}: {rows}");
        assert!(
            synth_ends[0].contains("precompiled=true") && synth_ends[0].contains("witness=native"),
            "{job}: {}",
            synth_ends[0]
        );
    }

    // The waterfall tells the updates apart.
    let out = cuzk(
        &["waterfall", &timeline.display().to_string()],
        dir.path(),
        &[],
    );
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("s-t01000-11 [update]"), "{text}");
}

#[test]
fn the_damocles_snap_prove_processor_answers_with_a_proof_that_verifies() {
    require_update_params();
    let dir = tempfile::tempdir().expect("tempdir");
    let tmp = dir.path().join("tmp");
    fs::create_dir(&tmp).expect("tmp");
    // damocles-worker's default arguments for an external processor of this stage.
    let mut child = Command::new(env!("CARGO_BIN_EXE_cuzk"))
        .args([
            "processor",
            "snap_prove",
            "--gpus",
            "none",
            "--tmp-dir",
            &tmp.display().to_string(),
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("starting cuzk");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    assert_eq!(
        lines.next().and_then(Result::ok).as_deref(),
        Some("snap_prove processor ready")
    );
    let source = update_fixture("s-t01000-11.json");
    let task = fs::read_to_string(&source).expect("fixture");
    let c1 = fs::read_to_string(common::fixture("s-t01000-1.json")).expect("C1");
    {
        let stdin = child.stdin.as_mut().expect("stdin");
        writeln!(stdin, r#"{{"id":1,"task":{task}}}"#).expect("request 1");
        // A c2 request sent to the snap_prove processor.
        writeln!(
            stdin,
            r#"{{"id":2,"task":{{"c1out":{c1},"prover_id":[0],"sector_id":1,"miner_id":1000}}}}"#
        )
        .expect("request 2");
    }
    drop(child.stdin.take());
    let mut answers = std::collections::HashMap::new();
    for line in lines.by_ref().take(2) {
        let line = line.expect("answer line");
        let value: serde_json::Value = serde_json::from_str(&line).expect("answer JSON");
        answers.insert(value["id"].as_u64().expect("id"), value);
    }
    let proved = &answers[&1];
    assert!(proved["err_msg"].is_null(), "{proved}");
    // SnapProveOutput is the proof's bytes themselves, as a number array.
    let proof: Vec<u8> = serde_json::from_value(proved["output"].clone()).expect("bytes");
    assert!(verifies_update(&source, &proof), "the answer verifies");
    let refused = &answers[&2];
    assert!(refused["output"].is_null());
    let message = refused["err_msg"].as_str().unwrap_or_default();
    assert!(
        message.contains("not a SnapProve task") && message.contains("retrying cannot help"),
        "{message}"
    );
    let status = child.wait_timeout_or_kill(Duration::from_secs(60));
    assert_eq!(status, Some(0), "exits cleanly at the end of input");
}

/// Waits for the child to exit, killing it after `limit`.
trait WaitOrKill {
    fn wait_timeout_or_kill(&mut self, limit: Duration) -> Option<i32>;
}

impl WaitOrKill for std::process::Child {
    fn wait_timeout_or_kill(&mut self, limit: Duration) -> Option<i32> {
        let deadline = std::time::Instant::now() + limit;
        while std::time::Instant::now() < deadline {
            if let Ok(Some(status)) = self.try_wait() {
                return status.code();
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.kill();
        let _ = self.wait();
        None
    }
}

#[test]
fn update_params_are_generated_checked_and_found_by_their_standard_names() {
    require_update_params();
    let (params, vk) = cuzk::update::param_paths(2048).expect("paths");
    assert!(
        params
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with(
                "v28-empty-sector-update-merkletree-poseidon_hasher-8-0-0-fb9e095bebdd77511c0269b967b4d87ba8b8a525edaa0e165de23ba454510194"
            )),
        "{}",
        params.display()
    );
    assert_eq!(vk.extension().and_then(|e| e.to_str()), Some("vk"));
    let dir = tempfile::tempdir().expect("tempdir");
    let out = cuzk(
        &["params", "path", "--sector-size", "32GiB", "--update"],
        dir.path(),
        &[],
    );
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("v28-empty-sector-update-merkletree-poseidon_hasher-8-8-0-3b7f44a9362e3985369454947bc94022e118211e49fd672d52bec1cbfd599d18.params"),
        "{text}"
    );
    // `params check` knows the generated update files for what they are.
    let out = cuzk(
        &["params", "check", "--sector-size", "2KiB"],
        dir.path(),
        &[],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.contains("empty-sector-update") && l.contains(".params"))
        .unwrap_or_else(|| panic!("no update line in {text}"));
    assert!(line.contains("generated"), "{line}");
}
