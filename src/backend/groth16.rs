//! cuzk's Groth16 for one [`SynthesizedPartition`], written out step by step: the prover of
//! the CPU and ec-gpu backends, which differ only in the kernels they hand it.
//!
//! This module owns the prover's math and nothing else: where the parameters come from is
//! hidden behind bellperson's `ParameterSource`, and where the FFTs and multiexps run (CPU,
//! or the GPU a prover thread owns) behind [`ProverKernels`]. Each step is timed into
//! [`ProveTimings`] so the timeline can say where the prover's time went.
//!
//! With `w` the witness, `(alpha, beta, delta)` from the verifying key and fresh random
//! `r`, `s`, the proof is
//!
//! ```text
//! A = alpha + sum_i w_i A_i(tau) + r delta                       (G1)
//! B = beta  + sum_i w_i B_i(tau) + s delta                       (G2, and in G1 for C)
//! C = sum_aux w_i L_i + sum_j h_j H_j + s A + r B_g1 - r s delta (G1)
//! ```
//!
//! where `h` is the quotient `(a*b - c) / Z` computed over the evaluation domain
//! ([`quotient`](crate::backend::quotient)). With the H query in coset evaluation form
//! (`params::coset_h`), `sum_j h_j H_j` is taken as `sum_j e_j H'_j` over the quotient's
//! coset evaluations `e`, the same point without the last transform.

use std::ops::{AddAssign, Mul};
use std::sync::Arc;
use std::time::Instant;

use bellperson::groth16::{ParameterSource, Proof, VerifyingKey};
use bellperson::SynthesisError;
use blstrs::{Bls12, G1Projective, G2Projective, Scalar as Fr};
use ec_gpu_gen::multiexp_cpu::FullDensity;
use ec_gpu_gen::threadpool::Worker;
use ff::Field;
use group::{prime::PrimeCurveAffine, Curve};
use log::debug;

use super::kernels::{to_exponents, MultiexpError, ProverKernels};
use super::quotient::{Domain, DomainTooLarge, QuotientForm};
use crate::event::ProveTimings;
use crate::params::coset_h::CosetH;
use crate::synth::SynthesizedPartition;

/// Why cuzk's Groth16 could not prove a partition.
#[derive(Debug, thiserror::Error)]
pub enum Groth16Error {
    /// The parameters could not serve the partition.
    #[error("groth16 prover: {0}")]
    Synthesis(#[from] SynthesisError),
    /// The partition has more constraints than the field's FFT domains allow.
    #[error(transparent)]
    DomainTooLarge(#[from] DomainTooLarge),
    /// A multiexp failed.
    #[error("groth16 multiexp failed: {0}")]
    Multiexp(#[from] MultiexpError),
    /// The coset H query loaded with the parameters is for another domain.
    #[error("the coset H query has {bases} points for a domain of {domain} (hint: delete it and run `cuzk params coset-h` again)")]
    CosetHLength {
        /// Its points.
        bases: usize,
        /// The partition's domain.
        domain: usize,
    },
    /// Parameters with `delta = 0` would let anyone forge proofs.
    #[error("the parameters' delta is the point at infinity (a subverted setup); refusing to prove (hint: fetch or generate the parameters again)")]
    IdentityDelta,
}

/// Proves one synthesized partition with randomness `r`, `s` on `kernels`.
///
/// The partition is consumed: its A/B/C evaluations are freed as soon as `h` is known, which
/// halves the memory held while the multiexps run. `coset_h`, the parameters' H query in
/// coset evaluation form when it is kept, replaces their own.
pub fn prove_partition<P: ParameterSource<Bls12>>(
    partition: SynthesizedPartition,
    params: P,
    coset_h: Option<&CosetH>,
    r: Fr,
    s: Fr,
    kernels: &mut ProverKernels,
) -> Result<(Proof<Bls12>, ProveTimings), Groth16Error> {
    let worker = Worker::new();
    let mut timings = ProveTimings::default();
    let mut partition = partition;
    partition.evaluate_deferred();
    partition.own_abc();
    let SynthesizedPartition {
        a_aux_density,
        b_input_density,
        b_aux_density,
        a,
        b,
        c,
        input_assignment,
        aux_assignment,
        ..
    } = partition;

    let vk = params.get_vk(input_assignment.len())?.clone();
    check_delta(&vk)?;

    let started = Instant::now();
    let domain = Domain::for_constraints(a.len())?;
    let form = match coset_h {
        Some(bases) if bases.len() != domain.m => {
            return Err(Groth16Error::CosetHLength {
                bases: bases.len(),
                domain: domain.m,
            })
        }
        Some(_) => QuotientForm::CosetEvaluations,
        None => QuotientForm::Coefficients,
    };
    let h = kernels.quotient(&worker, &domain, a, b, c, form);
    timings.fft_ms = ms_since(started);

    let started = Instant::now();
    let inputs = to_exponents(input_assignment);
    let aux = to_exponents(aux_assignment);
    let a_aux_density = Arc::new(a_aux_density);
    let b_input_density = Arc::new(b_input_density);
    let b_aux_density = Arc::new(b_aux_density);
    timings.cpu_tail_ms += ms_since(started);

    let started = Instant::now();
    let (a_inputs_bases, a_aux_bases) =
        params.get_a(inputs.len(), a_aux_density.get_total_density())?;
    let (b_g1_inputs_bases, b_g1_aux_bases) = params.get_b_g1(
        b_input_density.get_total_density(),
        b_aux_density.get_total_density(),
    )?;
    // sum_j h_j H_j, with H_j = tau^j t(tau) / delta; or sum_j e_j H'_j, its equal.
    let h_g1 = match coset_h {
        Some(bases) => kernels.multiexp_quotient(&worker, (bases.clone(), 0), h)?,
        None => kernels.multiexp_quotient(&worker, params.get_h(h.len())?, h)?,
    };
    // sum_aux w_i L_i, with L_i = (beta A_i + alpha B_i + C_i)(tau) / delta.
    let l_g1 = kernels.multiexp(&worker, params.get_l(aux.len())?, FullDensity, aux.clone())?;
    // sum_i w_i A_i(tau): every input is in A (input constraints), aux only where used.
    let a_g1 = kernels.multiexp(&worker, a_inputs_bases, FullDensity, inputs.clone())?
        + kernels.multiexp(&worker, a_aux_bases, a_aux_density, aux.clone())?;
    // sum_i w_i B_i(tau) in G1, needed for C.
    let b_g1 =
        kernels.multiexp(
            &worker,
            b_g1_inputs_bases,
            b_input_density.clone(),
            inputs.clone(),
        )? + kernels.multiexp(&worker, b_g1_aux_bases, b_aux_density.clone(), aux.clone())?;
    timings.msm_g1_ms = ms_since(started);

    // sum_i w_i B_i(tau) in G2.
    let started = Instant::now();
    let (b_g2_inputs_bases, b_g2_aux_bases) = params.get_b_g2(
        b_input_density.get_total_density(),
        b_aux_density.get_total_density(),
    )?;
    let b_g2 = kernels.multiexp(&worker, b_g2_inputs_bases, b_input_density, inputs)?
        + kernels.multiexp(&worker, b_g2_aux_bases, b_aux_density, aux)?;
    timings.msm_g2_ms = ms_since(started);

    let started = Instant::now();
    let multiexps = Multiexps {
        h: h_g1,
        l: l_g1,
        a: a_g1,
        b_g1,
        b_g2,
    };
    let proof = assemble(&vk, r, s, &multiexps);
    timings.cpu_tail_ms += ms_since(started);
    debug!("{}: proved partition: {timings}", kernels.name());
    Ok((proof, timings))
}

/// The five multiexps of a partition, wherever they ran.
#[derive(Clone, Copy, Debug)]
pub struct Multiexps {
    /// `sum_j h_j H_j`, with `H_j = tau^j t(tau) / delta`.
    pub h: G1Projective,
    /// `sum_aux w_i L_i`, with `L_i = (beta A_i + alpha B_i + C_i)(tau) / delta`.
    pub l: G1Projective,
    /// `sum_i w_i A_i(tau)`.
    pub a: G1Projective,
    /// `sum_i w_i B_i(tau)` in G1, needed for C.
    pub b_g1: G1Projective,
    /// `sum_i w_i B_i(tau)` in G2.
    pub b_g2: G2Projective,
}

/// The proof from the multiexps, the verifying key and the randomness `r`, `s`:
/// `A = alpha + a + r delta`, `B = beta + b + s delta`,
/// `C = l + h + s A + r (beta + b_g1 + s delta) - r s delta`.
pub fn assemble(vk: &VerifyingKey<Bls12>, r: Fr, s: Fr, m: &Multiexps) -> Proof<Bls12> {
    let g_a = G1Projective::from(vk.alpha_g1) + m.a + vk.delta_g1.mul(r);
    let g_b = G2Projective::from(vk.beta_g2) + m.b_g2 + vk.delta_g2.mul(s);
    let g_b_g1 = G1Projective::from(vk.beta_g1) + m.b_g1 + vk.delta_g1.mul(s);
    let mut g_c = m.l + m.h;
    g_c.add_assign(g_a.mul(s));
    g_c.add_assign(g_b_g1.mul(r));
    g_c -= vk.delta_g1.mul(r * s);
    Proof {
        a: g_a.to_affine(),
        b: g_b.to_affine(),
        c: g_c.to_affine(),
    }
}

/// Refuses parameters whose `delta` is the point at infinity.
pub fn check_delta(vk: &VerifyingKey<Bls12>) -> Result<(), Groth16Error> {
    if bool::from(vk.delta_g1.is_identity() | vk.delta_g2.is_identity()) {
        return Err(Groth16Error::IdentityDelta);
    }
    Ok(())
}

/// Milliseconds since `started`, for step timings.
pub(super) fn ms_since(started: Instant) -> f64 {
    started.elapsed().as_secs_f64() * 1e3
}

/// Fresh proof randomness `(r, s)` from the operating system.
pub fn fresh_randomness() -> (Fr, Fr) {
    let mut rng = rand::rngs::OsRng;
    (Fr::random(&mut rng), Fr::random(&mut rng))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::{synthesize, tests::CubeCircuit};
    use bellperson::groth16::{generate_random_parameters, prepare_verifying_key, verify_proof};
    use rand::SeedableRng;

    fn params() -> bellperson::groth16::Parameters<Bls12> {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        generate_random_parameters::<Bls12, _, _>(CubeCircuit { x: None }, &mut rng)
            .expect("parameters")
    }

    #[test]
    fn proof_of_cube_circuit_verifies_and_wrong_input_fails() {
        let params = params();
        let pvk = prepare_verifying_key(&params.vk);
        let partition = synthesize(CubeCircuit {
            x: Some(Fr::from(3u64)),
        })
        .expect("synthesis");
        let (r, s) = fresh_randomness();
        let (proof, _) =
            prove_partition(partition, &params, None, r, s, &mut ProverKernels::cpu(0))
                .expect("prove");
        assert!(verify_proof(&pvk, &proof, &[Fr::from(35u64)]).expect("verify"));
        assert!(!verify_proof(&pvk, &proof, &[Fr::from(36u64)]).expect("verify"));
    }

    #[test]
    fn same_randomness_gives_bellpersons_proof() {
        // With r = s = 0 Groth16 is deterministic, so our proof must equal bellperson's
        // byte for byte: same h, same densities, same combination.
        let params = params();
        let circuit = CubeCircuit {
            x: Some(Fr::from(11u64)),
        };
        let ours = prove_partition(
            synthesize(circuit.clone()).expect("synthesis"),
            &params,
            None,
            Fr::ZERO,
            Fr::ZERO,
            &mut ProverKernels::cpu(0),
        )
        .expect("prove")
        .0;
        let theirs = bellperson::groth16::create_proof_batch(
            vec![circuit],
            &params,
            vec![Fr::ZERO],
            vec![Fr::ZERO],
        )
        .expect("bellperson")
        .remove(0);
        assert_eq!(ours, theirs);
    }

    #[test]
    fn a_compact_witness_proves_what_the_whole_one_does() {
        use crate::synth::tests::BitsCircuit;
        let mut rng = rand::rngs::StdRng::seed_from_u64(9);
        let circuit = BitsCircuit {
            value: Some(0x8000_0000_0000_0001),
        };
        let params = generate_random_parameters::<Bls12, _, _>(circuit.clone(), &mut rng)
            .expect("parameters");
        let r1cs = std::sync::Arc::new(crate::r1cs::R1cs::record(circuit.clone()).expect("record"));
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .expect("pool");
        let compact = || {
            let mut partition = r1cs
                .synthesize(circuit.clone(), &pool, Default::default(), true)
                .expect("deferred");
            assert!(partition.compact_witness());
            partition
        };
        let prove = |partition, r, s| {
            prove_partition(partition, &params, None, r, s, &mut ProverKernels::cpu(0))
                .expect("prove")
                .0
        };
        let whole = synthesize(circuit.clone()).expect("synthesis");
        assert_eq!(
            prove(compact(), Fr::ZERO, Fr::ZERO),
            prove(whole, Fr::ZERO, Fr::ZERO)
        );
        let (r, s) = fresh_randomness();
        let proof = prove(compact(), r, s);
        let pvk = prepare_verifying_key(&params.vk);
        let value = Fr::from(0x8000_0000_0000_0001u64);
        assert!(verify_proof(&pvk, &proof, &[value]).expect("verify"));
    }

    #[test]
    fn the_coset_h_query_proves_what_the_parameters_own_does() {
        use crate::synth::tests::BitsCircuit;
        let mut rng = rand::rngs::StdRng::seed_from_u64(11);
        let circuit = BitsCircuit {
            value: Some(0x0123_4567_89ab_cdef),
        };
        let params = generate_random_parameters::<Bls12, _, _>(circuit.clone(), &mut rng)
            .expect("parameters");
        let coset_h =
            std::sync::Arc::new(crate::params::coset_h::derive(&params.h).expect("derive"));
        let prove = |coset_h: Option<&CosetH>, r, s| {
            let partition = synthesize(circuit.clone()).expect("synthesis");
            prove_partition(
                partition,
                &params,
                coset_h,
                r,
                s,
                &mut ProverKernels::cpu(0),
            )
            .expect("prove")
            .0
        };
        // H' and the quotient over g·H give the own query's proof (over s·H), byte for byte.
        assert_eq!(
            prove(Some(&coset_h), Fr::ZERO, Fr::ZERO),
            prove(None, Fr::ZERO, Fr::ZERO)
        );
        let (r, s) = fresh_randomness();
        let pvk = prepare_verifying_key(&params.vk);
        let value = Fr::from(0x0123_4567_89ab_cdefu64);
        assert!(verify_proof(&pvk, &prove(Some(&coset_h), r, s), &[value]).expect("verify"));
        // A query of another domain is refused, not used.
        let short = std::sync::Arc::new(coset_h[1..].to_vec());
        let partition = synthesize(circuit.clone()).expect("synthesis");
        let err = prove_partition(
            partition,
            &params,
            Some(&short),
            r,
            s,
            &mut ProverKernels::cpu(0),
        )
        .expect_err("another domain");
        assert!(matches!(err, Groth16Error::CosetHLength { .. }), "{err}");
    }

    #[test]
    fn tampered_witness_does_not_verify() {
        let params = params();
        let pvk = prepare_verifying_key(&params.vk);
        let mut partition = synthesize(CubeCircuit {
            x: Some(Fr::from(3u64)),
        })
        .expect("synthesis");
        partition.aux_assignment[0] += Fr::ONE;
        let (r, s) = fresh_randomness();
        let (proof, _) =
            prove_partition(partition, &params, None, r, s, &mut ProverKernels::cpu(0))
                .expect("prove");
        assert!(!verify_proof(&pvk, &proof, &[Fr::from(35u64)]).expect("verify"));
    }
}
