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
    let metrics = dir.path().join("cuzk-c2-gpu0.prom");
    let mut processor = start(&[
        "damocles-c2",
        "--gpus",
        "none",
        "--tmp-dir",
        &tmp.display().to_string(),
        "--timeline",
        &timeline.display().to_string(),
        "--metrics-textfile",
        &metrics.display().to_string(),
    ]);
    let ready = processor.lines.recv_timeout(STABLE_WAIT);
    assert_eq!(ready.as_deref(), Ok("c2 processor ready"), "the first line");
    // The run starts with the processor, and its metrics with it, before any request.
    assert!(
        common::wait_for_text(&metrics, "cuzk_run_jobs_in_flight", 60),
        "metrics written as the run starts"
    );

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
        // Non-interactive PoRep: refused, saying what proving it would take.
        request(17, &non_interactive(&c1out), 1000, sector),
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
        [11, 12, 13, 14, 15, 16, 17],
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
    assert!(error(17).contains("SnarkPack"), "{}", error(17));
    // The request itself is at fault in each: every answer says another try cannot help,
    // and none was tried twice.
    for id in 12..=17 {
        assert!(
            error(id).ends_with("(retrying cannot help: the request itself is at fault)"),
            "{id}: {}",
            error(id)
        );
        assert!(!error(id).contains("tried"), "{}", error(id));
    }
    assert!(
        stderr.contains("skipped a line without a request id"),
        "the line without an id is logged"
    );

    // The pipeline's own record of it, and nothing left behind.
    let rows = std::fs::read_to_string(&timeline).expect("timeline");
    assert_eq!(rows.matches(",DONE,").count(), 1, "{rows}");
    assert!(cuzk_spools(&tmp).is_empty(), "{:?}", names(&tmp));

    // The run's metrics as it left them, labelled with the textfile's name.
    let text = std::fs::read_to_string(&metrics).expect("metrics");
    let samples = common::exposition(&text, "cuzk-c2-gpu0");
    assert_eq!(
        samples["cuzk_run_proofs_total{result=\"proved\"}"], 1.0,
        "{text}"
    );
    assert_eq!(
        samples["cuzk_run_proofs_total{result=\"failed\"}"], 3.0,
        "{text}"
    );
    assert_eq!(
        samples["cuzk_run_proof_duration_seconds_count{kind=\"c2\"}"], 1.0,
        "{text}"
    );
    assert_eq!(samples["cuzk_run_partitions_in_flight"], 0.0, "{text}");
}

/// The C1 output `c1out` as a non-interactive PoRep sector's.
fn non_interactive(c1out: &str) -> String {
    let mut value: serde_json::Value = serde_json::from_str(c1out).expect("c1out");
    value["registered_proof"] = "StackedDrg2KiBV1_2_Feat_NonInteractivePoRep".into();
    value.to_string()
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
fn a_run_that_cannot_go_on_is_tried_again_then_answered_with_the_reason() {
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
            "--attempts",
            "2",
            "--retry-pause-secs",
            "0.5",
        ],
        &[("FIL_PROOFS_PARAMETER_CACHE", &empty_cache)],
    );
    let ready = processor.lines.recv_timeout(STABLE_WAIT);
    assert_eq!(ready.as_deref(), Ok("c2 processor ready"));
    let c1out = fixture_c1out();
    let sector = SectorIdentity {
        miner_id: 1000,
        sector_num: 1,
    };
    let mut stdin = processor.child.stdin.take().expect("stdin");
    for id in [21, 22] {
        // One at a time: the second comes after the first has been answered.
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
        // Tried twice before answering, and the answer says another try can help once the
        // machine is fixed: the request was never at fault.
        assert!(message.contains("[tried 2 times]"), "{answer}");
        assert!(message.contains("(retrying may help: "), "{answer}");
    }
    drop(stdin);
    let status = processor.child.wait().expect("wait");
    let stderr = processor.stderr.join().expect("stderr");
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("request 21: try 1 of 2 failed, trying again"),
        "{stderr}"
    );
    let rows = std::fs::read_to_string(&timeline).expect("timeline");
    // Each request's two tries, each in a run of its own, the second under its own name.
    assert!(rows.matches(",RUN_START,").count() >= 4, "{rows}");
    assert!(rows.contains(",s-t01000-1.r21.a2,"), "{rows}");
    assert!(cuzk_spools(dir.path()).is_empty());
}

#[test]
fn parameters_that_arrive_while_a_request_waits_prove_it_on_the_next_try() {
    require_params();
    let dir = tempfile::tempdir().expect("tempdir");
    // A parameter cache that is still being filled: the verifying key and the recorded
    // constraints are there, the parameters themselves not yet.
    let (params, vk) = cuzk::porep::param_paths(2048).expect("param paths");
    let cache = dir.path().join("params");
    std::fs::create_dir(&cache).expect("cache");
    let link = |from: &Path| {
        let name = from.file_name().expect("file name");
        std::os::unix::fs::symlink(from, cache.join(name)).expect("symlink");
    };
    link(&vk);
    let r1cs = cuzk::r1cs::r1cs_path(&params).expect("constraints file name");
    if r1cs.is_file() {
        link(&r1cs);
    }
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
            "--retry-pause-secs",
            "2",
        ],
        &[("FIL_PROOFS_PARAMETER_CACHE", &cache)],
    );
    let ready = processor.lines.recv_timeout(STABLE_WAIT);
    assert_eq!(ready.as_deref(), Ok("c2 processor ready"));
    let mut stdin = processor.child.stdin.take().expect("stdin");
    let sector = SectorIdentity {
        miner_id: 1000,
        sector_num: 1,
    };
    writeln!(stdin, "{}", request(31, &fixture_c1out(), 1000, sector)).expect("request");
    stdin.flush().expect("flush");
    // The first try's run stops for the missing file; the download finishes during the pause.
    assert!(
        common::wait_for_text(&timeline, ",RUN_END,", 120),
        "the first try's run ends"
    );
    link(&params);
    let line = processor
        .lines
        .recv_timeout(Duration::from_secs(600))
        .expect("an answer");
    drop(stdin);
    let status = processor.child.wait().expect("wait");
    let stderr = processor.stderr.join().expect("stderr");
    eprintln!("--- processor stderr\n{stderr}");
    assert_eq!(status.code(), Some(0));
    let answer: serde_json::Value = serde_json::from_str(&line).expect("JSON");
    assert_eq!(answer["id"], 31);
    assert_eq!(answer["err_msg"], serde_json::Value::Null, "{answer}");
    let proof: Vec<u8> = answer["output"]["proof"]
        .as_array()
        .expect("proof bytes")
        .iter()
        .map(|b| u8::try_from(b.as_u64().expect("a number")).expect("a byte"))
        .collect();
    assert!(
        verifies_for_sector(&fixture("s-t01000-1.json"), &proof, 0),
        "verify_seal"
    );
    assert!(
        stderr.contains("request 31: try 1 of 3 failed, trying again"),
        "{stderr}"
    );
}

#[test]
fn damocles_cpuset_and_numa_node_hold_for_every_thread() {
    let dir = tempfile::tempdir().expect("tempdir");
    // The last CPU this test may use, as damocles' cgroup.cpuset for the processor.
    let own = std::fs::read_to_string("/proc/self/status").expect("status");
    let allowed = status_field(&own, "Cpus_allowed_list").expect("Cpus_allowed_list");
    let cpu = allowed
        .rsplit(',')
        .next()
        .and_then(|range| range.rsplit('-').next())
        .expect("a CPU")
        .to_owned();
    let has_node_0 = Path::new("/sys/devices/system/node/node0").exists();
    let cgroup = format!("vc-worker/sub-c2-{}-0", std::process::id());
    let tmp = dir.path().display().to_string();
    let mut envs = vec![
        ("VC_CG_NAME", cgroup.as_str()),
        ("VC_CG_CPUSET", cpu.as_str()),
    ];
    if has_node_0 {
        envs.push(("VENUS_WORKER_NUMA_PREFERRED", "0"));
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_cuzk"))
        .args(["damocles-c2", "--gpus", "none", "--tmp-dir", &tmp])
        .envs(envs.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting cuzk");
    let mut ready = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut ready)
        .expect("ready line");
    assert_eq!(ready.trim_end(), "c2 processor ready");
    // Its run has started: the pipeline's threads are there, as they are under damocles.
    let pid = child.id();
    std::thread::sleep(Duration::from_millis(500));
    let mut threads = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).expect("tasks") {
        let task = task.expect("task").path();
        let Ok(status) = std::fs::read_to_string(task.join("status")) else {
            continue; // ended since the listing
        };
        let name = status_field(&status, "Name").unwrap_or_default();
        let cpus = status_field(&status, "Cpus_allowed_list").unwrap_or_default();
        threads.push((name, cpus));
    }
    assert!(threads.len() > 1, "the run's threads: {threads:?}");
    for (name, cpus) in &threads {
        assert_eq!(cpus, &cpu, "thread {name} runs on CPUs {cpus}, not {cpu}");
    }
    if has_node_0 {
        let maps = std::fs::read_to_string(format!("/proc/{pid}/numa_maps")).expect("numa_maps");
        assert!(
            maps.lines().any(|l| l.contains(" prefer:0 ")),
            "memory policy prefer:0 in {maps}"
        );
    } else {
        eprintln!("skipped the NUMA check: this machine has no NUMA node 0");
    }
    drop(child.stdin.take());
    let out = child.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!("runs on CPUs {cpu} (VC_CG_CPUSET"))
            && stderr.contains(&format!("cgroup {cgroup} not created")),
        "{stderr}"
    );
}

#[test]
fn a_cpuset_that_cannot_be_read_stops_the_processor_before_it_is_ready() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = Command::new(env!("CARGO_BIN_EXE_cuzk"))
        .args(["damocles-c2", "--tmp-dir"])
        .arg(dir.path())
        .env("VC_CG_CPUSET", "0-3;5")
        .stdin(Stdio::null())
        .output()
        .expect("cuzk");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        out.stdout.is_empty(),
        "no ready line: damocles logs the reason"
    );
    assert!(
        stderr.contains("VC_CG_CPUSET=\"0-3;5\" is not a CPU list") && stderr.contains("hint"),
        "{stderr}"
    );
}

/// A field of a `/proc/.../status` file.
fn status_field(status: &str, name: &str) -> Option<String> {
    status
        .lines()
        .find_map(|line| line.strip_prefix(&format!("{name}:")))
        .map(|value| value.trim().to_owned())
}

/// The real 2KiB C1 fixture's SealCommitPhase1Output, as damocles sends it.
fn fixture_c1out() -> String {
    let c1 = cuzk::c1::read_c1_file(&fixture("s-t01000-1.json"), cuzk::c1::DEFAULT_MAX_C1_BYTES)
        .expect("fixture");
    serde_json::to_string(&c1.output).expect("c1out")
}
