//! `cuzk prove-dir`: runs the pipeline on a spool and turns its summary into the exit code,
//! noting what a `--once` drain left behind.

use std::path::Path;

use anyhow::Result;

use super::flags::ProveDirArgs;
use crate::pipeline;

/// The top-level entry point for `cuzk prove-dir`: 0 when every job was proved, 1 when some
/// failed (they are in `failed/`) or were set aside (`set-aside/`) or, with `--once`, when
/// files were left in the inbox unclaimed; an error when the run itself could not go on.
pub(super) fn prove_dir(args: ProveDirArgs) -> Result<u8> {
    args.tuning.split_cpus()?;
    let settings = args.to_settings()?;
    let summary = pipeline::run(&settings)?;
    if summary.set_aside > 0 {
        log::warn!(
            "{} file(s) set aside in {}: each kept failing alone on a prover that proved nothing else (the reasons are above and beside each file); move them back into the inbox to try again",
            summary.set_aside,
            settings.layout.set_aside.display()
        );
    }
    let is_short = summary.failed > 0 || summary.set_aside > 0;
    if !settings.once {
        return Ok(if is_short { 1 } else { 0 });
    }
    // A drain that leaves files behind did not do its job, even if it proved the rest.
    if summary.skipped > 0 {
        log::warn!(
            "{} file(s) in {} could not be claimed, so they were not proved (the reasons are above); they are still there",
            summary.skipped,
            settings.layout.inbox.display()
        );
    }
    note_temporary_files(&settings.layout.inbox);
    Ok(if is_short || summary.skipped > 0 {
        1
    } else {
        0
    })
}

/// After a `--once` run: says so if the inbox still holds names cuzk never takes (dotfiles,
/// `.part`, `.tmp`), which a writer that died leaves behind.
fn note_temporary_files(inbox: &Path) {
    let Ok(entries) = std::fs::read_dir(inbox) else {
        return;
    };
    let temporary: Vec<String> = entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| crate::spool::is_temporary_name(name))
        .collect();
    if let Some(first) = temporary.first() {
        log::info!(
            "{} file(s) with temporary names left alone in {} (first: {first}); cuzk takes a file once its writer renames it to its final name",
            temporary.len(),
            inbox.display()
        );
    }
}
