//! Times recording a circuit's constraints on 1, 2, 4, ... threads, side by side in one
//! process, and checks each recording equals the first one: wall seconds, CPU seconds and
//! the speed-up per thread count.
//!
//! ```text
//! cargo run --release --example record_bench -- --sector-size 512MiB --threads 1,2,4,8,16
//! cargo run --release --example record_bench -- --c1 shape.json --threads 1,16
//! ```
//!
//! With a size, the blank circuit is recorded (every thread runs it whole, keeping its own
//! rows); with `--c1`, that sector's circuit, its challenges split between the threads as a
//! run records it.

use std::time::Instant;

use anyhow::{ensure, Result};
use clap::Parser;
use cuzk::proof_kind::{CircuitId, ProofKind};

#[derive(Parser)]
struct Args {
    /// Sector size.
    #[arg(long, value_parser = cuzk::c1::parse_sector_size, default_value = "2KiB")]
    sector_size: u64,
    /// Record the update circuit instead of the PoRep one.
    #[arg(long)]
    update: bool,
    /// Record this C1 file's circuit instead, as a run does (lotus-bench JSON or bare).
    #[arg(long)]
    c1: Option<std::path::PathBuf>,
    /// Thread counts, comma separated; the first is the reference the others are checked
    /// against.
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    threads: Vec<usize>,
}

fn cpu_seconds() -> f64 {
    // SAFETY: getrusage writes the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 / 1e6;
    t(usage.ru_utime) + t(usage.ru_stime)
}

fn main() -> Result<()> {
    let args = Args::parse();
    let circuit = CircuitId {
        kind: if args.update {
            ProofKind::Update
        } else {
            ProofKind::Seal
        },
        sector_size: args.sector_size,
    };
    let sector = match &args.c1 {
        Some(path) => {
            let c1 = cuzk::c1::read_c1_file(path, cuzk::c1::DEFAULT_MAX_C1_BYTES)?;
            let identity = cuzk::c1::resolve_identity(path, &c1, None)?;
            Some(cuzk::porep::bind(c1, identity)?)
        }
        None => None,
    };
    let dir = tempfile::tempdir()?;
    let what = match &args.c1 {
        Some(path) => format!("{} by challenges", path.display()),
        None => circuit.to_string(),
    };
    println!("| {what} | threads | wall s | CPU s | speed-up | same file |");
    println!("|---|---|---|---|---|---|");
    let mut reference: Option<(f64, Vec<u8>)> = None;
    for &threads in &args.threads {
        let (started, cpu) = (Instant::now(), cpu_seconds());
        let r1cs = match &sector {
            Some(sector) => sector.circuits.record_constraints(threads)?,
            None => cuzk::circuits::record_constraints(circuit, threads)?,
        };
        let (wall, cpu) = (started.elapsed().as_secs_f64(), cpu_seconds() - cpu);
        let path = dir.path().join(format!("{threads}.r1cs"));
        r1cs.save(&path)?;
        drop(r1cs);
        let bytes = std::fs::read(&path)?;
        std::fs::remove_file(&path)?;
        let (speedup, same) = match &reference {
            Some((first_wall, first)) => (first_wall / wall, bytes == *first),
            None => (1.0, true),
        };
        println!("| | {threads} | {wall:.1} | {cpu:.1} | {speedup:.2} | {same} |");
        ensure!(same, "{threads} threads recorded another file");
        if reference.is_none() {
            reference = Some((wall, bytes));
        }
    }
    Ok(())
}
