//! The update input file: what ProveReplicaUpdate2 needs, as damocles' `snap_prove`
//! processor receives it, so one file works in an inbox and through damocles.
//!
//! ```json
//! {"registered_proof": "StackedDrg32GiBV1",
//!  "vannilla_proofs": [[1, 0, ...], ...],
//!  "comm_r_old": [32 numbers], "comm_r_new": [32 numbers], "comm_d_new": [32 numbers]}
//! ```
//!
//! That is damocles' `SnapProve` task (vc-processors, `builtin/tasks.rs`; its field really is
//! spelled `vannilla_proofs`): `registered_proof` a `RegisteredUpdateProof` name, each
//! vanilla proof one partition's `PartitionProofBytes` (bincode of storage-proofs-update's
//! `PartitionProof`, in partition order, as `generate_partition_proofs` returns them), each
//! commitment 32 raw bytes. What lotus and Curio write is accepted too: `vanilla_proofs`
//! spelled once, each proof a base64 string (Go's `[][]byte`, as in Curio's
//! `snap-vproof.json`), commitments as 64 hex digits or as the CIDs lotus shows
//! (`bagboea4b...` for comm_r, `baga6ea4sea...` for comm_d, bare or as `{"/": cid}`), and
//! the proof's number (0 for 2KiB ... 4 for 64GiB, lotus' `abi.RegisteredUpdateProof`).
//! `miner_id` and `sector_num` (or `sector_id`) may say whose sector it is; the proof does
//! not depend on them, so without them the sector is named by the file name alone.
//!
//! A file is an update input when it has `comm_r_old` beside vanilla proofs: a C1 file
//! never does. Only shapes are checked here; binding the proofs to the circuit is
//! [`super::bind`]'s job.

use std::path::Path;

use base64::Engine;
use filecoin_proofs_api::RegisteredUpdateProof;
use serde_json::{Map, Value};

use crate::c1::{ParseC1Error, SectorSizeName, BENCHMARK_KEY};
use crate::commcid;

/// The key only update inputs have.
pub const UPDATE_KEY: &str = "comm_r_old";

/// A parsed update input.
#[derive(Clone, Debug)]
pub struct UpdateInput {
    /// The registered update proof.
    pub registered_proof: RegisteredUpdateProof,
    /// One partition's vanilla proof each (bincode `PartitionProof`), in partition order.
    pub vanilla_proofs: Vec<Vec<u8>>,
    /// The sector key's (the CC sector's) comm_r.
    pub comm_r_old: [u8; 32],
    /// The updated replica's comm_r.
    pub comm_r_new: [u8; 32],
    /// The new data's comm_d.
    pub comm_d_new: [u8; 32],
    /// The miner, when the file says.
    pub miner_id: Option<u64>,
    /// The sector number, when the file says.
    pub sector_num: Option<u64>,
    /// A benchmark shape (`cuzk bench --update`): random data of the real structure, its
    /// proofs cannot verify (the file has [`BENCHMARK_KEY`]).
    pub is_benchmark: bool,
}

impl UpdateInput {
    /// The sector size the proof is for.
    pub fn sector_size(&self) -> u64 {
        u64::from(self.registered_proof.sector_size())
    }

    /// The file in damocles' `snap_prove` form (numbers for bytes), as `make_update` writes it.
    pub fn to_damocles_json(&self) -> Value {
        let mut map = Map::new();
        map.insert(
            "registered_proof".into(),
            serde_json::to_value(self.registered_proof).unwrap_or(Value::Null),
        );
        map.insert(
            "vannilla_proofs".into(),
            Value::Array(
                self.vanilla_proofs
                    .iter()
                    .map(|p| Value::Array(p.iter().map(|&b| Value::from(b)).collect()))
                    .collect(),
            ),
        );
        for (key, bytes) in [
            ("comm_r_old", &self.comm_r_old),
            ("comm_r_new", &self.comm_r_new),
            ("comm_d_new", &self.comm_d_new),
        ] {
            map.insert(
                key.into(),
                Value::Array(bytes.iter().map(|&b| Value::from(b)).collect()),
            );
        }
        Value::Object(map)
    }
}

/// True when the JSON object `map` is an update input rather than a C1 file.
pub fn is_update_input(map: &Map<String, Value>) -> bool {
    map.contains_key(UPDATE_KEY)
}

/// Parses an update input from its JSON object; `path` only names the file in errors.
pub fn parse_update(path: &Path, map: &Map<String, Value>) -> Result<UpdateInput, ParseC1Error> {
    let bad = |message: String| ParseC1Error::Inconsistent {
        path: path.to_owned(),
        message: format!("not a usable update input: {message}"),
    };
    let registered_proof = registered_proof(map.get("registered_proof")).map_err(bad)?;
    let proofs = map
        .get("vannilla_proofs")
        .or_else(|| map.get("vanilla_proofs"))
        .ok_or_else(|| bad("no \"vannilla_proofs\" (damocles) or \"vanilla_proofs\"".into()))?;
    let vanilla_proofs = match proofs {
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(k, item)| bytes(item).map_err(|e| bad(format!("vanilla proof {k}: {e}"))))
            .collect::<Result<Vec<_>, _>>()?,
        _ => return Err(bad("the vanilla proofs are not an array".into())),
    };
    let commitment = |key: &str, kind: commcid::CommitmentKind| {
        let value = map.get(key).ok_or_else(|| bad(format!("no \"{key}\"")))?;
        commitment(value, kind).map_err(|e| bad(format!("{key}: {e}")))
    };
    let input = UpdateInput {
        registered_proof,
        vanilla_proofs,
        comm_r_old: commitment("comm_r_old", commcid::CommitmentKind::Sealed)?,
        comm_r_new: commitment("comm_r_new", commcid::CommitmentKind::Sealed)?,
        comm_d_new: commitment("comm_d_new", commcid::CommitmentKind::Unsealed)?,
        miner_id: number(map, &["miner_id"]).map_err(bad)?,
        sector_num: number(map, &["sector_num", "sector_id"]).map_err(bad)?,
        is_benchmark: map.contains_key(BENCHMARK_KEY),
    };
    check_shape(&input).map_err(bad)?;
    Ok(input)
}

/// The partition count the proof promises, against the file's.
fn check_shape(input: &UpdateInput) -> Result<(), String> {
    let size = input.sector_size();
    let expected = update_partitions(size);
    if input.vanilla_proofs.len() != expected {
        return Err(format!(
            "{:?} ({}) has {expected} partitions but the file holds {} vanilla proofs (hint: pass every partition proof generate_partition_proofs returned, in order)",
            input.registered_proof,
            SectorSizeName(size),
            input.vanilla_proofs.len()
        ));
    }
    if let Some(k) = input.vanilla_proofs.iter().position(Vec::is_empty) {
        return Err(format!("vanilla proof {k} is empty"));
    }
    Ok(())
}

/// Partitions of a sector size's update proof (not the PoRep count that
/// `RegisteredUpdateProof::partitions` returns).
pub fn update_partitions(sector_size: u64) -> usize {
    storage_proofs_update::constants::partition_count(sector_size as usize / 32)
}

fn registered_proof(value: Option<&Value>) -> Result<RegisteredUpdateProof, String> {
    use RegisteredUpdateProof::*;
    const ALL: [RegisteredUpdateProof; 5] = [
        StackedDrg2KiBV1,
        StackedDrg8MiBV1,
        StackedDrg512MiBV1,
        StackedDrg32GiBV1,
        StackedDrg64GiBV1,
    ];
    match value {
        None => Err("no \"registered_proof\"".into()),
        Some(Value::Number(n)) => n
            .as_u64()
            .and_then(|n| ALL.get(n as usize).copied())
            .ok_or_else(|| format!("registered_proof {n} is not an update proof (0 to 4)")),
        Some(Value::String(name)) => {
            serde_json::from_value(Value::String(name.clone())).map_err(|_| {
                format!(
                    "registered_proof {name:?} is not a registered update proof (hint: one of StackedDrg2KiBV1, StackedDrg8MiBV1, StackedDrg512MiBV1, StackedDrg32GiBV1, StackedDrg64GiBV1; a C1 file's proof, such as StackedDrg32GiBV1_1, is proved as a C2 and has no comm_r_old)"
                )
            })
        }
        Some(other) => Err(format!("registered_proof is {other}, not a name or a number")),
    }
}

/// Bytes as damocles writes them (an array of numbers) or as Go does (base64).
fn bytes(value: &Value) -> Result<Vec<u8>, String> {
    match value {
        Value::Array(items) => items
            .iter()
            .map(|b| {
                b.as_u64()
                    .filter(|&b| b <= 255)
                    .map(|b| b as u8)
                    .ok_or_else(|| format!("{b} is not a byte"))
            })
            .collect(),
        Value::String(text) => base64::engine::general_purpose::STANDARD
            .decode(text.trim())
            .map_err(|e| format!("not base64: {e}")),
        other => Err(format!("{other} is neither an array of bytes nor base64")),
    }
}

/// A commitment as 32 bytes, 64 hex digits or a commitment CID of the expected kind.
fn commitment(value: &Value, kind: commcid::CommitmentKind) -> Result<[u8; 32], String> {
    let from_slice = |bytes: Vec<u8>| -> Result<[u8; 32], String> {
        let len = bytes.len();
        bytes
            .try_into()
            .map_err(|_| format!("{len} bytes, where a commitment has 32"))
    };
    match value {
        Value::Array(_) => from_slice(bytes(value)?),
        Value::String(text) if text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit()) => {
            from_slice(hex::decode(text).map_err(|e| e.to_string())?)
        }
        Value::String(text) => commcid::parse_commitment_cid(text, kind),
        Value::Object(link) => match link.get("/") {
            Some(Value::String(text)) => commcid::parse_commitment_cid(text, kind),
            _ => Err("an object that is not a CID link {\"/\": ...}".into()),
        },
        other => Err(format!("{other} is not a commitment")),
    }
}

fn number(map: &Map<String, Value>, keys: &[&str]) -> Result<Option<u64>, String> {
    for key in keys {
        if let Some(value) = map.get(*key) {
            return value
                .as_u64()
                .map(Some)
                .ok_or_else(|| format!("{key} is {value}, not a number"));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(json: &str) -> Map<String, Value> {
        match serde_json::from_str(json).expect("json") {
            Value::Object(map) => map,
            _ => panic!("not an object"),
        }
    }

    fn numbers(bytes: &[u8]) -> String {
        serde_json::to_string(bytes).expect("json")
    }

    #[test]
    fn damocles_and_go_forms_read_the_same() {
        let old = [7u8; 32];
        let new = [9u8; 32];
        let d = [3u8; 32];
        let proof = vec![1u8, 2, 3, 250];
        let damocles = format!(
            r#"{{"registered_proof":"StackedDrg2KiBV1","vannilla_proofs":[{}],"comm_r_old":{},"comm_r_new":{},"comm_d_new":{}}}"#,
            numbers(&proof),
            numbers(&old),
            numbers(&new),
            numbers(&d)
        );
        let go = format!(
            r#"{{"registered_proof":0,"vanilla_proofs":["{}"],"comm_r_old":"{}","comm_r_new":{{"/":"{}"}},"comm_d_new":"{}","miner_id":1000,"sector_num":4}}"#,
            base64::engine::general_purpose::STANDARD.encode(&proof),
            hex::encode(old),
            commcid::sealed_cid(&new),
            commcid::unsealed_cid(&d)
        );
        let path = Path::new("u.json");
        let a = parse_update(path, &map(&damocles)).expect("damocles form");
        let b = parse_update(path, &map(&go)).expect("go form");
        for input in [&a, &b] {
            assert_eq!(
                input.registered_proof,
                RegisteredUpdateProof::StackedDrg2KiBV1
            );
            assert_eq!(input.vanilla_proofs, vec![proof.clone()]);
            assert_eq!(
                (input.comm_r_old, input.comm_r_new, input.comm_d_new),
                (old, new, d)
            );
        }
        assert_eq!((a.miner_id, a.sector_num), (None, None));
        assert_eq!((b.miner_id, b.sector_num), (Some(1000), Some(4)));
        assert!(is_update_input(&map(&damocles)));
        // What make_update writes reads back the same.
        let again = parse_update(path, a.to_damocles_json().as_object().expect("object"))
            .expect("round trip");
        assert_eq!(again.vanilla_proofs, a.vanilla_proofs);
    }

    #[test]
    fn wrong_shapes_say_what_is_wrong() {
        let c = numbers(&[1u8; 32]);
        let cases = [
            (
                format!(
                    r#"{{"registered_proof":"StackedDrg2KiBV1_1","vannilla_proofs":[[1]],"comm_r_old":{c},"comm_r_new":{c},"comm_d_new":{c}}}"#
                ),
                "is proved as a C2",
            ),
            (
                format!(
                    r#"{{"registered_proof":"StackedDrg8MiBV1","vannilla_proofs":[[1]],"comm_r_old":{c},"comm_r_new":{c},"comm_d_new":{c}}}"#
                ),
                "has 4 partitions but the file holds 1",
            ),
            (
                format!(
                    r#"{{"registered_proof":"StackedDrg2KiBV1","vannilla_proofs":[[1]],"comm_r_old":[1,2],"comm_r_new":{c},"comm_d_new":{c}}}"#
                ),
                "comm_r_old: 2 bytes, where a commitment has 32",
            ),
            (
                format!(
                    r#"{{"registered_proof":"StackedDrg2KiBV1","vannilla_proofs":[[1]],"comm_r_old":"{}","comm_r_new":{c},"comm_d_new":{c}}}"#,
                    commcid::unsealed_cid(&[1; 32])
                ),
                "comm_r_old: ",
            ),
            (
                format!(
                    r#"{{"registered_proof":"StackedDrg2KiBV1","vannilla_proofs":[[1]],"comm_r_old":{c},"comm_r_new":{c}}}"#
                ),
                "no \"comm_d_new\"",
            ),
            (
                format!(
                    r#"{{"registered_proof":"StackedDrg2KiBV1","vannilla_proofs":["%%"],"comm_r_old":{c},"comm_r_new":{c},"comm_d_new":{c}}}"#
                ),
                "vanilla proof 0: not base64",
            ),
        ];
        for (json, needle) in cases {
            let error = parse_update(Path::new("u.json"), &map(&json))
                .err()
                .unwrap_or_else(|| panic!("accepted {json}"));
            let text = error.to_string();
            assert!(text.contains(needle), "{text} lacks {needle:?}");
            assert!(
                text.starts_with("u.json: not a usable update input"),
                "{text}"
            );
        }
    }

    #[test]
    fn partitions_follow_the_update_config_not_the_porep_count() {
        assert_eq!(update_partitions(2 << 10), 1);
        assert_eq!(update_partitions(8 << 20), 4);
        assert_eq!(update_partitions(512 << 20), 16);
        assert_eq!(update_partitions(32 << 30), 16);
    }
}
