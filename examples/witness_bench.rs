//! The witness of PoRep partitions two ways, side by side on one machine: the circuit's
//! gadgets (the pre-compiled path's witness-only pass) and cuzk's native witness, written in
//! place into one vector as the pipeline does, wall and CPU seconds per challenge (medians
//! over `--repeat` runs), on a shape C1 file of the size (the real circuit over random data,
//! so any size runs here). Both witnesses are compared element for element.
//!
//! With `--update`, a whole partition of a shape update instead (its circuit's challenges
//! are fixed), in seconds per partition.
//!
//! ```text
//! cargo run --release --example witness_bench -- --sector-size 32GiB --challenges 2
//! cargo run --release --example witness_bench -- --sector-size 32GiB --update
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
    /// A whole partition of a shape update instead of PoRep challenges.
    #[arg(long)]
    update: bool,
    /// Runs of each; the table gives the medians (this machine is shared and noisy).
    #[arg(long, default_value_t = 1)]
    repeat: usize,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

fn main() -> Result<()> {
    let args = Args::parse();
    let identity = SectorIdentity {
        miner_id: 1000,
        sector_num: 1,
    };
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    let name = std::path::Path::new("s-t01000-1.json");
    let (sector, sample_range, n) = if args.update {
        let bytes = cuzk::shape::synthetic_update(args.sector_size, identity, &mut rng)?;
        let cuzk::input::JobInput::Update(update) = cuzk::input::parse_job_input(name, &bytes)?
        else {
            anyhow::bail!("a shape update did not read as an update");
        };
        (cuzk::update::bind(update, Some(identity))?, None, 1.0)
    } else {
        let output = cuzk::shape::synthetic_c1(args.sector_size, identity, &mut rng)?;
        let bytes = cuzk::shape::wrap_benchmark_c1(&output, identity)?;
        let c1 = parse_c1(name, &bytes)?;
        let n = args.challenges as f64;
        (bind(c1, identity)?, Some(0..args.challenges), n)
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(args.threads)
        .build()?;
    // The counts of the sample, from one untimed pass, so the timed one writes in place into
    // one vector as the pipeline's witness does.
    let (sample, _) = sector
        .circuits
        .native_witness(0, sample_range.clone(), &pool, None)?;
    let expected = Some((sample.inputs.len(), sample.aux.len()));
    drop(sample);
    let (mut native_runs, mut gadget_runs) = (Vec::new(), Vec::new());
    let mut aux_per_challenge = 0;
    // The native runs first, then the gadget runs: interleaved, each pass's gigabytes of
    // fresh memory would be backed by whatever pages the other left behind.
    for _ in 0..args.repeat.max(1) {
        let (wall, cpu) = (Instant::now(), cuzk::bench::process_cpu_seconds());
        let (native, _) =
            sector
                .circuits
                .native_witness(0, sample_range.clone(), &pool, expected)?;
        native_runs.push((
            wall.elapsed().as_secs_f64() / n,
            (cuzk::bench::process_cpu_seconds() - cpu) / n,
        ));
        aux_per_challenge = (native.aux.len() as f64 / n) as usize;
    }
    let gadget_runs_wanted = if args.native_only {
        0
    } else {
        args.repeat.max(1)
    };
    for _ in 0..gadget_runs_wanted {
        let check = sector
            .circuits
            .check_native_witness(0, sample_range.clone(), &pool)?;
        ensure!(
            check.mismatch.is_none(),
            "{}",
            check.mismatch.unwrap_or_default()
        );
        gadget_runs.push((check.gadget_ms / 1e3 / n, check.gadget_cpu_ms / 1e3 / n));
    }
    let wall = |runs: &[(f64, f64)]| median(runs.iter().map(|r| r.0).collect());
    let cpu = |runs: &[(f64, f64)]| median(runs.iter().map(|r| r.1).collect());
    println!(
        "| {} | {} | {} | {:.2} / {:.2} | {:.3} / {:.3} | {:.1}x |",
        cuzk::c1::SectorSizeName(args.sector_size),
        aux_per_challenge,
        native_runs.len(),
        wall(&gadget_runs),
        cpu(&gadget_runs),
        wall(&native_runs),
        cpu(&native_runs),
        cpu(&gadget_runs) / cpu(&native_runs),
    );
    Ok(())
}
