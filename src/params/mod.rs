//! Groth16 parameter files: finds them in the standard Filecoin parameter cache, loads each
//! set once per run and keeps it resident ([`ParamSets`]), reads files fast ([`load`]), checks
//! them ([`check`]: cheaply before use, by digest on request), keeps the H query in the form
//! that saves the quotient a transform beside them ([`coset_h`]), and generates insecure
//! random test parameters for any circuit ([`random`], [`generate_with`]).
//!
//! It knows files, not circuits: which file a circuit's parameters are in, and the circuit
//! to generate them from, come from the circuit rooms (`porep`, `update`) through
//! `circuits`, the one route from a [`CircuitId`] to its facts.
//!
//! The cache directory is `--params`, else `FIL_PROOFS_PARAMETER_CACHE`, else
//! `/var/tmp/filecoin-proof-parameters`, with the file names every Filecoin tool uses
//! (`v28-stacked-proof-of-replication-...-<hash>.params` and `.vk`). Loading keeps the whole
//! set in memory rather than re-reading the mapped file for every proof.

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};

use crate::c1::SectorSizeName;
use crate::proof_kind::{CircuitId, ProofKind};

mod cache;
pub mod check;
pub mod coset_h;
pub mod load;
pub mod prune;
pub mod random;

pub use cache::{LoadParamsError, ParamSets, ParamsLoader};
pub use check::{check_usable, DamagedParamsError};
pub use load::check_recorded;

/// The environment variable filecoin-proofs reads for the parameter cache.
pub const PARAMS_ENV: &str = "FIL_PROOFS_PARAMETER_CACHE";
/// The cache filecoin-proofs uses when the variable is unset.
pub const DEFAULT_PARAMS_DIR: &str = "/var/tmp/filecoin-proof-parameters";

/// Points filecoin-proofs (and cuzk) at `dir` for this process.
///
/// filecoin-proofs reads its settings once, on first use, so this must run before any proof
/// code does: `run` calls it first thing.
pub fn use_params_dir(dir: &Path) {
    // SAFETY-free: set before any other thread starts.
    std::env::set_var(PARAMS_ENV, dir);
}

/// The parameter cache directory in force.
pub fn params_dir() -> PathBuf {
    std::env::var_os(PARAMS_ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_PARAMS_DIR))
}

/// A parameter file that is not in the cache.
#[derive(Debug, thiserror::Error)]
#[error("missing Groth16 parameters for {what}: {path} does not exist (hint: fetch the official parameters with `lotus fetch-params {size}`, `curio fetch-params {size}` or `paramfetch` into {dir}, or for test sizes generate insecure ones with `cuzk params gen --sector-size {size}{flag}`; set --params or {PARAMS_ENV} if they live elsewhere)", what = match .circuit.kind { ProofKind::Seal => format!("{} sectors", self.size()), ProofKind::Update => format!("{} sector updates", self.size()) }, size = self.size(), flag = match .circuit.kind { ProofKind::Seal => "", ProofKind::Update => " --update" })]
pub struct MissingParamsError {
    /// The file looked for.
    pub path: PathBuf,
    /// The cache directory.
    pub dir: PathBuf,
    /// The circuit the file is for.
    pub circuit: CircuitId,
}

impl MissingParamsError {
    /// The sector size the file is for.
    pub fn size(&self) -> SectorSizeName {
        SectorSizeName(self.circuit.sector_size)
    }
}

/// The file that marks a directory as holding synthetic (invalid) benchmark parameters, made
/// by `cuzk bench` (see [`crate::shape`]).
pub const SYNTHETIC_MARKER: &str = "CUZK-SYNTHETIC-PARAMETERS.txt";

/// True when `dir` is marked as holding synthetic parameters.
pub fn is_synthetic_dir(dir: &Path) -> bool {
    dir.join(SYNTHETIC_MARKER).is_file()
}

/// A real C1 file whose parameters are in a directory of synthetic benchmark parameters:
/// its proof could never verify, so it is not proved (the file is not at fault).
#[derive(Debug, thiserror::Error)]
#[error("{dir} holds SYNTHETIC benchmark parameters (it has {SYNTHETIC_MARKER}); a real C1 file is never proved with them, its proof could not verify (hint: point --params or {PARAMS_ENV} at the real parameter cache, e.g. {DEFAULT_PARAMS_DIR}; benchmark directories are for `cuzk bench` and `prove-dir --benchmark` only)")]
pub struct SyntheticParamsError {
    /// The marked directory.
    pub dir: PathBuf,
}

/// Fails with a [`SyntheticParamsError`] when the parameter file at `path` lies in a directory
/// of synthetic parameters: for real files, which must verify.
pub fn require_real(path: &Path) -> Result<(), SyntheticParamsError> {
    let dir = path.parent().map(Path::to_owned).unwrap_or_else(params_dir);
    if is_synthetic_dir(&dir) {
        return Err(SyntheticParamsError { dir });
    }
    Ok(())
}

/// Fails with a [`MissingParamsError`] unless `path`, the parameters of `circuit`, exists.
pub fn require(path: &Path, circuit: CircuitId) -> Result<(), MissingParamsError> {
    if path.is_file() {
        return Ok(());
    }
    Err(MissingParamsError {
        path: path.to_owned(),
        dir: path.parent().map(Path::to_owned).unwrap_or_else(params_dir),
        circuit,
    })
}

/// Sizes for which random parameters may be generated: the ones nobody mines with.
pub fn is_test_size(sector_size: u64) -> bool {
    sector_size < 32 << 30
}

/// Generates insecure random parameters for `circuit` at `params_path` and `vk_path` with
/// `make` (which writes both, and leaves a file that is already there alone), unless the
/// size is one people mine with, and records each file made now beside it (see [`check`]).
pub fn generate_with(
    circuit: CircuitId,
    params_path: &Path,
    vk_path: &Path,
    make: impl FnOnce(&Path, &Path) -> Result<()>,
) -> Result<()> {
    let sector_size = circuit.sector_size;
    if !is_test_size(sector_size) {
        bail!(
            "refusing to generate parameters for {} sectors: random parameters make proofs the chain rejects (hint: fetch the official ones with `lotus fetch-params {}`)",
            SectorSizeName(sector_size),
            SectorSizeName(sector_size)
        );
    }
    let is_new = [!params_path.exists(), !vk_path.exists()];
    make(params_path, vk_path)?;
    // Only files made now: a file that was there is official, or recorded when it was made.
    for (path, is_new) in [params_path, vk_path].into_iter().zip(is_new) {
        if is_new {
            check::write_generation_record(path)?;
        }
    }
    Ok(())
}
