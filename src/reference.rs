//! Reference: filecoin-proofs' own `seal_commit_phase2` on the same C1 files, one at a time
//! as lotus-bench proves them, so cuzk can be measured against it with the same parameters
//! and the same binary (`cuzk reference FILE...`).

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use filecoin_proofs_api::seal::{seal_commit_phase2, verify_seal};
use filecoin_proofs_api::SectorId;

use crate::c1::{read_c1_file, resolve_identity, DEFAULT_MAX_C1_BYTES};

/// Arguments of `cuzk reference`.
#[derive(Debug, clap::Args)]
pub struct ReferenceArgs {
    /// Miner actor id for files without a lotus sector name.
    #[arg(long, value_name = "ID")]
    pub miner_id: Option<u64>,
    /// C1 files to prove.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
}

/// The top-level entry point for `cuzk reference`: prints `file, seconds, verified` as
/// tab-separated lines and the mean; exit 1 if a proof did not verify.
pub fn run(args: ReferenceArgs) -> Result<u8> {
    let mut total_s = 0.0;
    let mut all_valid = true;
    println!("file\tseal_commit_phase2_s\tverified");
    for path in &args.files {
        let c1 = read_c1_file(path, DEFAULT_MAX_C1_BYTES)?;
        let id = resolve_identity(path, &c1, args.miner_id)?;
        let out = c1.output.clone();
        let sector_id = SectorId::from(id.sector_num);
        let started = Instant::now();
        let proof = seal_commit_phase2(c1.output, id.prover_id(), sector_id)
            .with_context(|| format!("{}: seal_commit_phase2", path.display()))?;
        let seconds = started.elapsed().as_secs_f64();
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
        total_s += seconds;
        println!("{}\t{seconds:.2}\t{is_valid}", path.display());
    }
    println!("mean\t{:.2}", total_s / args.files.len() as f64);
    Ok(if all_valid { 0 } else { 1 })
}
