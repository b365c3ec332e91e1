//! Input files: reads one once and tells what it asks for by its content, never its name:
//! a C1 file ([`c1`](crate::c1), proved as a C2) or an update input
//! ([`update::input`](crate::update::input), proved as a SnapDeals update).

use std::path::Path;

use filecoin_proofs_api::RegisteredUpdateProof;

use crate::c1::{self, C1File, ParseC1Error};
use crate::proof_kind::{CircuitId, ProofKind};
use crate::update::input::{self as update_input, UpdateInput};

/// A parsed input file.
#[derive(Debug)]
pub enum JobInput {
    /// A commit-phase-1 output.
    Seal(C1File),
    /// What ProveReplicaUpdate2 needs.
    Update(UpdateInput),
}

impl JobInput {
    /// What the file asks to be proved.
    pub fn kind(&self) -> ProofKind {
        match self {
            JobInput::Seal(_) => ProofKind::Seal,
            JobInput::Update(_) => ProofKind::Update,
        }
    }

    /// Whether the file is a `cuzk bench` shape input (synthetic data, proofs never verify).
    pub fn is_benchmark(&self) -> bool {
        match self {
            JobInput::Seal(c1) => c1.is_benchmark,
            JobInput::Update(update) => update.is_benchmark,
        }
    }
}

/// Reads and checks the input file at `path`, refusing files over `max_bytes` unread.
pub fn read_job_input(path: &Path, max_bytes: u64) -> Result<JobInput, ParseC1Error> {
    let data = c1::read_capped(path, max_bytes)?;
    parse_job_input(path, &data)
}

/// Parses input bytes; `path` only names the file in errors.
pub fn parse_job_input(path: &Path, data: &[u8]) -> Result<JobInput, ParseC1Error> {
    let keys = c1::top_keys(path, data)?;
    if update_input::is_update_input(&keys) {
        update_input::parse_update(path, data).map(JobInput::Update)
    } else {
        c1::parse_c1_keyed(path, data, &keys).map(JobInput::Seal)
    }
}

/// The circuit the input file at `path` asks for, told from a few hundred bytes at its ends
/// without parsing it (an update input names its proof first and its commitments last).
/// `None` when it cannot be told that way; parsing will tell.
pub fn peek_circuit(path: &Path) -> Option<CircuitId> {
    let (head, tail) = c1::read_ends(path)?;
    let is_update = [&head, &tail]
        .iter()
        .any(|end| end.contains(&format!("\"{}\"", update_input::UPDATE_KEY)));
    if !is_update {
        return c1::peek_sector_size(path).map(CircuitId::seal);
    }
    let name = c1::peek_string_after(&head, "\"registered_proof\"")?;
    let proof: RegisteredUpdateProof = serde_json::from_str(&format!("\"{name}\"")).ok()?;
    Some(CircuitId::update(u64::from(proof.sector_size())))
}
