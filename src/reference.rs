//! Reference: filecoin-proofs' own provers on the same input files, one at a time as
//! lotus-bench and lotus-worker prove them, so cuzk can be measured against them with the
//! same parameters and the same binary (`cuzk reference FILE...`): `seal_commit_phase2` for a
//! C1 file, `generate_empty_sector_update_proof_with_vanilla` (ProveReplicaUpdate2) for an
//! update input, each checked with its own verifier.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use filecoin_proofs_api::seal::{seal_commit_phase2, verify_seal};
use filecoin_proofs_api::update::{
    generate_empty_sector_update_proof_with_vanilla, verify_empty_sector_update_proof,
};
use filecoin_proofs_api::{PartitionProofBytes, SectorId};

use crate::c1::{resolve_identity, C1File, DEFAULT_MAX_C1_BYTES};
use crate::input::{read_job_input, JobInput};
use crate::update::UpdateInput;

/// One file's outcome: seconds, and whether its proof verified (`None`: a benchmark shape,
/// rejected by the prover's own final check as expected, with why).
type Proved = (f64, Result<bool, String>);

/// Proves `files` one at a time and hands `print` a tab-separated line per file (`file,
/// seconds, verified`) and the mean; the code is 1 if a proof did not verify.
pub fn run(
    files: &[PathBuf],
    miner_id: Option<u64>,
    print: &mut dyn FnMut(&str) -> Result<()>,
) -> Result<u8> {
    let mut total_s = 0.0;
    let mut all_valid = true;
    print("file\tproof\tprove_s\tverified\n")?;
    for path in files {
        let (what, (seconds, verified)) = match read_job_input(path, DEFAULT_MAX_C1_BYTES)? {
            JobInput::Seal(c1) => ("seal_commit_phase2", prove_c1(path, c1, miner_id)?),
            JobInput::Update(update) => (
                "empty_sector_update_with_vanilla",
                prove_update(path, update)?,
            ),
        };
        total_s += seconds;
        match verified {
            Ok(is_valid) => {
                all_valid &= is_valid;
                print(&format!(
                    "{}\t{what}\t{seconds:.2}\t{is_valid}\n",
                    path.display()
                ))?;
            }
            // filecoin-proofs checks its own result last, so a benchmark shape (random data,
            // synthetic parameters) is timed to that check and then rejected, as expected.
            Err(err) => print(&format!(
                "{}\t{what}\t{seconds:.2}\tbenchmark shape, rejected by its final self-check as expected ({err})\n",
                path.display()
            ))?,
        }
    }
    print(&format!(
        "mean\t{:.2}\n",
        total_s / files.len().max(1) as f64
    ))?;
    Ok(if all_valid { 0 } else { 1 })
}

fn prove_c1(path: &std::path::Path, c1: C1File, miner_id: Option<u64>) -> Result<Proved> {
    let id = resolve_identity(path, &c1, miner_id)?;
    let out = c1.output.clone();
    let sector_id = SectorId::from(id.sector_num);
    let started = Instant::now();
    let proved = seal_commit_phase2(c1.output, id.prover_id(), sector_id);
    let seconds = started.elapsed().as_secs_f64();
    let proof = match proved {
        Ok(proof) => proof,
        Err(err) if c1.is_benchmark => return Ok((seconds, Err(format!("{err:#}")))),
        Err(err) => {
            return Err(err).with_context(|| format!("{}: seal_commit_phase2", path.display()))
        }
    };
    let is_valid = verify_seal(
        out.registered_proof,
        out.comm_r,
        out.comm_d,
        id.prover_id(),
        sector_id,
        out.ticket,
        out.seed,
        &proof.proof,
    )?;
    Ok((seconds, Ok(is_valid)))
}

fn prove_update(path: &std::path::Path, update: UpdateInput) -> Result<Proved> {
    let is_benchmark = update.is_benchmark;
    let vanilla = update
        .vanilla_proofs
        .iter()
        .cloned()
        .map(PartitionProofBytes)
        .collect();
    let started = Instant::now();
    let proved = generate_empty_sector_update_proof_with_vanilla(
        update.registered_proof,
        vanilla,
        update.comm_r_old,
        update.comm_r_new,
        update.comm_d_new,
    );
    let seconds = started.elapsed().as_secs_f64();
    let proof = match proved {
        Ok(proof) => proof,
        Err(err) if is_benchmark => return Ok((seconds, Err(format!("{err:#}")))),
        Err(err) => {
            return Err(err).with_context(|| {
                format!(
                    "{}: generate_empty_sector_update_proof_with_vanilla",
                    path.display()
                )
            })
        }
    };
    let is_valid = verify_empty_sector_update_proof(
        update.registered_proof,
        &proof.0,
        update.comm_r_old,
        update.comm_r_new,
        update.comm_d_new,
    )?;
    Ok((seconds, Ok(is_valid)))
}
