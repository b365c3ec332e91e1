//! Parameter checks: are the files in the cache whole, and are they the official ones?
//!
//! Two depths. [`check_usable`] is cheap, a few small reads: the `.params` file is as long as
//! its own counts say and its `.vk` is there and whole. `prove-dir` runs it on a parameter
//! file at its first use, so a download cut short stops the run before any work with the file
//! named and the fix, instead of failing every job at the first proof. [`check_cache`] is
//! `cuzk params check`: it hashes every file (minutes for a 47 GB set) and compares the
//! digest with the one filecoin-proofs ships in `parameters.json`: blake2b-512 of the whole
//! file, the first 16 bytes in hex.
//!
//! A digest tells a file from the official one, not why it differs: parameters generated
//! locally for a test size carry the official file name and a digest of their own, exactly as
//! a damaged official file does. So `cuzk params gen` leaves a record beside each file it
//! makes ([`GenerationRecord`], `<file>.cuzk-generated.json`, with the digest the file had
//! then), and the check reports such a file as generated and intact, or as damaged since;
//! a file that differs without a record is reported as what it is, unofficial or corrupt.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{ErrorKind, Read};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::c1::SectorSizeName;

use super::load::{ParamsLayout, G1_BYTES, G2_BYTES};

/// The suffix of the record `cuzk params gen` writes beside each file it makes.
pub const GENERATION_RECORD_SUFFIX: &str = ".cuzk-generated.json";

/// Hex digits of a digest as parameters.json records it (16 bytes of blake2b-512).
const DIGEST_HEX_LEN: usize = 32;

/// Bytes hashed between progress reports.
const PROGRESS_STEP_BYTES: u64 = 64 << 20;

/// A parameter file that cannot be used as it is.
#[derive(Debug, thiserror::Error)]
#[error("{path}: damaged Groth16 parameters for {size} sectors: {reason} (hint: the download was cut short or the file was damaged; delete it and fetch it again with `lotus fetch-params {size}` or `curio fetch-params {size}`, then `cuzk params check --sector-size {size}` checks every file)")]
pub struct DamagedParamsError {
    /// The file.
    pub path: PathBuf,
    /// The sector size it is for.
    pub size: SectorSizeName,
    /// What is wrong with it.
    pub reason: String,
}

/// The cheap check of the parameter set at `params_path` (and its `.vk` beside it) for
/// sectors of `sector_size`: both exist and are as long as their own counts say. Returns the
/// layout, which the run needs anyway.
pub fn check_usable(
    params_path: &Path,
    sector_size: u64,
) -> Result<ParamsLayout, DamagedParamsError> {
    let damaged = |path: &Path, reason: String| DamagedParamsError {
        path: path.to_owned(),
        size: SectorSizeName(sector_size),
        reason,
    };
    let layout = params_layout(params_path).map_err(|reason| damaged(params_path, reason))?;
    let vk_path = params_path.with_extension("vk");
    vk_length_check(&vk_path).map_err(|reason| damaged(&vk_path, reason))?;
    Ok(layout)
}

/// The layout of a `.params` file whose length matches its counts, or what is wrong.
fn params_layout(path: &Path) -> Result<ParamsLayout, String> {
    let len = std::fs::metadata(path)
        .map_err(|e| format!("cannot read it: {e}"))?
        .len();
    let layout = ParamsLayout::read(path).map_err(|e| match e.kind() {
        ErrorKind::UnexpectedEof => {
            format!("it ends ({len} bytes) before the point counts it holds say it should")
        }
        _ => format!("its point counts cannot be read: {e}"),
    })?;
    if len != layout.file_bytes() {
        return Err(format!(
            "it has {len} bytes but its own point counts say {} ({})",
            layout.file_bytes(),
            if len < layout.file_bytes() {
                "cut short"
            } else {
                "extra bytes at the end"
            }
        ));
    }
    Ok(layout)
}

/// Checks that a `.vk` file is as long as its `ic` count says.
fn vk_length_check(path: &Path) -> Result<(), String> {
    let file = File::open(path).map_err(|e| match e.kind() {
        ErrorKind::NotFound => "the verifying key beside the parameters is missing".to_owned(),
        _ => format!("cannot read it: {e}"),
    })?;
    let len = file.metadata().map_err(|e| e.to_string())?.len();
    // alpha_g1, beta_g1, beta_g2, gamma_g2, delta_g1, delta_g2, then the ic count and points.
    let fixed = 3 * G1_BYTES + 3 * G2_BYTES;
    let mut count = [0u8; 4];
    file.read_exact_at(&mut count, fixed)
        .map_err(|_| format!("it has {len} bytes, too few for a verifying key"))?;
    let expected = fixed + 4 + u64::from(u32::from_be_bytes(count)) * G1_BYTES;
    if len != expected {
        return Err(format!(
            "it has {len} bytes but its own point count says {expected}"
        ));
    }
    Ok(())
}

/// What parameters.json says a file should be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expected {
    /// The first 32 hex digits of the blake2b-512 digest.
    pub digest: String,
    /// The sector size the file is for.
    pub sector_size: u64,
}

/// The official files by name: filecoin-proofs' `parameters.json` and
/// `srs-inner-product.json`, as built into this cuzk.
pub fn official_manifest() -> BTreeMap<String, Expected> {
    use storage_proofs_core::parameter_cache::{PARAMETERS, SRS_PARAMETERS};
    PARAMETERS
        .iter()
        .chain(SRS_PARAMETERS.iter())
        .map(|(name, data)| {
            let expected = Expected {
                digest: data.digest.clone(),
                sector_size: data.sector_size,
            };
            (name.clone(), expected)
        })
        .collect()
}

/// What `cuzk params gen` wrote beside a file it made.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GenerationRecord {
    /// The file's name.
    pub file: String,
    /// Its digest when made, as parameters.json writes digests.
    pub digest: String,
    /// Its length when made.
    pub bytes: u64,
    /// When, RFC 3339 UTC.
    pub generated_at: String,
    /// The cuzk that made it.
    pub cuzk: String,
    /// What it is.
    pub note: String,
}

/// Where the record of the generated file at `path` lives.
pub fn generation_record_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(GENERATION_RECORD_SUFFIX);
    path.with_file_name(name)
}

/// Hashes the file at `path`, just made by `cuzk params gen`, and records its digest beside
/// it.
pub fn write_generation_record(path: &Path) -> anyhow::Result<()> {
    let digest = digest_file(path, &mut |_, _| {})?;
    let record = GenerationRecord {
        file: path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        digest,
        bytes: std::fs::metadata(path)?.len(),
        generated_at: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        cuzk: env!("CARGO_PKG_VERSION").to_owned(),
        note: "INSECURE random test parameters made by `cuzk params gen` (or prove-dir --gen-test-params); proofs made with them are rejected by the chain".into(),
    };
    let bytes = serde_json::to_vec_pretty(&record)?;
    crate::atomic_file::write(&generation_record_path(path), &bytes)
}

/// True when cuzk generated the parameter file at `path` (its record is beside it): a proof
/// that verifies against it is verified against locally made keys, which the chain does not
/// know. Cheap; [`check_cache`] is what tells whether the file changed since.
pub fn is_generated(path: &Path) -> bool {
    generation_record_path(path).is_file()
}

fn read_generation_record(path: &Path) -> Option<GenerationRecord> {
    let bytes = std::fs::read(generation_record_path(path)).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// The digest parameters.json records for a file: blake2b-512 of the whole file, the first
/// 16 bytes in hex. `progress` hears `(bytes hashed, bytes in all)` as it goes.
pub fn digest_file(path: &Path, progress: &mut dyn FnMut(u64, u64)) -> std::io::Result<String> {
    let mut file = File::open(path)?;
    let total = file.metadata()?.len();
    let mut state = blake2b_simd::Params::new().to_state();
    let mut buffer = vec![0u8; 1 << 20];
    let (mut done, mut reported) = (0u64, 0u64);
    loop {
        let read = match file.read(&mut buffer) {
            Ok(0) => break,
            Ok(read) => read,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        state.update(&buffer[..read]);
        done += read as u64;
        if done - reported >= PROGRESS_STEP_BYTES {
            progress(done, total);
            reported = done;
        }
    }
    progress(done, total);
    let hex = state.finalize().to_hex();
    Ok(hex[..DIGEST_HEX_LEN].to_owned())
}

/// What the check found for one file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The official file: the digest matches parameters.json.
    Ok,
    /// Needed for the sector size asked about, and not in the cache.
    Missing,
    /// Damaged: shorter or longer than its own counts, unreadable, or changed since cuzk
    /// generated it.
    Corrupt(String),
    /// Generated by cuzk (its record says so, and the digest still matches the record):
    /// intact, but INSECURE test parameters, not the official file.
    Generated {
        /// When it was made.
        generated_at: String,
    },
    /// An official name with another digest and no record of being generated: a generated
    /// file and a damaged one look the same by digest.
    UnofficialOrCorrupt {
        /// Its digest.
        found: String,
        /// parameters.json's.
        expected: String,
    },
    /// A name parameters.json does not list: test parameters generated elsewhere, or another
    /// version's files.
    Unofficial,
}

impl Verdict {
    /// True when the file is a reason to worry: missing, damaged, or not known to be intact.
    pub fn is_problem(&self) -> bool {
        matches!(
            self,
            Verdict::Missing | Verdict::Corrupt(_) | Verdict::UnofficialOrCorrupt { .. }
        )
    }

    /// The verdict's one-word name, for `--json`: `ok`, `missing`, `corrupt`, `generated`,
    /// `unofficial_or_corrupt`, `unofficial`.
    pub fn name(&self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Missing => "missing",
            Verdict::Corrupt(_) => "corrupt",
            Verdict::Generated { .. } => "generated",
            Verdict::UnofficialOrCorrupt { .. } => "unofficial_or_corrupt",
            Verdict::Unofficial => "unofficial",
        }
    }

    /// The verdict as the report prints it.
    pub fn describe(&self) -> String {
        match self {
            Verdict::Ok => "ok".into(),
            Verdict::Missing => "missing".into(),
            Verdict::Corrupt(why) => format!("corrupt: {why}"),
            Verdict::Generated { generated_at } => format!(
                "generated test parameters (INSECURE), intact: made by cuzk params gen at {generated_at}; not the official file"
            ),
            Verdict::UnofficialOrCorrupt { found, expected } => format!(
                "unofficial or corrupt: digest differs (found {found}, parameters.json says {expected}); a generated file cannot be told from a damaged one by digest, and no cuzk generation record is beside it"
            ),
            Verdict::Unofficial => {
                "unofficial: not in parameters.json (generated test parameters, or another proofs version's)".into()
            }
        }
    }
}

/// One file's line in the report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileCheck {
    /// The file's name in the cache.
    pub name: String,
    /// Its sector size, if parameters.json says.
    pub sector_size: Option<u64>,
    /// What was found.
    pub verdict: Verdict,
}

/// What `cuzk params check` looks at.
pub struct CheckRequest<'a> {
    /// The cache directory.
    pub dir: &'a Path,
    /// The official files.
    pub manifest: &'a BTreeMap<String, Expected>,
    /// Only files for this sector size, and the PoRep files it needs must be there.
    pub sector_size: Option<u64>,
    /// File names that must be present (the PoRep `.params` and `.vk` for the size).
    pub required: &'a [String],
}

/// Checks the parameter files in a cache; `progress` hears `(file, bytes hashed, bytes in
/// all)` while a file is hashed.
pub fn check_cache(
    request: &CheckRequest<'_>,
    progress: &mut dyn FnMut(&str, u64, u64),
) -> std::io::Result<Vec<FileCheck>> {
    let mut names: Vec<String> = Vec::new();
    for entry in std::fs::read_dir(request.dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let is_file = entry.file_type().map(|t| t.is_file()).unwrap_or(false);
        let is_parameter_file = [".params", ".vk", ".srs"].iter().any(|s| name.ends_with(s));
        if is_file && is_parameter_file {
            names.push(name);
        }
    }
    for required in request.required {
        if !names.contains(required) {
            names.push(required.clone());
        }
    }
    names.sort();
    let mut checks = Vec::new();
    for name in names {
        let expected = request.manifest.get(&name);
        let sector_size = expected
            .map(|e| e.sector_size)
            .or_else(|| meta_sector_size(&request.dir.join(&name)));
        if let Some(wanted) = request.sector_size {
            // Unlisted files without a `.meta` have no known size: they belong to a report of
            // the whole cache.
            if sector_size != Some(wanted) && !request.required.contains(&name) {
                continue;
            }
        }
        let path = request.dir.join(&name);
        let verdict = if !path.is_file() {
            Verdict::Missing
        } else {
            check_file(&path, expected, &mut |done, total| {
                progress(&name, done, total)
            })
        };
        checks.push(FileCheck {
            name,
            sector_size,
            verdict,
        });
    }
    Ok(checks)
}

/// The sector size in the `.meta` file filecoin-proofs writes beside a parameter set it uses
/// or generates (`{"sector_size":2048}`), for files parameters.json does not list.
fn meta_sector_size(path: &Path) -> Option<u64> {
    #[derive(Deserialize)]
    struct Meta {
        sector_size: u64,
    }
    let bytes = std::fs::read(path.with_extension("meta")).ok()?;
    serde_json::from_slice::<Meta>(&bytes)
        .ok()
        .map(|m| m.sector_size)
}

/// Checks one file: the cheap length check first, then the digest.
fn check_file(
    path: &Path,
    expected: Option<&Expected>,
    progress: &mut dyn FnMut(u64, u64),
) -> Verdict {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let shape = if name.ends_with(".params") {
        params_layout(path).map(|_| ())
    } else if name.ends_with(".vk") {
        vk_length_check(path)
    } else {
        Ok(())
    };
    if let Err(why) = shape {
        return Verdict::Corrupt(why);
    }
    let Some(expected) = expected else {
        return Verdict::Unofficial;
    };
    let found = match digest_file(path, progress) {
        Ok(found) => found,
        Err(e) => return Verdict::Corrupt(format!("cannot read it: {e}")),
    };
    if found == expected.digest {
        return Verdict::Ok;
    }
    match read_generation_record(path) {
        Some(record) if record.digest == found => Verdict::Generated {
            generated_at: record.generated_at,
        },
        Some(record) => Verdict::Corrupt(format!(
            "digest {found} matches neither parameters.json ({}) nor the {} cuzk recorded when it generated the file at {}",
            expected.digest, record.digest, record.generated_at
        )),
        None => Verdict::UnofficialOrCorrupt {
            found,
            expected: expected.digest.clone(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::tests::CubeCircuit;
    use bellperson::groth16::generate_random_parameters;
    use blstrs::Bls12;
    use rand::SeedableRng;

    /// A small but real parameter set and its verifying key, written as `name`.
    fn write_set(dir: &Path, name: &str) -> (PathBuf, Vec<u8>) {
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        let params = generate_random_parameters::<Bls12, _, _>(CubeCircuit { x: None }, &mut rng)
            .expect("parameters");
        let mut bytes = Vec::new();
        params.write(&mut bytes).expect("write");
        let mut vk = Vec::new();
        params.vk.write(&mut vk).expect("vk");
        let path = dir.join(format!("{name}.params"));
        std::fs::write(&path, &bytes).expect("params");
        std::fs::write(dir.join(format!("{name}.vk")), &vk).expect("vk");
        (path, bytes)
    }

    fn digest_of(bytes: &[u8]) -> String {
        blake2b_simd::blake2b(bytes).to_hex()[..DIGEST_HEX_LEN].to_owned()
    }

    #[test]
    fn digests_are_parameters_json_s() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("f");
        let data = vec![7u8; (PROGRESS_STEP_BYTES + 5) as usize];
        std::fs::write(&path, &data).expect("write");
        let mut heard = Vec::new();
        let digest =
            digest_file(&path, &mut |done, total| heard.push((done, total))).expect("digest");
        assert_eq!(digest, digest_of(&data));
        assert_eq!(digest.len(), 32);
        let total = data.len() as u64;
        assert_eq!(heard, [(PROGRESS_STEP_BYTES, total), (total, total)]);
    }

    #[test]
    fn the_cheap_check_finds_cut_files_and_missing_keys() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (path, bytes) = write_set(dir.path(), "v28-set");
        let layout = check_usable(&path, 2048).expect("whole");
        assert_eq!(layout.file_bytes(), bytes.len() as u64);

        // Cut inside the last vector: the counts read, the length gives it away.
        std::fs::write(&path, &bytes[..bytes.len() - 10]).expect("cut");
        let err = check_usable(&path, 2048)
            .expect_err("cut short")
            .to_string();
        assert!(
            err.contains("cut short") && err.contains("v28-set.params"),
            "{err}"
        );
        assert!(
            err.contains("lotus fetch-params 2KiB") && err.contains("curio fetch-params 2KiB"),
            "{err}"
        );
        // Cut in the middle: the counts themselves run out.
        std::fs::write(&path, &bytes[..bytes.len() / 2]).expect("cut");
        let err = check_usable(&path, 2048)
            .expect_err("cut in half")
            .to_string();
        assert!(err.contains("before the point counts"), "{err}");

        std::fs::write(&path, &bytes).expect("whole again");
        std::fs::remove_file(dir.path().join("v28-set.vk")).expect("remove");
        let err = check_usable(&path, 2048).expect_err("no vk").to_string();
        assert!(
            err.contains("v28-set.vk") && err.contains("missing"),
            "{err}"
        );
    }

    #[test]
    fn every_verdict_of_the_full_check() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (official, bytes) = write_set(dir.path(), "v28-official");
        let (generated, _) = write_set(dir.path(), "v28-generated");
        let (_, _) = write_set(dir.path(), "v28-unlisted");
        let (tampered, _) = write_set(dir.path(), "v28-tampered");
        write_generation_record(&generated).expect("record");
        write_generation_record(&tampered).expect("record");
        // Changed after it was generated: same length, other bytes.
        let mut changed = std::fs::read(&tampered).expect("read");
        let last = changed.len() - 1;
        changed[last] ^= 1;
        std::fs::write(&tampered, &changed).expect("write");
        std::fs::write(dir.path().join("v28-cut.params"), &bytes[..100]).expect("cut");
        std::fs::write(dir.path().join("v28-official.meta"), b"{}").expect("meta");
        std::fs::write(
            dir.path().join("v28-unlisted.meta"),
            br#"{"sector_size":2048}"#,
        )
        .expect("meta");

        let vk = std::fs::read(dir.path().join("v28-official.vk")).expect("vk");
        let listed = |name: &str, digest: String| {
            (
                name.to_owned(),
                Expected {
                    digest,
                    sector_size: 2048,
                },
            )
        };
        let manifest: BTreeMap<String, Expected> = [
            listed("v28-official.params", digest_of(&bytes)),
            listed("v28-official.vk", digest_of(&vk)),
            listed("v28-generated.params", "0".repeat(32)),
            listed("v28-tampered.params", "0".repeat(32)),
            listed("v28-other.params", "0".repeat(32)),
            listed("v28-cut.params", "0".repeat(32)),
            listed("v28-missing.vk", "0".repeat(32)),
        ]
        .into_iter()
        .collect();
        let required = ["v28-missing.vk".to_owned()];
        let request = CheckRequest {
            dir: dir.path(),
            manifest: &manifest,
            sector_size: None,
            required: &required,
        };
        let mut hashed = std::collections::BTreeSet::new();
        let checks = check_cache(&request, &mut |name, _, _| {
            hashed.insert(name.to_owned());
        })
        .expect("check");
        let verdict = |name: &str| {
            checks
                .iter()
                .find(|c| c.name == name)
                .map(|c| c.verdict.clone())
                .unwrap_or_else(|| panic!("{name} not reported: {checks:?}"))
        };
        assert_eq!(verdict("v28-official.params"), Verdict::Ok);
        assert_eq!(verdict("v28-official.vk"), Verdict::Ok);
        assert!(matches!(
            verdict("v28-generated.params"),
            Verdict::Generated { .. }
        ));
        assert!(
            matches!(verdict("v28-tampered.params"), Verdict::Corrupt(ref why) if why.contains("recorded")),
            "{:?}",
            verdict("v28-tampered.params")
        );
        assert!(matches!(
            verdict("v28-unlisted.params"),
            Verdict::Unofficial
        ));
        assert!(matches!(verdict("v28-cut.params"), Verdict::Corrupt(_)));
        assert_eq!(verdict("v28-missing.vk"), Verdict::Missing);
        // Listed but not needed and not here: not a problem of this cache.
        assert!(checks.iter().all(|c| c.name != "v28-other.params"));
        assert!(checks.iter().all(|c| !c.name.ends_with(".meta")));
        assert!(
            !hashed.contains("v28-cut.params"),
            "a cut file is not hashed"
        );
        assert!(
            !hashed.contains("v28-unlisted.params"),
            "nothing to compare with"
        );

        // A generated file without its record cannot be told from a damaged one.
        std::fs::remove_file(generation_record_path(&generated)).expect("remove record");
        let checks = check_cache(&request, &mut |_, _, _| {}).expect("check");
        let generated = checks
            .iter()
            .find(|c| c.name == "v28-generated.params")
            .expect("reported");
        assert!(matches!(
            generated.verdict,
            Verdict::UnofficialOrCorrupt { .. }
        ));
        assert!(generated.verdict.is_problem());
        assert!(generated
            .verdict
            .describe()
            .contains("unofficial or corrupt: digest differs"));
        let _ = official;
    }
}
