//! Helpers shared by the end-to-end tests: fixtures, running the real binary with its full
//! output on failure, and listing spool directories.

#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A real C1 fixture made by filecoin-proofs' sealing API (see examples/make_c1.rs).
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/c1")
        .join(name)
}

/// Fails with the fix if the 2KiB parameters are missing.
pub fn require_params() {
    let paths = cuzk::porep::param_paths(2048).expect("param paths");
    require_param_files(paths, "2KiB parameters", "");
}

/// Fails, naming `what` and the `params gen` command (with `flag`) that makes them, unless
/// both files of a parameter set are there.
fn require_param_files((params, vk): (PathBuf, PathBuf), what: &str, flag: &str) {
    assert!(
        params.is_file() && vk.is_file(),
        "{what} missing at {}: run `cargo run -- params gen --sector-size 2KiB{flag}` first (scripts/test.sh does)",
        params.display()
    );
}

/// A real 2KiB SnapDeals update input made by filecoin-proofs' sealing and update API (see
/// examples/make_update.rs): `s-t01000-11.json` in damocles' form, `s-t02000-12.json` in
/// lotus' base64-and-CIDs form. One partition each, about half a C1 file's proving time.
pub fn update_fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/update")
        .join(name)
}

/// Copies the update fixture `name` into `inbox` under its own name.
pub fn copy_update_fixture(inbox: &Path, name: &str) {
    fs::copy(update_fixture(name), inbox.join(name))
        .unwrap_or_else(|e| panic!("copying {name} into {}: {e}", inbox.display()));
}

/// Fails with the fix if the 2KiB SnapDeals update parameters are missing.
pub fn require_update_params() {
    let paths = cuzk::update::param_paths(2048).expect("update param paths");
    require_param_files(paths, "2KiB update parameters", " --update");
}

/// The update input in the file at `path`, read as `cuzk prove-dir` reads it (by content,
/// whatever the file's name).
pub fn read_update(path: &Path) -> cuzk::update::UpdateInput {
    let bytes = fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    match cuzk::input::parse_job_input(path, &bytes)
        .unwrap_or_else(|e| panic!("{} does not parse: {e}", path.display()))
    {
        cuzk::input::JobInput::Update(update) => update,
        cuzk::input::JobInput::Seal(_) => panic!("{} reads as a C1 file", path.display()),
    }
}

/// filecoin-proofs' `verify_empty_sector_update_proof` on `proof` for the update input at
/// `input_path` (its comm_r_old, comm_r_new and comm_d_new). Panics if the check cannot run
/// at all, so only a proof that is checked and rejected reads as false.
pub fn verifies_update(input_path: &Path, proof: &[u8]) -> bool {
    let update = read_update(input_path);
    filecoin_proofs_api::update::verify_empty_sector_update_proof(
        update.registered_proof,
        proof,
        update.comm_r_old,
        update.comm_r_new,
        update.comm_d_new,
    )
    .expect("verify_empty_sector_update_proof runs")
}

/// The real `cuzk` binary, run in `cwd`.
pub fn cuzk_command(args: &[&str], cwd: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_cuzk"));
    cmd.args(args).current_dir(cwd);
    cmd
}

/// Runs `cuzk args` in `cwd` and prints the command, its exit code and its output, so a
/// failing assertion has the whole story above it.
pub fn cuzk(args: &[&str], cwd: &Path, envs: &[(&str, &Path)]) -> Output {
    let mut cmd = cuzk_command(args, cwd);
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("running cuzk");
    show(args, cwd, &out);
    out
}

/// Runs `cuzk prove-dir inbox --once --settle-secs 0 extra...` in `dir` (the spool of
/// [`spool`]): one pass over what is in the inbox now.
pub fn prove_inbox_once(dir: &Path, extra: &[&str], envs: &[(&str, &Path)]) -> Output {
    let mut args = vec!["prove-dir", "inbox", "--once", "--settle-secs", "0"];
    args.extend_from_slice(extra);
    cuzk(&args, dir, envs)
}

/// `cuzk prove-dir inbox --once` on the CPU in `root` with the test variable `variable` set
/// to `value` (a fault to inject), `extra` flags after; its output shown.
pub fn prove_once_on_cpu_with(root: &Path, variable: &str, value: &str, extra: &[&str]) -> Output {
    let mut args = vec![
        "prove-dir",
        "inbox",
        "--once",
        "--settle-secs",
        "0",
        "--incomplete-grace-secs",
        "0",
        "--backend",
        "cpu",
    ];
    args.extend_from_slice(extra);
    let out = cuzk_command(&args, root)
        .env(variable, value)
        .output()
        .expect("run cuzk");
    show(&args, root, &out);
    out
}

/// Prints what a finished `cuzk` run did.
pub fn show(args: &[&str], cwd: &Path, out: &Output) {
    eprintln!(
        "$ cuzk {}\n(cwd {})\nexit: {:?}\n--- stdout\n{}\n--- stderr\n{}",
        args.join(" "),
        cwd.display(),
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Sorted names in `dir` (empty if it does not exist).
pub fn names(dir: &Path) -> Vec<String> {
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

/// A fresh spool with an empty inbox.
pub fn spool() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let inbox = dir.path().join("inbox");
    fs::create_dir(&inbox).expect("inbox");
    (dir, inbox)
}

/// Every C1 file name in the spool with the directory it is in: inbox, the owner
/// directories of work/, done and failed (reason files excluded).
pub fn c1_locations(root: &Path) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut look = |dir: PathBuf, label: &str| {
        for name in names(&dir) {
            let path = dir.join(&name);
            if name.starts_with('.') || name.ends_with(".error.json") || path.is_dir() {
                continue;
            }
            found.push((name, label.to_owned()));
        }
    };
    look(root.join("inbox"), "inbox");
    look(root.join("work"), "work");
    for owner in names(&root.join("work")) {
        let dir = root.join("work").join(&owner);
        // Dot-directories (`.attempts`) are the spool's bookkeeping, not owners' claims.
        if dir.is_dir() && !owner.starts_with('.') {
            look(dir, "work");
        }
    }
    look(root.join("done"), "done");
    look(root.join("failed"), "failed");
    found.sort();
    found
}

/// Waits up to `secs` for `path` to contain `needle`.
pub fn wait_for_text(path: &Path, needle: &str, secs: u64) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while std::time::Instant::now() < deadline {
        if fs::read_to_string(path).is_ok_and(|t| t.contains(needle)) {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    false
}

/// filecoin-proofs' `verify_seal` on `proof` for the sector of the C1 file at `c1_path`,
/// with `sector_offset` added to its sector number (non-zero: a proof for the wrong sector).
pub fn verifies_for_sector(c1_path: &Path, proof: &[u8], sector_offset: u64) -> bool {
    let c1 = cuzk::c1::read_c1_file(c1_path, cuzk::c1::DEFAULT_MAX_C1_BYTES).expect("C1");
    let id = cuzk::c1::resolve_identity(c1_path, &c1, None).expect("identity");
    let out = &c1.output;
    filecoin_proofs_api::seal::verify_seal(
        out.registered_proof,
        out.comm_r,
        out.comm_d,
        id.prover_id(),
        filecoin_proofs_api::SectorId::from(id.sector_num + sector_offset),
        out.ticket,
        out.seed,
        proof,
    )
    .unwrap_or(false)
}

/// The `spool` label cuzk gives a spool's metrics: its directory, resolved.
pub fn spool_label(spool_dir: &Path) -> String {
    fs::canonicalize(spool_dir)
        .expect("spool directory")
        .display()
        .to_string()
}

/// Checks `text` is Prometheus' text format as node_exporter's textfile collector takes it
/// (HELP and TYPE before each family's samples, counters named `_total`, histograms as
/// `_bucket`, `_sum`, `_count`, no timestamps) and that every sample's first label is
/// `spool="<spool>"`. Returns the samples by series, the spool label left out.
pub fn exposition(text: &str, spool: &str) -> std::collections::HashMap<String, f64> {
    assert!(text.ends_with('\n'), "trailing newline: {text:?}");
    let mut helped = std::collections::HashSet::new();
    let mut typed = std::collections::HashMap::new();
    let mut samples = std::collections::HashMap::new();
    let spool_first = format!("{{spool=\"{spool}\"");
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').expect("HELP name text");
            assert!(!help.is_empty(), "{line}");
            assert!(
                helped.insert(name.to_owned()),
                "one HELP per family: {line}"
            );
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').expect("TYPE name kind");
            assert!(matches!(kind, "counter" | "gauge" | "histogram"), "{line}");
            assert!(kind != "counter" || name.ends_with("_total"), "{line}");
            typed.insert(name.to_owned(), kind.to_owned());
        } else {
            let (series, value) = line.rsplit_once(' ').expect("series value");
            assert!(
                !value.contains(' ') && !series.ends_with(' '),
                "no timestamp: {line}"
            );
            let value: f64 = value.parse().unwrap_or_else(|_| panic!("a number: {line}"));
            let name = series.split('{').next().unwrap_or_default();
            let family = ["_bucket", "_sum", "_count"]
                .iter()
                .filter_map(|suffix| name.strip_suffix(suffix))
                .find(|base| typed.get(*base).is_some_and(|k| k == "histogram"))
                .unwrap_or(name);
            assert!(
                helped.contains(family) && typed.contains_key(family),
                "HELP and TYPE before {line}"
            );
            let labels = &series[name.len()..];
            assert!(
                labels.starts_with(&spool_first),
                "spool label first: {line}"
            );
            let rest = &labels[spool_first.len()..];
            let key = match rest.strip_prefix(',') {
                Some(others) => format!("{name}{{{others}"),
                None => name.to_owned(),
            };
            assert!(
                samples.insert(key, value).is_none(),
                "one sample per series: {line}"
            );
        }
    }
    samples
}
