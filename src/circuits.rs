//! The circuits cuzk proves, by [`CircuitId`]: the one route from a circuit to its parameter
//! files, its counts and its recorded constraints. Each answer comes from the circuit room
//! that knows it ([`porep`](crate::porep), [`update`](crate::update)); [`params`] knows files
//! alone and is handed the paths and the circuit to generate from.

use std::path::PathBuf;

use anyhow::Result;

use crate::params;
use crate::proof_kind::{CircuitId, ProofKind};
use crate::r1cs::{R1cs, ShapeCounts};
use crate::{porep, update};

/// Paths of the `.params` and `.vk` files of `circuit`, by the names filecoin-proofs gives
/// them, in the parameter cache in force.
pub fn param_paths(circuit: CircuitId) -> Result<(PathBuf, PathBuf)> {
    match circuit.kind {
        ProofKind::Seal => porep::param_paths(circuit.sector_size),
        ProofKind::Update => update::param_paths(circuit.sector_size),
    }
}

/// Generates insecure random parameters for `circuit` (test sizes only) into the cache,
/// unless they are already there, and records each file made. Returns the `.params` and
/// `.vk` paths.
pub fn generate_params(circuit: CircuitId) -> Result<(PathBuf, PathBuf)> {
    let (params_path, vk_path) = param_paths(circuit)?;
    let size = circuit.sector_size;
    params::generate_with(
        circuit,
        &params_path,
        &vk_path,
        |params, vk| match circuit.kind {
            ProofKind::Seal => porep::generate_params(size, params, vk),
            ProofKind::Update => update::generate_params(size, params, vk),
        },
    )?;
    Ok((params_path, vk_path))
}

/// Counts one partition circuit of `circuit` on the blank circuit, the way the parameter
/// generator sees it: about a minute on one core at 32GiB.
pub fn count_shape(circuit: CircuitId) -> Result<ShapeCounts> {
    match circuit.kind {
        ProofKind::Seal => porep::count_shape(circuit.sector_size),
        ProofKind::Update => update::count_shape(circuit.sector_size),
    }
}

/// Records the constraints of one partition circuit of `circuit` (the same for every sector
/// of its size) on `threads` threads ([`R1cs::recording_threads`] is the default): seconds at
/// 2KiB, minutes on one thread at 32GiB.
pub fn record_constraints(circuit: CircuitId, threads: usize) -> Result<R1cs> {
    match circuit.kind {
        ProofKind::Seal => porep::record_constraints(circuit.sector_size, threads),
        ProofKind::Update => update::record_constraints(circuit.sector_size, threads),
    }
}
