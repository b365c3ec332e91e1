//! The damocles processor driven as damocles-worker's producer drives it: the real binary
//! with piped stdin and stdout, the ready line first, several requests in flight at once
//! (a real 2KiB C1, bad ones of every kind), answers matched by id, and the good proof
//! checked with filecoin-proofs' `verify_seal`.
//!
//! Proves one 2KiB sector on the CPU (about 45 s on 2 cores); needs the 2KiB parameters.

mod common;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::Duration;

use common::{fixture, names, require_params, verifies_for_sector};
use cuzk::c1::SectorIdentity;

/// damocles-worker's `stable_wait` default.
const STABLE_WAIT: Duration = Duration::from_secs(5);

/// The processor with its stdout lines on a channel and its stderr collected.
struct Processor {
    child: Child,
    lines: Receiver<String>,
    stderr: std::thread::JoinHandle<String>,
}

fn start(args: &[&str]) -> Processor {
    start_with(args, &[])
}

fn start_with(args: &[&str], envs: &[(&str, &Path)]) -> Processor {
    let mut child = Command::new(env!("CARGO_BIN_EXE_cuzk"))
        .args(args)
        .envs(envs.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting cuzk");
    let stdout = child.stdout.take().expect("stdout");
    let mut stderr = child.stderr.take().expect("stderr");
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let stderr = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    Processor {
        child,
        lines,
        stderr,
    }
}

/// A request line as damocles' producer writes it.
fn request(id: u64, c1out: &str, prover_miner: u64, sector: SectorIdentity) -> String {
    let prover_id = SectorIdentity {
        miner_id: prover_miner,
        sector_num: 0,
    }
    .prover_id();
    format!(
        r#"{{"id":{id},"task":{{"c1out":{c1out},"prover_id":{},"sector_id":{},"miner_id":{}}}}}"#,
        serde_json::to_string(&prover_id.to_vec()).expect("json"),
        sector.sector_num,
        sector.miner_id
    )
}

fn cuzk_spools(dir: &Path) -> Vec<String> {
    names(dir)
        .into_iter()
        .filter(|n| n.starts_with("cuzk-damocles-"))
        .collect()
}

#[test]
fn answers_every_request_by_id_and_the_proof_verifies() {
    require_params();
    let dir = tempfile::tempdir().expect("tempdir");
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).expect("tmp");
    let timeline = dir.path().join("timeline.csv");
    let mut processor = start(&[
        "damocles-c2",
        "--gpus",
        "none",
        "--tmp-dir",
        &tmp.display().to_string(),
        "--timeline",
        &timeline.display().to_string(),
    ]);
    let ready = processor.lines.recv_timeout(STABLE_WAIT);
    assert_eq!(ready.as_deref(), Ok("c2 processor ready"), "the first line");

    let c1_path = fixture("s-t01000-1.json");
    let c1 = cuzk::c1::read_c1_file(&c1_path, cuzk::c1::DEFAULT_MAX_C1_BYTES).expect("fixture");
    let c1out = serde_json::to_string(&c1.output).expect("c1out");
    let sector = SectorIdentity {
        miner_id: 1000,
        sector_num: 1,
    };
    let requests = [
        request(11, &c1out, 1000, sector),
        // The prover id of another miner.
        request(12, &c1out, 2000, sector),
        r#"{"id":13,"task":"nonsense"}"#.to_owned(),
        // An object, but no C1 output: the pipeline fails it at parsing.
        request(
            14,
            r#"{"registered_proof":"StackedDrg2KiBV1_1"}"#,
            1000,
            sector,
        ),
        "this line has no id at all".to_owned(),
        r#"{"id":15,"task":{"c1out":{"registered_pr"#.to_owned(),
        // A real C1 output claimed for another sector: its replica id gives it away.
        request(
            16,
            &c1out,
            1000,
            SectorIdentity {
                miner_id: 1000,
                sector_num: 2,
            },
        ),
    ];
    let mut stdin = processor.child.stdin.take().expect("stdin");
    for line in &requests {
        writeln!(stdin, "{line}").expect("writing a request");
    }
    stdin.flush().expect("flush");
    // The end of input: answer what is in flight, then exit.
    drop(stdin);

    let mut answers: HashMap<u64, Vec<serde_json::Value>> = HashMap::new();
    while let Ok(line) = processor.lines.recv_timeout(Duration::from_secs(600)) {
        let answer: serde_json::Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"));
        let id = answer["id"].as_u64().expect("an id");
        answers.entry(id).or_default().push(answer);
    }
    let status = processor.child.wait().expect("wait");
    let stderr = processor.stderr.join().expect("stderr");
    eprintln!("--- processor stderr\n{stderr}");
    assert_eq!(status.code(), Some(0), "exit 0 at the end of input");

    let mut ids: Vec<u64> = answers.keys().copied().collect();
    ids.sort();
    assert_eq!(
        ids,
        [11, 12, 13, 14, 15, 16],
        "one answer per request with an id"
    );
    for (id, list) in &answers {
        assert_eq!(list.len(), 1, "request {id} answered once: {list:?}");
    }
    let answer = |id: u64| answers[&id][0].clone();

    let good = answer(11);
    assert_eq!(good["err_msg"], serde_json::Value::Null, "{good}");
    let proof: Vec<u8> = good["output"]["proof"]
        .as_array()
        .expect("proof bytes as a number array")
        .iter()
        .map(|b| u8::try_from(b.as_u64().expect("a number")).expect("a byte"))
        .collect();
    assert_eq!(proof.len(), 192, "one 2KiB partition");
    assert!(verifies_for_sector(&c1_path, &proof, 0), "verify_seal");
    assert!(
        !verifies_for_sector(&c1_path, &proof, 1),
        "not another sector's"
    );

    let error = |id: u64| -> String {
        let a = answer(id);
        assert_eq!(a["output"], serde_json::Value::Null, "{a}");
        a["err_msg"].as_str().expect("an err_msg").to_owned()
    };
    assert!(error(12).contains("prover_id"), "{}", error(12));
    assert!(error(13).contains("not a c2 request"), "{}", error(13));
    assert!(error(14).contains("parse"), "{}", error(14));
    assert!(error(15).contains("not a c2 request"), "{}", error(15));
    assert!(error(16).contains("replica id"), "{}", error(16));
    assert!(
        stderr.contains("skipped a line without a request id"),
        "the line without an id is logged"
    );

    // The pipeline's own record of it, and nothing left behind.
    let rows = std::fs::read_to_string(&timeline).expect("timeline");
    assert_eq!(rows.matches(",DONE,").count(), 1, "{rows}");
    assert!(cuzk_spools(&tmp).is_empty(), "{:?}", names(&tmp));
}

#[test]
fn damocles_default_arguments_start_the_same_processor() {
    let dir = tempfile::tempdir().expect("tempdir");
    // damocles-worker runs `<bin> processor c2` when its processor has no `args`.
    let mut processor = start(&[
        "processor",
        "c2",
        "--tmp-dir",
        &dir.path().display().to_string(),
    ]);
    let ready = processor.lines.recv_timeout(STABLE_WAIT);
    assert_eq!(ready.as_deref(), Ok("c2 processor ready"));
    drop(processor.child.stdin.take());
    let status = processor.child.wait().expect("wait");
    let stderr = processor.stderr.join().expect("stderr");
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(
        processor.lines.recv().is_err(),
        "nothing after the ready line"
    );
    assert!(cuzk_spools(dir.path()).is_empty());

    let out = common::cuzk(&["processor", "pc1"], dir.path(), &[]);
    assert_eq!(out.status.code(), Some(2), "only c2 is served");
}

#[test]
fn a_run_that_cannot_go_on_answers_with_the_reason_and_the_next_request_retries() {
    let dir = tempfile::tempdir().expect("tempdir");
    let empty_cache = dir.path().join("no-params");
    std::fs::create_dir(&empty_cache).expect("cache");
    let timeline = dir.path().join("timeline.csv");
    let mut processor = start_with(
        &[
            "damocles-c2",
            "--gpus",
            "none",
            "--tmp-dir",
            &dir.path().display().to_string(),
            "--timeline",
            &timeline.display().to_string(),
        ],
        &[("FIL_PROOFS_PARAMETER_CACHE", &empty_cache)],
    );
    let ready = processor.lines.recv_timeout(STABLE_WAIT);
    assert_eq!(ready.as_deref(), Ok("c2 processor ready"));
    let c1 = cuzk::c1::read_c1_file(&fixture("s-t01000-1.json"), cuzk::c1::DEFAULT_MAX_C1_BYTES)
        .expect("fixture");
    let c1out = serde_json::to_string(&c1.output).expect("c1out");
    let sector = SectorIdentity {
        miner_id: 1000,
        sector_num: 1,
    };
    let mut stdin = processor.child.stdin.take().expect("stdin");
    for id in [21, 22] {
        // One at a time: the second comes after the first run has ended.
        writeln!(stdin, "{}", request(id, &c1out, 1000, sector)).expect("request");
        stdin.flush().expect("flush");
        let line = processor
            .lines
            .recv_timeout(Duration::from_secs(120))
            .expect("an answer");
        let answer: serde_json::Value = serde_json::from_str(&line).expect("JSON");
        assert_eq!(answer["id"], id);
        let message = answer["err_msg"].as_str().unwrap_or_default();
        assert!(
            message.contains("missing Groth16 parameters") && message.contains("fetch-params"),
            "{answer}"
        );
    }
    drop(stdin);
    let status = processor.child.wait().expect("wait");
    let stderr = processor.stderr.join().expect("stderr");
    assert_eq!(status.code(), Some(0), "{stderr}");
    let rows = std::fs::read_to_string(&timeline).expect("timeline");
    assert!(
        rows.matches(",RUN_START,").count() >= 2,
        "the second request started a fresh run: {rows}"
    );
    assert!(cuzk_spools(dir.path()).is_empty());
}
