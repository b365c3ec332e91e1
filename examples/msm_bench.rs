//! The CPU multiexp (`backend::msm`) against ec-gpu-gen's, which bellperson's CPU prover
//! uses, side by side in one run, on a dense quotient-like vector and a witness-like one
//! (mostly bits), in G1 and G2. Both results are compared; the table shows seconds.
//!
//! With `--gpu` (a build with the cuda feature), the H multiexp on GPU 0 instead: sppark's
//! Pippenger against cuzk's wide multiexp (`backend/cuda/wide_msm.cuh`) on the same random
//! full-width scalars and resident bases (with `--streamed`, also bases streamed from
//! pinned host memory), from 2^`--from` to 2^`--to` points, with points per second; the
//! results must agree, and at the smallest size equal the CPU's. With `--ceiling` too, first
//! the rates the device reaches with every operand in registers (Fr and Fp multiplications,
//! the accumulation's bucket addition), sppark's transforms at 2^`--to` and the quotient's
//! way to the coset beside sppark's (their results compared): how far H and the quotient
//! are from the arithmetic that bounds them.
//!
//! ```text
//! cargo run --release --example msm_bench -- --log-size 20
//! CUZK_FEATURES=cuda scripts/build-cuda.sh --example msm_bench
//! target/cuda/release/examples/msm_bench --gpu --from 20 --to 27 --streamed
//! ```

use std::sync::Arc;
use std::time::Instant;

use anyhow::{ensure, Result};
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use clap::Parser;
use cuzk::backend::msm::{self, AffinePoint};
use ec_gpu_gen::multiexp_cpu::{multiexp_cpu, FullDensity};
use ec_gpu_gen::threadpool::Worker;
use ff::{Field, PrimeField};
use rand::{Rng, SeedableRng};

/// Time both multiexps.
#[derive(Debug, Parser)]
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
struct Args {
    /// log2 of the number of G1 terms (G2 gets a quarter as many).
    #[arg(long, default_value_t = 20)]
    log_size: u32,
    /// Time the H multiexp on GPU 0: sppark's Pippenger against the wide multiexp.
    #[arg(long)]
    gpu: bool,
    /// With --gpu: log2 of the smallest size.
    #[arg(long, default_value_t = 20)]
    from: u32,
    /// With --gpu: log2 of the largest size.
    #[arg(long, default_value_t = 27)]
    to: u32,
    /// With --gpu: runs of each multiexp per size (the best counts).
    #[arg(long, default_value_t = 3)]
    rounds: u32,
    /// With --gpu: also time both with the bases streamed from pinned host memory, as H's
    /// are on a card that keeps few bases (needs 96 bytes of host memory per point).
    #[arg(long)]
    streamed: bool,
    /// With --gpu: instead of H's table, the ones' sums of a batch of partitions over one
    /// query's bases (L, A, B: a witness's ones), each partition on its own against the
    /// batch by pattern, for batches of 2, 5 and 10.
    #[arg(long)]
    ones: bool,
    /// With --ones: the share of a partition's terms that are one (a 32GiB PoRep
    /// partition's witness: 0.474).
    #[arg(long, default_value_t = 0.474)]
    ones_share: f64,
    /// With --gpu: first the arithmetic's ceiling (Fr and Fp multiplications and G1 bucket
    /// additions with every operand in registers), sppark's transforms of 2^--to
    /// elements and the quotient's way to the coset beside sppark's, then H's table.
    #[arg(long)]
    ceiling: bool,
}

/// Distinct points `g, 2g, 3g, ...` (cheap to make in bulk: one addition each).
fn points<P>(n: usize, rng: &mut impl Rng) -> Vec<P::Affine>
where
    P: group::prime::PrimeCurve,
{
    let g = P::random(&mut *rng);
    let mut acc = g;
    let projective: Vec<P> = (0..n)
        .map(|_| {
            let p = acc;
            acc += g;
            p
        })
        .collect();
    let mut out = vec![<P::Affine as group::prime::PrimeCurveAffine>::identity(); n];
    P::batch_normalize(&projective, &mut out);
    out
}

/// A witness's shape: zeros and ones for most, some 32-bit words, some field elements.
fn witness_like(n: usize, rng: &mut impl Rng) -> Vec<Fr> {
    (0..n)
        .map(|_| match rng.gen_range(0..100) {
            0..=44 => Fr::ZERO,
            45..=89 => Fr::ONE,
            90..=94 => Fr::from(rng.gen::<u32>() as u64),
            _ => Fr::random(&mut *rng),
        })
        .collect()
}

fn time<G: AffinePoint>(bases: &[G], scalars: &[Fr]) -> Result<(f64, f64)> {
    let exps: Vec<_> = scalars.iter().map(|s| s.to_repr()).collect();
    let started = Instant::now();
    let ours = msm::multiexp(bases, 0, &FullDensity, &exps)?;
    let ours_s = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let theirs = multiexp_cpu(
        &Worker::new(),
        (Arc::new(bases.to_vec()), 0),
        FullDensity,
        Arc::new(exps),
    )
    .wait()?;
    let theirs_s = started.elapsed().as_secs_f64();
    ensure!(ours == theirs, "the two multiexps disagree");
    Ok((ours_s, theirs_s))
}

/// A table row: its name, cuzk's and ec-gpu-gen's seconds, and how many terms.
type Row = (&'static str, Result<(f64, f64)>, usize);

#[cfg(feature = "cuda")]
/// Scalars of one kind a proof gives a multiexp: full width (H), a witness's bits with a
/// few wide values (a query not split), all ones but a few (one bucket holding nearly every
/// base), or below 2^16 (digits in the lowest windows only).
fn scalars_of(kind: &str, n: usize, rng: &mut impl Rng) -> Vec<Fr> {
    (0..n)
        .map(|i| match kind {
            "random" => Fr::random(&mut *rng),
            "bits" => match rng.gen_range(0..100) {
                0..=48 => Fr::ZERO,
                49..=97 => Fr::ONE,
                _ => Fr::random(&mut *rng),
            },
            "ones" if i % 997 == 0 => Fr::random(&mut *rng),
            "ones" => Fr::ONE,
            _ => Fr::from(rng.gen_range(0..1u64 << 16)),
        })
        .collect()
}

/// Random scalars, each twice in a row.
#[cfg(feature = "cuda")]
fn paired_scalars(n: usize, rng: &mut impl Rng) -> Vec<Fr> {
    (0..n.div_ceil(2))
        .flat_map(|_| {
            let s = Fr::random(&mut *rng);
            [s, s]
        })
        .take(n)
        .collect()
}

/// Both GPU multiexps against the CPU's on the inputs a proof gives them rather than the
/// table's: distinct bases, sizes that are not powers of two, each kind of scalars, in G1
/// and in G2, the bases on the device and streamed (the wide multiexp's chunks small
/// enough that every size takes several, the last one short). Prints a row each; fails
/// after all rows if any disagreed.
#[cfg(feature = "cuda")]
fn gpu_checks(gpu: &mut cuzk::backend::cuda::CudaGpu, rng: &mut impl Rng) -> Result<()> {
    use cuzk::backend::cuda::BenchBases;

    let g1 = points::<G1Projective>(1 << 15, rng);
    let g2 = points::<G2Projective>(1 << 13, rng);
    println!("| group | scalars | points | bases | sppark = CPU | wide = CPU |");
    println!("|---|---|---|---|---|---|");
    let mut wrong = 0;
    let mut row = |group: &str, kind: &str, n: usize, at: BenchBases, sppark: bool, wide: bool| {
        let at = match at {
            BenchBases::Device => "device".to_string(),
            BenchBases::Streamed { chunk } => format!("streamed, chunks of {chunk}"),
        };
        println!("| {group} | {kind} | {n} | {at} | {sppark} | {wide} |");
        wrong += usize::from(!sppark) + usize::from(!wide);
    };
    for kind in ["random", "bits", "ones", "small"] {
        for n in [4096 + 17, (1 << 15) - 1] {
            let scalars = scalars_of(kind, n, rng);
            let exps: Vec<_> = scalars.iter().map(|s| s.to_repr()).collect();
            let cpu = msm::multiexp(&g1[..n], 0, &FullDensity, &exps)?;
            for at in [BenchBases::Device, BenchBases::Streamed { chunk: 4096 }] {
                let [sppark, wide] = gpu.msm_bench(&g1[..n], &scalars, 1, at)?;
                row("G1", kind, n, at, sppark.result == cpu, wide.result == cpu);
            }
        }
        for n in [4096 + 17, (1 << 13) - 1] {
            let scalars = scalars_of(kind, n, rng);
            let exps: Vec<_> = scalars.iter().map(|s| s.to_repr()).collect();
            let cpu = msm::multiexp(&g2[..n], 0, &FullDensity, &exps)?;
            for at in [BenchBases::Device, BenchBases::Streamed { chunk: 2048 }] {
                let [sppark, wide] = gpu.msm_bench_g2(&g2[..n], &scalars, 1, at)?;
                row("G2", kind, n, at, sppark.result == cpu, wide.result == cpu);
            }
        }
    }
    // One base for every term, each scalar twice: a bucket's running sum, a multiple of the
    // base, meets the base itself (a doubling) or its negation (the identity), the
    // addition's rare cases.
    for n in [4096 + 17, (1 << 15) - 1] {
        let scalars = paired_scalars(n, rng);
        let exps: Vec<_> = scalars.iter().map(|s| s.to_repr()).collect();
        let one_base = vec![g1[0]; n];
        let cpu = msm::multiexp(&one_base, 0, &FullDensity, &exps)?;
        for at in [BenchBases::Device, BenchBases::Streamed { chunk: 4096 }] {
            let [sppark, wide] = gpu.msm_bench(&one_base, &scalars, 1, at)?;
            row(
                "G1",
                "pairs of one base",
                n,
                at,
                sppark.result == cpu,
                wide.result == cpu,
            );
        }
        let n = n.min(g2.len());
        let scalars = &scalars[..n];
        let exps: Vec<_> = scalars.iter().map(|s| s.to_repr()).collect();
        let one_base = vec![g2[0]; n];
        let cpu = msm::multiexp(&one_base, 0, &FullDensity, &exps)?;
        let [sppark, wide] = gpu.msm_bench_g2(&one_base, scalars, 1, BenchBases::Device)?;
        row(
            "G2",
            "pairs of one base",
            n,
            BenchBases::Device,
            sppark.result == cpu,
            wide.result == cpu,
        );
    }
    println!();
    ensure!(wrong == 0, "{wrong} multiexps disagree with the CPU's");
    Ok(())
}

/// The H multiexp on GPU 0, both ways, 2^from .. 2^to points, after the checks of
/// [`gpu_checks`].
#[cfg(feature = "cuda")]
fn gpu_table(args: &Args) -> Result<()> {
    use cuzk::backend::cuda::{BenchBases, CudaGpu};
    use rayon::prelude::*;

    ensure!(
        args.from <= args.to && args.to <= 29,
        "--from must not pass --to, at most 29"
    );
    let mut rng = rand::rngs::StdRng::seed_from_u64(2);
    // 2^16 distinct bases (few repeats in a bucket), repeated on the device; random
    // scalars in parallel, one stream each.
    let bases = points::<G1Projective>(1 << 16, &mut rng);
    let largest = 1usize << args.to;
    let mut scalars = vec![Fr::ZERO; largest];
    scalars
        .par_chunks_mut(1 << 16)
        .enumerate()
        .for_each(|(i, chunk)| {
            let mut rng = rand::rngs::StdRng::seed_from_u64(1000 + i as u64);
            for s in chunk {
                *s = Fr::random(&mut rng);
            }
        });
    let mut gpu = CudaGpu::open(0)?;
    println!("{}\n", gpu.name());
    let checked = gpu_checks(&mut gpu, &mut rng);
    println!(
        "| points | bases | sppark ms | sppark M points/s | wide ms | wide M points/s | speedup |"
    );
    println!("|---|---|---|---|---|---|---|");
    for log in args.from..=args.to {
        let n = 1usize << log;
        let mut wide_results = Vec::new();
        for (at, name) in [
            (BenchBases::Device, "device"),
            (BenchBases::Streamed { chunk: usize::MAX }, "streamed"),
        ] {
            if at != BenchBases::Device && !args.streamed {
                continue;
            }
            let [sppark, wide] = gpu.msm_bench(&bases, &scalars[..n], args.rounds, at)?;
            ensure!(
                sppark.result == wide.result,
                "2^{log}, {name}: the wide multiexp disagrees with sppark's"
            );
            wide_results.push(wide.result);
            let rate = |seconds: f64| n as f64 / seconds / 1e6;
            println!(
                "| 2^{log} | {name} | {:.1} | {:.0} | {:.1} | {:.0} | {:.2}x |",
                sppark.seconds * 1e3,
                rate(sppark.seconds),
                wide.seconds * 1e3,
                rate(wide.seconds),
                sppark.seconds / wide.seconds
            );
        }
        ensure!(
            wide_results.windows(2).all(|w| w[0] == w[1]),
            "2^{log}: the streamed result differs from the resident one"
        );
        if log == args.from {
            let exps: Vec<_> = scalars[..n].iter().map(|s| s.to_repr()).collect();
            let repeated: Vec<G1Affine> = bases.iter().copied().cycle().take(n).collect();
            let cpu = msm::multiexp(&repeated, 0, &FullDensity, &exps)?;
            ensure!(
                cpu == wide_results[0],
                "2^{log}: the GPU disagrees with the CPU"
            );
        }
    }
    // The table runs whatever the checks found; their verdict is the result.
    checked
}

/// The arithmetic's ceiling: the rates the transforms' multiplications and the H multiexp's
/// bucket additions would reach with nothing but registers (`ceiling.cuh`). Set
/// CUZK_WIDE_PHASES=1 for H's table to give the accumulation's own time to set beside it.
#[cfg(feature = "cuda")]
fn ceiling_table(args: &Args) -> Result<()> {
    use cuzk::backend::cuda::CudaGpu;

    let mut rng = rand::rngs::StdRng::seed_from_u64(3);
    let bases = points::<G1Projective>(1 << 10, &mut rng);
    let mut gpu = CudaGpu::open(0)?;
    println!("{}\n", gpu.name());
    let rates = gpu.ceiling_bench(&bases, args.rounds, args.to)?;
    println!("| operation (the first three: every operand in registers) | operations | ms | G/s |");
    println!("|---|---|---|---|");
    let to = args.to;
    let names = [
        "Fr multiplication (the transforms)".to_string(),
        "Fp multiplication".to_string(),
        "G1 bucket addition, mixed XYZZ (H's accumulation)".to_string(),
        format!("sppark inverse NTT 2^{to}, NR (elements)"),
        format!("sppark NTT 2^{to}, RN (elements)"),
        format!("sppark coset NTT 2^{to}, RN, shift a pass (elements)"),
        format!("to the coset 2^{to}, sppark's inverse and coset NTTs (elements)"),
        format!("to the coset 2^{to}, the quotient's: 1/n in the shift (elements)"),
    ];
    for (name, rate) in names.iter().zip(rates) {
        println!(
            "| {name} | {:.3e} | {:.1} | {:.2} |",
            rate.operations,
            rate.seconds * 1e3,
            rate.operations / rate.seconds / 1e9
        );
    }
    println!();
    Ok(())
}

/// `partitions` bit maps over `terms` terms, each bit one with probability `share`, made in
/// parallel (each run of 2^16 words from its own seed).
#[cfg(feature = "cuda")]
fn random_ones(
    partitions: usize,
    terms: usize,
    share: f64,
    seed: u64,
) -> cuzk::backend::cuda::BatchOnes {
    use rayon::prelude::*;

    let mut ones = cuzk::backend::cuda::BatchOnes::new(partitions, terms);
    for j in 0..ones.partitions() {
        let words = ones.words_mut(j);
        let last = terms % 32;
        words
            .par_chunks_mut(1 << 16)
            .enumerate()
            .for_each(|(c, chunk)| {
                let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ (j as u64) << 40 ^ c as u64);
                for word in chunk {
                    *word = (0..32).fold(0u32, |w, b| w | u32::from(rng.gen_bool(share)) << b);
                }
            });
        if last != 0 {
            if let Some(word) = words.last_mut() {
                *word &= (1u32 << last) - 1;
            }
        }
    }
    ones
}

/// Each partition's sum of the bases where its bit is set, on the CPU.
#[cfg(feature = "cuda")]
fn ones_on_cpu<P>(bases: &[P::Affine], ones: &cuzk::backend::cuda::BatchOnes) -> Vec<P>
where
    P: group::prime::PrimeCurve,
{
    (0..ones.partitions())
        .map(|j| {
            (0..ones.terms())
                .filter(|&i| ones.is_one(j, i))
                .fold(P::identity(), |acc, i| acc + bases[i % bases.len()])
        })
        .collect()
}

/// The ones' sums of a batch, each partition and by pattern, against the CPU's: batches of
/// 1, 3 and 10 partitions, a partition without ones, every term one (one bucket holds every
/// base), one base for every term (a bucket's running sum meets its base: the doubling),
/// in G1 and G2. Prints a row each; fails after all rows if any disagreed.
#[cfg(feature = "cuda")]
fn ones_checks(gpu: &mut cuzk::backend::cuda::CudaGpu, rng: &mut impl Rng) -> Result<()> {
    use cuzk::backend::cuda::BatchOnes;

    let g1 = points::<G1Projective>(1 << 15, rng);
    let g2 = points::<G2Projective>(1 << 13, rng);
    println!("| group | ones | partitions | points | each = CPU | by pattern = CPU |");
    println!("|---|---|---|---|---|---|");
    let mut wrong = 0;
    let mut cases: Vec<(&str, BatchOnes)> = vec![
        ("random", random_ones(10, 4096 + 17, 0.474, 7)),
        ("random", random_ones(10, (1 << 13) - 1, 0.474, 8)),
        ("random", random_ones(1, 4096 + 17, 0.474, 9)),
        ("random, the last partition none", {
            let mut ones = random_ones(3, (1 << 15) - 1, 0.474, 10);
            ones.words_mut(2).fill(0);
            ones
        }),
        ("every term", random_ones(4, 4096 + 17, 1.0, 11)),
    ];
    for (what, ones) in cases.drain(..) {
        let n = ones.terms();
        let k = ones.partitions();
        let cpu = ones_on_cpu::<G1Projective>(&g1[..n], &ones);
        let [each, pattern] = gpu.ones_bench(&g1[..n], &ones, 1)?;
        let (a, b) = (each.sums == cpu, pattern.sums == cpu);
        println!("| G1 | {what} | {k} | {n} | {a} | {b} |");
        wrong += usize::from(!a) + usize::from(!b);
        if n <= g2.len() {
            let cpu = ones_on_cpu::<G2Projective>(&g2[..n], &ones);
            let [each, pattern] = gpu.ones_bench_g2(&g2[..n], &ones, 1)?;
            let (a, b) = (each.sums == cpu, pattern.sums == cpu);
            println!("| G2 | {what} | {k} | {n} | {a} | {b} |");
            wrong += usize::from(!a) + usize::from(!b);
        }
    }
    // One base for every term.
    let ones = random_ones(10, 4096 + 17, 0.5, 12);
    let one_base = [g1[0]];
    let cpu = ones_on_cpu::<G1Projective>(&one_base, &ones);
    let [each, pattern] = gpu.ones_bench(&one_base, &ones, 1)?;
    let (a, b) = (each.sums == cpu, pattern.sums == cpu);
    println!(
        "| G1 | random, one base | 10 | {} | {a} | {b} |",
        ones.terms()
    );
    wrong += usize::from(!a) + usize::from(!b);
    println!();
    ensure!(wrong == 0, "{wrong} sums of ones disagree with the CPU's");
    Ok(())
}

/// The ones' sums of batches of 2, 5 and 10 partitions on GPU 0, each partition on its own
/// against the batch by pattern, 2^from .. 2^to terms in G1 (to 2^26 in G2), after the
/// checks of [`ones_checks`].
#[cfg(feature = "cuda")]
fn ones_table(args: &Args) -> Result<()> {
    use cuzk::backend::cuda::{BatchOnes, CudaGpu};

    ensure!(
        args.from <= args.to && args.to <= 29,
        "--from must not pass --to, at most 29"
    );
    let mut rng = rand::rngs::StdRng::seed_from_u64(3);
    let g1 = points::<G1Projective>(1 << 16, &mut rng);
    let g2 = points::<G2Projective>(1 << 14, &mut rng);
    let mut gpu = CudaGpu::open(0)?;
    println!(
        "{}
",
        gpu.name()
    );
    let checked = ones_checks(&mut gpu, &mut rng);
    println!(
        "ones: {:.1}% of each partition's terms, drawn independently\n",
        args.ones_share * 100.0
    );
    println!(
        "| points | group | partitions | each ms | by pattern ms | saved a partition ms | speedup |"
    );
    println!("|---|---|---|---|---|---|---|");
    for log in args.from..=args.to {
        let n = 1usize << log;
        let all = random_ones(10, n, args.ones_share, 100 + u64::from(log));
        for k in [2usize, 5, 10] {
            let mut batch = BatchOnes::new(k, n);
            for j in 0..k {
                batch.words_mut(j).copy_from_slice(all.words(j));
            }
            for group in ["G1", "G2"] {
                let [each, pattern] = match group {
                    "G1" => {
                        let [e, p] = gpu.ones_bench(&g1, &batch, args.rounds)?;
                        ensure!(e.sums == p.sums, "2^{log}, G1, {k}: the two ways disagree");
                        [e.seconds, p.seconds]
                    }
                    _ if log <= 26 => {
                        let [e, p] = gpu.ones_bench_g2(&g2, &batch, args.rounds)?;
                        ensure!(e.sums == p.sums, "2^{log}, G2, {k}: the two ways disagree");
                        [e.seconds, p.seconds]
                    }
                    _ => continue,
                };
                println!(
                    "| 2^{log} | {group} | {k} | {:.1} | {:.1} | {:.1} | {:.2}x |",
                    each * 1e3,
                    pattern * 1e3,
                    (each - pattern) * 1e3 / k as f64,
                    each / pattern
                );
            }
        }
    }
    checked
}

fn main() -> Result<()> {
    let args = Args::parse();
    if args.gpu {
        #[cfg(feature = "cuda")]
        return if args.ones {
            ones_table(&args)
        } else if args.ceiling {
            ceiling_table(&args).and_then(|()| gpu_table(&args))
        } else {
            gpu_table(&args)
        };
        #[cfg(not(feature = "cuda"))]
        anyhow::bail!("--gpu needs a build with the cuda feature (scripts/build-cuda.sh)");
    }
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    let n = 1usize << args.log_size;
    let g1 = points::<G1Projective>(n, &mut rng);
    let g2 = points::<G2Projective>(n / 4, &mut rng);
    println!("| multiexp | terms | cuzk msm s | ec-gpu-gen s | speedup |\n|---|---|---|---|---|");
    let dense: Vec<Fr> = (0..n).map(|_| Fr::random(&mut rng)).collect();
    let witness = witness_like(n, &mut rng);
    let rows: [Row; 3] = [
        ("G1, dense (H)", time::<G1Affine>(&g1, &dense), n),
        ("G1, witness (L, A)", time::<G1Affine>(&g1, &witness), n),
        (
            "G2, witness (B)",
            time::<G2Affine>(&g2, &witness[..n / 4]),
            n / 4,
        ),
    ];
    for (name, result, terms) in rows {
        let (ours, theirs) = result?;
        println!(
            "| {name} | {terms} | {ours:.2} | {theirs:.2} | {:.2}x |",
            theirs / ours
        );
    }
    Ok(())
}
