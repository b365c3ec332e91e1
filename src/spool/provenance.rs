//! Provenance: which C1 file's bytes a result in the outbox was proved from.
//!
//! Lotus can run C1 again for a sector (same sector, same file name, a new seed). A run that
//! claims such a file (new in the inbox, or resumed) must not retire it onto the proof of the
//! earlier C1 just because a result of its name is in the outbox. So `outbox/<job>.json`
//! carries the BLAKE3 digest of the C1 file it was proved from ([`DIGEST_FIELD`]), and a
//! claim is retired onto an existing result only when the digests match. A result that is not the file's (or that
//! predates the digest) is kept in `outbox/superseded/`, never deleted, and the file is
//! proved again.

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::{is_present, rename_no_replace, sync_dir, ClaimedJob, Spool};

/// Where results that turned out not to be their C1 file's are kept, inside the outbox: a
/// directory, so readers of `outbox/*.proof` never take one for a current proof.
pub const SUPERSEDED_DIR: &str = "superseded";

/// The field of `outbox/<job>.json` holding the digest of the C1 file proved.
pub const DIGEST_FIELD: &str = "c1_blake3";

/// The BLAKE3 digest of a C1 file's bytes, in hex.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct C1Digest(String);

impl C1Digest {
    /// The digest of the file at `path`, read in full.
    pub fn of_file(path: &Path) -> Result<C1Digest> {
        let mut file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
        let mut hasher = blake3::Hasher::new();
        io::copy(&mut file, &mut hasher).with_context(|| format!("reading {}", path.display()))?;
        Ok(C1Digest(hasher.finalize().to_hex().to_string()))
    }

    /// The digest of `bytes`, as [`C1Digest::of_file`] gives for a file holding them.
    pub fn of_bytes(bytes: &[u8]) -> C1Digest {
        C1Digest(blake3::hash(bytes).to_hex().to_string())
    }

    /// The digest in hex, as the outbox record holds it.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Whose result the outbox holds under a claimed file's name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Provenance {
    /// The result was proved from this very file's bytes.
    ThisFile,
    /// It was proved from other bytes (`recorded`), or its record names none (written before
    /// records carried a digest, or unreadable): it cannot be taken for this file's proof.
    Other {
        /// The digest the record names, if any.
        recorded: Option<String>,
    },
}

impl Spool {
    /// Compares the digest recorded with the outbox's result of `job`'s name to the claimed
    /// file's own.
    pub fn provenance(&self, job: &ClaimedJob) -> Result<Provenance> {
        let (_, meta_path) = self.outbox_paths(&job.name);
        let recorded = recorded_digest(&meta_path);
        let digest = C1Digest::of_file(&job.path)?;
        Ok(match recorded {
            Some(recorded) if recorded == digest.as_str() => Provenance::ThisFile,
            recorded => Provenance::Other { recorded },
        })
    }

    /// Moves the outbox's result of `job_name` to `outbox/superseded/`, under a name of its
    /// own that says which C1 it was proved from, and returns where its proof went.
    pub fn supersede_result(&self, job_name: &str, recorded: Option<&str>) -> Result<PathBuf> {
        let kept_dir = self.layout.outbox.join(SUPERSEDED_DIR);
        fs::create_dir_all(&kept_dir)
            .with_context(|| format!("creating {}", kept_dir.display()))?;
        let (proof_path, meta_path) = self.outbox_paths(job_name);
        let origin = recorded.map_or_else(
            || "c1-unrecorded".to_owned(),
            |d| format!("c1-{}", &d[..d.len().min(16)]),
        );
        // One step under the outbox's lock, as writing a result is.
        let _finishing = self.lock_outbox()?;
        for n in 0u32.. {
            let stem = match n {
                0 => format!("{job_name}.{origin}"),
                n => format!("{job_name}.{origin}.{n}"),
            };
            let (kept_proof, kept_meta) = (
                kept_dir.join(format!("{stem}.proof")),
                kept_dir.join(format!("{stem}.json")),
            );
            if is_present(&kept_proof) || is_present(&kept_meta) {
                continue;
            }
            // The record first: it holds the proof's bytes too, so a crash between the two
            // moves loses nothing, and the proof left behind is a leftover that the next
            // result of this name replaces.
            move_if_present(&meta_path, &kept_meta)?;
            move_if_present(&proof_path, &kept_proof)?;
            sync_dir(&kept_dir)?;
            sync_dir(&self.layout.outbox)?;
            return Ok(kept_proof);
        }
        unreachable!("the candidate names never end")
    }
}

/// The digest named by the outbox record at `meta_path`, if it is readable and names one.
pub fn recorded_digest(meta_path: &Path) -> Option<String> {
    let bytes = fs::read(meta_path).ok()?;
    let record: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    record.get(DIGEST_FIELD)?.as_str().map(str::to_owned)
}

fn move_if_present(from: &Path, to: &Path) -> Result<()> {
    match rename_no_replace(from, to) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).with_context(|| format!("moving {} to {}", from.display(), to.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spool::SpoolLayout;

    fn spool_with_claim(bytes: &[u8]) -> (tempfile::TempDir, Spool, ClaimedJob) {
        let dir = tempfile::tempdir().expect("tempdir");
        let inbox = dir.path().join("inbox");
        fs::create_dir(&inbox).expect("inbox");
        fs::write(inbox.join("a.json"), bytes).expect("c1");
        let spool = Spool::open(SpoolLayout::beside(&inbox)).expect("open");
        let job = spool
            .claim(&inbox.join("a.json"))
            .expect("claim")
            .expect("claimed");
        (dir, spool, job)
    }

    fn write_result(spool: &Spool, digest: Option<&str>) {
        let (proof, meta) = spool.outbox_paths("a");
        fs::write(proof, [7u8; 192]).expect("proof");
        let record = match digest {
            Some(d) => serde_json::json!({ "job": "a", DIGEST_FIELD: d }),
            None => serde_json::json!({ "job": "a" }),
        };
        fs::write(meta, record.to_string()).expect("meta");
    }

    #[test]
    fn only_the_same_bytes_own_a_result() {
        let (_dir, spool, job) = spool_with_claim(b"{\"seed\": 1}");
        let own = C1Digest::of_file(&job.path).expect("digest");
        write_result(&spool, Some(own.as_str()));
        assert_eq!(
            spool.provenance(&job).expect("provenance"),
            Provenance::ThisFile
        );
        write_result(&spool, Some(&"0".repeat(64)));
        assert!(matches!(
            spool.provenance(&job).expect("provenance"),
            Provenance::Other { recorded: Some(_) }
        ));
        write_result(&spool, None);
        assert_eq!(
            spool.provenance(&job).expect("provenance"),
            Provenance::Other { recorded: None }
        );
    }

    #[test]
    fn a_superseded_result_is_kept_under_a_name_of_its_own() {
        let (_dir, spool, _job) = spool_with_claim(b"{}");
        let old = "ab".repeat(32);
        let mut kept = Vec::new();
        for _ in 0..2 {
            write_result(&spool, Some(&old));
            kept.push(spool.supersede_result("a", Some(&old)).expect("supersede"));
            assert!(!spool.has_result("a"), "the outbox no longer offers it");
        }
        assert_ne!(kept[0], kept[1], "a second one never replaces the first");
        for proof in &kept {
            assert_eq!(fs::read(proof).expect("kept proof"), [7u8; 192]);
            assert!(
                proof.with_extension("json").is_file(),
                "its record beside it"
            );
            assert!(proof.to_string_lossy().contains("a.c1-abababababababab"));
        }
    }
}
