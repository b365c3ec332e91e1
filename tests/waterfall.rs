//! `cuzk waterfall` end to end: the real binary on the hand-built timelines in
//! `tests/fixtures/timelines/`, checking exit codes, warnings, run selection and the outputs.

use std::path::PathBuf;
use std::process::{Command, Output};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/timelines")
        .join(name)
}

/// Runs `cuzk waterfall ARGS` with a known `COLUMNS` unless the test sets its own.
fn waterfall(args: &[&str], columns: Option<&str>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_cuzk"));
    command.arg("waterfall").args(args);
    match columns {
        Some(columns) => command.env("COLUMNS", columns),
        None => command.env_remove("COLUMNS"),
    };
    command.output().expect("cuzk runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).expect("utf-8 stdout")
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).expect("utf-8 stderr")
}

/// The framed lines of the picture: axes, rows and lanes.
fn bars(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|line| line.ends_with('|') && line.contains(" |"))
        .collect()
}

#[test]
fn draws_one_row_per_job_and_one_per_lane() {
    let path = fixture("two_gpus.csv");
    let output = waterfall(&[path.to_str().expect("path")], None);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stderr(&output), "", "no warnings for a clean file");
    let text = stdout(&output);
    let bars = bars(&text);
    let jobs = bars.iter().filter(|l| l.starts_with("s-t01000-")).count();
    let lanes: Vec<&str> = bars
        .iter()
        .filter(|l| l.starts_with("gpu-"))
        .map(|l| &l[..5])
        .collect();
    assert_eq!(jobs, 4, "{text}");
    assert_eq!(lanes, ["gpu-0", "gpu-1"], "{text}");
    // Without --width or COLUMNS the drawing is 100 columns wide.
    assert!(bars.iter().all(|l| l.chars().count() == 100), "{text}");
    assert!(text.contains("gpu-0 busy 75.0%"), "{text}");
    assert!(text.contains("gpu-1 busy 50.0%"), "{text}");
    assert!(
        text.contains("throughput: 1.00 s/proof, 3600.0 proofs/h"),
        "{text}"
    );
    assert!(
        text.contains("legend rows:  . queue wait  S synthesis"),
        "{text}"
    );
}

#[test]
fn width_comes_from_the_flag_then_columns() {
    let path = fixture("gpu_bound.csv");
    let path = path.to_str().expect("path");
    let flagged = stdout(&waterfall(&[path, "--width", "60"], Some("120")));
    assert!(
        bars(&flagged).iter().all(|l| l.chars().count() == 60),
        "{flagged}"
    );
    let from_env = stdout(&waterfall(&[path], Some("72")));
    assert!(
        bars(&from_env).iter().all(|l| l.chars().count() == 72),
        "{from_env}"
    );
}

#[test]
fn a_torn_last_line_warns_once_and_goes_on() {
    let path = fixture("torn_last_line.csv");
    let output = waterfall(&[path.to_str().expect("path")], None);
    assert_eq!(output.status.code(), Some(0));
    let warnings = stderr(&output);
    assert_eq!(
        warnings,
        "cuzk: warning: skipped 1 malformed line (line 37: 4 fields, expected 8 (torn or foreign \
         line))\n"
    );
    assert!(stdout(&output).contains("verdict: synthesis-bound"));
}

#[test]
fn unknown_events_warn_once() {
    let path = fixture("unknown_event.csv");
    let output = waterfall(&[path.to_str().expect("path")], None);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(
        stderr(&output),
        "cuzk: warning: ignored 3 rows with unknown events: GPU_WARMUP (2), TEMPERATURE (1)\n"
    );
    assert!(stdout(&output).contains("verdict: GPU-bound"));
}

#[test]
fn a_run_spent_loading_parameters_is_called_parameter_bound() {
    let path = fixture("params_bound.csv");
    let output = waterfall(&[path.to_str().expect("path")], None);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(
        text.contains(
            "\nverdict: parameter-bound: loading parameters took 10.0 s (77% of the run); keep \
             `cuzk prove-dir` running without --once"
        ),
        "{text}"
    );
}

#[test]
fn kernel_activity_tells_a_host_bound_prover_from_a_gpu_bound_one() {
    // The same GPU-bound run twice: its GPU ran kernels ~90% or ~45% of the time gpu-0 proved.
    let idle = fixture("gpu_kernels_idle.csv");
    let output = waterfall(&[idle.to_str().expect("path")], None);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stderr(&output), "", "GPU_BUSY is a known event");
    let text = stdout(&output);
    assert!(
        text.contains(
            "\nGPU kernels (NVML): busy 37% of the run, 45% of the time the provers were busy\n\
             verdict: host-bound: "
        ),
        "{text}"
    );
    let busy = fixture("gpu_kernels_busy.csv");
    let text = stdout(&waterfall(&[busy.to_str().expect("path")], None));
    assert!(
        text.contains("busy 73% of the run, 90% of the time the provers were busy"),
        "{text}"
    );
    assert!(text.contains("\nverdict: GPU-bound: "), "{text}");

    let output = waterfall(&[idle.to_str().expect("path"), "--json"], None);
    let value: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let run = &value["runs"][0];
    assert_eq!(run["verdict"]["bound"], "host");
    let share = run["gpu_kernels"]["proving_fraction"].as_f64();
    assert!(share.is_some_and(|s| (s - 0.45).abs() < 1e-9), "{run}");
    assert_eq!(run["gpu_kernels"]["gpus"][0]["lanes"][0], "gpu-0");
    // Without GPU_BUSY rows the JSON has no such field.
    let plain = fixture("gpu_bound.csv");
    let output = waterfall(&[plain.to_str().expect("path"), "--json"], None);
    let value: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert!(value["runs"][0].get("gpu_kernels").is_none(), "{value}");
}

#[test]
fn a_host_bound_cuda_lane_is_told_about_its_uploads_not_supraseal() {
    // The host-bound run above, proved by the cuda backend's lane instead of ec-gpu's.
    let text = std::fs::read_to_string(fixture("gpu_kernels_idle.csv"))
        .expect("fixture")
        .replace("gpu-0", "cuda-0");
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("timeline.csv");
    std::fs::write(&path, text).expect("timeline");
    let text = stdout(&waterfall(&[path.to_str().expect("path")], None));
    assert!(text.contains("\nverdict: host-bound: "), "{text}");
    assert!(text.contains("inside the cuda backend's calls"), "{text}");
    assert!(!text.contains("SupraSeal"), "{text}");
    assert!(!text.contains("--provers-per-gpu"), "{text}");
}

#[test]
fn the_last_run_is_the_default_and_others_are_chosen_by_id_or_all() {
    let path = fixture("runs.csv");
    let path = path.to_str().expect("path");
    let last = stdout(&waterfall(&[path], None));
    assert!(last.starts_with("run r2 (2 of 2 in the file)"), "{last}");
    assert!(!last.contains("s-t01000-1"), "{last}");

    let first = stdout(&waterfall(&[path, "--run", "r1"], None));
    assert!(first.starts_with("run r1 (1 of 2 in the file)"), "{first}");
    assert!(!first.contains("s-t01000-5"), "{first}");

    let all = stdout(&waterfall(&[path, "--all"], None));
    assert_eq!(all.matches("\nverdict: ").count(), 2, "{all}");
    let r1 = all.find("run r1 (1 of 2").expect("r1");
    let r2 = all.find("run r2 (2 of 2").expect("r2");
    assert!(r1 < r2, "{all}");

    let missing = waterfall(&[path, "--run", "r3"], None);
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        stderr(&missing).contains("no run \"r3\" in this timeline; its runs are: r1, r2"),
        "{}",
        stderr(&missing)
    );
}

#[test]
fn a_missing_or_empty_file_is_an_error_naming_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("missing.csv");
    let output = waterfall(&[missing.to_str().expect("path")], None);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("missing.csv"),
        "{}",
        stderr(&output)
    );

    let empty = dir.path().join("empty.csv");
    std::fs::write(&empty, "").expect("write");
    let output = waterfall(&[empty.to_str().expect("path")], None);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("empty.csv"), "{}", stderr(&output));

    let header_only = dir.path().join("header.csv");
    std::fs::write(
        &header_only,
        "run_id,t_ms,wall_clock,event,job,partition,worker,detail\n",
    )
    .expect("write");
    let output = waterfall(&[header_only.to_str().expect("path")], None);
    assert_eq!(output.status.code(), Some(2));
    let message = stderr(&output);
    assert!(
        message.contains("header.csv") && message.contains("no usable events"),
        "{message}"
    );
}

#[test]
fn svg_is_a_well_formed_standalone_image() {
    let dir = tempfile::tempdir().expect("tempdir");
    let svg = dir.path().join("waterfall.svg");
    let path = fixture("runs.csv");
    let output = waterfall(
        &[
            path.to_str().expect("path"),
            "--all",
            "--partitions",
            "--svg",
            svg.to_str().expect("svg path"),
        ],
        None,
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stdout(&output).contains("verdict:"),
        "the ASCII is still printed"
    );
    let text = std::fs::read_to_string(&svg).expect("svg written");
    let document = roxmltree::Document::parse(&text).expect("well-formed XML");
    let root = document.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    assert_eq!(
        root.tag_name().namespace(),
        Some("http://www.w3.org/2000/svg")
    );
    let texts: Vec<&str> = root
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text())
        .collect();
    for label in ["s-t01000-1 p0", "s-t01000-6 p0", "gpu-0", "prover lanes"] {
        assert!(texts.contains(&label), "{label} missing from {texts:?}");
    }
    assert_eq!(
        texts.iter().filter(|t| t.starts_with("verdict: ")).count(),
        2
    );
}

#[test]
fn json_holds_the_metrics_instead_of_the_drawing() {
    let path = fixture("gpu_bound.csv");
    let output = waterfall(
        &[path.to_str().expect("path"), "--json", "--gap-ms", "500"],
        None,
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let value: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let run = &value["runs"][0];
    assert_eq!(run["run_id"], "r1");
    assert_eq!(run["gap_threshold_s"], 0.5);
    assert_eq!(run["lanes"][0]["name"], "gpu-0");
    assert_eq!(run["lanes"][0]["busy_fraction"], 0.8);
    assert_eq!(run["queue"]["queued_s"], 6.0);
    assert_eq!(run["throughput"]["proofs_per_hour"], 1800.0);
    assert_eq!(run["rows"].as_array().map(Vec::len), Some(4));
    assert_eq!(run["verdict"]["bound"], "prover");
}

#[test]
fn a_negative_gap_threshold_is_refused() {
    let path = fixture("gpu_bound.csv");
    let output = waterfall(&[path.to_str().expect("path"), "--gap-ms=-1"], None);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("--gap-ms"), "{}", stderr(&output));
}

#[test]
fn warnings_come_before_the_error_they_explain() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("future.csv");
    std::fs::write(
        &path,
        "run_id,t_ms,wall_clock,event,job,partition,worker,detail\n\
         r,1.0,x,GPU_WARMUP,,,gpu-0,\n",
    )
    .expect("write");
    let output = waterfall(&[path.to_str().expect("path")], None);
    assert_eq!(output.status.code(), Some(2));
    let message = stderr(&output);
    let warning = message
        .find("warning: ignored 1 row with unknown events: GPU_WARMUP (1)")
        .expect("warning");
    let error = message.find("cuzk: error: ").expect("error");
    assert!(warning < error, "{message}");
}
