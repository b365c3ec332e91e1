//! `cuzk status` on a spool laid out by hand: counts, the oldest waiting file, the owners of
//! claims and the last run, as text and as JSON.

mod common;

use std::fs;
use std::path::Path;

use common::{cuzk, exposition, spool, spool_label};

#[test]
fn status_counts_every_directory_and_reads_the_last_run() {
    let (dir, inbox) = spool();
    let root = dir.path();
    fs::write(inbox.join("s-t01000-1.json"), b"{}").expect("inbox");
    fs::write(inbox.join("s-t01000-2.json"), b"{}").expect("inbox");
    fs::write(inbox.join(".s-t01000-3.json.Xy12"), b"{").expect("rsync temp");
    let dead = root.join("work/otherhost-42");
    fs::create_dir_all(&dead).expect("owner");
    fs::write(
        dead.join(".owner.json"),
        br#"{"host":"otherhost","pid":42,"started_at":"2026-01-01T00:00:00Z"}"#,
    )
    .expect("owner record");
    fs::write(dead.join("s-t01000-4.json"), b"{}").expect("claim");
    for d in ["outbox", "failed", "done"] {
        fs::create_dir_all(root.join(d)).expect("dir");
    }
    fs::write(root.join("outbox/s-t01000-5.proof"), [0u8; 192]).expect("proof");
    fs::write(root.join("outbox/s-t01000-5.json"), b"{}").expect("meta");
    fs::write(root.join("done/s-t01000-5.json"), b"{}").expect("done");
    fs::write(root.join("failed/bad.json"), b"x").expect("failed");
    fs::write(root.join("failed/bad.error.json"), b"{}").expect("reason");
    fs::write(
        root.join("timeline.csv"),
        "run_id,t_ms,wall_clock,event,job,partition,worker,detail\n\
         r1,0.0,2026-11-30T00:00:00.000Z,RUN_START,,,,\n\
         r1,10.0,2026-11-30T00:00:00.010Z,RUN_END,,,,proved=0;failed=0\n\
         r2,0.0,2026-11-30T01:00:00.000Z,RUN_START,,,,\n\
         r2,1500.0,2026-11-30T01:00:01.500Z,DONE,s-t01000-5,,,outbox/s-t01000-5.proof\n\
         r2,1600.0,2026-11-30T01:00:01.600Z,FAILED,bad,,,parse: nope\n",
    )
    .expect("timeline");

    let out = cuzk(&["status", ".", "--json", "--lease-secs", "60"], root, &[]);
    assert_eq!(out.status.code(), Some(0));
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(status["inbox"], 2);
    assert_eq!(status["work"], 1);
    assert_eq!(status["outbox"], 1);
    assert_eq!(status["failed"], 1);
    assert_eq!(status["done"], 1);
    assert_eq!(
        status["oldest_waiting"][0]
            .as_str()
            .map(|s| s.starts_with("s-t01000-")),
        Some(true)
    );
    assert_eq!(status["owners"][0]["owner"]["host"], "otherhost");
    assert_eq!(
        status["owners"][0]["is_dead"], false,
        "fresh heartbeat, other host"
    );
    assert_eq!(status["last_run"]["run_id"], "r2");
    assert_eq!(status["last_run"]["proved"], 1);
    assert_eq!(status["last_run"]["failed"], 1);
    assert_eq!(status["last_run"]["is_finished"], false);

    let text = cuzk(&["status", "inbox"], root, &[]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("inbox 2  work 1  outbox 1  failed 1  done 1"),
        "{text}"
    );
    assert!(text.contains("last run r2"), "{text}");

    let missing = cuzk(&["status", "nowhere"], root, &[]);
    assert_eq!(missing.status.code(), Some(2));
}

/// Checks `text` is Prometheus' text exposition format as node_exporter's textfile
/// collector takes it: every sample after its family's HELP and TYPE, two fields (no
/// timestamp), a number for a value, counters named `_total`, a newline at the end.
#[test]
fn status_speaks_prometheus_on_stdout_and_to_a_textfile() {
    let (dir, inbox) = spool();
    let root = dir.path();
    fs::write(inbox.join("s-t01000-9.json"), b"{}").expect("inbox");
    fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/timelines/gpu_bound.csv"),
        root.join("timeline.csv"),
    )
    .expect("timeline");

    let out = cuzk(&["status", ".", "--prometheus"], root, &[]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let label = spool_label(root);
    let samples = exposition(&text, &label);
    assert_eq!(samples["cuzk_proofs_total{result=\"proved\"}"], 4.0);
    assert_eq!(samples["cuzk_proofs_total{result=\"failed\"}"], 0.0);
    assert_eq!(samples["cuzk_spool_files{dir=\"inbox\"}"], 1.0);
    assert_eq!(samples["cuzk_spool_files{dir=\"work\"}"], 0.0);
    assert_eq!(samples["cuzk_last_run_time_per_proof_seconds"], 2.0);
    assert_eq!(
        samples["cuzk_last_run_prover_busy_ratio{prover=\"gpu-0\"}"],
        0.8
    );
    let ts = samples["cuzk_last_run_timestamp_seconds"];
    // The fixture's run: 2025-01-01T12:00:00Z plus its ten seconds.
    assert!((ts - 1_735_732_810.0).abs() < 1.0, "{ts}");

    let collector = root.join("collector");
    fs::create_dir(&collector).expect("collector dir");
    let prom = collector.join("cuzk.prom");
    fs::write(&prom, "stale\n").expect("old file");
    let out = cuzk(
        &["status", ".", "--textfile", "collector/cuzk.prom"],
        root,
        &[],
    );
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty(), "quiet with --textfile alone");
    let written = fs::read_to_string(&prom).expect("textfile");
    let written_samples = exposition(&written, &label);
    assert_eq!(written_samples.len(), samples.len());
    assert_eq!(written_samples["cuzk_proofs_total{result=\"proved\"}"], 4.0);
    // Replaced whole, with no temporary file left for the collector to trip on.
    assert_eq!(common::names(&collector), ["cuzk.prom"]);

    let out = cuzk(&["status", ".", "--prometheus", "--json"], root, &[]);
    assert_eq!(out.status.code(), Some(2), "one format on stdout");

    // A second spool on the host, its textfile in the same collector directory: its series
    // are its own, so node_exporter never sees one series twice.
    let (other, _other_inbox) = spool();
    let out = cuzk(
        &[
            "status",
            ".",
            "--textfile",
            &collector.join("other.prom").display().to_string(),
        ],
        other.path(),
        &[],
    );
    assert_eq!(out.status.code(), Some(0));
    let other_text = fs::read_to_string(collector.join("other.prom")).expect("textfile");
    let other_label = spool_label(other.path());
    assert_ne!(other_label, label);
    exposition(&other_text, &other_label);
}

#[test]
fn prometheus_without_a_timeline_still_counts_the_spool() {
    let (dir, _inbox) = spool();
    let out = cuzk(&["status", ".", "--prometheus"], dir.path(), &[]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let samples = exposition(&text, &spool_label(dir.path()));
    assert_eq!(samples["cuzk_proofs_total{result=\"proved\"}"], 0.0);
    assert_eq!(samples["cuzk_oldest_waiting_seconds"], 0.0);
    assert!(!text.contains("cuzk_last_run"), "{text}");
}
