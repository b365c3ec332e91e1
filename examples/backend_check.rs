//! Checks the GPU backends against each other on a circuit of any size, with parameters made
//! for it here, every proof checked with bellperson's verifier: the cuda backend, SupraSeal
//! and the ec-gpu kernels must all make valid proofs of the same synthesized partitions.
//! Then the cuda backend and the ec-gpu kernels against the CPU exactly: with `r = s = 0` a
//! proof is deterministic, so the GPU's (bases resident, then streamed from the host) must
//! equal the CPU's byte for byte. With `--c1 FILE`, the same for partition 0 of a real
//! sector, and the cuda backend's proof of the whole sector must pass `verify_seal`.
//! The parameters come with their H query in coset evaluation form; the cuda backend is
//! compared with and without it (six transforms either way: over the coset g·H with it, over
//! s·H without), the CPU with the file's own query.
//!
//! ```text
//! cargo run --release --features cuda,supraseal --example backend_check -- --log-constraints 16 --partitions 4
//! ```

use std::time::Instant;

use anyhow::{ensure, Result};
use bellperson::gadgets::boolean::AllocatedBit;
use bellperson::gadgets::num::AllocatedNum;
use bellperson::groth16::{prepare_verifying_key, verify_proof};
use bellperson::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar as Fr;
use clap::Parser;
#[cfg(feature = "cuda")]
use cuzk::backend::cuda::{CudaProver, ResidentParams};
use cuzk::backend::gpu::GpuSelection;
use cuzk::backend::groth16::prove_partition;
use cuzk::backend::kernels::{self, ProverKernels};
use cuzk::backend::{BackendChoice, Prover};
#[cfg(feature = "cuda")]
use cuzk::sector::SynthesisPlan;
use cuzk::synth::synthesize;
#[cfg(feature = "cuda")]
use cuzk::synth::SynthesizedPartition;
use ff::{Field, PrimeField};
use rand::SeedableRng;
#[cfg(feature = "cuda")]
use std::sync::Arc;

/// A chain of squarings `x_{i+1} = x_i^2 + x_i`, with the last value public. Each step
/// also allocates the low bits of its value as booleans, so that, as in a PoRep circuit,
/// most of the L, A and B queries' scalars are bits: the GPU multiexps split those off.
#[derive(Clone)]
struct Chain {
    x: Option<Fr>,
    steps: usize,
}

impl Circuit<Fr> for Chain {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut x = AllocatedNum::alloc(cs.namespace(|| "x"), || {
            self.x.ok_or(SynthesisError::AssignmentMissing)
        })?;
        for i in 0..self.steps {
            let sq = x.square(cs.namespace(|| format!("sq {i}")))?;
            let next = AllocatedNum::alloc(cs.namespace(|| format!("next {i}")), || {
                Ok(sq.get_value().ok_or(SynthesisError::AssignmentMissing)?
                    + x.get_value().ok_or(SynthesisError::AssignmentMissing)?)
            })?;
            cs.enforce(
                || format!("sum {i}"),
                |lc| lc + sq.get_variable() + x.get_variable(),
                |lc| lc + CS::one(),
                |lc| lc + next.get_variable(),
            );
            let low = next.get_value().map(|v| {
                let repr = v.to_repr();
                u16::from_le_bytes([repr.as_ref()[0], repr.as_ref()[1]])
            });
            for bit in 0..BITS_PER_STEP {
                AllocatedBit::alloc(
                    cs.namespace(|| format!("bit {i} {bit}")),
                    low.map(|low| (low >> bit) & 1 == 1),
                )?;
            }
            x = next;
        }
        x.inputize(cs.namespace(|| "out"))?;
        Ok(())
    }
}

/// Booleans per step of [`Chain`]: 16 of its 18 variables per step are bits (a PoRep
/// partition's are bits but for 1-2%).
const BITS_PER_STEP: usize = 16;

impl Chain {
    /// Steps for about `2^log_constraints` constraints.
    fn steps_for(log_constraints: u32) -> usize {
        ((1usize << log_constraints) / (2 + BITS_PER_STEP)).max(1)
    }

    fn output(&self) -> Fr {
        let mut x = self.x.unwrap_or(Fr::ZERO);
        for _ in 0..self.steps {
            x = x.square() + x;
        }
        x
    }
}

#[derive(Parser)]
struct Args {
    /// About 2^N constraints.
    #[arg(long, default_value_t = 16)]
    log_constraints: u32,
    /// Partitions (circuits) to prove with each backend.
    #[arg(long, default_value_t = 4)]
    partitions: usize,
    /// A real C1 file (named `s-t0<miner>-<sector>.json`) whose parameters are in the cache.
    #[arg(long)]
    c1: Option<std::path::PathBuf>,
}

fn main() -> Result<()> {
    env_logger::init();
    let args = Args::parse();
    let steps = Chain::steps_for(args.log_constraints);
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    let started = Instant::now();
    // cuzk's generator draws bellperson's secrets in bellperson's order (the same parameters
    // for a seed) and knows tau, so the coset H query comes with them.
    let set = cuzk::params::random::random_parameters(Chain { x: None, steps }, &mut rng)?;
    let params = set.params;
    eprintln!(
        "parameters for 2^{} constraints in {:.1} s",
        args.log_constraints,
        started.elapsed().as_secs_f64()
    );
    let dir = tempfile::tempdir()?;
    let path = path_of(&dir);
    cuzk::params::random::write_set(&params, &path, &path.with_extension("vk"))?;
    cuzk::params::coset_h::save(&set.coset_h, &path)?;
    let pvk = prepare_verifying_key(&params.vk);
    let circuits: Vec<Chain> = (0..args.partitions)
        .map(|i| Chain {
            x: Some(Fr::from(i as u64 + 3)),
            steps,
        })
        .collect();

    #[cfg(feature = "cuda")]
    if let Some(c1) = &args.c1 {
        check_real_sector(c1)?;
    }
    #[cfg(not(feature = "cuda"))]
    ensure!(
        args.c1.is_none(),
        "--c1 needs a build with the cuda feature"
    );

    // SupraSeal only where it is built in (`CUZK_FEATURES=cuda scripts/build-cuda.sh` leaves
    // it out).
    let choices = [
        BackendChoice::Cuda,
        BackendChoice::Supraseal,
        BackendChoice::EcGpu,
    ];
    for choice in choices
        .into_iter()
        .filter(|&c| c != BackendChoice::Supraseal || cfg!(feature = "supraseal"))
    {
        let env = cuzk::backend::gpu::env::GpuEnv::from_env();
        let plan = cuzk::backend::provers_for(choice, &GpuSelection::All, 1, &env)?;
        for note in &plan.notes {
            eprintln!("{choice:?}: note: {note}");
        }
        let mut provers = plan.provers;
        let prover: &mut Prover = &mut provers[0];
        let loaded = prover
            .params_kind()
            .load(&path)
            .map_err(anyhow::Error::msg)?;
        let mut valid = 0;
        let started = Instant::now();
        for chunk in circuits.chunks(prover.batch_size()) {
            let batch = chunk
                .iter()
                .map(|c| synthesize(c.clone()))
                .collect::<Result<Vec<_>, _>>()?;
            for (result, circuit) in prover
                .prove(batch, &loaded, None, &mut |_| {})
                .into_iter()
                .zip(chunk)
            {
                let (proof, timings) = result?;
                ensure!(
                    verify_proof(&pvk, &proof, &[circuit.output()])?,
                    "{}: a proof did not verify",
                    prover.name()
                );
                ensure!(
                    !verify_proof(&pvk, &proof, &[circuit.output() + Fr::ONE])?,
                    "{}: a proof verified for the wrong input",
                    prover.name()
                );
                eprintln!("{}: {timings}", prover.name());
                valid += 1;
            }
        }
        println!(
            "{:?} ({}): {valid}/{} proofs valid, {:.2} s per partition with synthesis",
            choice,
            prover.name(),
            circuits.len(),
            started.elapsed().as_secs_f64() / circuits.len() as f64
        );
    }

    // The coset H query derived on the GPU from the H query equals the one tau gives.
    #[cfg(feature = "cuda")]
    {
        let started = Instant::now();
        let derived = cuzk::backend::cuda::coset_h::derive(&params.h)?;
        let seconds = started.elapsed().as_secs_f64();
        ensure!(
            derived == set.coset_h,
            "the coset H query derived on the GPU differs from the one tau gives"
        );
        println!(
            "cuda: the coset H query derived on the GPU ({} points in {seconds:.2} s) equals the one tau gives",
            derived.len()
        );
    }

    let mut cpu = ProverKernels::cpu(0);
    #[cfg(feature = "cuda")]
    for (path, device_bytes, coset_h) in [
        ("resident", u64::MAX, false),
        ("streamed", 0, false),
        ("resident, H on the coset", u64::MAX, true),
        ("streamed, H on the coset", 0, true),
    ] {
        let mut cuda = CudaProver::open(0, "cuda-0".into())?;
        let resident = load_h_as(&dir, device_bytes, coset_h, &format!("cuda {path}"))?;
        for circuit in circuits.iter().take(2) {
            let partition = synthesize(circuit.clone())?;
            let (on_gpu, timings) = cuda.prove(partition, &resident, Fr::ZERO, Fr::ZERO, None)?;
            let partition = synthesize(circuit.clone())?;
            let on_cpu = prove_partition(partition, &params, None, Fr::ZERO, Fr::ZERO, &mut cpu)?.0;
            ensure!(
                on_gpu == on_cpu,
                "cuda {path}: the GPU's proof differs from the CPU's"
            );
            // Only streamed query sets go beside H.
            ensure!(
                (timings.beside_h_ms > 0.0) == (beside_h_expected() && device_bytes == 0),
                "cuda {path}: the queries' work beside H ran {} ms ({timings})",
                timings.beside_h_ms
            );
            eprintln!("cuda {path}: {timings}");
        }
        println!("cuda {path}: proofs equal the CPU's");
    }

    // A shared pass over the streamed bases: each partition is proved with the one after it
    // as `next`, so the second's streamed queries ride the first's pass and are kept for its
    // call (no work beside its own H, and only its share of the pass's bytes); the third,
    // after a partition taken ahead, streams its own. Every proof equals the CPU's. Once with
    // whole witnesses, once as the pipeline holds them where the constraints do not fit on
    // the card: compact, a, b and c evaluated on the host (the next partition's queries are
    // then split from its compact witness).
    #[cfg(feature = "cuda")]
    if beside_h_expected() && shared_pass_expected() {
        let r1cs = Arc::new(cuzk::r1cs::R1cs::record(Chain { x: None, steps })?);
        let pool = rayon::ThreadPoolBuilder::new().build()?;
        for compact in [false, true] {
            let form = if compact { "compact" } else { "whole" };
            let mut cuda = CudaProver::open(0, "cuda-0".into())?;
            let streamed = Arc::new(ResidentParams::load(&path_of(&dir), 0)?);
            let mut queue = std::collections::VecDeque::new();
            for k in 0..3 {
                let circuit = circuits[k % circuits.len()].clone();
                if !compact {
                    queue.push_back(synthesize(circuit)?);
                    continue;
                }
                queue.push_back(evaluated_on_host_compact(&r1cs, circuit, &pool, &cuda)?);
            }
            let mut timed = Vec::new();
            while let Some(partition) = queue.pop_front() {
                let k = timed.len();
                let (on_gpu, timings) =
                    cuda.prove(partition, &streamed, Fr::ZERO, Fr::ZERO, queue.front())?;
                let partition = synthesize(circuits[k % circuits.len()].clone())?;
                let on_cpu =
                    prove_partition(partition, &params, None, Fr::ZERO, Fr::ZERO, &mut cpu)?.0;
                ensure!(
                    on_gpu == on_cpu,
                    "cuda, a shared pass ({form}): partition {k}'s proof differs from the CPU's"
                );
                ensure!(
                    (timings.beside_h_ms > 0.0) == (k != 1),
                    "cuda, a shared pass ({form}): partition {k} worked beside H for {} ms ({timings})",
                    timings.beside_h_ms
                );
                eprintln!("cuda, a shared pass ({form}), partition {k}: {timings}");
                timed.push(timings);
            }
            ensure!(
                timed[1].pcie_bytes < timed[2].pcie_bytes,
                "cuda, a shared pass ({form}): the second partition counted {} bytes over PCIe, the third (its own pass) {}",
                timed[1].pcie_bytes,
                timed[2].pcie_bytes
            );
            println!("cuda, a shared pass ({form}): proofs equal the CPU's, the second partition's queries rode the first's pass");
        }
    }

    // The constraints on the GPU: partitions that are their witness alone, evaluated there,
    // with H's bases on the coset (the quotient over g·H takes the product in its last
    // step) and with the file's own (over s·H, before it).
    #[cfg(feature = "cuda")]
    for (form, coset_h) in [(", H on the coset", true), ("", false)] {
        let r1cs = Arc::new(cuzk::r1cs::R1cs::record(Chain { x: None, steps })?);
        let pool = rayon::ThreadPoolBuilder::new().build()?;
        let mut cuda = CudaProver::open(0, "cuda-0".into())?;
        let resident = load_h_as(&dir, u64::MAX, coset_h, &format!("cuda evaluating{form}"))?;
        // Each partition's witness goes up during the previous one's proof (the second and
        // later find theirs on the GPU), so every proof checks the upload ahead too. The
        // first and third are held compact (bits and wide values, expanded on the GPU),
        // the second whole.
        let mut deferred: std::collections::VecDeque<_> = circuits
            .iter()
            .take(3)
            .enumerate()
            .map(|(k, c)| {
                let mut partition = r1cs.synthesize(c.clone(), &pool, Default::default(), true)?;
                ensure!(
                    k % 2 == 1 || partition.compact_witness(),
                    "a witness of bits was not compacted"
                );
                Ok(partition)
            })
            .collect::<Result<_>>()?;
        let mut k = 0;
        while let Some(partition) = deferred.pop_front() {
            ensure!(partition.a.is_empty(), "the evaluation was not deferred");
            let (on_gpu, timings) =
                cuda.prove(partition, &resident, Fr::ZERO, Fr::ZERO, deferred.front())?;
            ensure!(
                timings.evaluate_ms > 0.0,
                "the GPU did not evaluate the constraints"
            );
            ensure!(
                (k == 0) == (timings.upload_ms > 0.0),
                "partition {k}: only the first witness goes up in its own call ({timings})"
            );
            let partition = synthesize(circuits[k % circuits.len()].clone())?;
            let on_cpu = prove_partition(partition, &params, None, Fr::ZERO, Fr::ZERO, &mut cpu)?.0;
            ensure!(
                on_gpu == on_cpu,
                "cuda evaluating{form}: partition {k}'s proof differs from the CPU's"
            );
            eprintln!("cuda evaluating{form}: {timings}");
            k += 1;
        }
        println!("cuda with the constraints on the GPU{form}: proofs equal the CPU's");
    }

    // Batches and two sets over the constraints on the GPU, with H's bases as a load picks
    // them (on the coset, where the file is there).
    #[cfg(feature = "cuda")]
    {
        let r1cs = Arc::new(cuzk::r1cs::R1cs::record(Chain { x: None, steps })?);
        let pool = rayon::ThreadPoolBuilder::new().build()?;
        let mut cuda = CudaProver::open(0, "cuda-0".into())?;

        // Batches: three partitions proved in one call, the ones of their resident queries
        // summed together by pattern after the last, their witnesses on the GPU or a, b and
        // c from the host; and over streamed bases, where each sums its own. Every proof
        // equals the CPU's.
        for (path, device_bytes, on_gpu_evaluated) in [
            ("resident, evaluated on the GPU", u64::MAX, true),
            ("resident, a, b and c from the host", u64::MAX, false),
            ("streamed", 0, true),
        ] {
            let set = Arc::new(ResidentParams::load(&path_of(&dir), device_bytes)?);
            let mut cuda = CudaProver::open(0, "cuda-0".into())?;
            // Three partitions, the circuits taken in turn.
            let batch = (0..3)
                .map(|k| &circuits[k % circuits.len()])
                .map(|c| {
                    if on_gpu_evaluated {
                        Ok(r1cs.synthesize(c.clone(), &pool, Default::default(), true)?)
                    } else {
                        evaluated_on_host_compact(&r1cs, c.clone(), &pool, &cuda)
                    }
                })
                .collect::<Result<Vec<_>>>()?;
            let size = batch.len();
            let zeros = vec![(Fr::ZERO, Fr::ZERO); size];
            let proved = cuda.prove_batch(batch, &set, &zeros, None, &mut |_| {});
            for (k, result) in proved.into_iter().enumerate() {
                let (on_gpu, timings) = result?;
                let partition = synthesize(circuits[k % circuits.len()].clone())?;
                let on_cpu =
                    prove_partition(partition, &params, None, Fr::ZERO, Fr::ZERO, &mut cpu)?.0;
                ensure!(
                    on_gpu == on_cpu,
                    "cuda, a batch ({path}): partition {k}'s proof differs from the CPU's"
                );
                eprintln!("cuda, a batch ({path}), partition {k}: {timings}");
            }
            let summed = cuda.summed_by_pattern();
            // Split queries over resident bases leave their ones to the batch, here where
            // small ones are kept too (CUZK_TEST_GPU_FAULT=small-batches; else from 2^20
            // terms).
            let fault = std::env::var("CUZK_TEST_GPU_FAULT").unwrap_or_default();
            if fault.contains("small-batches") {
                let expected = if device_bytes != 0 && !fault.contains("split-oom") {
                    size
                } else {
                    0
                };
                ensure!(
                    summed == expected,
                    "cuda, a batch ({path}): {summed} partitions' ones summed by pattern, expected {expected}"
                );
            }
            println!("cuda, a batch ({path}): proofs equal the CPU's, {summed} partitions' ones summed by pattern");
        }

        // Two parameter sets on one GPU (as a PoRep and an update circuit would be), each
        // with its constraints: proved alternately, each is uploaded once and the proofs
        // still equal the CPU's.
        let sets = [
            Arc::new(ResidentParams::load(&path_of(&dir), u64::MAX)?),
            Arc::new(ResidentParams::load(&path_of(&dir), u64::MAX)?),
        ];
        let mut uploads = 0;
        for k in 0..4 {
            let set = &sets[k % 2];
            cuda.upload(set, || uploads += 1)?;
            let circuit = circuits[k % circuits.len()].clone();
            let partition = r1cs.synthesize(circuit.clone(), &pool, Default::default(), true)?;
            let (on_gpu, _) = cuda.prove(partition, set, Fr::ZERO, Fr::ZERO, None)?;
            let on_cpu = prove_partition(
                synthesize(circuit)?,
                &params,
                None,
                Fr::ZERO,
                Fr::ZERO,
                &mut cpu,
            )?
            .0;
            ensure!(
                on_gpu == on_cpu,
                "two sets kept: proof {k} differs from the CPU's"
            );
        }
        ensure!(
            uploads == 2 && sets.iter().all(|set| cuda.has_bases_of(set)),
            "two sets alternating: {uploads} uploads, expected each set once"
        );
        println!("cuda with two parameter sets kept: each uploaded once, proofs equal the CPU's");

        // a, b and c evaluated on the host into the prover's pinned set and the witness kept
        // compact (expanded on the GPU), as the pipeline does where the constraints do not
        // fit on the card; with the bases resident and streamed.
        for (path, device_bytes) in [("resident", u64::MAX), ("streamed", 0)] {
            let resident = Arc::new(ResidentParams::load(&path_of(&dir), device_bytes)?);
            let mut cuda = CudaProver::open(0, "cuda-0".into())?;
            for (k, circuit) in circuits.iter().take(2).enumerate() {
                let partition = evaluated_on_host_compact(&r1cs, circuit.clone(), &pool, &cuda)?;
                let (on_gpu, timings) =
                    cuda.prove(partition, &resident, Fr::ZERO, Fr::ZERO, None)?;
                let on_cpu = prove_partition(
                    synthesize(circuit.clone())?,
                    &params,
                    None,
                    Fr::ZERO,
                    Fr::ZERO,
                    &mut cpu,
                )?
                .0;
                ensure!(
                    on_gpu == on_cpu && timings.evaluate_ms == 0.0,
                    "cuda {path}, a, b and c from the host and the witness compact: partition {k}'s proof differs from the CPU's"
                );
                eprintln!("cuda {path}, a, b and c from the host, witness compact: {timings}");
            }
        }
        println!(
            "cuda with a, b and c from the host and the witness compact: proofs equal the CPU's"
        );
    }

    let env = cuzk::backend::gpu::env::GpuEnv::from_env();
    for (path, budget, chunk) in [("resident", u64::MAX, usize::MAX), ("streamed", 0, 1000)] {
        let mut gpu = kernels::provers_for(&GpuSelection::All, 1, &env)
            .provers
            .remove(0);
        ensure!(gpu.is_gpu(), "no GPU for the ec-gpu kernels");
        gpu.limit_gpu_memory(budget, chunk);
        for circuit in circuits.iter().take(2) {
            let deterministic = |kernels: &mut ProverKernels| -> Result<_> {
                let partition = synthesize(circuit.clone())?;
                Ok(prove_partition(partition, &params, None, Fr::ZERO, Fr::ZERO, kernels)?.0)
            };
            let on_gpu = deterministic(&mut gpu)?;
            let on_cpu = deterministic(&mut cpu)?;
            ensure!(
                on_gpu == on_cpu,
                "{path}: the GPU's proof differs from the CPU's"
            );
            ensure!(
                gpu.gpu_fallbacks() == 0,
                "{path}: a GPU step failed and the CPU did it: nothing was compared"
            );
        }
        println!(
            "ec-gpu {path} ({} MiB of bases on the GPU): proofs equal the CPU's",
            gpu.resident_bytes() >> 20
        );
    }
    Ok(())
}

/// The test set with H's bases on the coset or the file's own (`coset_h`), `device_bytes` of
/// them on the GPU; an error naming `what` where the load took the other form.
#[cfg(feature = "cuda")]
fn load_h_as(
    dir: &tempfile::TempDir,
    device_bytes: u64,
    coset_h: bool,
    what: &str,
) -> Result<Arc<ResidentParams>> {
    let set = Arc::new(ResidentParams::load_with(
        &path_of(dir),
        device_bytes,
        coset_h,
    )?);
    ensure!(
        set.h_on_coset() == coset_h,
        "{what}: the coset H query was {}taken",
        if coset_h { "not " } else { "" }
    );
    Ok(set)
}

fn path_of(dir: &tempfile::TempDir) -> std::path::PathBuf {
    dir.path().join("chain.params")
}

/// `circuit` synthesized with the recorded constraints, its witness compact, and a, b and c
/// evaluated on the host into `cuda`'s pinned set where one is free: as the pipeline holds a
/// partition where the constraints do not fit on the card.
#[cfg(feature = "cuda")]
fn evaluated_on_host_compact(
    r1cs: &Arc<cuzk::r1cs::R1cs>,
    circuit: Chain,
    pool: &rayon::ThreadPool,
    cuda: &CudaProver,
) -> Result<SynthesizedPartition> {
    let mut partition = r1cs.synthesize(circuit, pool, Default::default(), true)?;
    ensure!(
        partition.compact_witness(),
        "a witness of bits was not compacted"
    );
    let set = cuda.abc_lender().lend(partition.num_constraints());
    partition.evaluate_deferred_keeping_compact(set);
    ensure!(
        partition.compact_aux.is_some() && partition.deferred.is_none(),
        "evaluated on the host, the witness still compact"
    );
    Ok(partition)
}

#[cfg(feature = "cuda")]
/// Whether the partitions proved one after another share their passes over streamed bases
/// (CUZK_SHARED_PASS=0 or off turns that off).
fn shared_pass_expected() -> bool {
    std::env::var("CUZK_SHARED_PASS").map_or(true, |v| v != "0" && v != "off")
}

/// Whether the cuda backend's queries run beside H: unless a test's fault leaves them to the
/// steps after it (`CUZK_TEST_GPU_FAULT`: `beside-oom`, `split-oom`, `tail-oom`).
#[cfg(feature = "cuda")]
fn beside_h_expected() -> bool {
    let fault = std::env::var("CUZK_TEST_GPU_FAULT").unwrap_or_default();
    !["beside-oom", "split-oom", "tail-oom"]
        .iter()
        .any(|f| fault.contains(f))
}

#[cfg(feature = "cuda")]
/// Partition 0 of a real sector on the CPU and on the cuda backend with `r = s = 0`: equal
/// byte for byte; then every partition with fresh randomness through `verify_seal`.
fn check_real_sector(path: &std::path::Path) -> Result<()> {
    let c1 = cuzk::c1::read_c1_file(path, cuzk::c1::DEFAULT_MAX_C1_BYTES)?;
    let identity = cuzk::c1::identity_from_file_name(path)
        .ok_or_else(|| anyhow::anyhow!("{}: name it s-t0<miner>-<sector>.json", path.display()))?;
    let sector = cuzk::porep::bind(c1, identity)?;
    let params_path = sector.circuits.params_path()?;
    let plan = SynthesisPlan::default();
    let started = Instant::now();
    let params = cuzk::params::load::read_parameters(&params_path)?;
    let resident = Arc::new(ResidentParams::load(&params_path, u64::MAX)?);
    let mut cuda = CudaProver::open(0, "cuda-0".into())?;
    eprintln!(
        "real sector: parameters loaded in {:.1} s, H's bases {}",
        started.elapsed().as_secs_f64(),
        if resident.h_on_coset() {
            "on the coset"
        } else {
            "the file's own"
        }
    );
    let started = Instant::now();
    let on_cpu = prove_partition(
        sector.circuits.synthesize_partition(0, &plan)?,
        &params,
        None,
        Fr::ZERO,
        Fr::ZERO,
        &mut ProverKernels::cpu(0),
    )?
    .0;
    eprintln!(
        "real sector: CPU proof in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let (on_gpu, timings) = cuda.prove(
        sector.circuits.synthesize_partition(0, &plan)?,
        &resident,
        Fr::ZERO,
        Fr::ZERO,
        None,
    )?;
    ensure!(
        on_gpu == on_cpu,
        "real sector: the cuda backend's proof differs from the CPU's"
    );
    eprintln!("real sector: cuda {timings}");
    // And with the constraints evaluated on the GPU from the witness alone.
    let r1cs = Arc::new(
        sector
            .circuits
            .record_constraints(cuzk::r1cs::R1cs::recording_threads())?,
    );
    let pool = rayon::ThreadPoolBuilder::new().build()?;
    let deferred = SynthesisPlan {
        precompiled: Some((&r1cs, &pool)),
        defer_evaluation: true,
        ..Default::default()
    };
    // Its witness held compact, as the pipeline holds it: bits, expanded on the GPU.
    let compact = |k| -> Result<SynthesizedPartition> {
        let mut partition = sector.circuits.synthesize_partition(k, &deferred)?;
        ensure!(
            partition.compact_witness(),
            "the real witness was not compacted"
        );
        Ok(partition)
    };
    let (on_gpu, timings) = cuda.prove(compact(0)?, &resident, Fr::ZERO, Fr::ZERO, None)?;
    ensure!(
        on_gpu == on_cpu && timings.evaluate_ms > 0.0,
        "real sector: the cuda backend's proof from the compact witness differs from the CPU's"
    );
    eprintln!("real sector: cuda from the compact witness {timings}");
    // And with a, b, c evaluated on the host into the prover's pinned set, as the pipeline
    // does on a card the constraints do not fit: read by the copy engine in place.
    let mut pinned = sector.circuits.synthesize_partition(0, &deferred)?;
    let set = cuda.abc_lender().lend(pinned.num_constraints());
    ensure!(set.is_some(), "real sector: no pinned set for a, b and c");
    pinned.evaluate_deferred_into(set);
    ensure!(
        pinned.lent_abc.is_some() && pinned.a.is_empty(),
        "real sector: a, b and c were not written into the pinned set"
    );
    let (on_gpu, timings) = cuda.prove(pinned, &resident, Fr::ZERO, Fr::ZERO, None)?;
    ensure!(
        on_gpu == on_cpu,
        "real sector: the cuda backend's proof from a, b, c in pinned memory differs from the CPU's"
    );
    eprintln!("real sector: cuda from a, b, c in pinned memory {timings}");
    // And so with the witness kept compact (expanded on the GPU), the bases resident and
    // streamed: the queries' work beside H over both.
    let streamed = Arc::new(ResidentParams::load(&params_path, 0)?);
    for (path, set_of_bases) in [("resident", &resident), ("streamed", &streamed)] {
        let mut partition = compact(0)?;
        let set = cuda.abc_lender().lend(partition.num_constraints());
        partition.evaluate_deferred_keeping_compact(set);
        let (on_gpu, timings) = cuda.prove(partition, set_of_bases, Fr::ZERO, Fr::ZERO, None)?;
        ensure!(
            on_gpu == on_cpu,
            "real sector, bases {path}: the proof from a, b, c in pinned memory and the compact witness differs from the CPU's"
        );
        eprintln!("real sector: cuda, bases {path}, from a, b, c in pinned memory and the compact witness {timings}");
    }
    for plan in [&plan, &deferred] {
        let mut proof = Vec::new();
        for k in 0..sector.circuits.partition_count() {
            let (r, s) = cuzk::backend::groth16::fresh_randomness();
            let partition = if std::ptr::eq(plan, &deferred) {
                compact(k)?
            } else {
                sector.circuits.synthesize_partition(k, plan)?
            };
            cuda.prove(partition, &resident, r, s, None)?
                .0
                .write(&mut proof)?;
        }
        ensure!(
            sector.verify(&proof)?,
            "real sector: verify_seal rejected the cuda backend's proof"
        );
    }
    println!(
        "real sector {}: the cuda backend's proof (a, b, c from the host's heap and from its pinned set, and from the compact witness alone) equals the CPU's at r = s = 0 and passes verify_seal",
        path.display()
    );
    Ok(())
}
