//! Which circuit a recorded constraints file belongs to.
//!
//! A parameter file's name says which proof type it is for, not which circuit: parameters
//! regenerated for a changed circuit (a test-size set made with other partition counts, a
//! new filecoin-proofs), or a cuzk whose recorder changed, keep the name. Constraints
//! recorded for one circuit and used for another fail every partition. So a constraints file
//! is keyed by the circuit's identity: a BLAKE3 digest of the verifying key beside the
//! parameters (generated with the circuit, so another circuit has another key) and of this
//! cuzk's [`RECORDER_VERSION`]; the digest is part of the file's name, and the counts of a
//! loaded file are checked against the parameters' own (`params::check_recorded`).
//!
//! A file of another identity is never replaced, only left aside: another process may have
//! it mapped, and replacing a mapped file on NFS can kill that process with SIGBUS.

use std::path::Path;

use anyhow::{Context, Result};

/// The version of what the recorder writes for a given circuit (variable order, the input
/// constraints, the density rules). Bump it when that changes: files recorded by an earlier
/// recorder then have another identity, and are recorded again under a new name.
pub const RECORDER_VERSION: u32 = 1;

/// Hex digits of the identity in a constraints file's name.
const NAME_HEX_LEN: usize = 16;

/// The identity of the circuit whose parameters are at a path, as this cuzk records it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CircuitIdentity([u8; 32]);

impl CircuitIdentity {
    /// The identity of the circuit whose parameters are at `params_path`, from the `.vk`
    /// beside them.
    pub fn of_params(params_path: &Path) -> Result<CircuitIdentity> {
        let vk_path = params_path.with_extension("vk");
        let vk = std::fs::read(&vk_path).with_context(|| {
            format!(
                "reading the verifying key {} that names the circuit's recorded constraints (hint: it belongs beside the parameters; fetch or generate the set again)",
                vk_path.display()
            )
        })?;
        Ok(CircuitIdentity::of_verifying_key(&vk))
    }

    /// The identity of the circuit with the verifying key `vk` (its file's bytes).
    pub fn of_verifying_key(vk: &[u8]) -> CircuitIdentity {
        let mut hasher = blake3::Hasher::new();
        hasher.update(b"cuzk-r1cs-identity");
        hasher.update(&RECORDER_VERSION.to_le_bytes());
        hasher.update(vk);
        CircuitIdentity(*hasher.finalize().as_bytes())
    }

    /// The start of the digest in hex, as constraints files are named.
    pub fn short_hex(&self) -> String {
        hex::encode(&self.0[..NAME_HEX_LEN / 2])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_verifying_key_is_another_circuit() {
        let one = CircuitIdentity::of_verifying_key(b"vk of one circuit");
        let other = CircuitIdentity::of_verifying_key(b"vk of another circuit");
        assert_ne!(one, other);
        assert_eq!(one, CircuitIdentity::of_verifying_key(b"vk of one circuit"));
        assert_eq!(one.short_hex().len(), NAME_HEX_LEN);
    }
}
