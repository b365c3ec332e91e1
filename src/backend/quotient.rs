//! The quotient `h = (a*b - c) / Z`: the evaluation domain's constants and the steps that
//! turn a partition's constraint evaluations into the H multiexp's exponents.
//!
//! `a`, `b`, `c` are evaluations on the `m`-th roots of unity (`m` the domain size).
//! Interpolate them (iFFT), evaluate on the coset `g * roots`, where `Z(x) = x^m - 1` is the
//! non-zero constant `g^m - 1` (coset FFT), combine and divide pointwise, then interpolate
//! back (coset iFFT). `h` has degree `m - 2`, so its top coefficient is dropped, matching the
//! `m - 1` bases of the H query. Parameters whose H query is kept in coset evaluation form
//! (`params::coset_h`) take the evaluations as they are: six transforms instead of seven
//! ([`QuotientForm`]).
//!
//! This module runs the steps on the CPU; a prover's GPU runs the same steps on the same
//! [`Domain`] without the vectors leaving the device (`backend/ec_gpu/device_quotient.rs`).

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
    /// coset evaluation form: the last transform is left out.
    CosetEvaluations,
}

/// The steps on the CPU: `h` in `form`.
///
/// Each interpolation runs as a DIF, leaving coefficients in bit-reversed order, where the
/// coset shift multiplies them by `g^rev(j)`, and each evaluation as a DIT, which takes
/// that order: the seven transforms permute once, at the end ([`fft`]).
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
    // iFFT, then evaluation on the coset g * roots (the 1/m of the iFFT folded in).
    let to_coset = fft::bit_reversed_powers(domain.g, domain.m_inv, m);
    for v in [&mut a, &mut b, &mut c] {
        fft::dif(v, &twiddles, Direction::Inverse);
        scale(v, &to_coset);
        fft::dit(v, &twiddles, Direction::Forward);
    }
    drop(to_coset);
    // (a*b - c) / Z on the coset.
    let z_inv = domain.z_inv;
    a.par_iter_mut()
        .zip(b.par_iter())
        .zip(c.par_iter())
        .for_each(|((a, b), c)| *a = (*a * b - c) * z_inv);
    drop(b);
    drop(c);
    if form == QuotientForm::CosetEvaluations {
        return a;
    }
    // Coset iFFT: evaluations on the coset -> coefficients of h, back in natural order.
    fft::dif(&mut a, &twiddles, Direction::Inverse);
    scale(
        &mut a,
        &fft::bit_reversed_powers(domain.g_inv, domain.m_inv, m),
    );
    fft::bit_reverse(&mut a);
    a.pop();
    a
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
}
