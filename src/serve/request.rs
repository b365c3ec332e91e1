//! A `SubmitProofRequest` as an input file of the spool: the job's name, the file's bytes
//! and its date in the queue, or why the request cannot be proved (answered `FAILED` before
//! anything is written).
//!
//! The job's name is made from the request alone, so a resubmission finds its job, also
//! after a restart: `s-t0<miner>-<sector>.<request_id>` (`porep-1000-3` gives
//! `s-t01000-3.porep-1000-3`), the lotus sector name first so that the pipeline knows the
//! sector as it knows a dropped file's; a request id that is not a short plain name is
//! replaced by its digest (`r<16 hex>`), so no request can name a path.
//!
//! A PoRep request's file is its `vanilla_proof` as received (Curio sends the C1 output in
//! the lotus-bench wrapper). A SnapDeals request's file is an update input
//! ([`crate::update::input`]) written from its fields: the proof's number, each partition's
//! vanilla proof in base64, the commitments in hex, the miner and sector.
//!
//! Priority orders the queue by the file's modification time, which the spool claims
//! oldest first: a request is dated [`PRIORITY_STEP`] earlier per level above `NORMAL`
//! (later for `LOW`), and files dropped into the inbox by hand queue as `NORMAL`.

use std::path::Path;
use std::time::{Duration, SystemTime};

use base64::Engine;
use serde_json::{json, Value};

use super::proto::{Priority, ProofKind as WireKind, SubmitProofRequest};
use crate::commcid::{self, CommitmentKind};
use crate::input::{self, JobInput};
use crate::params;
use crate::pipeline::{self, IntakeRules};
use crate::proof_kind::{self, CircuitId};
use crate::spool::C1Digest;

/// How much earlier a request is dated per priority level: more than any queue's wait.
pub const PRIORITY_STEP: Duration = Duration::from_secs(1_000_000);

/// The longest request id used as it stands in a job's name.
const MAX_PLAIN_ID: usize = 64;

/// What the spool's inbox gets for a request.
#[derive(Debug)]
pub struct InputFile {
    /// The job's name: the file is `<job>.json`.
    pub job: String,
    /// The file's bytes.
    pub bytes: Vec<u8>,
    /// Its place in the queue.
    pub priority: Priority,
    /// The digest of `bytes`, as the outbox record of its proof will name it.
    pub digest: C1Digest,
}

/// Why a request cannot be proved: the answer's `error_message`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal(pub String);

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn refuse<T>(message: impl Into<String>) -> Result<T, Refusal> {
    Err(Refusal(message.into()))
}

/// The input file of `request`, its content unread (see [`check`]); `max_bytes` is the
/// spool's cap on an input file.
pub fn input_file(request: &SubmitProofRequest, max_bytes: u64) -> Result<InputFile, Refusal> {
    let kind = WireKind::try_from(request.proof_kind).ok();
    let (bytes, prefix) = match kind {
        Some(WireKind::PorepSealCommit) => (porep_file(request)?, sector_name(request)?),
        Some(WireKind::SnapDealsUpdate) => {
            let name = sector_name(request).unwrap_or_else(|_| "snap".to_owned());
            (update_file(request)?, name)
        }
        Some(WireKind::WindowPostPartition | WireKind::WinningPost) => {
            return refuse(format!(
                "{} is not proved by cuzk: PoSt stays in Curio, which proves it on its own GPU lock (hint: leave Curio's PoSt tasks as they are; only PoRep, SnapDeals and proof-share tasks call the engine)",
                kind.map_or("PoSt", |k| k.as_str_name())
            ))
        }
        Some(WireKind::Unspecified) | None => {
            return refuse(format!(
                "proof_kind {} is not one cuzk proves (hint: POREP_SEAL_COMMIT or SNAP_DEALS_UPDATE)",
                request.proof_kind
            ))
        }
    };
    if bytes.len() as u64 > max_bytes {
        return refuse(format!(
            "the request's input is {} bytes, over the {max_bytes}-byte cap on input files (hint: --max-c1-bytes; a 64GiB C1 output is 52 MB)",
            bytes.len()
        ));
    }
    let priority = Priority::try_from(request.priority).unwrap_or(Priority::Normal);
    Ok(InputFile {
        job: format!("{prefix}.{}", request_tag(&request.request_id)?),
        digest: C1Digest::of_bytes(&bytes),
        bytes,
        priority,
    })
}

/// Parses and binds `file` as the run will (the C1's replica id against its miner and
/// sector, an update's vanilla proofs against its commitments) and finds its parameters;
/// `request` must name the proof the content is for. Returns the circuit it proves.
pub fn check(
    request: &SubmitProofRequest,
    file: &InputFile,
    rules: &IntakeRules,
    may_generate_params: bool,
) -> Result<CircuitId, Refusal> {
    let file_name = format!("{}.json", file.job);
    let parsed = input::parse_job_input(Path::new(&file_name), &file.bytes)
        .map_err(|err| Refusal(format!("parse: {err}")))?;
    match (&parsed, WireKind::try_from(request.proof_kind)) {
        (JobInput::Seal(c1), Ok(WireKind::PorepSealCommit)) => {
            let asked = proof_kind::seal_proof_by_number(request.registered_proof);
            if asked != Some(c1.registered_proof()) {
                return refuse(format!(
                    "registered_proof {} ({}) is not the proof of the C1 output, {:?} (hint: send the sector's RegisteredSealProof number)",
                    request.registered_proof,
                    asked.map_or_else(|| "no PoRep proof".to_owned(), |p| format!("{p:?}")),
                    c1.registered_proof()
                ));
            }
        }
        (JobInput::Update(_), Ok(WireKind::SnapDealsUpdate)) => {}
        (JobInput::Seal(_), _) => {
            return refuse("a SNAP_DEALS_UPDATE request whose input is a C1 output")
        }
        (JobInput::Update(_), _) => {
            return refuse("a POREP_SEAL_COMMIT request whose vanilla_proof is an update input")
        }
    }
    let sector = pipeline::bind_input(&file_name, parsed, rules)
        .map_err(|err| Refusal(format!("{}: {err:#}", err.stage())))?;
    let circuit = sector.circuit;
    let size = circuit.sector_size;
    if request.sector_size != 0 && request.sector_size != size {
        return refuse(format!(
            "sector_size {} is not the size of the input's proof, {size}",
            request.sector_size
        ));
    }
    let params_path = sector
        .circuits
        .params_path()
        .map_err(|err| Refusal(format!("params: {err:#}")))?;
    if let Err(missing) = params::require(&params_path, circuit) {
        let generated = may_generate_params && params::is_test_size(size);
        if !generated {
            return refuse(format!("params: {missing}"));
        }
    }
    Ok(circuit)
}

/// When the file of a request with `priority`, made at `now`, is dated: a file older than
/// `settle` is claimed at once.
pub fn queue_time(now: SystemTime, priority: Priority, settle: Duration) -> SystemTime {
    let level = match priority {
        Priority::Low => -1,
        Priority::Unspecified | Priority::Normal => 0,
        Priority::High => 1,
        Priority::Critical => 2,
    };
    let at = now - settle - Duration::from_secs(1);
    if level >= 0 {
        at - PRIORITY_STEP * level as u32
    } else {
        at + PRIORITY_STEP
    }
}

/// `s-t0<miner>-<sector>`.
fn sector_name(request: &SubmitProofRequest) -> Result<String, Refusal> {
    if request.miner_id == 0 {
        return refuse(
            "miner_id is missing: the sector's replica id is made from it (hint: the miner actor id, 1000 for t01000)",
        );
    }
    Ok(format!(
        "s-t0{}-{}",
        request.miner_id, request.sector_number
    ))
}

/// The request id in a job name: as it stands when it is a short plain name, else its digest.
fn request_tag(request_id: &str) -> Result<String, Refusal> {
    if request_id.is_empty() {
        return refuse("request_id is empty: it names the job, so a resubmission finds it");
    }
    let is_plain = request_id.len() <= MAX_PLAIN_ID
        && request_id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    Ok(if is_plain {
        request_id.to_owned()
    } else {
        let digest = blake3::hash(request_id.as_bytes()).to_hex();
        format!("r{}", &digest[..16])
    })
}

fn porep_file(request: &SubmitProofRequest) -> Result<Vec<u8>, Refusal> {
    if request.vanilla_proof.is_empty() {
        return refuse("vanilla_proof is empty: a PoRep request carries the sector's C1 output");
    }
    Ok(request.vanilla_proof.clone())
}

fn update_file(request: &SubmitProofRequest) -> Result<Vec<u8>, Refusal> {
    if request.vanilla_proofs.is_empty() {
        return refuse(
            "vanilla_proofs is empty: a SnapDeals request carries one vanilla proof per partition",
        );
    }
    if proof_kind::update_proof_by_number(request.registered_proof).is_none() {
        return refuse(format!(
            "registered_proof {} is not an update proof (0 for 2KiB to 4 for 64GiB, lotus' RegisteredUpdateProof)",
            request.registered_proof
        ));
    }
    let commitment = |name: &str, bytes: &[u8], kind| {
        commcid::commitment_from_bytes(bytes, kind)
            .map(hex::encode)
            .map_err(|why| Refusal(format!("{name}: {why}")))
    };
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut file = json!({
        "registered_proof": request.registered_proof,
        "vanilla_proofs": request.vanilla_proofs.iter().map(|p| b64.encode(p)).collect::<Vec<_>>(),
        "comm_r_old": commitment("comm_r_old", &request.comm_r_old, CommitmentKind::Sealed)?,
        "comm_r_new": commitment("comm_r_new", &request.comm_r_new, CommitmentKind::Sealed)?,
        "comm_d_new": commitment("comm_d_new", &request.comm_d_new, CommitmentKind::Unsealed)?,
    });
    if request.miner_id != 0 {
        if let Value::Object(map) = &mut file {
            map.insert("miner_id".into(), request.miner_id.into());
            map.insert("sector_num".into(), request.sector_number.into());
        }
    }
    serde_json::to_vec(&file).map_err(|err| Refusal(format!("writing the update input: {err}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn porep(request_id: &str) -> SubmitProofRequest {
        SubmitProofRequest {
            request_id: request_id.into(),
            proof_kind: WireKind::PorepSealCommit as i32,
            registered_proof: 5,
            vanilla_proof: b"{}".to_vec(),
            miner_id: 1000,
            sector_number: 3,
            ..SubmitProofRequest::default()
        }
    }

    #[test]
    fn a_request_names_its_job_by_sector_and_request_id() {
        let file = input_file(&porep("porep-1000-3"), 1 << 20).unwrap();
        assert_eq!(file.job, "s-t01000-3.porep-1000-3");
        assert_eq!(file.bytes, b"{}");
        // The pipeline reads the sector from the name, as from a dropped file's.
        assert_eq!(
            crate::c1::identity_from_file_name(Path::new(&format!("{}.json", file.job))),
            Some(crate::c1::SectorIdentity {
                miner_id: 1000,
                sector_num: 3
            })
        );
    }

    #[test]
    fn no_request_id_can_name_a_path() {
        for id in [
            "../../etc/passwd",
            "a/b",
            ".hidden",
            "x".repeat(65).as_str(),
            "sp ace",
        ] {
            let job = input_file(&porep(id), 1 << 20).unwrap().job;
            let tag = job.strip_prefix("s-t01000-3.").unwrap();
            assert!(tag.starts_with('r') && tag.len() == 17, "{id:?} gave {job}");
            assert!(tag.bytes().all(|b| b.is_ascii_alphanumeric()), "{job}");
        }
        // The same id, the same job.
        assert_eq!(
            input_file(&porep("a/b"), 1 << 20).unwrap().job,
            input_file(&porep("a/b"), 1 << 20).unwrap().job
        );
        assert!(input_file(&porep(""), 1 << 20).is_err());
    }

    #[test]
    fn post_and_unknown_kinds_are_refused_with_a_reason() {
        let mut request = porep("wdpost-1000-0");
        request.proof_kind = WireKind::WindowPostPartition as i32;
        let refusal = input_file(&request, 1 << 20).unwrap_err();
        assert!(refusal.0.contains("PoSt stays in Curio"), "{refusal}");
        request.proof_kind = 99;
        assert!(input_file(&request, 1 << 20).unwrap_err().0.contains("99"));
        let mut big = porep("big");
        big.vanilla_proof = vec![b' '; 11];
        assert!(input_file(&big, 10).unwrap_err().0.contains("cap"));
    }

    #[test]
    fn an_update_request_becomes_an_update_input() {
        let request = SubmitProofRequest {
            request_id: "snap-1000-7".into(),
            proof_kind: WireKind::SnapDealsUpdate as i32,
            registered_proof: 0,
            vanilla_proofs: vec![vec![1, 2, 3]],
            comm_r_old: vec![1; 32],
            comm_r_new: vec![2; 32],
            comm_d_new: vec![3; 32],
            miner_id: 1000,
            sector_number: 7,
            ..SubmitProofRequest::default()
        };
        let file = input_file(&request, 1 << 20).unwrap();
        assert_eq!(file.job, "s-t01000-7.snap-1000-7");
        let update = crate::update::input::parse_update(Path::new("x.json"), &file.bytes).unwrap();
        assert_eq!(update.vanilla_proofs, vec![vec![1, 2, 3]]);
        assert_eq!(update.comm_r_old, [1; 32]);
        assert_eq!(update.comm_d_new, [3; 32]);
        assert_eq!((update.miner_id, update.sector_num), (Some(1000), Some(7)));
        let mut short = request.clone();
        short.comm_r_new = vec![2; 31];
        assert!(input_file(&short, 1 << 20)
            .unwrap_err()
            .0
            .contains("comm_r_new"));
        let mut wrong = request;
        wrong.registered_proof = 7;
        assert!(input_file(&wrong, 1 << 20)
            .unwrap_err()
            .0
            .contains("not an update proof"));
    }

    #[test]
    fn higher_priorities_are_dated_earlier() {
        let now = SystemTime::now();
        let settle = Duration::from_secs(1);
        let at = |p| queue_time(now, p, settle);
        assert!(at(Priority::Critical) < at(Priority::High));
        assert!(at(Priority::High) < at(Priority::Normal));
        assert_eq!(at(Priority::Normal), at(Priority::Unspecified));
        assert!(
            at(Priority::Normal) < now - settle,
            "claimed without settling"
        );
        assert!(at(Priority::Low) > now, "after files dropped by hand");
    }
}
