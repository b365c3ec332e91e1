//! Makes real SnapDeals update inputs offline: seals a committed-capacity sector with
//! filecoin-proofs' own API, snaps random deal data into it (`empty_sector_update_encode_into`)
//! and runs ProveReplicaUpdate1 (`generate_partition_proofs`), then writes what
//! ProveReplicaUpdate2 needs as `s-t0<miner>-<sector>.json`: damocles' `snap_prove` task JSON
//! (`--form damocles`, bytes as numbers) or the base64 form lotus and Curio write
//! (`--form base64`).
//!
//! ```text
//! cargo run --release --example make_update -- --sector-size 2KiB --miner-id 1000 --out spool/inbox
//! ```
//!
//! Needs no Groth16 parameters; 2KiB takes seconds.

use std::fs;
use std::path::PathBuf;

use anyhow::{Context, Result};
use base64::Engine;
use clap::{Parser, ValueEnum};
use rand::SeedableRng;

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Form {
    /// damocles' `SnapProve` task: bytes as arrays of numbers, commitments as 32 numbers.
    Damocles,
    /// Go's `[][]byte` JSON: vanilla proofs as base64 strings, commitments as CIDs.
    Base64,
}

/// Snap random data into freshly sealed CC sectors and write their update inputs.
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
    /// How many sectors to update.
    #[arg(long, default_value_t = 1)]
    count: u64,
    /// File form to write.
    #[arg(long, value_enum, default_value = "damocles")]
    form: Form,
    /// Seed for the data and tickets, for reproducible fixtures.
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
        let update = cuzk::sealing::update_random_sector(args.sector_size, identity, &mut rng)?;
        let json = match args.form {
            Form::Damocles => update.to_damocles_json(),
            Form::Base64 => base64_form(&update),
        };
        let path = args.out.join(format!("{identity}.json"));
        fs::write(&path, serde_json::to_vec(&json)?)
            .with_context(|| format!("writing {}", path.display()))?;
        eprintln!(
            "updated {} ({}, {} partition(s)) in {:.1} s -> {}",
            identity,
            cuzk::c1::SectorSizeName(args.sector_size),
            update.vanilla_proofs.len(),
            started.elapsed().as_secs_f64(),
            path.display()
        );
    }
    Ok(())
}

/// The form lotus' JSON and Curio's `snap-vproof.json` use: `[][]byte` as base64 strings,
/// commitments as the CIDs lotus prints, the proof as its number.
fn base64_form(update: &cuzk::update::UpdateInput) -> serde_json::Value {
    let b64 = base64::engine::general_purpose::STANDARD;
    serde_json::json!({
        "registered_proof": update.registered_proof as u64,
        "vanilla_proofs": update.vanilla_proofs.iter().map(|p| b64.encode(p)).collect::<Vec<_>>(),
        "comm_r_old": { "/": cuzk::commcid::sealed_cid(&update.comm_r_old) },
        "comm_r_new": { "/": cuzk::commcid::sealed_cid(&update.comm_r_new) },
        "comm_d_new": { "/": cuzk::commcid::unsealed_cid(&update.comm_d_new) },
    })
}
