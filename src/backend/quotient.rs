//! The quotient `h = (a*b - c) / Z`: the evaluation domain's constants and the steps that
//! turn a partition's constraint evaluations into the H multiexp's exponents.
//!
//! `a`, `b`, `c` are evaluations on the `m`-th roots of unity `H` (`m` the domain size), of
//! a witness that satisfies the circuit: `c = a ∘ b` in every row. `A·B` has degree below
//! `2m`; write it `P + X^m h` with `P` and `h` of degree below `m`. Since `Z = X^m - 1`,
//! `A·B = h·Z + (P + h)`, so `h` is the quotient and `C = P + h` (both agree with `c` on
//! `H`). On the coset `sH` where `s^m = -1` (`s` a primitive `2m`-th root), `X^m = -1` and
//! `A·B` takes the values of `S = P - h`. So `h = (C - S) / 2`: interpolate `a` and `b`,
//! evaluate them on `sH` and multiply (four transforms), interpolate the product there and
//! `c` on `H` (two more), and combine. Six transforms where the textbook's steps (`c` to a
//! coset too, divide by `Z` there, interpolate back) take seven.
//!
//! Parameters whose H query is kept in coset evaluation form (`params::coset_h`, over the
//! coset `g·H`, `g` the field's generator) take `(a*b - c) / Z` on that coset, as it is:
//! also six transforms ([`QuotientForm`]).
//!
//! A witness that does not satisfy the circuit gives a proof that fails verification
//! either way: `(A·B - C - h·Z)(τ)` is then a non-zero polynomial at a secret point.
//!
//! This module runs the steps on the CPU; the cuda prover runs the same steps on the device
//! (`backend/cuda/partition_proof.cuh`). ec-gpu's prover keeps the textbook's seven
//! (`backend/ec_gpu/device_quotient.rs`): the same `h`, which is unique.

use blstrs::Scalar as Fr;
use ec_gpu_gen::threadpool::Worker;
use ff::Field;
use rayon::prelude::*;

use crate::fft::{self, Direction, Twiddles};

pub use crate::fft::{Domain, DomainTooLarge};

/// What the H multiexp takes: the form of its bases.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QuotientForm {
    /// `h`'s `m - 1` coefficients, for the parameters' own H query.
    Coefficients,
    /// `(a*b - c) / Z` at the `m` coset points `g·ω^j` in natural order, for the H query in
    /// coset evaluation form.
    CosetEvaluations,
}

/// The steps on the CPU: `h` in `form`.
///
/// Each interpolation runs as a DIF, leaving coefficients in bit-reversed order, where a
/// coset shift multiplies them by its powers at `rev(j)`, and each evaluation as a DIT,
/// which takes that order: the transforms permute once, at the end ([`fft`]).
pub fn on_cpu(
    worker: &Worker,
    domain: &Domain,
    mut a: Vec<Fr>,
    mut b: Vec<Fr>,
    mut c: Vec<Fr>,
    form: QuotientForm,
) -> Vec<Fr> {
    let _ = worker;
    let m = domain.m;
    for v in [&mut a, &mut b, &mut c] {
        v.resize(m, Fr::ZERO);
    }
    let twiddles = Twiddles::new(domain.omega, m);
    match form {
        QuotientForm::Coefficients => coefficients(domain, &twiddles, [a, b, c]),
        QuotientForm::CosetEvaluations => coset_evaluations(domain, &twiddles, [a, b, c]),
    }
}

/// `h = (C - S) / 2`, its `m - 1` coefficients in natural order (the module's note).
fn coefficients(domain: &Domain, twiddles: &Twiddles, abc: [Vec<Fr>; 3]) -> Vec<Fr> {
    let [mut a, mut b, mut c] = abc;
    let m = domain.m;
    to_coset(&mut [&mut a, &mut b], domain.half_root, domain, twiddles);
    scale(&mut a, &b);
    drop(b);
    // S's coefficients are s^-k/m times the product's unscaled inverse transform, C's 1/m
    // times c's; both stay in bit-reversed order until h is made.
    fft::dif(&mut a, twiddles, Direction::Inverse);
    fft::dif(&mut c, twiddles, Direction::Inverse);
    let half = Fr::from(2u64).invert().expect("2 is non-zero");
    let c_scale = domain.m_inv * half;
    let s_scale = fft::bit_reversed_powers(domain.half_root_inv, c_scale, m);
    c.par_iter_mut()
        .zip(a.par_iter())
        .zip(s_scale.par_iter())
        .for_each(|((c, s), k)| *c = *c * c_scale - *s * k);
    drop(a);
    fft::bit_reverse(&mut c);
    // h has degree m - 2: its top coefficient is zero, and the H query has m - 1 bases.
    c.pop();
    c
}

/// `(a*b - c) / Z` on the coset `g·H`, in natural order: `c` goes to the coset too.
fn coset_evaluations(domain: &Domain, twiddles: &Twiddles, abc: [Vec<Fr>; 3]) -> Vec<Fr> {
    let [mut a, mut b, mut c] = abc;
    to_coset(&mut [&mut a, &mut b, &mut c], domain.g, domain, twiddles);
    let z_inv = domain.z_inv;
    a.par_iter_mut()
        .zip(b.par_iter())
        .zip(c.par_iter())
        .for_each(|((a, b), c)| *a = (*a * b - c) * z_inv);
    a
}

/// Each of `vectors`, evaluations on the domain, becomes its evaluations on the coset
/// `shift·H`: iFFT, the shift (the iFFT's 1/m folded in), FFT.
fn to_coset(vectors: &mut [&mut Vec<Fr>], shift: Fr, domain: &Domain, twiddles: &Twiddles) {
    let powers = fft::bit_reversed_powers(shift, domain.m_inv, domain.m);
    for v in vectors.iter_mut() {
        fft::dif(v, twiddles, Direction::Inverse);
        scale(v, &powers);
        fft::dit(v, twiddles, Direction::Forward);
    }
}

/// `v[i] *= by[i]`, in parallel.
fn scale(v: &mut [Fr], by: &[Fr]) {
    v.par_iter_mut()
        .zip(by.par_iter())
        .for_each(|(x, s)| *x *= s);
}

#[cfg(test)]
mod tests {
    use super::*;
    use ff::PrimeField;

    #[test]
    fn domain_rounds_up_and_its_constants_agree() {
        let domain = Domain::for_constraints(5).expect("domain");
        assert_eq!((domain.m, domain.log_m), (8, 3));
        assert_eq!(domain.omega.pow_vartime([8u64]), Fr::ONE);
        assert_ne!(domain.omega.pow_vartime([4u64]), Fr::ONE);
        assert_eq!(domain.omega * domain.omega_inv, Fr::ONE);
        assert_eq!(domain.m_inv * Fr::from(8u64), Fr::ONE);
        assert_eq!(domain.half_root.pow_vartime([8u64]), -Fr::ONE);
        assert_eq!(domain.half_root * domain.half_root_inv, Fr::ONE);
        assert_eq!(
            domain.z_inv * (domain.g.pow_vartime([8u64]) - Fr::ONE),
            Fr::ONE
        );
        assert!(Domain::for_constraints(1 << Fr::S).is_err());
    }

    #[test]
    fn quotient_vanishes_when_a_times_b_is_c() {
        // a = 1 and b = c: a*b - c vanishes as a polynomial, so h = 0. Moving b at one
        // point makes h non-zero: the steps see the data. (Exact values are checked against
        // bellperson by the prover's tests.)
        let domain = Domain::for_constraints(16).expect("domain");
        let worker = Worker::new();
        let ones = vec![Fr::ONE; 16];
        let c: Vec<Fr> = (0..16u64).map(|i| Fr::from(i * i + 3)).collect();
        let h = on_cpu(
            &worker,
            &domain,
            ones.clone(),
            c.clone(),
            c.clone(),
            QuotientForm::Coefficients,
        );
        assert_eq!(h.len(), 15);
        assert!(h.iter().all(|e| *e == Fr::ZERO));
        let mut off = c.clone();
        off[5] += Fr::ONE;
        let h = on_cpu(&worker, &domain, ones, off, c, QuotientForm::Coefficients);
        assert!(h.iter().any(|e| *e != Fr::ZERO));
    }

    /// The textbook's quotient, by schoolbook algebra: interpolate a, b and c on H,
    /// multiply, subtract, divide by X^m - 1 and return the quotient with the remainder.
    fn schoolbook(domain: &Domain, a: &[Fr], b: &[Fr], c: &[Fr]) -> (Vec<Fr>, Vec<Fr>) {
        let m = domain.m;
        let interpolate = |v: &[Fr]| -> Vec<Fr> {
            (0..m)
                .map(|k| {
                    let w = domain.omega_inv.pow_vartime([k as u64]);
                    let mut x = Fr::ONE;
                    let mut sum = Fr::ZERO;
                    for e in v {
                        sum += *e * x;
                        x *= w;
                    }
                    sum * domain.m_inv
                })
                .collect()
        };
        let (pa, pb, pc) = (interpolate(a), interpolate(b), interpolate(c));
        let mut p = vec![Fr::ZERO; 2 * m];
        for (i, x) in pa.iter().enumerate() {
            for (j, y) in pb.iter().enumerate() {
                p[i + j] += *x * y;
            }
        }
        for (k, x) in pc.iter().enumerate() {
            p[k] -= x;
        }
        // p = q (X^m - 1) + r: from the top, each coefficient of X^(m+k) is q's k-th,
        // which adds itself to the coefficient of X^k.
        let mut q = vec![Fr::ZERO; m];
        for k in (0..m).rev() {
            q[k] = p[m + k];
            p[k] += q[k];
        }
        p.truncate(m);
        (q, p)
    }

    #[test]
    fn six_transforms_give_the_textbook_quotient() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(35);
        let worker = Worker::new();
        for constraints in [1usize, 2, 8, 30, 64] {
            let domain = Domain::for_constraints(constraints).expect("domain");
            let m = domain.m;
            // A satisfied system over the first `constraints` rows, zero past them.
            let mut a = vec![Fr::ZERO; m];
            let mut b = vec![Fr::ZERO; m];
            for i in 0..constraints {
                a[i] = Fr::from(rng.gen::<u64>()) * Fr::from(rng.gen::<u64>());
                b[i] = Fr::from(rng.gen::<u64>());
            }
            let c: Vec<Fr> = a.iter().zip(&b).map(|(x, y)| *x * y).collect();
            let (q, r) = schoolbook(&domain, &a, &b, &c);
            assert!(r.iter().all(|e| *e == Fr::ZERO), "Z divides a*b - c");
            assert_eq!(q[m - 1], Fr::ZERO, "h has degree m - 2");
            let h = on_cpu(
                &worker,
                &domain,
                a.clone(),
                b.clone(),
                c.clone(),
                QuotientForm::Coefficients,
            );
            assert_eq!(h, q[..m - 1], "m = {m}");
            // The coset form is h on g·H, the coset the H query's other form is over.
            let on_coset = on_cpu(&worker, &domain, a, b, c, QuotientForm::CosetEvaluations);
            for (j, e) in on_coset.iter().enumerate() {
                let x = domain.g * domain.omega.pow_vartime([j as u64]);
                let value = q.iter().rev().fold(Fr::ZERO, |acc, k| acc * x + k);
                assert_eq!(*e, value, "m = {m}, point {j}");
            }
        }
    }
}
