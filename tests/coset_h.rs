//! The H query in coset evaluation form, through the binary, on a 2KiB update parameter set
//! generated for the test into a cache of its own: `cuzk params gen` makes the query with the
//! set (from its secret tau), `cuzk params coset-h` finds it kept, a CPU run proves both real
//! update inputs with it (six transforms) and filecoin-proofs verifies the proofs, `cuzk
//! params prune` keeps it; damaged, it is named and the run proves with the set's own query.

mod common;

use std::fs;
use std::path::Path;

use common::{cuzk, prove_inbox_once, update_fixture, verifies_update};

const INPUTS: [&str; 2] = ["s-t01000-11", "s-t02000-12"];

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Proves `jobs` from a fresh spool with the CPU's kernels; the run's stderr.
fn prove_on_cpu(cache: &Path, jobs: &[&str]) -> String {
    let (dir, inbox) = common::spool();
    for job in jobs {
        fs::copy(
            update_fixture(&format!("{job}.json")),
            inbox.join(format!("{job}.json")),
        )
        .expect("copy");
    }
    let envs = [("FIL_PROOFS_PARAMETER_CACHE", cache)];
    let out = prove_inbox_once(dir.path(), &["--gpus", "none"], &envs);
    assert_eq!(out.status.code(), Some(0), "every input proves");
    for job in jobs {
        let proof = fs::read(dir.path().join("outbox").join(format!("{job}.proof")))
            .expect("proof written");
        let source = update_fixture(&format!("{job}.json"));
        assert!(verifies_update(&source, &proof), "{job} verifies");
    }
    stderr(&out)
}

#[test]
fn generated_parameters_come_with_the_coset_h_query_and_proofs_with_it_verify() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = dir.path().join("params");
    fs::create_dir(&cache).expect("cache");
    // filecoin-proofs reads its settings once: point them at this cache before any use.
    std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", &cache);
    let envs = [("FIL_PROOFS_PARAMETER_CACHE", cache.as_path())];
    let size = ["--sector-size", "2KiB", "--update"];

    let out = cuzk(&[&["params", "gen"][..], &size].concat(), dir.path(), &envs);
    assert_eq!(out.status.code(), Some(0));
    let (params, _) = cuzk::update::param_paths(2048).expect("paths");
    let file = cuzk::params::coset_h::coset_h_path(&params).expect("the query's name");
    assert!(file.is_file(), "params gen writes {}", file.display());

    let out = cuzk(
        &[&["params", "coset-h"][..], &size].concat(),
        dir.path(),
        &envs,
    );
    assert_eq!(out.status.code(), Some(0));
    assert!(
        stderr(&out).contains("kept already"),
        "nothing derived again"
    );

    let log = prove_on_cpu(&cache, &INPUTS);
    assert!(
        log.contains("six transforms"),
        "the run takes the query: {log}"
    );

    let out = cuzk(&["params", "prune"], dir.path(), &envs);
    assert_eq!(out.status.code(), Some(0));
    assert!(file.is_file(), "the current circuit's query stays");

    // A damaged query is named, and the set's own query proves instead.
    let mut bytes = fs::read(&file).expect("read");
    bytes.truncate(bytes.len() - 96);
    fs::write(&file, &bytes).expect("cut");
    let log = prove_on_cpu(&cache, &INPUTS[..1]);
    assert!(
        log.contains(&file.display().to_string()) && log.contains("own H query"),
        "{log}"
    );
    assert!(!log.contains("six transforms"), "{log}");
    let out = cuzk(
        &[&["params", "coset-h"][..], &size].concat(),
        dir.path(),
        &envs,
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "a damaged file is not derived over"
    );
    assert!(stderr(&out).contains("delete it"), "{}", stderr(&out));
}
