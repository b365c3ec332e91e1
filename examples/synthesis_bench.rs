//! Times one way of synthesizing partitions, in a process of its own so its peak memory is
//! its own: wall seconds per partition, CPU seconds per partition and the peak resident
//! memory, on a shape C1 file of the size (the real circuit over random data).
//!
//! ```text
//! cargo run --release --example synthesis_bench -- --sector-size 512MiB --path precompiled
//! ```
//!
//! `precompiled` maps the constraints `cuzk params constraints` saved beside the parameters
//! (record them first) and evaluates them on the host; `deferred` computes the witness only,
//! as a partition for the cuda backend (which evaluates the constraints on its GPU);
//! `native` and `native-deferred` are the same with the witness computed natively.
//! Besides the totals, each row splits the time into the circuit pass (the witness) and the
//! matrices' evaluation. `at-prover` synthesizes as `native-deferred` and then times the
//! host's evaluation for a GPU that takes a, b and c compact (a card the constraints do not
//! fit), both ways on the same partitions: `whole` expands the witness, evaluates the three
//! vectors whole and makes them compact after; `compact` evaluates them from the compact
//! witness straight into their compact form. Both give the same layouts, checked. With `--update`, partitions of a shape update instead of a C2.
//! scripts/bench-synthesis.sh runs the paths and prints the table.

use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Parser;
use cuzk::c1::{parse_c1, SectorIdentity};
use cuzk::porep::bind;
use cuzk::r1cs::{r1cs_path, R1cs};
use cuzk::sector::SynthesisPlan;
use cuzk::synth::Capacity;
use ff::Field;
use rand::SeedableRng;
use rayon::prelude::*;

#[derive(Parser)]
struct Args {
    /// Sector size.
    #[arg(long, value_parser = cuzk::c1::parse_sector_size, default_value = "2KiB")]
    sector_size: u64,
    /// `full`, `precompiled`, `deferred`, `native` or `native-deferred`.
    #[arg(long, default_value = "precompiled")]
    path: String,
    /// Partitions synthesized one after another.
    #[arg(long, default_value_t = 3)]
    partitions: usize,
    /// Threads evaluating pre-compiled constraints.
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Partitions of a shape SnapDeals update instead of a C2.
    #[arg(long)]
    update: bool,
}

fn main() -> Result<()> {
    let args = Args::parse();
    let identity = SectorIdentity {
        miner_id: 1000,
        sector_num: 1,
    };
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    let name = std::path::Path::new("s-t01000-1.json");
    let (sector, circuit) = if args.update {
        let bytes = cuzk::shape::synthetic_update(args.sector_size, identity, &mut rng)?;
        let cuzk::input::JobInput::Update(update) = cuzk::input::parse_job_input(name, &bytes)?
        else {
            anyhow::bail!("a shape update did not read as an update");
        };
        (
            cuzk::update::bind(update, Some(identity))?,
            cuzk::proof_kind::CircuitId::update(args.sector_size),
        )
    } else {
        let output = cuzk::shape::synthetic_c1(args.sector_size, identity, &mut rng)?;
        let bytes = cuzk::shape::wrap_benchmark_c1(&output, identity)?;
        (
            bind(parse_c1(name, &bytes)?, identity)?,
            cuzk::proof_kind::CircuitId::seal(args.sector_size),
        )
    };
    // The parameter file's counts where it exists (counting a 32GiB circuit takes a minute).
    let capacity = match cuzk::footprint::Footprint::of_file(&sector.circuits.params_path()?) {
        Ok(f) => Capacity {
            abc: f.domain as usize,
            aux: f.aux as usize,
            inputs: f.inputs as usize,
        },
        Err(_) => {
            let counts = cuzk::circuits::count_shape(circuit)?;
            Capacity {
                abc: counts.domain() as usize,
                aux: counts.aux as usize,
                inputs: counts.inputs as usize,
            }
        }
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(args.threads)
        .build()?;
    const PATHS: [&str; 6] = [
        "full",
        "precompiled",
        "deferred",
        "native",
        "native-deferred",
        "at-prover",
    ];
    anyhow::ensure!(
        PATHS.contains(&args.path.as_str()),
        "--path {}: one of {}",
        args.path,
        PATHS.join(", ")
    );
    let r1cs = if args.path == "full" {
        None
    } else {
        let file = r1cs_path(&sector.circuits.params_path()?)?;
        Some(Arc::new(R1cs::load(&file).with_context(|| {
            format!("run `cuzk params constraints` first ({})", file.display())
        })?))
    };
    let plan = SynthesisPlan {
        capacity,
        precompiled: r1cs.as_ref().map(|r| (r, &pool)),
        defer_evaluation: args.path.ends_with("deferred") || args.path == "at-prover",
        native_witness: args.path.starts_with("native") || args.path == "at-prover",
    };
    let mut at_prover = [0f64; 2];
    let (started, cpu) = (Instant::now(), cuzk::bench::process_cpu_seconds());
    let mut spent = cuzk::synth::SynthesisProfile::default();
    for k in 0..args.partitions {
        let partition = sector
            .circuits
            .synthesize_partition(k % sector.circuits.partition_count(), &plan)?;
        let p = partition.profile;
        anyhow::ensure!(
            p.witness_path.name()
                == if plan.native_witness {
                    "native"
                } else {
                    "gadget"
                },
            "partition {k}: the {} witness path ran",
            p.witness_path.name()
        );
        spent.witness_ms += p.witness_ms;
        spent.witness_cpu_ms += p.witness_cpu_ms;
        spent.evaluate_ms += p.evaluate_ms;
        spent.evaluate_cpu_ms += p.evaluate_cpu_ms;
        spent.bytes = p.bytes;
        if args.path == "at-prover" {
            let spent = evaluate_both_ways(&partition, &pool)?;
            at_prover[0] += spent[0];
            at_prover[1] += spent[1];
        }
        drop(partition);
    }
    if args.path == "at-prover" {
        for (way, s) in ["whole", "compact"].iter().zip(at_prover) {
            println!(
                "| {} | at the prover, {way} | {:.3} s/partition |",
                cuzk::c1::SectorSizeName(args.sector_size),
                s / args.partitions as f64
            );
        }
        return Ok(());
    }
    let n = args.partitions as f64;
    let per = |ms: f64| ms / 1e3 / n;
    println!(
        "| {}{} | {} | {:.2} | {:.2} | {:.2} / {:.2} | {:.2} / {:.2} | {} | {} |",
        cuzk::c1::SectorSizeName(args.sector_size),
        if args.update { " update" } else { "" },
        args.path,
        started.elapsed().as_secs_f64() / n,
        (cuzk::bench::process_cpu_seconds() - cpu) / n,
        per(spent.witness_ms),
        per(spent.witness_cpu_ms),
        per(spent.evaluate_ms),
        per(spent.evaluate_cpu_ms),
        cuzk::memory::show_bytes(spent.bytes),
        cuzk::bench::peak_rss_bytes().map_or("-".into(), cuzk::memory::show_bytes),
    );
    Ok(())
}

/// The host's evaluation of a, b and c for a GPU that takes them compact, timed both ways on
/// `partition` (synthesized deferred): seconds whole, seconds compact. Errs where the two
/// disagree.
fn evaluate_both_ways(
    partition: &cuzk::synth::SynthesizedPartition,
    pool: &rayon::ThreadPool,
) -> Result<[f64; 2]> {
    use cuzk::host_abc::compact::CompactVector;
    use std::mem::MaybeUninit;
    let matrices = partition
        .deferred
        .as_ref()
        .context("a partition with its evaluation deferred")?;
    let compact = cuzk::compact_witness::CompactWitness::of(&partition.aux_assignment)
        .context("a witness of bits")?;
    let (inputs, rows) = (&partition.input_assignment, matrices.rows());
    let mut vectors: Vec<Vec<MaybeUninit<blstrs::Scalar>>> = (0..3)
        .map(|_| vec![MaybeUninit::new(blstrs::Scalar::ZERO); rows])
        .collect();
    let started = Instant::now();
    let whole: Vec<CompactVector> = pool.install(|| {
        let aux = compact.expand();
        vectors
            .iter_mut()
            .enumerate()
            .map(|(which, out)| {
                matrices.evaluate_into(which, inputs, &aux, out);
                // SAFETY: `evaluate_into` wrote every value.
                let values: &mut [blstrs::Scalar] =
                    unsafe { std::slice::from_raw_parts_mut(out.as_mut_ptr().cast(), out.len()) };
                CompactVector::of(values)
            })
            .collect()
    });
    let whole_s = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let compact_layouts: Vec<CompactVector> = pool.install(|| {
        let witness = compact.lookup();
        vectors
            .par_iter_mut()
            .enumerate()
            .map(|(which, out)| matrices.evaluate_compact(which, inputs, &witness, out))
            .collect()
    });
    let compact_s = started.elapsed().as_secs_f64();
    anyhow::ensure!(
        whole == compact_layouts,
        "the compact evaluation's layouts differ from the whole one's"
    );
    Ok([whole_s, compact_s])
}
