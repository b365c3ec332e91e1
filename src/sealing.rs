//! Sealing random sectors with filecoin-proofs' own API, to make real C1 files and update
//! inputs for tests, fixtures and benchmarks of the sizes that fit a workstation (2KiB,
//! 8MiB, 512MiB).
//!
//! [`seal_random_sector`] is the whole sealing path (add piece, pre-commit phases 1 and 2,
//! commit phase 1) on random data in a scratch directory. [`update_random_sector`] is a
//! SnapDeals update: a committed-capacity sector (all zeros) sealed, random data encoded into
//! it (`empty_sector_update_encode_into`) and its vanilla partition proofs generated
//! (ProveReplicaUpdate1, `generate_partition_proofs`). Neither needs Groth16 parameters.

use std::fs::{self, OpenOptions};

use anyhow::{Context, Result};
use filecoin_proofs_api::seal::{
    add_piece, seal_commit_phase1, seal_pre_commit_phase1, seal_pre_commit_phase2,
    SealCommitPhase1Output,
};
use filecoin_proofs_api::update::{
    empty_sector_update_encode_into, generate_partition_proofs, verify_partition_proofs,
};
use filecoin_proofs_api::{
    PaddedBytesAmount, RegisteredSealProof, RegisteredUpdateProof, SectorId, UnpaddedBytesAmount,
};
use rand::{Rng, RngCore};

use crate::c1::SectorIdentity;
use crate::porep::registered_proof_for;
use crate::update::UpdateInput;

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

/// The registered update proof of a sector size (what lotus' `SealProofInfos[...].UpdateProof`
/// gives for its seal proofs).
pub fn registered_update_proof_for(sector_size: u64) -> Result<RegisteredUpdateProof> {
    use RegisteredUpdateProof::*;
    Ok(match registered_proof_for(sector_size)? {
        RegisteredSealProof::StackedDrg2KiBV1_1 => StackedDrg2KiBV1,
        RegisteredSealProof::StackedDrg8MiBV1_1 => StackedDrg8MiBV1,
        RegisteredSealProof::StackedDrg512MiBV1_1 => StackedDrg512MiBV1,
        RegisteredSealProof::StackedDrg32GiBV1_1 => StackedDrg32GiBV1,
        _ => StackedDrg64GiBV1,
    })
}

/// Snaps random data into a freshly sealed committed-capacity sector of `sector_size` for
/// `identity` and returns what ProveReplicaUpdate2 needs: the vanilla partition proofs and
/// the three commitments, checked with `verify_partition_proofs`.
pub fn update_random_sector(
    sector_size: u64,
    identity: SectorIdentity,
    rng: &mut impl RngCore,
) -> Result<UpdateInput> {
    let proof = registered_proof_for(sector_size)?;
    let update_proof = registered_update_proof_for(sector_size)?;
    let work = tempfile::tempdir().context("creating a scratch directory")?;
    let path = |name: &str| work.path().join(name);
    let (cc_staged, sector_key, key_cache) =
        (path("cc-staged"), path("sector-key"), path("key-cache"));
    let (new_staged, replica, replica_cache) =
        (path("new-staged"), path("replica"), path("replica-cache"));
    fs::create_dir_all(&key_cache)?;
    fs::create_dir_all(&replica_cache)?;
    let unpadded = UnpaddedBytesAmount::from(PaddedBytesAmount(sector_size));
    let open_new = |path: &std::path::Path| {
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
    };

    // The committed-capacity sector: all zeros, sealed.
    let zeros = vec![0u8; u64::from(unpadded) as usize];
    let (cc_piece, _) = add_piece(proof, &zeros[..], open_new(&cc_staged)?, unpadded, &[])?;
    fs::File::create(&sector_key)?;
    let ticket: [u8; 32] = rng.gen();
    let p1 = seal_pre_commit_phase1(
        proof,
        &key_cache,
        &cc_staged,
        &sector_key,
        identity.prover_id(),
        SectorId::from(identity.sector_num),
        ticket,
        &[cc_piece],
    )
    .context("sealing the committed-capacity sector")?;
    let sealed = seal_pre_commit_phase2(p1, &key_cache, &sector_key)?;

    // The deal data, encoded into it.
    let mut data = vec![0u8; u64::from(unpadded) as usize];
    rng.fill_bytes(&mut data);
    let (piece, _) = add_piece(proof, &data[..], open_new(&new_staged)?, unpadded, &[])?;
    // The new replica is written in place over a file of the sector key's length.
    fs::File::create(&replica)?.set_len(fs::metadata(&sector_key)?.len())?;
    let encoded = empty_sector_update_encode_into(
        update_proof,
        &replica,
        &replica_cache,
        &sector_key,
        &key_cache,
        &new_staged,
        &[piece],
    )
    .context("encoding the deal data into the sector")?;

    // ProveReplicaUpdate1.
    let vanilla_proofs = generate_partition_proofs(
        update_proof,
        sealed.comm_r,
        encoded.comm_r_new,
        encoded.comm_d_new,
        &sector_key,
        &key_cache,
        &replica,
        &replica_cache,
    )
    .context("generating the update's vanilla partition proofs")?;
    anyhow::ensure!(
        verify_partition_proofs(
            update_proof,
            &vanilla_proofs,
            sealed.comm_r,
            encoded.comm_r_new,
            encoded.comm_d_new
        )?,
        "the update's vanilla partition proofs do not verify"
    );
    Ok(UpdateInput {
        registered_proof: update_proof,
        vanilla_proofs: vanilla_proofs.into_iter().map(|p| p.0).collect(),
        comm_r_old: sealed.comm_r,
        comm_r_new: encoded.comm_r_new,
        comm_d_new: encoded.comm_d_new,
        miner_id: Some(identity.miner_id),
        sector_num: Some(identity.sector_num),
        is_benchmark: false,
    })
}
