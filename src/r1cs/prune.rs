//! Pruning recorded constraints no current circuit uses (`cuzk params prune`).
//!
//! A recorded constraints file is never replaced (see [`super::identity`]), so a new
//! filecoin-proofs, regenerated test parameters or a new recorder leave the old file beside
//! the new one: 9 GB at 32GiB, each. A file is stale when its name is not the one
//! [`super::r1cs_path`] gives for the parameters it names: recorded in another format
//! version, for another circuit (the verifying key beside the parameters changed), or for
//! parameters that are gone. A file whose parameters cannot be read for their identity is
//! kept: nothing shows it stale.
//!
//! A run maps the file it uses and holds a shared lock on it meanwhile ([`super::R1cs::load`]);
//! a stale file still locked is kept, since deleting a file another process maps kills that
//! process on NFS. (A cuzk older than the lock takes none: stop such runs first.)

use std::fs::{self, File, TryLockError};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::{r1cs_path, VERSION};

/// A recorded constraints file and what pruning does with it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Verdict {
    /// The file.
    pub path: PathBuf,
    /// Its size.
    pub bytes: u64,
    /// Why it is stale, or `None` when a current circuit uses it.
    pub stale: Option<String>,
    /// True when it is stale but a run has it mapped: it is kept.
    pub is_in_use: bool,
}

/// Every recorded constraints file in `dir`, judged; with `remove`, the stale ones not in use
/// are deleted. Sorted by name.
pub fn prune(dir: &Path, remove: bool) -> Result<Vec<Verdict>> {
    let mut verdicts = Vec::new();
    let entries = fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))?;
    for entry in entries {
        let entry = entry.with_context(|| format!("listing {}", dir.display()))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(named) = parse_name(&name) else {
            continue;
        };
        let path = entry.path();
        let bytes = entry.metadata().map_or(0, |m| m.len());
        let stale = staleness(dir, &path, &named);
        let is_in_use = stale.is_some() && is_mapped(&path)?;
        if remove && stale.is_some() && !is_in_use {
            fs::remove_file(&path).with_context(|| format!("removing {}", path.display()))?;
        }
        verdicts.push(Verdict {
            path,
            bytes,
            stale,
            is_in_use,
        });
    }
    verdicts.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(verdicts)
}

/// What a constraints file's name says: `cuzk-r1cs-v<version>-<params stem>-<identity>.r1cs`.
#[derive(Debug, PartialEq, Eq)]
struct Named<'a> {
    version: u32,
    stem: &'a str,
}

fn parse_name(name: &str) -> Option<Named<'_>> {
    let rest = name.strip_prefix("cuzk-r1cs-v")?.strip_suffix(".r1cs")?;
    let (version, rest) = rest.split_once('-')?;
    let (stem, identity) = rest.rsplit_once('-')?;
    let is_hex = !identity.is_empty() && identity.chars().all(|c| c.is_ascii_hexdigit());
    (is_hex && !stem.is_empty()).then_some(Named {
        version: version.parse().ok()?,
        stem,
    })
}

/// Why the file at `path` is stale, if it is.
fn staleness(dir: &Path, path: &Path, named: &Named<'_>) -> Option<String> {
    if named.version != VERSION {
        return Some(format!(
            "recorded in format version {} (this cuzk writes {VERSION})",
            named.version
        ));
    }
    let params = dir.join(format!("{}.params", named.stem));
    if !params.is_file() {
        return Some(format!("its parameters {} are gone", params.display()));
    }
    match r1cs_path(&params) {
        Ok(current) if current == path => None,
        Ok(current) => Some(format!(
            "recorded for another circuit than {} (their verifying key changed; the current one is {})",
            params.display(),
            current
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
        )),
        // Nothing shows it stale.
        Err(_) => None,
    }
}

/// True when a run holds the file's shared lock (it has it mapped).
fn is_mapped(path: &Path) -> Result<bool> {
    let file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    match file.try_lock() {
        Ok(()) => Ok(false),
        Err(TryLockError::WouldBlock) => Ok(true),
        Err(TryLockError::Error(err)) => {
            Err(err).with_context(|| format!("locking {}", path.display()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_read_as_the_recorder_writes_them() {
        assert_eq!(
            parse_name("cuzk-r1cs-v1-v28-stacked-proof-of-replication-abc-0123456789abcdef.r1cs"),
            Some(Named {
                version: 1,
                stem: "v28-stacked-proof-of-replication-abc"
            })
        );
        for other in [
            "v28-stacked.params",
            "cuzk-r1cs-v1-x.r1cs",
            "cuzk-r1cs-vX-a-0123.r1cs",
            "cuzk-r1cs-v1-a-nothex.r1cs",
            "cuzk-r1cs-v1-a-0123.r1cs.tmp",
        ] {
            assert_eq!(parse_name(other), None, "{other}");
        }
    }

    #[test]
    fn only_stale_files_not_in_use_are_removed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let dir = dir.path();
        let params = dir.join("v28-set.params");
        fs::write(&params, b"params").expect("params");
        fs::write(dir.join("v28-set.vk"), b"the current key").expect("vk");
        let current = r1cs_path(&params).expect("current name");
        let stale_circuit = dir.join("cuzk-r1cs-v1-v28-set-00000000deadbeef.r1cs");
        let old_format = dir.join("cuzk-r1cs-v0-v28-set-00000000deadbeef.r1cs");
        let orphan = dir.join("cuzk-r1cs-v1-v28-gone-00000000deadbeef.r1cs");
        let mapped = dir.join("cuzk-r1cs-v1-v28-gone-11111111deadbeef.r1cs");
        for file in [&current, &stale_circuit, &old_format, &orphan, &mapped] {
            fs::write(file, b"constraints").expect("write");
        }
        let reader = File::open(&mapped).expect("open");
        reader.lock_shared().expect("a run's shared lock");

        let judged = prune(dir, false).expect("dry run");
        assert_eq!(judged.len(), 5);
        let verdict = |path: &Path| judged.iter().find(|v| v.path == path).expect("judged");
        assert_eq!(verdict(&current).stale, None);
        assert!(verdict(&stale_circuit)
            .stale
            .as_deref()
            .is_some_and(|s| s.contains("another circuit")));
        assert!(verdict(&old_format)
            .stale
            .as_deref()
            .is_some_and(|s| s.contains("format version 0")));
        assert!(verdict(&orphan)
            .stale
            .as_deref()
            .is_some_and(|s| s.contains("are gone")));
        assert!(verdict(&mapped).is_in_use);
        assert!(stale_circuit.exists(), "a dry run removes nothing");

        prune(dir, true).expect("prune");
        assert!(current.exists() && mapped.exists() && params.exists());
        assert!(!stale_circuit.exists() && !old_format.exists() && !orphan.exists());
        drop(reader);
        prune(dir, true).expect("prune again");
        assert!(!mapped.exists(), "removed once no run maps it");
        assert!(current.exists());
    }
}
