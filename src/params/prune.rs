//! Pruning the files cuzk derives beside parameters that no current circuit uses (`cuzk
//! params prune`): recorded constraints and coset H queries.
//!
//! Neither kind of file is ever replaced (see `r1cs::identity` and [`super::coset_h`]), so
//! a new filecoin-proofs, regenerated test parameters or a new format leave the old file
//! beside the new one: 9 GB of constraints and 13 GB of coset H query at 32GiB, each. A file
//! is stale when its name is not the one its kind gives for the parameters it names
//! ([`crate::r1cs::r1cs_path`], [`super::coset_h::coset_h_path`]): made in another format
//! version, for another circuit or setup (the verifying key beside the parameters changed),
//! or for parameters that are gone. A file whose parameters cannot be read for their
//! identity is kept: nothing shows it stale.
//!
//! A run holds a shared lock on such a file while it maps or reads it
//! ([`crate::r1cs::R1cs::load`], [`super::coset_h::load`]); a stale file still locked is
//! kept, since deleting a file another process maps kills that process on NFS. (A cuzk
//! older than the lock takes none: stop such runs first.)

use std::fs::{self, File, TryLockError};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::coset_h;
use crate::r1cs;

/// A kind of file derived beside parameters: how it is named, and the name it has now.
struct Derived {
    /// What the file holds, as the verdicts say it.
    what: &'static str,
    /// Its name: `<prefix><version>-<params stem>-<digest><suffix>`.
    prefix: &'static str,
    suffix: &'static str,
    /// The format version this cuzk writes.
    version: u32,
    /// The path the file has for the parameters at a path.
    current: fn(&Path) -> Result<PathBuf>,
}

/// Every kind of file pruned.
const DERIVED: [Derived; 2] = [
    Derived {
        what: "constraints",
        prefix: "cuzk-r1cs-v",
        suffix: ".r1cs",
        version: r1cs::VERSION,
        current: r1cs::r1cs_path,
    },
    Derived {
        what: "coset H query",
        prefix: "cuzk-coset-h-v",
        suffix: ".points",
        version: coset_h::VERSION,
        current: coset_h::coset_h_path,
    },
];

/// A derived file and what pruning does with it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Verdict {
    /// The file.
    pub path: PathBuf,
    /// What it holds: `constraints` or `coset H query`.
    pub holds: &'static str,
    /// Its size.
    pub bytes: u64,
    /// Why it is stale, or `None` when a current circuit uses it.
    pub stale: Option<String>,
    /// True when it is stale but a run has it mapped: it is kept.
    pub is_in_use: bool,
}

/// Every derived file in `dir`, judged; with `remove`, the stale ones not in use are
/// deleted. Sorted by name.
pub fn prune(dir: &Path, remove: bool) -> Result<Vec<Verdict>> {
    let mut verdicts = Vec::new();
    let entries = fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))?;
    for entry in entries {
        let entry = entry.with_context(|| format!("listing {}", dir.display()))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some((kind, named)) = DERIVED
            .iter()
            .find_map(|kind| parse_name(kind, &name).map(|named| (kind, named)))
        else {
            continue;
        };
        let path = entry.path();
        let bytes = entry.metadata().map_or(0, |m| m.len());
        let stale = staleness(kind, dir, &path, &named);
        let is_in_use = stale.is_some() && is_mapped(&path)?;
        if remove && stale.is_some() && !is_in_use {
            fs::remove_file(&path).with_context(|| format!("removing {}", path.display()))?;
        }
        verdicts.push(Verdict {
            path,
            holds: kind.what,
            bytes,
            stale,
            is_in_use,
        });
    }
    verdicts.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(verdicts)
}

/// What a derived file's name says: its format version and the stem of its parameters.
#[derive(Debug, PartialEq, Eq)]
struct Named<'a> {
    version: u32,
    stem: &'a str,
}

fn parse_name<'a>(kind: &Derived, name: &'a str) -> Option<Named<'a>> {
    let rest = name.strip_prefix(kind.prefix)?.strip_suffix(kind.suffix)?;
    let (version, rest) = rest.split_once('-')?;
    let (stem, identity) = rest.rsplit_once('-')?;
    let is_hex = !identity.is_empty() && identity.chars().all(|c| c.is_ascii_hexdigit());
    (is_hex && !stem.is_empty()).then_some(Named {
        version: version.parse().ok()?,
        stem,
    })
}

/// Why the file at `path` is stale, if it is.
fn staleness(kind: &Derived, dir: &Path, path: &Path, named: &Named<'_>) -> Option<String> {
    if named.version != kind.version {
        return Some(format!(
            "made in format version {} (this cuzk writes {})",
            named.version, kind.version
        ));
    }
    let params = dir.join(format!("{}.params", named.stem));
    if !params.is_file() {
        return Some(format!("its parameters {} are gone", params.display()));
    }
    match (kind.current)(&params) {
        Ok(current) if current == path => None,
        Ok(current) => Some(format!(
            "made for another circuit than {} (their verifying key changed; the current one is {})",
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
        let r1cs = &DERIVED[0];
        assert_eq!(
            parse_name(
                r1cs,
                "cuzk-r1cs-v1-v28-stacked-proof-of-replication-abc-0123456789abcdef.r1cs"
            ),
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
            assert_eq!(parse_name(r1cs, other), None, "{other}");
        }
    }

    #[test]
    fn only_stale_files_not_in_use_are_removed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let dir = dir.path();
        let params = dir.join("v28-set.params");
        fs::write(&params, b"params").expect("params");
        fs::write(dir.join("v28-set.vk"), b"the current key").expect("vk");
        let current = r1cs::r1cs_path(&params).expect("current name");
        let current_coset_h = coset_h::coset_h_path(&params).expect("current name");
        let stale_coset_h = dir.join("cuzk-coset-h-v1-v28-set-00000000deadbeef.points");
        let stale_circuit = dir.join("cuzk-r1cs-v1-v28-set-00000000deadbeef.r1cs");
        let old_format = dir.join("cuzk-r1cs-v0-v28-set-00000000deadbeef.r1cs");
        let orphan = dir.join("cuzk-r1cs-v1-v28-gone-00000000deadbeef.r1cs");
        let mapped = dir.join("cuzk-r1cs-v1-v28-gone-11111111deadbeef.r1cs");
        for file in [
            &current,
            &stale_circuit,
            &old_format,
            &orphan,
            &mapped,
            &current_coset_h,
            &stale_coset_h,
        ] {
            fs::write(file, b"constraints").expect("write");
        }
        let reader = File::open(&mapped).expect("open");
        reader.lock_shared().expect("a run's shared lock");

        let judged = prune(dir, false).expect("dry run");
        assert_eq!(judged.len(), 7);
        let verdict = |path: &Path| judged.iter().find(|v| v.path == path).expect("judged");
        assert_eq!(verdict(&current).stale, None);
        assert_eq!(verdict(&current_coset_h).stale, None);
        assert_eq!(verdict(&current_coset_h).holds, "coset H query");
        assert!(verdict(&stale_coset_h)
            .stale
            .as_deref()
            .is_some_and(|s| s.contains("another circuit")));
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
        assert!(current_coset_h.exists() && !stale_coset_h.exists());
        assert!(!stale_circuit.exists() && !old_format.exists() && !orphan.exists());
        drop(reader);
        prune(dir, true).expect("prune again");
        assert!(!mapped.exists(), "removed once no run maps it");
        assert!(current.exists());
    }
}
