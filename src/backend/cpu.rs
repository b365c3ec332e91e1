//! The CPU's kernels: the quotient and the multiexps on the shared worker pool, which every
//! prover runs on when it has no GPU and a GPU prover falls back to step by step
//! ([`kernels`](super::kernels)).

use std::sync::Arc;

use blstrs::Scalar as Fr;
use ec_gpu_gen::multiexp_cpu::QueryDensity;
use ec_gpu_gen::threadpool::Worker;

use super::msm::{self, AffinePoint, TooFewBasesError};
use super::quotient::{self, Domain, QuotientForm};

/// The quotient `h = (a*b - c) / Z` over `domain` in `form`, in Montgomery form.
pub fn quotient(
    worker: &Worker,
    domain: &Domain,
    a: Vec<Fr>,
    b: Vec<Fr>,
    c: Vec<Fr>,
    form: QuotientForm,
) -> Vec<Fr> {
    quotient::on_cpu(worker, domain, a, b, c, form)
}

/// `sum_i exps[i] * bases[i]` over the bases `density` selects.
pub fn multiexp<G, D, Q>(
    bases: (Arc<Vec<G>>, usize),
    density: D,
    exps: &[<Fr as ff::PrimeField>::Repr],
) -> Result<G::Curve, TooFewBasesError>
where
    G: AffinePoint,
    for<'a> &'a Q: QueryDensity,
    D: AsRef<Q>,
{
    msm::multiexp(&bases.0, bases.1, density.as_ref(), exps)
}
