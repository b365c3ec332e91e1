//! Sealing random sectors with filecoin-proofs' own API, to make real C1 files for tests,
//! fixtures and benchmarks of the sizes that fit a workstation (2KiB, 8MiB, 512MiB).
//!
//! This is the whole sealing path (add piece, pre-commit phases 1 and 2, commit phase 1) on
//! random data in a scratch directory; it needs no Groth16 parameters.

use std::fs::{self, OpenOptions};

use anyhow::{Context, Result};
use filecoin_proofs_api::seal::{
    add_piece, seal_commit_phase1, seal_pre_commit_phase1, seal_pre_commit_phase2,
    SealCommitPhase1Output,
};
use filecoin_proofs_api::{PaddedBytesAmount, SectorId, UnpaddedBytesAmount};
use rand::{Rng, RngCore};

use crate::c1::SectorIdentity;
use crate::params::registered_proof_for;

/// Seals a sector of `sector_size` bytes of random data for `identity` and returns its
/// commit-phase-1 output, with the ticket and seed drawn from `rng`.
pub fn seal_random_sector(
    sector_size: u64,
    identity: SectorIdentity,
    rng: &mut impl RngCore,
) -> Result<SealCommitPhase1Output> {
    let proof = registered_proof_for(sector_size)?;
    let work = tempfile::tempdir().context("creating a scratch directory")?;
    let (staged, sealed, cache) = (
        work.path().join("staged"),
        work.path().join("sealed"),
        work.path().join("cache"),
    );
    fs::create_dir_all(&cache)?;
    let unpadded = UnpaddedBytesAmount::from(PaddedBytesAmount(sector_size));
    let mut data = vec![0u8; u64::from(unpadded) as usize];
    rng.fill_bytes(&mut data);
    let target = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&staged)?;
    let (piece, _) = add_piece(proof, &data[..], target, unpadded, &[])?;
    fs::File::create(&sealed)?;
    let prover_id = identity.prover_id();
    let sector_id = SectorId::from(identity.sector_num);
    let ticket: [u8; 32] = rng.gen();
    let seed: [u8; 32] = rng.gen();
    let pieces = [piece];
    let p1 = seal_pre_commit_phase1(
        proof, &cache, &staged, &sealed, prover_id, sector_id, ticket, &pieces,
    )?;
    let p2 = seal_pre_commit_phase2(p1, &cache, &sealed)?;
    seal_commit_phase1(
        &cache, &sealed, prover_id, sector_id, ticket, seed, p2, &pieces,
    )
}
