//! What users read, snapshotted: `--help` of every command and the main error messages, run
//! through the real binary with temporary paths redacted, so that a change to any of them
//! shows up in review (`cargo insta review`, or `INSTA_UPDATE=always cargo test`).

mod common;

use std::fs;
use std::path::Path;

use common::{cuzk, fixture};

/// stdout and stderr of `cuzk args` in `cwd` with `params` as the parameter cache, the exit
/// code first, and `cwd` redacted.
fn transcript(args: &[&str], cwd: &Path, params: &Path) -> String {
    let out = cuzk(args, cwd, &[("FIL_PROOFS_PARAMETER_CACHE", params)]);
    let text = format!(
        "$ cuzk {}\nexit: {:?}\n--- stdout\n{}--- stderr\n{}",
        args.join(" "),
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    text.replace(&cwd.display().to_string(), "[DIR]")
        .replace(&params.display().to_string(), "[PARAMS]")
}

#[test]
fn help_of_every_command() {
    let dir = tempfile::tempdir().expect("tempdir");
    let commands: [&[&str]; 15] = [
        &["--help"],
        &["serve", "--help"],
        &["damocles-c2", "--help"],
        &["bench", "--help"],
        &["prove-dir", "--help"],
        &["status", "--help"],
        &["waterfall", "--help"],
        &["reference", "--help"],
        &["params", "--help"],
        &["params", "gen", "--help"],
        &["params", "path", "--help"],
        &["params", "check", "--help"],
        &["params", "constraints", "--help"],
        &["params", "coset-h", "--help"],
        &["completions", "--help"],
    ];
    for args in commands {
        let name = format!("help_{}", args[..args.len() - 1].join("_"))
            .trim_end_matches('_')
            .replace("help_", "help-");
        insta::assert_snapshot!(name, transcript(args, dir.path(), dir.path()));
    }
}

#[test]
fn main_error_messages() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let params = root.join("empty-params");
    fs::create_dir(&params).expect("params dir");
    // A spool whose only file needs parameters that are not there.
    fs::create_dir(root.join("inbox")).expect("inbox");
    fs::copy(
        fixture("s-t01000-1.json"),
        root.join("inbox/s-t01000-1.json"),
    )
    .expect("copy");
    fs::write(root.join("not-a-timeline.csv"), b"hello\n").expect("write");
    let cases: [(&str, &[&str]); 9] = [
        (
            "missing-params",
            &["prove-dir", "inbox", "--once", "--settle-secs", "0"],
        ),
        ("missing-inbox", &["prove-dir", "no-such-inbox", "--once"]),
        (
            "require-gpu",
            &[
                "prove-dir",
                "inbox",
                "--once",
                "--require-gpu",
                "--gpus",
                "none",
            ],
        ),
        ("bad-gpus", &["prove-dir", "inbox", "--gpus", "zero"]),
        (
            "bad-miner-addr",
            &["prove-dir", "inbox", "--miner-addr", "f1abcdefgh"],
        ),
        ("waterfall-missing-file", &["waterfall", "nowhere.csv"]),
        (
            "waterfall-not-a-timeline",
            &["waterfall", "not-a-timeline.csv"],
        ),
        ("status-not-a-spool", &["status", "nowhere"]),
        (
            "params-gen-production-size",
            &["params", "gen", "--sector-size", "32GiB"],
        ),
    ];
    for (name, args) in cases {
        // Elapsed times differ from run to run.
        insta::with_settings!({filters => vec![
            (r"\[\s*\d+\.\ds\]", "[T]"),
            (r"in \d+\.\d s", "in [T] s"),
        ]}, {
            insta::assert_snapshot!(name, transcript(args, root, &params));
        });
    }
    // The missing-parameters run handed the file back untouched.
    assert!(root.join("inbox/s-t01000-1.json").is_file());
}
