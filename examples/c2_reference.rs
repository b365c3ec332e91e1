//! The reference to measure cuzk against: filecoin-proofs' own `seal_commit_phase2`, one
//! C1 file at a time, as lotus-bench proves them. Prints one line per file and the mean.
//!
//! ```text
//! cargo run --release --example c2_reference -- spool/inbox/*.json
//! ```

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Parser;
use cuzk::c1::{read_c1_file, resolve_identity, DEFAULT_MAX_C1_BYTES};
use filecoin_proofs_api::seal::{seal_commit_phase2, verify_seal};
use filecoin_proofs_api::SectorId;

/// Prove C1 files with filecoin-proofs' seal_commit_phase2, one at a time.
#[derive(Debug, Parser)]
struct Args {
    /// Miner actor id for files without a lotus sector name.
    #[arg(long)]
    miner_id: Option<u64>,
    /// C1 files.
    files: Vec<PathBuf>,
}

fn main() -> Result<()> {
    env_logger::init();
    let args = Args::parse();
    let mut total_s = 0.0;
    println!("file\tseal_commit_phase2_s\tverified");
    for path in &args.files {
        let c1 = read_c1_file(path, DEFAULT_MAX_C1_BYTES)?;
        let id = resolve_identity(path, &c1, args.miner_id)?;
        let out = c1.output.clone();
        let started = Instant::now();
        let proof = seal_commit_phase2(c1.output, id.prover_id(), SectorId::from(id.sector_num))
            .with_context(|| format!("{}: seal_commit_phase2", path.display()))?;
        let seconds = started.elapsed().as_secs_f64();
        let is_valid = verify_seal(
            out.registered_proof,
            out.comm_r,
            out.comm_d,
            id.prover_id(),
            SectorId::from(id.sector_num),
            out.ticket,
            out.seed,
            &proof.proof,
        )?;
        total_s += seconds;
        println!("{}\t{seconds:.2}\t{is_valid}", path.display());
    }
    if !args.files.is_empty() {
        println!("mean\t{:.2}", total_s / args.files.len() as f64);
    }
    Ok(())
}
