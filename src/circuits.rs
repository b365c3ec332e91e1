//! The circuits cuzk proves, by [`CircuitId`]: the one route from a circuit to its parameter
//! files, its counts and its recorded constraints. Each answer comes from the circuit room
//! that knows it ([`porep`](crate::porep), [`update`](crate::update)); [`params`] knows files
//! alone and is handed the paths and the circuit to generate from.

use std::path::PathBuf;

use anyhow::Result;

use crate::c1::{C1File, C1Form, SectorIdentity};
use crate::params;
use crate::proof_kind::{CircuitId, ProofKind};
use crate::r1cs::{R1cs, ShapeCounts};
use crate::{porep, shape, update};

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
///
/// A PoRep circuit on several threads is recorded on a shape sector (its real structure,
/// random data: `cuzk bench`'s inputs, made in a second), split by challenges: each thread
/// runs the circuit's prelude and its own challenges (21 s for 32GiB on 16 threads, against
/// 94 s split by rows, where every thread runs the whole circuit). The file is the same
/// either way; should the shape sector fail, the blank circuit is split by rows.
pub fn record_constraints(circuit: CircuitId, threads: usize) -> Result<R1cs> {
    let size = circuit.sector_size;
    match circuit.kind {
        ProofKind::Seal if threads > 1 => record_on_shape_sector(size, threads).or_else(|error| {
            log::info!("recording by rows: no shape sector to split by challenges ({error:#})");
            porep::record_constraints(size, threads)
        }),
        ProofKind::Seal => porep::record_constraints(size, threads),
        ProofKind::Update => update::record_constraints(size, threads),
    }
}

/// A PoRep partition circuit's constraints, recorded by challenges on a shape sector.
fn record_on_shape_sector(sector_size: u64, threads: usize) -> Result<R1cs> {
    use rand::SeedableRng;
    let identity = SectorIdentity {
        miner_id: 1000,
        sector_num: 1,
    };
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    let c1 = C1File {
        form: C1Form::Bare,
        wrapper_sector_num: None,
        is_benchmark: true,
        output: shape::synthetic_c1(sector_size, identity, &mut rng)?,
    };
    porep::bind(c1, identity)?
        .circuits
        .record_constraints(threads)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_porep_circuit_recorded_on_a_shape_sector_saves_the_blank_circuits_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let save = |r1cs: R1cs, name: &str| {
            let path = dir.path().join(name);
            assert!(r1cs.save(&path).expect("save"));
            std::fs::read(&path).expect("read")
        };
        let blank = save(
            porep::record_constraints(2 << 10, 1).expect("the blank circuit"),
            "blank.r1cs",
        );
        let shaped = save(
            record_on_shape_sector(2 << 10, 3).expect("a shape sector, by challenges"),
            "shaped.r1cs",
        );
        assert!(blank == shaped, "the files differ");
        assert!(
            record_on_shape_sector(4 << 10, 2).is_err(),
            "no such sector size"
        );
    }
}
