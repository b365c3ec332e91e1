//! One log: every message for people goes through one logger to stderr, as `cuzk: LEVEL:`
//! lines or, with `--log-format json` (or `CUZK_LOG_FORMAT=json`), one JSON object per line;
//! `RUST_LOG` picks the levels. Through the real binary.

mod common;

use std::process::Output;

use common::{cuzk_command, show};

fn run(args: &[&str], cwd: &std::path::Path, envs: &[(&str, &str)]) -> Output {
    let mut cmd = cuzk_command(args, cwd);
    cmd.env_remove("RUST_LOG").env_remove("CUZK_LOG_FORMAT");
    cmd.envs(envs.iter().copied());
    let out = cmd.output().expect("running cuzk");
    show(args, cwd, &out);
    out
}

/// Every line of `stderr` as a JSON object with the four fields.
fn json_lines(stderr: &str) -> Vec<serde_json::Value> {
    stderr
        .lines()
        .map(|line| {
            let value: serde_json::Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("not a JSON line ({e}): {line:?}\n{stderr}"));
            for field in ["ts", "level", "target", "message"] {
                assert!(value.get(field).is_some(), "no {field} in {line}");
            }
            value
        })
        .collect()
}

#[test]
fn an_error_is_a_text_line_or_a_json_object_and_rust_log_can_silence_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let args = ["waterfall", "nowhere.csv"];
    let text = run(&args, dir.path(), &[]);
    assert_eq!(text.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&text.stderr);
    assert!(
        stderr.starts_with("cuzk: error: nowhere.csv: cannot open timeline"),
        "{stderr}"
    );

    let json = run(
        &["--log-format", "json", "waterfall", "nowhere.csv"],
        dir.path(),
        &[],
    );
    assert_eq!(json.status.code(), Some(2));
    let lines = json_lines(&String::from_utf8_lossy(&json.stderr));
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["level"], "error");
    assert!(lines[0]["message"]
        .as_str()
        .is_some_and(|m| m.starts_with("nowhere.csv: cannot open timeline")));

    let silent = run(&args, dir.path(), &[("RUST_LOG", "off")]);
    assert_eq!(silent.status.code(), Some(2), "the exit code still says it");
    assert!(silent.stderr.is_empty(), "RUST_LOG=off writes nothing");
}

#[test]
fn a_run_in_json_writes_only_json_lines_its_notes_included() {
    let (dir, _inbox) = common::spool();
    let out = run(
        &["prove-dir", "inbox", "--once", "--backend", "cpu"],
        dir.path(),
        &[("CUZK_LOG_FORMAT", "json"), ("BELLMAN_NO_GPU", "1")],
    );
    assert_eq!(out.status.code(), Some(0));
    let lines = json_lines(&String::from_utf8_lossy(&out.stderr));
    assert!(
        lines.iter().any(|l| l["level"] == "info"
            && l["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("done: 0 proved"))),
        "the run's summary is a note: {lines:?}"
    );
}
