//! Parameter checks through the real binary: `cuzk params check` on a cache of small files
//! shaped like parameter files, and `prove-dir` stopping on a parameter file cut short
//! before it proves anything.

mod common;

use std::fs;
use std::path::Path;

use common::{cuzk, fixture, names, prove_inbox_once, spool};

/// Bytes of a verifying key's fixed part: alpha_g1, beta_g1 (G1), beta_g2, gamma_g2 (G2),
/// delta_g1 (G1), delta_g2 (G2).
const VK_FIXED: usize = 3 * 96 + 3 * 192;

/// A verifying key with no public inputs, as long as its count says.
fn vk_bytes() -> Vec<u8> {
    vec![0; VK_FIXED + 4]
}

/// A parameter file with no points but one `b` (G1 and G2), cut `cut` bytes short.
fn params_bytes(cut: usize) -> Vec<u8> {
    let mut bytes = vk_bytes();
    for count in [0u32, 0, 0, 1] {
        bytes.extend_from_slice(&count.to_be_bytes());
    }
    bytes.extend_from_slice(&[0; 96]);
    bytes.extend_from_slice(&1u32.to_be_bytes());
    bytes.extend_from_slice(&[0; 192]);
    bytes.truncate(bytes.len() - cut);
    bytes
}

/// The 2KiB PoRep parameter file names.
fn porep_2kib_names() -> (String, String) {
    let (params, vk) = cuzk::porep::param_paths(2048).expect("paths");
    let name = |p: &Path| p.file_name().expect("name").to_string_lossy().into_owned();
    (name(&params), name(&vk))
}

#[test]
fn params_check_reports_every_file_and_fails_on_problems() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = dir.path().join("cache");
    fs::create_dir(&cache).expect("cache");
    let (params, vk) = porep_2kib_names();
    fs::write(cache.join(&params), params_bytes(0)).expect("params");
    fs::write(cache.join("v28-made-here.params"), params_bytes(0)).expect("unlisted");
    fs::write(cache.join("v28-made-here.meta"), b"{}").expect("meta");

    let out = cuzk(
        &["params", "check", "--sector-size", "2KiB"],
        dir.path(),
        &[("FIL_PROOFS_PARAMETER_CACHE", &cache)],
    );
    assert_eq!(out.status.code(), Some(1), "problems found");
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        report.contains(&format!(
            "{params} (2KiB): unofficial or corrupt: digest differs"
        )),
        "{report}"
    );
    assert!(
        report.contains(&format!("{vk} (2KiB): missing")),
        "{report}"
    );
    assert!(
        !report.contains("v28-made-here"),
        "another size's report: {report}"
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("hashing"),
        "progress on stderr"
    );

    // The whole cache: the unlisted file too, and a file cut short.
    fs::write(cache.join(&params), params_bytes(10)).expect("cut");
    let out = cuzk(
        &["params", "check"],
        dir.path(),
        &[("FIL_PROOFS_PARAMETER_CACHE", &cache)],
    );
    assert_eq!(out.status.code(), Some(1));
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        report.contains("v28-made-here.params: unofficial: not in parameters.json"),
        "{report}"
    );
    assert!(
        report.contains(&format!("{params} (2KiB): corrupt:")) && report.contains("cut short"),
        "{report}"
    );
    assert!(!report.contains(".meta"), "{report}");
    assert!(
        !report.contains(&vk),
        "a missing file is only asked for with --sector-size: {report}"
    );

    // The same for scripts, with the same exit code.
    let out = cuzk(
        &["params", "check", "--sector-size", "2KiB", "--json"],
        dir.path(),
        &[("FIL_PROOFS_PARAMETER_CACHE", &cache)],
    );
    assert_eq!(out.status.code(), Some(1));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    let verdict = |name: &str| {
        json["files"]
            .as_array()
            .expect("files")
            .iter()
            .find(|f| f["name"] == name)
            .map(|f| {
                (
                    f["verdict"].as_str().unwrap_or("").to_owned(),
                    f["is_problem"] == true,
                )
            })
    };
    assert_eq!(
        verdict(&params),
        Some(("corrupt".to_owned(), true)),
        "{json}"
    );
    assert_eq!(verdict(&vk), Some(("missing".to_owned(), true)), "{json}");
    assert_eq!(json["problems"], 2, "{json}");
}

#[test]
fn bench_json_reports_the_run_in_numbers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bench = dir.path().join("bench");
    let out = cuzk(
        &[
            "bench",
            "--sector-size",
            "2KiB",
            "--sectors",
            "1",
            "--backend",
            "cpu",
            "--json",
            "--dir",
            &bench.display().to_string(),
        ],
        dir.path(),
        &[],
    );
    assert_eq!(out.status.code(), Some(0));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert_eq!(json["sector_size"], 2048, "{json}");
    assert_eq!(
        (json["kind"].as_str(), json["sectors"].as_u64()),
        (Some("c2"), Some(1))
    );
    let wall = json["wall_s"].as_f64().expect("wall_s");
    assert!(
        wall > 0.0 && json["wall_s_per_sector"].as_f64() == Some(wall),
        "{json}"
    );
    assert!(
        json["params_bytes"].as_u64().is_some_and(|b| b > 1 << 30),
        "{json}"
    );
    assert!(
        json["largest_partition_bytes"]
            .as_u64()
            .is_some_and(|b| b > 0),
        "{json}"
    );
    assert!(std::path::Path::new(json["timeline"].as_str().expect("timeline")).is_file());
}

#[test]
fn prove_dir_stops_on_a_parameter_file_cut_short() {
    let (dir, inbox) = spool();
    let cache = dir.path().join("cache");
    fs::create_dir(&cache).expect("cache");
    let (params, vk) = porep_2kib_names();
    fs::write(cache.join(&params), params_bytes(50)).expect("params");
    fs::write(cache.join(&vk), vk_bytes()).expect("vk");
    fs::copy(fixture("s-t01000-1.json"), inbox.join("s-t01000-1.json")).expect("copy");
    let out = prove_inbox_once(
        dir.path(),
        &["--gpus", "none"],
        &[("FIL_PROOFS_PARAMETER_CACHE", &cache)],
    );
    assert_eq!(out.status.code(), Some(2), "the run cannot go on");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&params) && stderr.contains("cut short"),
        "{stderr}"
    );
    assert!(
        stderr.contains("fetch it again") && stderr.contains("curio fetch-params 2KiB"),
        "{stderr}"
    );
    // Nothing was started with it: the C1 file waits in the inbox for the fixed cache.
    assert_eq!(names(&inbox), ["s-t01000-1.json"]);
    assert!(names(&dir.path().join("failed")).is_empty());
    let timeline = fs::read_to_string(dir.path().join("timeline.csv")).unwrap_or_default();
    assert!(!timeline.contains(",SYNTH_START,"), "{timeline}");
}

#[test]
fn params_prune_removes_constraints_no_current_circuit_uses() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = dir.path().join("cache");
    fs::create_dir(&cache).expect("cache");
    let (params, vk) = porep_2kib_names();
    fs::write(cache.join(&params), params_bytes(0)).expect("params");
    fs::write(cache.join(&vk), vk_bytes()).expect("vk");
    let current =
        cuzk::r1cs::r1cs_path(&cache.join(&params)).expect("the current constraints' name");
    let stem = params.trim_end_matches(".params");
    let stale = cache.join(format!("cuzk-r1cs-v1-{stem}-00000000deadbeef.r1cs"));
    let orphan = cache.join("cuzk-r1cs-v1-v28-gone-00000000deadbeef.r1cs");
    for file in [&current, &stale, &orphan] {
        fs::write(file, b"recorded constraints").expect("write");
    }
    let envs = [("FIL_PROOFS_PARAMETER_CACHE", cache.as_path())];

    let dry = cuzk(&["params", "prune", "--dry-run"], dir.path(), &envs);
    assert_eq!(dry.status.code(), Some(0));
    let text = String::from_utf8_lossy(&dry.stdout);
    assert!(
        text.contains("would remove") && text.contains("another circuit"),
        "{text}"
    );
    assert!(text.contains("are gone"), "{text}");
    assert!(
        stale.exists() && orphan.exists(),
        "a dry run removes nothing"
    );

    let out = cuzk(&["params", "prune"], dir.path(), &envs);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("3 derived file(s)"), "{text}");
    assert!(current.exists(), "the current circuit's constraints stay");
    assert!(!stale.exists() && !orphan.exists(), "{text}");
    assert!(cache.join(&params).exists() && cache.join(&vk).exists());
}
