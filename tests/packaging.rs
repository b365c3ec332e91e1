//! How cuzk is installed and run for months: `cuzk --version` names the build, the shell
//! completions load in the shell they are for, and the systemd units in contrib/ pass
//! systemd's own check. All through the real binary and the real tools; a tool that is not
//! installed skips its check and says so.

mod common;

use std::path::Path;
use std::process::Command;

use common::cuzk;

fn stdout_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// What git says this checkout is, as build.rs stamps it.
fn checked_out_commit() -> String {
    Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|out| out.status.success())
        .map(|out| stdout_of(&out).trim().to_owned())
        .filter(|commit| !commit.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

#[test]
fn version_names_the_commit_the_features_and_the_gpu_kernels() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = cuzk(&["--version"], dir.path(), &[]);
    assert_eq!(out.status.code(), Some(0));
    let text = stdout_of(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines.first().copied(),
        Some(format!("cuzk {}", env!("CARGO_PKG_VERSION")).as_str()),
        "{text}"
    );
    let field = |name: &str| -> String {
        lines
            .iter()
            .find_map(|line| line.strip_prefix(&format!("{name}: ")))
            .unwrap_or_else(|| panic!("no {name:?} line in:\n{text}"))
            .to_owned()
    };
    if cfg!(feature = "cuda") {
        // Under the cuda feature only scripts/build-cuda.sh passes the commit.
        assert!(!field("commit").is_empty(), "{text}");
    } else {
        assert_eq!(field("commit"), checked_out_commit(), "{text}");
    }
    let features = field("features");
    let backends = field("backends");
    if cfg!(feature = "cuda") {
        assert!(features.contains("cuda"), "{text}");
        assert!(
            backends.contains("cuda") && backends.contains("ec-gpu"),
            "{text}"
        );
        assert!(text.contains("cuda backend: sm_"), "{text}");
    } else {
        assert!(features.starts_with("none"), "{text}");
        assert_eq!(backends, "cpu", "{text}");
        assert_eq!(field("GPU kernels"), "none", "{text}");
    }
    assert_eq!(
        features.contains("supraseal"),
        cfg!(feature = "supraseal"),
        "{text}"
    );

    // -V stays one line, for scripts that compare versions.
    let short = cuzk(&["-V"], dir.path(), &[]);
    assert_eq!(
        stdout_of(&short).trim_end(),
        format!("cuzk {}", env!("CARGO_PKG_VERSION"))
    );
}

/// Runs `script` in bash and returns its stdout, or why it failed.
fn bash(script: &str, cwd: &Path) -> Result<String, String> {
    let out = Command::new("bash")
        .args(["--norc", "--noprofile", "-c", script])
        .current_dir(cwd)
        .output()
        .map_err(|e| format!("running bash: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "bash exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
            out.status.code(),
            stdout_of(&out),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(stdout_of(&out))
}

#[test]
fn bash_completions_load_and_complete_commands_and_flags() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = cuzk(&["completions", "bash"], dir.path(), &[]);
    assert_eq!(out.status.code(), Some(0));
    std::fs::write(dir.path().join("cuzk.bash"), &out.stdout).expect("script");
    // What bash does on <TAB>: the words so far, then the function `complete` registered.
    let complete = |line: &str| -> Vec<String> {
        let script = format!(
            r#"source ./cuzk.bash || exit 1
func=$(complete -p cuzk | sed -E 's/.*-F ([^ ]+).*/\1/')
[ -n "$func" ] || {{ echo "no completion function registered for cuzk" >&2; exit 1; }}
COMP_LINE={line:?}
COMP_POINT=${{#COMP_LINE}}
read -r -a COMP_WORDS <<< "$COMP_LINE"
case "$COMP_LINE" in *" ") COMP_WORDS+=("") ;; esac
COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ))
"$func" cuzk "${{COMP_WORDS[COMP_CWORD]}}" "${{COMP_WORDS[COMP_CWORD-1]}}"
printf '%s\n' "${{COMPREPLY[@]}}""#
        );
        bash(&script, dir.path())
            .unwrap_or_else(|e| panic!("completing {line:?}: {e}"))
            .lines()
            .map(|l| l.trim().to_owned())
            .collect()
    };
    let commands = complete("cuzk ");
    for command in [
        "prove-dir",
        "damocles-c2",
        "status",
        "waterfall",
        "completions",
    ] {
        assert!(
            commands.iter().any(|c| c == command),
            "{command} in {commands:?}"
        );
    }
    let flags = complete("cuzk prove-dir --max-att");
    assert_eq!(flags, ["--max-attempts"], "{flags:?}");
    let shells = complete("cuzk completions ");
    for shell in ["bash", "zsh", "fish"] {
        assert!(shells.iter().any(|s| s == shell), "{shells:?}");
    }
}

#[test]
fn zsh_and_fish_completions_are_valid_scripts_of_their_shells() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (shell, check) in [("zsh", ["-n"]), ("fish", ["--no-execute"])] {
        let out = cuzk(&["completions", shell], dir.path(), &[]);
        assert_eq!(out.status.code(), Some(0), "{shell}");
        let script = stdout_of(&out);
        assert!(
            script.contains("prove-dir") && script.contains("damocles-c2"),
            "{shell}: {script}"
        );
        let path = dir.path().join(format!("cuzk.{shell}"));
        std::fs::write(&path, &script).expect("script");
        match Command::new(shell).args(check).arg(&path).output() {
            Err(e) => eprintln!("skipped {shell}'s own check: {shell} is not installed ({e})"),
            Ok(out) => assert!(
                out.status.success(),
                "{shell} {} refuses the script: {}",
                check.join(" "),
                String::from_utf8_lossy(&out.stderr)
            ),
        }
    }
    let out = cuzk(&["completions", "tcsh"], dir.path(), &[]);
    assert_eq!(out.status.code(), Some(2), "an unknown shell is refused");
}

/// `30min`, `90s`, `1h` as seconds (systemd's simple time spans).
fn systemd_seconds(span: &str) -> Option<u64> {
    let digits: String = span.chars().take_while(char::is_ascii_digit).collect();
    let unit = match &span[digits.len()..] {
        "" | "s" | "sec" => 1,
        "min" | "m" => 60,
        "h" | "hour" => 3600,
        _ => return None,
    };
    digits.parse::<u64>().ok().map(|n| n * unit)
}

#[test]
fn systemd_units_pass_systemd_analyze_and_their_commands_run() {
    let contrib = Path::new(env!("CARGO_MANIFEST_DIR")).join("contrib/systemd");
    let dir = tempfile::tempdir().expect("tempdir");
    // The units as installed beside the binary under test.
    let mut units = common::names(&contrib);
    units.retain(|name| name.ends_with(".service") || name.ends_with(".timer"));
    assert!(
        units.contains(&"cuzk.service".to_owned()) && units.contains(&"cuzk-once.timer".to_owned()),
        "{units:?}"
    );
    for name in &units {
        let text = std::fs::read_to_string(contrib.join(name)).expect("unit");
        let installed = text.replace("/usr/local/bin/cuzk", env!("CARGO_BIN_EXE_cuzk"));
        std::fs::write(dir.path().join(name), installed).expect("unit");
    }
    let unit = |name: &str| std::fs::read_to_string(dir.path().join(name)).expect("unit");
    let setting = |text: &str, key: &str| -> Vec<String> {
        text.lines()
            .filter_map(|line| line.strip_prefix(&format!("{key}=")))
            .map(str::to_owned)
            .collect()
    };

    // What a proving service must get right on a machine it shares with lotus or curio.
    for name in [
        "cuzk.service",
        "cuzk@.service",
        "cuzk-cpu.service",
        "cuzk-once.service",
        "cuzk-serve.service",
    ] {
        let text = unit(name);
        let stop = setting(&text, "TimeoutStopSec");
        let stop_s = stop.first().and_then(|s| systemd_seconds(s));
        assert!(
            stop_s.is_some_and(|s| s >= 15 * 60),
            "{name}: TimeoutStopSec {stop:?} leaves a 32GiB sector in flight no time to finish"
        );
        assert!(
            setting(&text, "Environment")
                .iter()
                .any(|e| e.starts_with("TMPDIR=")),
            "{name}: TMPDIR set, for the GPU priority lock"
        );
        assert!(
            !text
                .lines()
                .any(|l| l.trim_start().starts_with("PrivateTmp")),
            "{name}: a private /tmp hides the priority lock"
        );
    }
    assert_eq!(
        setting(&unit("cuzk-once.service"), "TimeoutStartSec"),
        ["infinity"],
        "a oneshot pass must not be killed after systemd's default 90 s"
    );
    // The units for a GPU machine never prove on the CPU for hours; the CPU one is named so.
    let has_flag = |name: &str, flag: &str| {
        setting(&unit(name), "ExecStart")
            .iter()
            .any(|exec| exec.split_whitespace().any(|arg| arg == flag))
    };
    for name in [
        "cuzk.service",
        "cuzk@.service",
        "cuzk-once.service",
        "cuzk-serve.service",
    ] {
        assert!(has_flag(name, "--require-gpu"), "{name}: --require-gpu");
    }
    assert!(
        !has_flag("cuzk-cpu.service", "--require-gpu") && has_flag("cuzk-cpu.service", "none"),
        "cuzk-cpu.service proves on the CPU (--gpus none)"
    );

    // systemd's own check of every unit.
    let paths: Vec<String> = units.iter().map(|name| format!("./{name}")).collect();
    match Command::new("systemd-analyze")
        .arg("verify")
        .args(&paths)
        .current_dir(dir.path())
        .output()
    {
        Err(e) => eprintln!("skipped systemd-analyze verify: not installed here ({e})"),
        Ok(out) => {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let about_ours: Vec<&str> = stderr.lines().filter(|l| l.contains("cuzk")).collect();
            assert!(
                out.status.success() && about_ours.is_empty(),
                "systemd-analyze verify: exit {:?}\n{stderr}",
                out.status.code()
            );
        }
    }

    // Each command line is one the binary takes: run on a spool of its own (the watching
    // service's with --once added, so that it ends; the template's as instance 0).
    let spool = dir.path().join("spool");
    std::fs::create_dir_all(spool.join("inbox")).expect("inbox");
    std::fs::create_dir_all(spool.join("gpu0/inbox")).expect("instance 0's inbox");
    let collector = dir.path().join("collector");
    std::fs::create_dir(&collector).expect("collector");
    let params = dir.path().join("params");
    for name in units.iter().filter(|n| n.ends_with(".service")) {
        let text = unit(name);
        let exec = setting(&text, "ExecStart");
        assert_eq!(exec.len(), 1, "{name}: one ExecStart");
        let mut args: Vec<String> = exec[0]
            .split_whitespace()
            .skip(1)
            .map(|arg| {
                arg.replace("/srv/c1", &spool.display().to_string())
                    .replace("/srv/cuzk", &spool.display().to_string())
                    .replace(
                        "/var/lib/node_exporter/textfile_collector",
                        &collector.display().to_string(),
                    )
                    .replace("%i", "0")
            })
            .collect();
        if args.first().is_some_and(|a| a == "prove-dir") && !args.iter().any(|a| a == "--once") {
            args.push("--once".into());
        }
        if args.first().is_some_and(|a| a == "serve") {
            // Not the unit's 127.0.0.1:9820, which something on this machine may hold.
            let socket = dir.path().join(format!("{name}.sock"));
            args.extend(["--listen".into(), format!("unix://{}", socket.display())]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        if args.contains(&"--require-gpu") {
            // Where no GPU may be used, the unit stops before claiming anything, saying why.
            let out = cuzk(
                &args,
                dir.path(),
                &[
                    ("FIL_PROOFS_PARAMETER_CACHE", &params),
                    ("BELLMAN_NO_GPU", Path::new("1")),
                ],
            );
            assert_eq!(
                out.status.code(),
                Some(2),
                "{name}: {args:?}, BELLMAN_NO_GPU=1"
            );
            assert!(
                String::from_utf8_lossy(&out.stderr)
                    .contains("--require-gpu: this run would prove on the CPU"),
                "{name}: why it stopped"
            );
        }
        // A server runs until it is stopped: tests/serve.rs runs it through its clients.
        if args.first() == Some(&"serve") {
            continue;
        }
        // The rest of the command line, on whatever this machine has.
        let args: Vec<&str> = args.into_iter().filter(|a| *a != "--require-gpu").collect();
        let out = cuzk(
            &args,
            dir.path(),
            &[("FIL_PROOFS_PARAMETER_CACHE", &params)],
        );
        assert_eq!(out.status.code(), Some(0), "{name}: {args:?}");
    }
    assert_eq!(
        common::names(&collector),
        ["cuzk-run-gpu0.prom", "cuzk-run.prom", "cuzk.prom"],
        "both views of the spool's metrics, and instance 0's run"
    );
}

#[test]
fn man_pages_are_made_from_the_command_line_and_render() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = cuzk(&["man"], dir.path(), &[]);
    assert_eq!(out.status.code(), Some(0));
    let page = stdout_of(&out);
    assert!(page.contains(".TH cuzk 1"), "{page}");
    let pages = dir.path().join("man1");
    let out = cuzk(
        &["man", "--dir", &pages.display().to_string()],
        dir.path(),
        &[],
    );
    assert_eq!(out.status.code(), Some(0));
    let names = common::names(&pages);
    for name in [
        "cuzk.1",
        "cuzk-prove-dir.1",
        "cuzk-serve.1",
        "cuzk-params-check.1",
    ] {
        assert!(names.contains(&name.to_owned()), "{name} in {names:?}");
    }
    assert!(
        !names.iter().any(|n| n.contains("processor")),
        "hidden commands get no page: {names:?}"
    );
    // As man shows it, where groff is installed.
    match Command::new("groff")
        .args(["-man", "-Tutf8", "-ww", "-P-cbu"])
        .arg(pages.join("cuzk-serve.1"))
        .output()
    {
        Err(e) => eprintln!("skipped rendering: groff not installed here ({e})"),
        Ok(out) => {
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success(),
                "groff: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(
                text.contains("--listen") || text.contains("‐‐listen"),
                "{text}"
            );
            assert!(text.contains("CUZK_LISTEN"), "{text}");
        }
    }
}
