//! Proving: Groth16 for one [`SynthesizedPartition`], written out step by step.
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
//! where `h` is the quotient `(a*b - c) / Z` computed over the evaluation domain.

use std::ops::{AddAssign, Mul};
use std::sync::Arc;
use std::time::Instant;

use bellperson::groth16::{ParameterSource, Proof};
use bellperson::SynthesisError;
use blstrs::{Bls12, G1Projective, G2Projective, Scalar as Fr};
use ec_gpu_gen::multiexp_cpu::FullDensity;
use ec_gpu_gen::threadpool::Worker;
use ff::{Field, PrimeField};
use group::{prime::PrimeCurveAffine, Curve};
use log::debug;
use rayon::prelude::*;

use crate::kernels::{Exponents, ProverKernels};
use crate::synth::SynthesizedPartition;

/// Why a partition could not be proved.
#[derive(Debug, thiserror::Error)]
pub enum ProveError {
    /// The parameters could not serve the partition.
    #[error("groth16 prover: {0}")]
    Synthesis(#[from] SynthesisError),
    /// The partition has more constraints than the field's FFT domains allow.
    #[error("{0} constraints need an FFT domain larger than the scalar field supports")]
    DomainTooLarge(usize),
    /// A multiexp failed.
    #[error("groth16 multiexp failed: {0}")]
    Multiexp(String),
    /// An FFT failed (on a GPU; the vectors may be half transformed, so nothing is retried).
    #[error("{0}")]
    Fft(String),
    /// Parameters with `delta = 0` would let anyone forge proofs.
    #[error("the parameters' delta is the point at infinity (a subverted setup); refusing to prove (hint: fetch or generate the parameters again)")]
    IdentityDelta,
}

/// Milliseconds spent in each step of one proof, for the timeline.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ProveTimings {
    /// iFFT, coset FFT, `a*b - c`, division by Z and coset iFFT: the quotient `h`.
    pub fft_ms: f64,
    /// The G1 multiexps: `H`, `L`, `A` and `B_g1`.
    pub msm_g1_ms: f64,
    /// The G2 multiexp for `B`.
    pub msm_g2_ms: f64,
    /// Scalar conversions and the final combination on the CPU.
    pub cpu_tail_ms: f64,
    /// A backend that proves whole partitions in one call (SupraSeal): the call, not split
    /// into steps.
    pub gpu_call_ms: f64,
}

impl std::fmt::Display for ProveTimings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "fft {:.0} ms, G1 multiexps {:.0} ms, G2 multiexp {:.0} ms, CPU {:.0} ms",
            self.fft_ms, self.msm_g1_ms, self.msm_g2_ms, self.cpu_tail_ms
        )?;
        if self.gpu_call_ms > 0.0 {
            write!(f, ", one GPU call {:.0} ms", self.gpu_call_ms)?;
        }
        Ok(())
    }
}

/// Proves one synthesized partition with randomness `r`, `s` on `kernels`.
///
/// The partition is consumed: its A/B/C evaluations are freed as soon as `h` is known, which
/// halves the memory held while the multiexps run.
pub fn prove_partition<P: ParameterSource<Bls12>>(
    partition: SynthesizedPartition,
    params: P,
    r: Fr,
    s: Fr,
    kernels: &mut ProverKernels,
) -> Result<(Proof<Bls12>, ProveTimings), ProveError> {
    let worker = Worker::new();
    let mut timings = ProveTimings::default();
    let SynthesizedPartition {
        a_aux_density,
        b_input_density,
        b_aux_density,
        a,
        b,
        c,
        input_assignment,
        aux_assignment,
    } = partition;

    let vk = params.get_vk(input_assignment.len())?.clone();
    if bool::from(vk.delta_g1.is_identity() | vk.delta_g2.is_identity()) {
        return Err(ProveError::IdentityDelta);
    }

    let started = Instant::now();
    let h = quotient_coefficients(&worker, kernels, a, b, c)?;
    timings.fft_ms = ms_since(started);

    let started = Instant::now();
    let inputs = to_reprs(input_assignment);
    let aux = to_reprs(aux_assignment);
    let a_aux_density = Arc::new(a_aux_density);
    let b_input_density = Arc::new(b_input_density);
    let b_aux_density = Arc::new(b_aux_density);
    timings.cpu_tail_ms += ms_since(started);

    let started = Instant::now();
    let msm = |e: String| ProveError::Multiexp(e);
    let (a_inputs_bases, a_aux_bases) =
        params.get_a(inputs.len(), a_aux_density.get_total_density())?;
    let (b_g1_inputs_bases, b_g1_aux_bases) = params.get_b_g1(
        b_input_density.get_total_density(),
        b_aux_density.get_total_density(),
    )?;
    // sum_j h_j H_j, with H_j = tau^j t(tau) / delta.
    let h_g1 = kernels
        .multiexp(&worker, params.get_h(h.len())?, FullDensity, h)
        .map_err(msm)?;
    // sum_aux w_i L_i, with L_i = (beta A_i + alpha B_i + C_i)(tau) / delta.
    let l_g1 = kernels
        .multiexp(&worker, params.get_l(aux.len())?, FullDensity, aux.clone())
        .map_err(msm)?;
    // sum_i w_i A_i(tau): every input is in A (input constraints), aux only where used.
    let a_g1 = kernels
        .multiexp(&worker, a_inputs_bases, FullDensity, inputs.clone())
        .map_err(msm)?
        + kernels
            .multiexp(&worker, a_aux_bases, a_aux_density, aux.clone())
            .map_err(msm)?;
    // sum_i w_i B_i(tau) in G1, needed for C.
    let b_g1 = kernels
        .multiexp(
            &worker,
            b_g1_inputs_bases,
            b_input_density.clone(),
            inputs.clone(),
        )
        .map_err(msm)?
        + kernels
            .multiexp(&worker, b_g1_aux_bases, b_aux_density.clone(), aux.clone())
            .map_err(msm)?;
    timings.msm_g1_ms = ms_since(started);

    // sum_i w_i B_i(tau) in G2.
    let started = Instant::now();
    let (b_g2_inputs_bases, b_g2_aux_bases) = params.get_b_g2(
        b_input_density.get_total_density(),
        b_aux_density.get_total_density(),
    )?;
    let b_g2 = kernels
        .multiexp(&worker, b_g2_inputs_bases, b_input_density, inputs)
        .map_err(msm)?
        + kernels
            .multiexp(&worker, b_g2_aux_bases, b_aux_density, aux)
            .map_err(msm)?;
    timings.msm_g2_ms = ms_since(started);

    let started = Instant::now();
    let g_a = G1Projective::from(vk.alpha_g1) + a_g1 + vk.delta_g1.mul(r);
    let g_b = G2Projective::from(vk.beta_g2) + b_g2 + vk.delta_g2.mul(s);
    let g_b_g1 = G1Projective::from(vk.beta_g1) + b_g1 + vk.delta_g1.mul(s);
    let mut g_c = l_g1 + h_g1;
    g_c.add_assign(g_a.mul(s));
    g_c.add_assign(g_b_g1.mul(r));
    g_c -= vk.delta_g1.mul(r * s);
    let proof = Proof {
        a: g_a.to_affine(),
        b: g_b.to_affine(),
        c: g_c.to_affine(),
    };
    timings.cpu_tail_ms += ms_since(started);
    debug!("{}: proved partition: {timings}", kernels.name());
    Ok((proof, timings))
}

/// Coefficients of `h = (a*b - c) / Z` from the constraint evaluations.
///
/// `a`, `b`, `c` are evaluations on the `m`-th roots of unity (`m` the domain size). Interpolate
/// them (iFFT), evaluate on the coset `g * roots`, where `Z(x) = x^m - 1` is the non-zero
/// constant `g^m - 1` (coset FFT), combine and divide pointwise, then interpolate back (coset
/// iFFT). `h` has degree `m - 2`, so its top coefficient is dropped, matching the `m - 1`
/// bases of the H query.
fn quotient_coefficients(
    worker: &Worker,
    kernels: &mut ProverKernels,
    mut a: Vec<Fr>,
    mut b: Vec<Fr>,
    mut c: Vec<Fr>,
) -> Result<Exponents, ProveError> {
    let m = a.len().next_power_of_two();
    let log_m = m.trailing_zeros();
    if log_m >= Fr::S {
        return Err(ProveError::DomainTooLarge(a.len()));
    }
    for v in [&mut a, &mut b, &mut c] {
        v.resize(m, Fr::ZERO);
    }
    let omega = (log_m..Fr::S).fold(Fr::ROOT_OF_UNITY, |w, _| w.square());
    let omega_inv = omega.invert().expect("a root of unity is non-zero");
    let m_inv = Fr::from(m as u64).invert().expect("m is non-zero");
    let g = Fr::MULTIPLICATIVE_GENERATOR;
    let g_inv = g.invert().expect("the generator is non-zero");

    // iFFT: evaluations -> coefficients.
    kernels
        .fft_many(
            worker,
            &mut [&mut a, &mut b, &mut c],
            &[omega_inv; 3],
            &[log_m; 3],
        )
        .map_err(ProveError::Fft)?;
    // Coset FFT: coefficients -> evaluations on g * roots (the 1/m of the iFFT folded in).
    for v in [&mut a, &mut b, &mut c] {
        distribute_powers(v, m_inv, g);
    }
    kernels
        .fft_many(
            worker,
            &mut [&mut a, &mut b, &mut c],
            &[omega; 3],
            &[log_m; 3],
        )
        .map_err(ProveError::Fft)?;
    // (a*b - c) / Z on the coset.
    let z_inv = (g.pow_vartime([m as u64]) - Fr::ONE)
        .invert()
        .expect("Z has no roots on the coset");
    a.par_iter_mut()
        .zip(b.par_iter())
        .zip(c.par_iter())
        .for_each(|((a, b), c)| *a = (*a * b - c) * z_inv);
    drop(b);
    drop(c);
    // Coset iFFT: evaluations on the coset -> coefficients of h.
    kernels
        .fft_many(worker, &mut [&mut a], &[omega_inv], &[log_m])
        .map_err(ProveError::Fft)?;
    distribute_powers(&mut a, m_inv, g_inv);
    a.pop();
    Ok(to_reprs(a))
}

/// `v[i] *= scale * g^i`, in parallel chunks.
fn distribute_powers(v: &mut [Fr], scale: Fr, g: Fr) {
    const CHUNK: usize = 1 << 14;
    v.par_chunks_mut(CHUNK).enumerate().for_each(|(i, chunk)| {
        let mut power = scale * g.pow_vartime([(i * CHUNK) as u64]);
        for x in chunk {
            *x *= power;
            power *= g;
        }
    });
}

fn to_reprs(scalars: Vec<Fr>) -> Exponents {
    Arc::new(scalars.into_par_iter().map(|s| s.to_repr()).collect())
}

fn ms_since(started: Instant) -> f64 {
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
            prove_partition(partition, &params, r, s, &mut ProverKernels::cpu(0)).expect("prove");
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
            prove_partition(partition, &params, r, s, &mut ProverKernels::cpu(0)).expect("prove");
        assert!(!verify_proof(&pvk, &proof, &[Fr::from(35u64)]).expect("verify"));
    }
}
