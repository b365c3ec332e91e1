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
use serde::de::{self, IgnoredAny, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::c1::{ParseC1Error, SectorSizeName, TopKeys};
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

/// True when an input file whose object has `keys` is an update input rather than a C1 file.
pub fn is_update_input(keys: &TopKeys) -> bool {
    keys.contains(UPDATE_KEY)
}

/// An update input's fields as the file holds them, parsed straight from its bytes (no
/// tree of JSON values: a vanilla proof's bytes as numbers would take 32 bytes each). Other
/// keys are skipped unread.
#[derive(Deserialize)]
struct UpdateFields {
    registered_proof: Option<Value>,
    vannilla_proofs: Option<ProofList>,
    vanilla_proofs: Option<ProofList>,
    comm_r_old: Option<Value>,
    comm_r_new: Option<Value>,
    comm_d_new: Option<Value>,
    miner_id: Option<Value>,
    sector_num: Option<Value>,
    sector_id: Option<Value>,
    /// [`crate::c1::BENCHMARK_KEY`] (a literal here, as serde wants).
    #[serde(rename = "CuzkBenchmark")]
    benchmark: Option<IgnoredAny>,
}

/// The vanilla proofs as the file holds them: an array, or something else, skipped, so that
/// a file that is no update input at all (a C1 file's map of proofs) is told by its
/// `registered_proof` first.
enum ProofList {
    Proofs(Vec<ProofBytes>),
    NotAnArray,
}

impl<'de> Deserialize<'de> for ProofList {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ListVisitor;
        impl<'de> Visitor<'de> for ListVisitor {
            type Value = ProofList;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("the vanilla proofs")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ProofList, A::Error> {
                let mut proofs = Vec::with_capacity(seq.size_hint().unwrap_or(0));
                while let Some(proof) = seq.next_element::<ProofBytes>()? {
                    proofs.push(proof);
                }
                Ok(ProofList::Proofs(proofs))
            }
            fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<ProofList, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(ProofList::NotAnArray)
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<ProofList, E> {
                Ok(ProofList::NotAnArray)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<ProofList, E> {
                Ok(ProofList::NotAnArray)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<ProofList, E> {
                Ok(ProofList::NotAnArray)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<ProofList, E> {
                Ok(ProofList::NotAnArray)
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<ProofList, E> {
                Ok(ProofList::NotAnArray)
            }
            fn visit_unit<E: de::Error>(self) -> Result<ProofList, E> {
                Ok(ProofList::NotAnArray)
            }
        }
        deserializer.deserialize_any(ListVisitor)
    }
}

/// One vanilla proof as the file holds it: bytes (damocles' numbers) or Go's base64, decoded
/// after parsing so that an error names its partition.
enum ProofBytes {
    Bytes(Vec<u8>),
    Base64(String),
}

impl<'de> Deserialize<'de> for ProofBytes {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ProofVisitor;
        impl<'de> Visitor<'de> for ProofVisitor {
            type Value = ProofBytes;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a vanilla proof: an array of bytes or base64")
            }
            fn visit_str<E: de::Error>(self, text: &str) -> Result<ProofBytes, E> {
                Ok(ProofBytes::Base64(text.to_owned()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ProofBytes, A::Error> {
                let mut bytes = Vec::with_capacity(seq.size_hint().unwrap_or(0));
                while let Some(byte) = seq.next_element::<u64>()? {
                    let byte = u8::try_from(byte)
                        .map_err(|_| de::Error::custom(format!("{byte} is not a byte")))?;
                    bytes.push(byte);
                }
                Ok(ProofBytes::Bytes(bytes))
            }
        }
        deserializer.deserialize_any(ProofVisitor)
    }
}

impl ProofBytes {
    fn into_bytes(self) -> Result<Vec<u8>, String> {
        match self {
            ProofBytes::Bytes(bytes) => Ok(bytes),
            ProofBytes::Base64(text) => base64::engine::general_purpose::STANDARD
                .decode(text.trim())
                .map_err(|e| format!("not base64: {e}")),
        }
    }
}

/// Parses an update input from the file's bytes; `path` only names the file in errors.
pub fn parse_update(path: &Path, data: &[u8]) -> Result<UpdateInput, ParseC1Error> {
    let bad = |message: String| ParseC1Error::Inconsistent {
        path: path.to_owned(),
        message: format!("not a usable update input: {message}"),
    };
    let fields: UpdateFields = serde_json::from_slice(data).map_err(|e| bad(e.to_string()))?;
    let registered_proof = registered_proof(fields.registered_proof.as_ref()).map_err(bad)?;
    let proofs = match fields.vannilla_proofs.or(fields.vanilla_proofs) {
        None => {
            return Err(bad(
                "no \"vannilla_proofs\" (damocles) or \"vanilla_proofs\"".into(),
            ))
        }
        Some(ProofList::NotAnArray) => {
            return Err(bad("the vanilla proofs are not an array".into()))
        }
        Some(ProofList::Proofs(proofs)) => proofs,
    };
    let vanilla_proofs = proofs
        .into_iter()
        .enumerate()
        .map(|(k, proof)| {
            proof
                .into_bytes()
                .map_err(|e| bad(format!("vanilla proof {k}: {e}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let commitment = |key: &str, value: Option<&Value>, kind: commcid::CommitmentKind| {
        let value = value.ok_or_else(|| bad(format!("no \"{key}\"")))?;
        commitment(value, kind).map_err(|e| bad(format!("{key}: {e}")))
    };
    let input = UpdateInput {
        registered_proof,
        vanilla_proofs,
        comm_r_old: commitment(
            "comm_r_old",
            fields.comm_r_old.as_ref(),
            commcid::CommitmentKind::Sealed,
        )?,
        comm_r_new: commitment(
            "comm_r_new",
            fields.comm_r_new.as_ref(),
            commcid::CommitmentKind::Sealed,
        )?,
        comm_d_new: commitment(
            "comm_d_new",
            fields.comm_d_new.as_ref(),
            commcid::CommitmentKind::Unsealed,
        )?,
        miner_id: number(&[("miner_id", fields.miner_id.as_ref())]).map_err(bad)?,
        sector_num: number(&[
            ("sector_num", fields.sector_num.as_ref()),
            ("sector_id", fields.sector_id.as_ref()),
        ])
        .map_err(bad)?,
        is_benchmark: fields.benchmark.is_some(),
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
    match value {
        None => Err("no \"registered_proof\"".into()),
        Some(Value::Number(n)) => n
            .as_u64()
            .and_then(crate::proof_kind::update_proof_by_number)
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

/// The first of `fields` (a key, and its value when the file has it) the file has, as a
/// number.
fn number(fields: &[(&str, Option<&Value>)]) -> Result<Option<u64>, String> {
    for (key, value) in fields {
        if let Some(value) = value {
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

    fn keys(json: &str) -> TopKeys {
        crate::c1::top_keys(Path::new("u.json"), json.as_bytes()).expect("an object")
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
        let a = parse_update(path, damocles.as_bytes()).expect("damocles form");
        let b = parse_update(path, go.as_bytes()).expect("go form");
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
        assert!(is_update_input(&keys(&damocles)));
        // What make_update writes reads back the same.
        let written = serde_json::to_vec(&a.to_damocles_json()).expect("JSON");
        let again = parse_update(path, &written).expect("round trip");
        assert_eq!(again.vanilla_proofs, a.vanilla_proofs);
        assert!(!again.is_benchmark);
        // A benchmark shape says so by its key, whatever else it holds.
        let mut marked = a.to_damocles_json();
        marked[crate::c1::BENCHMARK_KEY] = Value::from("shape");
        marked["unknown"] = serde_json::json!({"skipped": [1, 2, 3]});
        let marked = serde_json::to_vec(&marked).expect("JSON");
        assert!(parse_update(path, &marked).expect("marked").is_benchmark);
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
            (
                format!(
                    r#"{{"registered_proof":"StackedDrg2KiBV1","vannilla_proofs":[[1,300]],"comm_r_old":{c},"comm_r_new":{c},"comm_d_new":{c}}}"#
                ),
                "300 is not a byte",
            ),
            (
                format!(
                    r#"{{"registered_proof":"StackedDrg2KiBV1","vannilla_proofs":{{"a":1}},"comm_r_old":{c},"comm_r_new":{c},"comm_d_new":{c}}}"#
                ),
                "the vanilla proofs are not an array",
            ),
        ];
        for (json, needle) in cases {
            let error = parse_update(Path::new("u.json"), json.as_bytes())
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
