//! Groth16 parameters: finds them in the standard Filecoin parameter cache, loads each set
//! once per run and keeps it resident ([`ParamSets`]), reads files fast ([`load`]), checks
//! them ([`check`]: cheaply before use, by digest on request), and generates insecure random
//! test parameters ([`generate`]) for the PoRep circuit and the update circuit of a size.
//!
//! The cache directory is `--params`, else `FIL_PROOFS_PARAMETER_CACHE`, else
//! `/var/tmp/filecoin-proof-parameters`, with the file names every Filecoin tool uses
//! (`v28-stacked-proof-of-replication-...-<hash>.params` and `.vk`). Loading keeps the whole
//! set in memory rather than re-reading the mapped file for every proof.

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use filecoin_proofs::{parameters::public_params, with_shape, DefaultPieceHasher, MerkleTreeTrait};
use filecoin_proofs_api::RegisteredSealProof;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::parameter_cache::CacheableParameters;
use storage_proofs_porep::stacked::{StackedCompound, StackedDrg};

use crate::c1::SectorSizeName;
use crate::proof_kind::{CircuitId, ProofKind};

mod cache;
pub mod check;
pub mod load;
pub mod random;

pub use cache::{LoadParamsError, ParamSets, ParamsLoader};
pub use check::{check_usable, DamagedParamsError};

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

/// The registered proof cuzk generates parameters for, per size (all PoRep versions of a
/// size share one parameter set).
pub fn registered_proof_for(sector_size: u64) -> Result<RegisteredSealProof> {
    use RegisteredSealProof::*;
    Ok(match sector_size {
        s if s == 2 << 10 => StackedDrg2KiBV1_1,
        s if s == 8 << 20 => StackedDrg8MiBV1_1,
        s if s == 512 << 20 => StackedDrg512MiBV1_1,
        s if s == 32 << 30 => StackedDrg32GiBV1_1,
        s if s == 64 << 30 => StackedDrg64GiBV1_1,
        s => bail!(
            "{} is not a PoRep sector size (hint: use 2KiB, 8MiB, 512MiB, 32GiB or 64GiB)",
            SectorSizeName(s)
        ),
    })
}

/// Paths of the `.params` and `.vk` files for a sector size.
pub fn param_paths(sector_size: u64) -> Result<(PathBuf, PathBuf)> {
    let config = registered_proof_for(sector_size)?.as_v1_config();
    with_shape!(sector_size, paths_for_shape, &config)
}

fn paths_for_shape<Tree: 'static + MerkleTreeTrait>(
    config: &filecoin_proofs::PoRepConfig,
) -> Result<(PathBuf, PathBuf)> {
    Ok((
        config.get_cache_params_path::<Tree>()?,
        config.get_cache_verifying_key_path::<Tree>()?,
    ))
}

/// Generates insecure random PoRep parameters for a test sector size into the cache (see
/// [`generate_for`]).
pub fn generate(sector_size: u64) -> Result<(PathBuf, PathBuf)> {
    generate_for(CircuitId::seal(sector_size))
}

/// Paths of the `.params` and `.vk` files of a circuit: the PoRep one of a size, or its
/// update circuit's.
pub fn param_paths_of(circuit: CircuitId) -> Result<(PathBuf, PathBuf)> {
    match circuit.kind {
        ProofKind::Seal => param_paths(circuit.sector_size),
        ProofKind::Update => crate::update::param_paths(circuit.sector_size),
    }
}

/// Generates insecure random parameters for a circuit of a test sector size into the cache,
/// unless they are already there, and records each file it makes beside it (see
/// [`check`]). Returns the `.params` and `.vk` paths.
pub fn generate_for(circuit: CircuitId) -> Result<(PathBuf, PathBuf)> {
    let sector_size = circuit.sector_size;
    if !is_test_size(sector_size) {
        bail!(
            "refusing to generate parameters for {} sectors: random parameters make proofs the chain rejects (hint: fetch the official ones with `lotus fetch-params {}`)",
            SectorSizeName(sector_size),
            SectorSizeName(sector_size)
        );
    }
    let (params_path, vk_path) = param_paths_of(circuit)?;
    let is_new = [!params_path.exists(), !vk_path.exists()];
    match circuit.kind {
        ProofKind::Seal => {
            let config = registered_proof_for(sector_size)?.as_v1_config();
            with_shape!(
                sector_size,
                generate_for_shape,
                &config,
                &params_path,
                &vk_path
            )?
        }
        ProofKind::Update => crate::update::generate_params(sector_size, &params_path, &vk_path)?,
    }
    // Only files made now: a file that was there is official, or recorded when it was made.
    for (path, is_new) in [&params_path, &vk_path].into_iter().zip(is_new) {
        if is_new {
            check::write_generation_record(path)?;
        }
    }
    Ok((params_path, vk_path))
}

fn generate_for_shape<Tree: 'static + MerkleTreeTrait>(
    config: &filecoin_proofs::PoRepConfig,
    params_path: &Path,
    vk_path: &Path,
) -> Result<()> {
    type Compound<Tree> = StackedCompound<Tree, DefaultPieceHasher>;
    let pub_params = public_params::<Tree>(config)?;
    let blank = || {
        <Compound<Tree> as CompoundProof<StackedDrg<'_, Tree, DefaultPieceHasher>, _>>::blank_circuit(&pub_params)
    };
    random::generate_set(blank, params_path, vk_path)?;
    // The small `.meta` file, by filecoin-proofs under its own name.
    <Compound<Tree> as CacheableParameters<_, _>>::get_param_metadata(blank(), &pub_params)?;
    Ok(())
}
