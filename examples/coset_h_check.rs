//! The H query in coset evaluation form kept beside a real sector's parameters (`cuzk params
//! coset-h`) checked against theirs by a random combination; then partition 0 of the sector
//! proved on the CPU with the parameters' own H query and with the coset one, both with
//! `r = s = 0`: the two proofs must be equal byte for byte. Then the whole sector with the
//! coset H query and fresh randomness through filecoin-proofs' `verify_seal`. Prints how long
//! each quotient took.
//!
//! ```text
//! cargo run --release --example coset_h_check -- tests/fixtures/c1/s-t01000-1.json
//! ```

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{ensure, Context, Result};
use blstrs::Scalar as Fr;
use clap::Parser;
use cuzk::backend::groth16::{fresh_randomness, prove_partition};
use cuzk::backend::kernels::ProverKernels;
use cuzk::params::coset_h;
use cuzk::sector::SynthesisPlan;
use ff::Field;

#[derive(Parser)]
struct Args {
    /// A real C1 file, named `s-t0<miner>-<sector>.json`.
    c1: PathBuf,
}

fn main() -> Result<()> {
    env_logger::init();
    let args = Args::parse();
    let c1 = cuzk::c1::read_c1_file(&args.c1, cuzk::c1::DEFAULT_MAX_C1_BYTES)?;
    let identity = cuzk::c1::identity_from_file_name(&args.c1)
        .with_context(|| format!("{}: name it s-t0<miner>-<sector>.json", args.c1.display()))?;
    let out = &c1.output;
    let (registered_proof, comm_r, comm_d, ticket, seed) = (
        out.registered_proof,
        out.comm_r,
        out.comm_d,
        out.ticket,
        out.seed,
    );
    let sector = cuzk::porep::bind(c1, identity)?;
    let params_path = sector.circuits.params_path()?;
    let params = cuzk::params::load::read_parameters(&params_path)?;
    let coset_h = coset_h::load(&params_path, params.h.len() + 1)?;
    let started = Instant::now();
    ensure!(
        coset_h::matches(&params.h, &coset_h)?,
        "the coset H query beside {} does not match its H query",
        params_path.display()
    );
    println!(
        "the coset H query matches the H query (one random combination, {:.1} s)",
        started.elapsed().as_secs_f64()
    );
    let plan = SynthesisPlan::default();
    let prove = |partition: usize, coset_h: Option<&coset_h::CosetH>, r, s| -> Result<_> {
        let synthesized = sector.circuits.synthesize_partition(partition, &plan)?;
        let started = Instant::now();
        let (proof, timings) = prove_partition(
            synthesized,
            &params,
            coset_h,
            r,
            s,
            &mut ProverKernels::cpu(0),
        )?;
        Ok((proof, timings.fft_ms, started.elapsed().as_secs_f64()))
    };
    let (own, own_quotient_ms, own_s) = prove(0, None, Fr::ZERO, Fr::ZERO)?;
    let (coset, coset_quotient_ms, coset_s) = prove(0, Some(&coset_h), Fr::ZERO, Fr::ZERO)?;
    println!("| H query | quotient | proof |\n|---|---|---|");
    println!(
        "| the parameters' own (6 transforms, over s·H) | {own_quotient_ms:.0} ms | {own_s:.1} s |"
    );
    println!(
        "| coset evaluation form (6 transforms, over g·H) | {coset_quotient_ms:.0} ms | {coset_s:.1} s |"
    );
    ensure!(
        own == coset,
        "partition 0: the proof with the coset H query differs from the parameters' own"
    );
    println!("partition 0 with r = s = 0: the same proof, byte for byte");

    let mut proof_bytes = Vec::new();
    for partition in 0..sector.circuits.partition_count() {
        let (r, s) = fresh_randomness();
        let (proof, _, _) = prove(partition, Some(&coset_h), r, s)?;
        proof.write(&mut proof_bytes)?;
    }
    let verified = filecoin_proofs_api::seal::verify_seal(
        registered_proof,
        comm_r,
        comm_d,
        identity.prover_id(),
        filecoin_proofs_api::SectorId::from(identity.sector_num),
        ticket,
        seed,
        &proof_bytes,
    )?;
    ensure!(verified, "verify_seal rejects the sector's proof");
    println!("the sector's proof with the coset H query passes verify_seal");
    Ok(())
}
