//! Makes real C1 files offline: seals random data with filecoin-proofs' own sealing API
//! (add_piece, pre-commit phase 1 and 2, commit phase 1) and writes the commit-phase-1 output
//! as lotus-bench wrapper files `s-t0<miner>-<sector>.json` or bare
//! `SealCommitPhase1Output` JSON.
//!
//! ```text
//! cargo run --release --example make_c1 -- --sector-size 2KiB --miner-id 1000 --sectors 1..=3 --out spool/inbox
//! ```
//!
//! Sealing needs no Groth16 parameters; 2KiB and 8MiB take seconds, 512MiB about 15 minutes
//! on 2 cores.

use std::fs;
use std::path::PathBuf;

use anyhow::{Context, Result};
use base64::Engine;
use clap::{Parser, ValueEnum};
use filecoin_proofs_api::seal::SealCommitPhase1Output;
use rand::SeedableRng;

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Form {
    /// lotus-bench `Commit2In` JSON: `{"SectorNum", "Phase1Out" (base64), "SectorSize"}`.
    Wrapper,
    /// Bare filecoin-proofs-api `SealCommitPhase1Output` JSON.
    Bare,
}

/// Seal random sectors and write their C1 files.
#[derive(Debug, Parser)]
struct Args {
    /// Sector size: 2KiB, 8MiB or 512MiB.
    #[arg(long, value_parser = cuzk::c1::parse_sector_size, default_value = "2KiB")]
    sector_size: u64,
    /// Miner actor id the sectors are sealed for.
    #[arg(long, default_value_t = 1000)]
    miner_id: u64,
    /// First sector number.
    #[arg(long, default_value_t = 1)]
    first_sector: u64,
    /// How many sectors to seal.
    #[arg(long, default_value_t = 1)]
    count: u64,
    /// File form to write.
    #[arg(long, value_enum, default_value = "wrapper")]
    form: Form,
    /// Seed for the data, ticket and interactive seed, for reproducible fixtures.
    #[arg(long)]
    rng_seed: Option<u64>,
    /// Output directory.
    #[arg(long)]
    out: PathBuf,
}

fn main() -> Result<()> {
    env_logger::init();
    let args = Args::parse();
    fs::create_dir_all(&args.out).with_context(|| format!("creating {}", args.out.display()))?;
    let mut rng = match args.rng_seed {
        Some(seed) => rand::rngs::StdRng::seed_from_u64(seed),
        None => rand::rngs::StdRng::from_entropy(),
    };
    for sector_num in args.first_sector..args.first_sector + args.count {
        let started = std::time::Instant::now();
        let identity = cuzk::c1::SectorIdentity {
            miner_id: args.miner_id,
            sector_num,
        };
        let c1 = seal(&args, identity, &mut rng)?;
        let path = write_c1(&args, identity, &c1)?;
        eprintln!(
            "sealed {} ({}) in {:.1} s -> {}",
            identity,
            cuzk::c1::SectorSizeName(args.sector_size),
            started.elapsed().as_secs_f64(),
            path.display()
        );
    }
    Ok(())
}

fn seal(
    args: &Args,
    identity: cuzk::c1::SectorIdentity,
    rng: &mut impl rand::RngCore,
) -> Result<SealCommitPhase1Output> {
    cuzk::sealing::seal_random_sector(args.sector_size, identity, rng)
}

fn write_c1(
    args: &Args,
    identity: cuzk::c1::SectorIdentity,
    c1: &SealCommitPhase1Output,
) -> Result<PathBuf> {
    let phase1 = serde_json::to_vec(c1)?;
    let (name, body) = match args.form {
        Form::Wrapper => (
            format!("{identity}.json"),
            serde_json::to_vec(&serde_json::json!({
                "SectorNum": identity.sector_num,
                "Phase1Out": base64::engine::general_purpose::STANDARD.encode(&phase1),
                "SectorSize": args.sector_size,
            }))?,
        ),
        Form::Bare => (format!("{identity}.json"), phase1),
    };
    let path = args.out.join(name);
    cuzk::atomic_file::write(&path, &body)?;
    Ok(path)
}
