//! Input formats: reads a commit-phase-1 (C1) file and says which sector it belongs to.
//!
//! Two forms are accepted: the lotus-bench / Curio `Commit2In` wrapper
//! (`{"SectorNum", "Phase1Out": base64 JSON, "SectorSize"}`) and the bare
//! `SealCommitPhase1Output` JSON of filecoin-proofs-api. The file carries no miner id, so
//! [`SectorIdentity`] is resolved from the lotus file name `s-t0<miner>-<sector>` (or
//! `s-f0...`), the wrapper's `SectorNum` and the `--miner-id` / `--miner-addr` flags. This module only parses and checks shapes;
//! binding the data to the PoRep circuit is `porep`'s job.

use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

use base64::Engine;
use filecoin_proofs_api::seal::{SealCommitPhase1Output, VanillaSealProof};
use filecoin_proofs_api::RegisteredSealProof;
use serde::Deserialize;

/// Files larger than this are refused unread. The largest real input is a 64GiB sector's C1
/// in the lotus-bench wrapper, 52 MB (`examples/input_sizes.rs` measures the faithful
/// shapes); five times that leaves room, and parsing one costs about twice its bytes.
pub const DEFAULT_MAX_C1_BYTES: u64 = 256 << 20;

/// The key in a lotus-bench wrapper that marks a file as benchmark input (made by `shape`):
/// owned here, where files are read, so that parsing needs nothing of the generator.
pub const BENCHMARK_KEY: &str = "CuzkBenchmark";

/// Which of the two forms a C1 file was written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum C1Form {
    /// lotus-bench / Curio `Commit2In` JSON with a base64 `Phase1Out`.
    Wrapper,
    /// filecoin-proofs-api `SealCommitPhase1Output` JSON.
    Bare,
}

/// A parsed C1 file.
#[derive(Debug)]
pub struct C1File {
    /// The form the file was written in.
    pub form: C1Form,
    /// The sector number from the wrapper, if the file had one.
    pub wrapper_sector_num: Option<u64>,
    /// True for a benchmark shape file (`cuzk bench`): random data, its proofs cannot verify.
    pub is_benchmark: bool,
    /// The commit-phase-1 output itself.
    pub output: SealCommitPhase1Output,
}

impl C1File {
    /// The registered seal proof named inside the file.
    pub fn registered_proof(&self) -> RegisteredSealProof {
        self.output.registered_proof
    }
}

/// Why a C1 file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ParseC1Error {
    /// The file could not be read.
    #[error("{path}: cannot read C1 file: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file is larger than the cap.
    #[error("{path}: {bytes} bytes is over the {max_bytes}-byte cap for a C1 file (hint: a real C1 or update input of any sector size is under 60 MB; is this the right file? --max-c1-bytes raises the cap)")]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size.
        bytes: u64,
        /// The cap.
        max_bytes: u64,
    },
    /// The JSON ends early: the file is truncated or still being written.
    #[error("{path}: JSON ends early at line {line} column {column}: the file is truncated or still being written (hint: writers should write to a temporary name and rename it into the inbox)")]
    Incomplete {
        /// The file.
        path: PathBuf,
        /// Where the input ended.
        line: usize,
        /// Where the input ended.
        column: usize,
    },
    /// The file is not JSON at all.
    #[error("{path}: not a C1 JSON file: {source}")]
    NotJson {
        /// The file.
        path: PathBuf,
        /// The parser's complaint.
        #[source]
        source: serde_json::Error,
    },
    /// The wrapper's `Phase1Out` is not valid base64.
    #[error("{path}: Phase1Out is not base64: {source}")]
    Base64 {
        /// The file.
        path: PathBuf,
        /// The decoder's complaint.
        #[source]
        source: base64::DecodeError,
    },
    /// The JSON is well formed but is not a commit-phase-1 output.
    #[error("{path}: {what} is not a SealCommitPhase1Output: {source}")]
    NotPhase1Output {
        /// The file.
        path: PathBuf,
        /// Which part was being read.
        what: &'static str,
        /// The parser's complaint.
        #[source]
        source: serde_json::Error,
    },
    /// The sizes inside the file disagree with each other.
    #[error("{path}: {message}")]
    Inconsistent {
        /// The file.
        path: PathBuf,
        /// What disagrees.
        message: String,
    },
}

impl ParseC1Error {
    /// True when the file may simply not be fully written yet.
    pub fn is_incomplete(&self) -> bool {
        matches!(self, ParseC1Error::Incomplete { .. })
    }
}

/// The lotus-bench wrapper (Go's `Commit2In`); Go encodes `[]byte` as base64.
#[derive(Deserialize)]
struct Commit2In {
    #[serde(rename = "SectorNum")]
    sector_num: Option<i64>,
    #[serde(rename = "Phase1Out")]
    phase1_out: Option<String>,
    #[serde(rename = "SectorSize")]
    sector_size: Option<u64>,
}

/// Reads and checks the C1 file at `path`.
pub fn read_c1_file(path: &Path, max_bytes: u64) -> Result<C1File, ParseC1Error> {
    let data = read_capped(path, max_bytes)?;
    parse_c1(path, &data)
}

/// The bytes of the input file at `path`, refused unread when larger than `max_bytes`.
pub fn read_capped(path: &Path, max_bytes: u64) -> Result<Vec<u8>, ParseC1Error> {
    let read_err = |source| ParseC1Error::Read {
        path: path.to_owned(),
        source,
    };
    let file = std::fs::File::open(path).map_err(read_err)?;
    let bytes = file.metadata().map_err(read_err)?.len();
    if bytes > max_bytes {
        return Err(ParseC1Error::TooLarge {
            path: path.to_owned(),
            bytes,
            max_bytes,
        });
    }
    let mut data = Vec::with_capacity(bytes as usize);
    file.take(max_bytes + 1)
        .read_to_end(&mut data)
        .map_err(read_err)?;
    Ok(data)
}

/// The sector size of the C1 file at `path`, read from a few hundred bytes at its ends
/// without parsing it: the wrapper's `SectorSize` comes last, the bare form's
/// `registered_proof` first. `None` when it cannot be told that way; parsing will tell.
pub fn peek_sector_size(path: &Path) -> Option<u64> {
    let (head, tail) = read_ends(path)?;
    if let Some(name) = peek_string_after(&head, "\"registered_proof\"") {
        let proof: RegisteredSealProof = serde_json::from_str(&format!("\"{name}\"")).ok()?;
        return Some(u64::from(proof.sector_size()));
    }
    let rest = tail
        .rsplit("\"SectorSize\"")
        .next()
        .filter(|_| tail.contains("\"SectorSize\""))?;
    let digits: String = rest
        .trim_start_matches([':', ' ', '\t', '\n', '\r'])
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// The string value after the first `key` in `text` (`"key": "value"`).
pub fn peek_string_after<'t>(text: &'t str, key: &str) -> Option<&'t str> {
    text.split(key).nth(1)?.split('"').nth(1)
}

/// The first and last few hundred bytes of the regular file at `path` (lossy UTF-8), for
/// telling what a file is without parsing it.
pub fn read_ends(path: &Path) -> Option<(String, String)> {
    use std::io::{Seek, SeekFrom};
    const WINDOW: u64 = 512;
    // Never open anything but a regular file here: opening a FIFO blocks until a writer comes.
    if !std::fs::symlink_metadata(path).ok()?.is_file() {
        return None;
    }
    let mut file = std::fs::File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    let mut head = vec![0u8; WINDOW.min(len) as usize];
    file.read_exact(&mut head).ok()?;
    file.seek(SeekFrom::Start(len.saturating_sub(WINDOW)))
        .ok()?;
    let mut tail = Vec::new();
    file.read_to_end(&mut tail).ok()?;
    Some((
        String::from_utf8_lossy(&head).into_owned(),
        String::from_utf8_lossy(&tail).into_owned(),
    ))
}

/// Parses C1 bytes; `path` only names the file in errors.
pub fn parse_c1(path: &Path, data: &[u8]) -> Result<C1File, ParseC1Error> {
    parse_c1_keyed(path, data, &top_keys(path, data)?)
}

/// The keys of the JSON object an input file holds, read without keeping a value. Every
/// input form is one object, told apart by its keys; the bytes are then parsed straight into
/// the form's types, since a tree of JSON values costs many times the file's bytes (a number
/// of one byte takes 32), outside any budget. A file that ends early is told apart (it may
/// still be being written).
pub fn top_keys(path: &Path, data: &[u8]) -> Result<TopKeys, ParseC1Error> {
    use std::collections::BTreeMap;
    match serde_json::from_slice::<BTreeMap<String, serde::de::IgnoredAny>>(data) {
        Ok(map) => Ok(TopKeys(map.into_keys().collect())),
        Err(source) if source.is_eof() => Err(ParseC1Error::Incomplete {
            path: path.to_owned(),
            line: source.line(),
            column: source.column(),
        }),
        Err(source) if source.is_data() => Err(ParseC1Error::Inconsistent {
            path: path.to_owned(),
            message: "the JSON is not an object; expected a lotus-bench Commit2In wrapper, a SealCommitPhase1Output or an update input".into(),
        }),
        Err(source) => Err(ParseC1Error::NotJson {
            path: path.to_owned(),
            source,
        }),
    }
}

/// The top-level keys of an input file's JSON object ([`top_keys`]).
#[derive(Debug)]
pub struct TopKeys(std::collections::BTreeSet<String>);

impl TopKeys {
    /// True when the object has `key`.
    pub fn contains(&self, key: &str) -> bool {
        self.0.contains(key)
    }
}

/// Parses C1 bytes whose object has `keys` ([`top_keys`]) straight into their form's types.
pub fn parse_c1_keyed(path: &Path, data: &[u8], keys: &TopKeys) -> Result<C1File, ParseC1Error> {
    let is_benchmark = keys.contains(BENCHMARK_KEY);
    let mut c1 = if keys.contains("Phase1Out") {
        let wrapper: Commit2In =
            serde_json::from_slice(data).map_err(|source| ParseC1Error::NotPhase1Output {
                path: path.to_owned(),
                what: "the Commit2In wrapper",
                source,
            })?;
        parse_wrapper(path, wrapper)?
    } else if keys.contains("registered_proof") {
        let output =
            serde_json::from_slice(data).map_err(|source| ParseC1Error::NotPhase1Output {
                path: path.to_owned(),
                what: "the file",
                source,
            })?;
        C1File {
            form: C1Form::Bare,
            wrapper_sector_num: None,
            is_benchmark: false,
            output,
        }
    } else {
        return Err(ParseC1Error::Inconsistent {
            path: path.to_owned(),
            message: "neither a lotus-bench Commit2In wrapper (no \"Phase1Out\"), a SealCommitPhase1Output (no \"registered_proof\") nor an update input (no \"comm_r_old\")".into(),
        });
    };
    c1.is_benchmark = is_benchmark;
    check_shapes(path, &c1)?;
    Ok(c1)
}

fn parse_wrapper(path: &Path, wrapper: Commit2In) -> Result<C1File, ParseC1Error> {
    let inconsistent = |message: String| ParseC1Error::Inconsistent {
        path: path.to_owned(),
        message,
    };
    let encoded = wrapper
        .phase1_out
        .ok_or_else(|| inconsistent("Phase1Out is null".into()))?;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .map_err(|source| ParseC1Error::Base64 {
            path: path.to_owned(),
            source,
        })?;
    let output: SealCommitPhase1Output =
        serde_json::from_slice(&decoded).map_err(|source| ParseC1Error::NotPhase1Output {
            path: path.to_owned(),
            what: "the decoded Phase1Out",
            source,
        })?;
    let wrapper_sector_num = match wrapper.sector_num {
        Some(n) if n < 0 => return Err(inconsistent(format!("SectorNum {n} is negative"))),
        Some(n) => Some(n as u64),
        None => None,
    };
    let size = u64::from(output.registered_proof.sector_size());
    if let Some(claimed) = wrapper.sector_size.filter(|&s| s != size) {
        return Err(inconsistent(format!(
            "SectorSize {} in the wrapper disagrees with {:?} ({}) inside Phase1Out",
            claimed,
            output.registered_proof,
            SectorSizeName(size)
        )));
    }
    Ok(C1File {
        form: C1Form::Wrapper,
        wrapper_sector_num,
        is_benchmark: false,
        output,
    })
}

/// Checks that the vanilla proofs have the shape the registered proof promises.
fn check_shapes(path: &Path, c1: &C1File) -> Result<(), ParseC1Error> {
    let proof = c1.registered_proof();
    let size = u64::from(proof.sector_size());
    let (vanilla_size, partitions) = match &c1.output.vanilla_proofs {
        VanillaSealProof::StackedDrg2KiBV1(p) => (2u64 << 10, p.len()),
        VanillaSealProof::StackedDrg8MiBV1(p) => (8 << 20, p.len()),
        VanillaSealProof::StackedDrg512MiBV1(p) => (512 << 20, p.len()),
        VanillaSealProof::StackedDrg32GiBV1(p) => (32 << 30, p.len()),
        VanillaSealProof::StackedDrg64GiBV1(p) => (64 << 30, p.len()),
    };
    let inconsistent = |message| ParseC1Error::Inconsistent {
        path: path.to_owned(),
        message,
    };
    if vanilla_size != size {
        return Err(inconsistent(format!(
            "registered proof {:?} is for {} sectors but the vanilla proofs are for {} sectors",
            proof,
            SectorSizeName(size),
            SectorSizeName(vanilla_size)
        )));
    }
    let expected = usize::from(proof.partitions());
    // Non-interactive PoRep counts partitions differently; `porep::bind` refuses it anyway.
    let is_non_interactive = proof
        .as_v1_config()
        .feature_enabled(storage_proofs_core::api_version::ApiFeature::NonInteractivePoRep);
    if partitions != expected && !is_non_interactive {
        return Err(inconsistent(format!(
            "{:?} has {} partitions but the file holds vanilla proofs for {}",
            proof, expected, partitions
        )));
    }
    Ok(())
}

/// A sector size printed the way operators say it (`2KiB`, `32GiB`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SectorSizeName(pub u64);

impl fmt::Display for SectorSizeName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let units = [(1u64 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
        for (unit, name) in units {
            if self.0 >= unit && self.0.is_multiple_of(unit) {
                return write!(f, "{}{}", self.0 / unit, name);
            }
        }
        write!(f, "{}B", self.0)
    }
}

/// Parses `2KiB`, `8MiB`, `512MiB`, `32GiB`, `64GiB` (or a byte count).
pub fn parse_sector_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let (digits, unit) = t.split_at(t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len()));
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("{text:?} is not a sector size like 2KiB, 8MiB, 512MiB, 32GiB"))?;
    let shift = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kib" => 10,
        "m" | "mib" => 20,
        "g" | "gib" => 30,
        _ => {
            return Err(format!(
                "{text:?}: unknown unit {unit:?}; use KiB, MiB or GiB"
            ))
        }
    };
    Ok(n << shift)
}

/// The miner and sector a C1 file belongs to; with the ticket and porep id they determine
/// the replica id, so a wrong identity is caught before any proving.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SectorIdentity {
    /// The miner actor id (the number in `t01000`).
    pub miner_id: u64,
    /// The sector number.
    pub sector_num: u64,
}

impl SectorIdentity {
    /// The prover id: the miner's ID-address payload (unsigned LEB128), left-aligned in 32
    /// bytes, as lotus passes it to filecoin-ffi.
    pub fn prover_id(&self) -> [u8; 32] {
        let mut id = [0u8; 32];
        let mut v = self.miner_id;
        let mut i = 0;
        loop {
            let byte = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                id[i] = byte;
                break;
            }
            id[i] = byte | 0x80;
            i += 1;
        }
        id
    }
}

impl fmt::Display for SectorIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "s-t0{}-{}", self.miner_id, self.sector_num)
    }
}

/// Why a miner address is not one C2 can use.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParseMinerAddrError {
    /// Not a Filecoin address at all.
    #[error("{0:?} is not a miner address like t01000 or f01000 (t for test networks, f for mainnet, then 0 and the actor id)")]
    NotAnAddress(String),
    /// A Filecoin address, but not an ID address.
    #[error("{address:?} is a {kind} address; C2 needs the miner's ID address t0<id> or f0<id> (hint: `lotus state lookup {address}` prints it)")]
    NotAnIdAddress {
        /// The address given.
        address: String,
        /// What kind of address it is.
        kind: &'static str,
    },
}

/// The actor id of a miner ID address, `t0<id>` or `f0<id>`, as lotus-bench's `--miner-addr`
/// takes it.
pub fn parse_miner_address(text: &str) -> Result<u64, ParseMinerAddrError> {
    let not_an_address = || ParseMinerAddrError::NotAnAddress(text.to_owned());
    let rest = text.strip_prefix(['t', 'f']).ok_or_else(not_an_address)?;
    let kind = match rest.chars().next() {
        Some('0') => None,
        Some('1') => Some("secp256k1 (account)"),
        Some('2') => Some("actor (robust)"),
        Some('3') => Some("BLS (account)"),
        Some('4') => Some("delegated"),
        _ => return Err(not_an_address()),
    };
    if let Some(kind) = kind {
        return Err(ParseMinerAddrError::NotAnIdAddress {
            address: text.to_owned(),
            kind,
        });
    }
    let digits = &rest[1..];
    // go-address writes ids without leading zeros; anything else is a typo.
    let is_canonical = !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'));
    if !is_canonical {
        return Err(not_an_address());
    }
    digits.parse().map_err(|_| not_an_address())
}

/// Miner and sector from a lotus sector name `s-t0<miner>-<sector>` (or `s-f0`), with any
/// extension, if the file name is one.
pub fn identity_from_file_name(path: &Path) -> Option<SectorIdentity> {
    let name = path.file_name()?.to_str()?;
    let rest = name
        .strip_prefix("s-t0")
        .or_else(|| name.strip_prefix("s-f0"))?;
    let (miner, rest) = rest.split_once('-')?;
    let sector: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    let tail = &rest[sector.len()..];
    if !(tail.is_empty() || tail.starts_with('.')) {
        return None;
    }
    Some(SectorIdentity {
        miner_id: miner.parse().ok()?,
        sector_num: sector.parse().ok()?,
    })
}

/// Why a C1 file's miner or sector could not be determined.
#[derive(Debug, thiserror::Error)]
pub enum ResolveIdentityError {
    /// No miner id anywhere.
    #[error("{path}: no miner id (hint: name the file s-t0<miner>-<sector>.json as lotus does, or pass --miner-addr t0<miner> or --miner-id <miner>)")]
    NoMiner {
        /// The file.
        path: PathBuf,
    },
    /// No sector number anywhere.
    #[error("{path}: no sector number (hint: name the file s-t0<miner>-<sector>.json as lotus does, or use the lotus-bench wrapper with SectorNum)")]
    NoSector {
        /// The file.
        path: PathBuf,
    },
    /// The file name and the wrapper disagree.
    #[error("{path}: the file name says sector {from_name} but the wrapper's SectorNum is {from_wrapper} (hint: rename the file to match the sector it holds)")]
    SectorConflict {
        /// The file.
        path: PathBuf,
        /// Sector number from the name.
        from_name: u64,
        /// Sector number from the wrapper.
        from_wrapper: u64,
    },
}

/// Resolves the miner and sector of the C1 file at `path`: the lotus file name first, then
/// the wrapper's `SectorNum`, then `default_miner` (the `--miner-id` or `--miner-addr` flag)
/// for the miner.
pub fn resolve_identity(
    path: &Path,
    c1: &C1File,
    default_miner: Option<u64>,
) -> Result<SectorIdentity, ResolveIdentityError> {
    let from_name = identity_from_file_name(path);
    if let (Some(named), Some(wrapped)) = (from_name, c1.wrapper_sector_num) {
        if named.sector_num != wrapped {
            return Err(ResolveIdentityError::SectorConflict {
                path: path.to_owned(),
                from_name: named.sector_num,
                from_wrapper: wrapped,
            });
        }
    }
    let miner_id = from_name
        .map(|n| n.miner_id)
        .or(default_miner)
        .ok_or_else(|| ResolveIdentityError::NoMiner {
            path: path.to_owned(),
        })?;
    let sector_num = from_name
        .map(|n| n.sector_num)
        .or(c1.wrapper_sector_num)
        .ok_or_else(|| ResolveIdentityError::NoSector {
            path: path.to_owned(),
        })?;
    Ok(SectorIdentity {
        miner_id,
        sector_num,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prover_id_is_leb128_left_aligned() {
        let id = |miner_id| {
            SectorIdentity {
                miner_id,
                sector_num: 0,
            }
            .prover_id()
        };
        assert_eq!(id(0)[..2], [0, 0]);
        assert_eq!(id(1000)[..3], [0xe8, 0x07, 0]);
        assert_eq!(id(127)[..2], [0x7f, 0]);
        assert_eq!(id(128)[..3], [0x80, 0x01, 0]);
        assert!(id(1000)[2..].iter().all(|&b| b == 0));
    }

    #[test]
    fn lotus_names_give_miner_and_sector() {
        let id = |name: &str| identity_from_file_name(Path::new(name));
        let want = |miner_id, sector_num| {
            Some(SectorIdentity {
                miner_id,
                sector_num,
            })
        };
        assert_eq!(id("inbox/s-t01000-7.json"), want(1000, 7));
        assert_eq!(id("s-f02345-0"), want(2345, 0));
        assert_eq!(id("s-t01000-7x.json"), None);
        assert_eq!(id("c1-7.json"), None);
        assert_eq!(id("s-t0abc-7.json"), None);
    }

    #[test]
    fn miner_addresses_give_actor_ids() {
        assert_eq!(parse_miner_address("t01000"), Ok(1000));
        assert_eq!(parse_miner_address("f02345"), Ok(2345));
        assert_eq!(parse_miner_address("t00"), Ok(0));
        for bad in [
            "",
            "t0",
            "x01000",
            "01000",
            "1000",
            "t0 1000",
            "t001000",
            "t01000x",
            "t099999999999999999999",
        ] {
            let err = parse_miner_address(bad).expect_err(bad);
            assert!(
                matches!(err, ParseMinerAddrError::NotAnAddress(_)),
                "{bad}: {err}"
            );
        }
        let err = parse_miner_address("f3vvmn62lofvhjd2ugzca6sof2j2ubwok6cj4xxbfzz4yuxfkgobpihhd2thlanmsh3w2ptld2gqkn2jvlss4a")
            .expect_err("BLS");
        assert!(err.to_string().contains("BLS"), "{err}");
        assert!(err.to_string().contains("lotus state lookup"), "{err}");
        assert!(parse_miner_address("t1abc")
            .expect_err("secp")
            .to_string()
            .contains("secp256k1"));
    }

    #[test]
    fn mainnet_names_and_flags_resolve_like_test_network_ones() {
        let c1 = |wrapper_sector_num| C1File {
            form: C1Form::Wrapper,
            wrapper_sector_num,
            is_benchmark: false,
            output: serde_json::from_str(MINIMAL_OUTPUT).expect("output"),
        };
        let resolve =
            |name: &str, sector, miner| resolve_identity(Path::new(name), &c1(sector), miner);
        let want = |miner_id, sector_num| {
            Some(SectorIdentity {
                miner_id,
                sector_num,
            })
        };
        assert_eq!(
            resolve("inbox/s-f01000-7.json", Some(7), None).ok(),
            want(1000, 7)
        );
        assert_eq!(
            resolve("inbox/s-f01000-7.json", None, Some(5)).ok(),
            want(1000, 7)
        );
        // Any other name: the miner from the flag, the sector from the wrapper.
        assert_eq!(
            resolve("inbox/commit2-in.json", Some(7), Some(2000)).ok(),
            want(2000, 7)
        );
        assert!(matches!(
            resolve("inbox/commit2-in.json", Some(7), None),
            Err(ResolveIdentityError::NoMiner { .. })
        ));
        assert!(matches!(
            resolve("inbox/s-f01000-7.json", Some(8), None),
            Err(ResolveIdentityError::SectorConflict { .. })
        ));
    }

    /// The smallest JSON serde takes as a SealCommitPhase1Output.
    const MINIMAL_OUTPUT: &str = r#"{"registered_proof":"StackedDrg2KiBV1_1","vanilla_proofs":{"StackedDrg2KiBV1":[]},"comm_r":[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0],"comm_d":[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0],"replica_id":[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0],"seed":[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0],"ticket":[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]}"#;

    #[test]
    fn sector_sizes_round_trip() {
        for text in ["2KiB", "8MiB", "512MiB", "32GiB", "64GiB"] {
            let n = parse_sector_size(text).expect(text);
            assert_eq!(SectorSizeName(n).to_string(), text);
        }
        assert_eq!(parse_sector_size("2048"), Ok(2048));
        assert!(parse_sector_size("2 parsecs").is_err());
    }

    #[test]
    fn sector_size_is_peeked_from_either_form() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("c1.json");
        std::fs::write(
            &path,
            br#"{"SectorNum":7,"Phase1Out":"eyJ4Ijox","SectorSize":34359738368}"#,
        )
        .expect("write");
        assert_eq!(peek_sector_size(&path), Some(32 << 30));
        std::fs::write(
            &path,
            br#"{"registered_proof":"StackedDrg64GiBV1_1","vanilla_proofs":{}}"#,
        )
        .expect("write");
        assert_eq!(peek_sector_size(&path), Some(64 << 30));
        std::fs::write(&path, b"{}").expect("write");
        assert_eq!(peek_sector_size(&path), None);
    }

    #[test]
    fn non_json_and_truncated_json_are_told_apart() {
        let p = Path::new("x.json");
        assert!(parse_c1(p, b"{\"registered_proof\": ")
            .unwrap_err()
            .is_incomplete());
        assert!(!parse_c1(p, b"\x00\x01garbage").unwrap_err().is_incomplete());
        let err = parse_c1(p, b"{\"hello\": 1}").unwrap_err().to_string();
        assert!(err.contains("neither a lotus-bench"), "{err}");
        let err = parse_c1(p, b"[1,2]").unwrap_err().to_string();
        assert!(err.contains("not an object"), "{err}");
    }

    #[test]
    fn bad_base64_and_bad_registered_proof_name_the_problem() {
        let p = Path::new("x.json");
        let err = parse_c1(p, br#"{"SectorNum":1,"Phase1Out":"%%%","SectorSize":2048}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("not base64"), "{err}");
        let err = parse_c1(
            p,
            br#"{"registered_proof":"StackedDrg3KiBV1","vanilla_proofs":{}}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("StackedDrg3KiBV1"), "{err}");
    }
}
