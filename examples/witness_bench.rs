//! The witness of PoRep partitions two ways, side by side on one machine: the circuit's
//! gadgets (the pre-compiled path's witness-only pass) and cuzk's native witness, wall and
//! CPU seconds per challenge, on a shape C1 file of the size (the real circuit over random
//! data, so any size runs here). Both witnesses are compared element for element.
//!
//! ```text
//! cargo run --release --example witness_bench -- --sector-size 32GiB --challenges 2
//! ```

use std::time::Instant;

use anyhow::{ensure, Result};
use clap::Parser;
use cuzk::c1::{parse_c1, SectorIdentity};
use cuzk::porep::bind;
use rand::SeedableRng;

#[derive(Parser)]
struct Args {
    /// Sector size.
    #[arg(long, value_parser = cuzk::c1::parse_sector_size, default_value = "2KiB")]
    sector_size: u64,
    /// Challenges of partition 0 to time (all of them when larger).
    #[arg(long, default_value_t = 2)]
    challenges: usize,
    /// Threads of the native witness (challenges run in parallel).
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Time the native witness only (no gadget pass, no comparison).
    #[arg(long)]
    native_only: bool,
}

fn main() -> Result<()> {
    let args = Args::parse();
    let identity = SectorIdentity {
        miner_id: 1000,
        sector_num: 1,
    };
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    let output = cuzk::shape::synthetic_c1(args.sector_size, identity, &mut rng)?;
    let bytes = cuzk::shape::wrap_benchmark_c1(&output, identity)?;
    let c1 = parse_c1(std::path::Path::new("s-t01000-1.json"), &bytes)?;
    let sector = bind(c1, identity)?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(args.threads)
        .build()?;
    let (wall, cpu) = (Instant::now(), cuzk::bench::process_cpu_seconds());
    let (native, _) = sector
        .circuits
        .native_witness(0, Some(0..args.challenges), &pool)?;
    let native_wall = wall.elapsed().as_secs_f64();
    let native_cpu = cuzk::bench::process_cpu_seconds() - cpu;
    let n = args.challenges as f64;
    let (gadget_wall, gadget_cpu) = if args.native_only {
        (f64::NAN, f64::NAN)
    } else {
        let cpu = cuzk::bench::process_cpu_seconds();
        let check = sector
            .circuits
            .check_native_witness(0, Some(0..args.challenges), &pool)?;
        ensure!(
            check.mismatch.is_none(),
            "{}",
            check.mismatch.unwrap_or_default()
        );
        // check_native_witness computes the native witness again: take it out.
        let gadget_cpu = cuzk::bench::process_cpu_seconds() - cpu - native_cpu;
        (check.gadget_ms / 1e3, gadget_cpu)
    };
    println!(
        "| {} | {} | {:.2} / {:.2} | {:.2} / {:.2} | {:.1}x |",
        cuzk::c1::SectorSizeName(args.sector_size),
        native.aux.len() / args.challenges,
        gadget_wall / n,
        gadget_cpu / n,
        native_wall / n,
        native_cpu / n,
        gadget_cpu / native_cpu,
    );
    Ok(())
}
