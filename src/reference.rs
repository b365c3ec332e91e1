//! Reference: filecoin-proofs' own `seal_commit_phase2` on the same C1 files, one at a time
//! as lotus-bench proves them, so cuzk can be measured against it with the same parameters
//! and the same binary (`cuzk reference FILE...`).

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use filecoin_proofs_api::seal::{seal_commit_phase2, verify_seal};
use filecoin_proofs_api::SectorId;

use crate::c1::{read_c1_file, resolve_identity, DEFAULT_MAX_C1_BYTES};

/// Proves `files` one at a time and hands `print` a tab-separated line per file (`file,
/// seconds, verified`) and the mean; the code is 1 if a proof did not verify.
pub fn run(
    files: &[PathBuf],
    miner_id: Option<u64>,
    print: &mut dyn FnMut(&str) -> Result<()>,
) -> Result<u8> {
    let mut total_s = 0.0;
    let mut all_valid = true;
    print("file\tseal_commit_phase2_s\tverified\n")?;
    for path in files {
        let c1 = read_c1_file(path, DEFAULT_MAX_C1_BYTES)?;
        let id = resolve_identity(path, &c1, miner_id)?;
        let out = c1.output.clone();
        let sector_id = SectorId::from(id.sector_num);
        let is_benchmark = c1.is_benchmark;
        let started = Instant::now();
        let proved = seal_commit_phase2(c1.output, id.prover_id(), sector_id);
        let seconds = started.elapsed().as_secs_f64();
        total_s += seconds;
        let proof = match proved {
            Ok(proof) => proof,
            // filecoin-proofs checks its own result last, so a benchmark shape (random data,
            // synthetic parameters) is timed to that check and then rejected, as expected.
            Err(err) if is_benchmark => {
                print(&format!(
                    "{}\t{seconds:.2}\tbenchmark shape, rejected by its final self-check as expected ({err:#})\n",
                    path.display()
                ))?;
                continue;
            }
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
        all_valid &= is_valid;
        print(&format!("{}\t{seconds:.2}\t{is_valid}\n", path.display()))?;
    }
    print(&format!(
        "mean\t{:.2}\n",
        total_s / files.len().max(1) as f64
    ))?;
    Ok(if all_valid { 0 } else { 1 })
}
