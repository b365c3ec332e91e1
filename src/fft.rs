//! Radix-2 NTTs on the CPU and their evaluation [`Domain`], over the scalar field for the
//! quotient (`backend::quotient`) and over G1 points for the H query's coset evaluation form
//! (`params::coset_h`): the same transform, its elements any [`Element`] multiplied by
//! scalar twiddles. Below both the backend and the parameter files, which both use it.
//!
//! Two in-place transforms that need no bit-reversal between them: [`dif`] takes values in
//! natural order and leaves the transform in bit-reversed order, [`dit`] takes bit-reversed
//! order and leaves natural order. An interpolation (inverse DIF), a scaling, and an
//! evaluation (DIT) chain without permuting, so the quotient's transforms permute once, at
//! the end. Both recurse on halves, so each sub-transform runs in cache once it fits
//! (below [`BASE`] elements, loops do the remaining stages), and the halves and the long
//! butterfly passes run on the rayon pool. Each butterfly costs one multiplication: the
//! twiddles `ω^e` come from a table of `ω^0 .. ω^(n/2 - 1)` (a two-level table of square
//! roots' size above [`FLAT_TWIDDLES`] entries); the inverse transform reads the same table
//! (`ω^-e = -ω^(n/2 - e)`).

use std::ops::{Add, AddAssign, Sub};

use blstrs::{G1Projective, Scalar as Fr};
use ff::{Field, PrimeField};
use rayon::prelude::*;

/// The evaluation domain of a partition and the constants its quotient needs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Domain {
    /// Its size `m`, the constraints rounded up to a power of two.
    pub m: usize,
    /// `log2(m)`.
    pub log_m: u32,
    /// A primitive `m`-th root of unity.
    pub omega: Fr,
    /// Its inverse.
    pub omega_inv: Fr,
    /// `1/m`, folded into the first coset scaling.
    pub m_inv: Fr,
    /// The coset's shift, the field's multiplicative generator.
    pub g: Fr,
    /// Its inverse.
    pub g_inv: Fr,
    /// `1 / Z(g x) = 1 / (g^m - 1)`, the same at every point of the coset.
    pub z_inv: Fr,
    /// A primitive `2m`-th root of unity, the other coset's shift: `half_root^m = -1`, so
    /// the domain and that coset are the `2m`-th roots of unity together.
    pub half_root: Fr,
    /// Its inverse.
    pub half_root_inv: Fr,
}

/// The domain is larger than the field's roots of unity allow.
#[derive(Debug, thiserror::Error)]
#[error("{0} constraints need an FFT domain larger than the scalar field supports")]
pub struct DomainTooLarge(pub usize);

impl Domain {
    /// The smallest domain holding `constraints` evaluations.
    pub fn for_constraints(constraints: usize) -> Result<Domain, DomainTooLarge> {
        let m = constraints.max(1).next_power_of_two();
        let log_m = m.trailing_zeros();
        if log_m >= Fr::S {
            return Err(DomainTooLarge(constraints));
        }
        let omega = (log_m..Fr::S).fold(Fr::ROOT_OF_UNITY, |w, _| w.square());
        let half_root = (log_m + 1..Fr::S).fold(Fr::ROOT_OF_UNITY, |w, _| w.square());
        let g = Fr::MULTIPLICATIVE_GENERATOR;
        Ok(Domain {
            m,
            log_m,
            omega,
            omega_inv: omega.invert().expect("a root of unity is non-zero"),
            m_inv: Fr::from(m as u64).invert().expect("m is non-zero"),
            g,
            g_inv: g.invert().expect("the generator is non-zero"),
            z_inv: (g.pow_vartime([m as u64]) - Fr::ONE)
                .invert()
                .expect("Z has no roots on the coset"),
            half_root,
            half_root_inv: half_root.invert().expect("a root of unity is non-zero"),
        })
    }
}

/// What a transform runs over: values added, subtracted and multiplied by scalars.
pub trait Element:
    Copy + Send + Sync + Add<Output = Self> + Sub<Output = Self> + AddAssign
{
    /// Halves and butterfly passes of at least this many elements run in parallel: a
    /// point's multiplication costs thousands of a scalar's, so points spread much sooner.
    const PARALLEL: usize;

    /// `self · by`.
    fn times(self, by: &Fr) -> Self;
}

impl Element for Fr {
    const PARALLEL: usize = 1 << 14;

    fn times(self, by: &Fr) -> Fr {
        self * by
    }
}

impl Element for G1Projective {
    const PARALLEL: usize = 1 << 4;

    fn times(self, by: &Fr) -> G1Projective {
        self * by
    }
}

/// Sub-transforms of at most this many elements run as loops, in cache.
const BASE: usize = 1 << 10;
/// Twiddle tables up to this many entries are flat; beyond, two levels.
const FLAT_TWIDDLES: usize = 1 << 23;

/// The powers of a primitive `n`-th root of unity a transform of size `n` needs.
pub struct Twiddles {
    /// `ω^e` for `e < n/2` (flat), or for `e < 2^split` (two levels).
    low: Vec<Fr>,
    /// Two levels: `ω^(e << split)`.
    high: Vec<Fr>,
    split: u32,
    half: usize,
}

impl Twiddles {
    /// The twiddles of `omega`, a primitive `n`-th root of unity (`n` a power of two).
    pub fn new(omega: Fr, n: usize) -> Twiddles {
        let half = n / 2;
        if half <= FLAT_TWIDDLES {
            return Twiddles {
                low: powers(omega, half.max(1)),
                high: Vec::new(),
                split: usize::BITS,
                half,
            };
        }
        let split = half.trailing_zeros() / 2;
        let low = powers(omega, 1 << split);
        let high = powers(omega.pow_vartime([1u64 << split]), half >> split);
        Twiddles {
            low,
            high,
            split,
            half,
        }
    }

    /// `ω^e`, `e < n/2`.
    fn forward(&self, e: usize) -> Fr {
        if self.high.is_empty() {
            self.low[e]
        } else {
            self.low[e & ((1 << self.split) - 1)] * self.high[e >> self.split]
        }
    }

    /// `ω^(-e)`, `e < n/2`.
    fn inverse(&self, e: usize) -> Fr {
        if e == 0 {
            Fr::ONE
        } else {
            -self.forward(self.half - e)
        }
    }
}

/// `x^0 .. x^(n-1)`.
fn powers(x: Fr, n: usize) -> Vec<Fr> {
    const CHUNK: usize = 1 << 14;
    let mut out = vec![Fr::ZERO; n];
    out.par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(i, chunk)| {
            let mut p = x.pow_vartime([(i * CHUNK) as u64]);
            for v in chunk {
                *v = p;
                p *= x;
            }
        });
    out
}

/// Which way a transform goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Evaluation at the powers of `ω`.
    Forward,
    /// At the powers of `ω^-1` (interpolation, without the `1/n`).
    Inverse,
}

fn twiddle(tw: &Twiddles, direction: Direction, e: usize) -> Fr {
    match direction {
        Direction::Forward => tw.forward(e),
        Direction::Inverse => tw.inverse(e),
    }
}

/// `x · ω^(±e)`, skipping the multiplication by `ω^0 = 1` (a whole stage of every
/// transform, and a point's multiplication is not cheap).
fn twiddled<T: Element>(x: T, tw: &Twiddles, direction: Direction, e: usize) -> T {
    if e == 0 {
        x
    } else {
        x.times(&twiddle(tw, direction, e))
    }
}

/// Decimation in frequency: `v` in natural order becomes its transform in bit-reversed
/// order. `v.len()` must be the size `tw` was made for.
pub fn dif<T: Element>(v: &mut [T], tw: &Twiddles, direction: Direction) {
    dif_rec(v, tw, direction, 1);
}

/// Decimation in time: `v` in bit-reversed order becomes its transform in natural order.
pub fn dit<T: Element>(v: &mut [T], tw: &Twiddles, direction: Direction) {
    dit_rec(v, tw, direction, 1);
}

fn dif_rec<T: Element>(v: &mut [T], tw: &Twiddles, dir: Direction, stride: usize) {
    let n = v.len();
    if n <= BASE {
        dif_base(v, tw, dir, stride);
        return;
    }
    let (lo, hi) = v.split_at_mut(n / 2);
    butterflies(lo, hi, |j, u, w| {
        let sum = *u + *w;
        *w = twiddled(*u - *w, tw, dir, j * stride);
        *u = sum;
    });
    halves(
        n >= T::PARALLEL,
        || dif_rec(lo, tw, dir, stride * 2),
        || dif_rec(hi, tw, dir, stride * 2),
    );
}

/// Runs the two halves' transforms, on two threads when they are big enough to pay for it.
fn halves(parallel: bool, lo: impl FnOnce() + Send, hi: impl FnOnce() + Send) {
    if parallel {
        rayon::join(lo, hi);
    } else {
        lo();
        hi();
    }
}

fn dit_rec<T: Element>(v: &mut [T], tw: &Twiddles, dir: Direction, stride: usize) {
    let n = v.len();
    if n <= BASE {
        dit_base(v, tw, dir, stride);
        return;
    }
    let (lo, hi) = v.split_at_mut(n / 2);
    halves(
        n >= T::PARALLEL,
        || dit_rec(lo, tw, dir, stride * 2),
        || dit_rec(hi, tw, dir, stride * 2),
    );
    butterflies(lo, hi, |j, u, w| {
        let t = twiddled(*w, tw, dir, j * stride);
        *w = *u - t;
        *u += t;
    });
}

/// `f(j, lo[j], hi[j])` for every `j`, in parallel chunks when long.
fn butterflies<T: Element>(lo: &mut [T], hi: &mut [T], f: impl Fn(usize, &mut T, &mut T) + Sync) {
    const CHUNK: usize = 1 << 12;
    if lo.len() >= T::PARALLEL {
        lo.par_chunks_mut(CHUNK)
            .zip(hi.par_chunks_mut(CHUNK))
            .enumerate()
            .for_each(|(c, (lo, hi))| {
                for (i, (u, w)) in lo.iter_mut().zip(hi.iter_mut()).enumerate() {
                    f(c * CHUNK + i, u, w);
                }
            });
    } else {
        for (j, (u, w)) in lo.iter_mut().zip(hi.iter_mut()).enumerate() {
            f(j, u, w);
        }
    }
}

/// The stages of a small DIF, as loops: half-sizes `n/2` down to 1.
fn dif_base<T: Element>(v: &mut [T], tw: &Twiddles, dir: Direction, stride: usize) {
    let n = v.len();
    let mut m = n / 2;
    while m >= 1 {
        let step = stride * (n / (2 * m));
        for block in v.chunks_exact_mut(2 * m) {
            let (lo, hi) = block.split_at_mut(m);
            for (j, (u, w)) in lo.iter_mut().zip(hi.iter_mut()).enumerate() {
                let sum = *u + *w;
                *w = twiddled(*u - *w, tw, dir, j * step);
                *u = sum;
            }
        }
        m /= 2;
    }
}

/// The stages of a small DIT, as loops: half-sizes 1 up to `n/2`.
fn dit_base<T: Element>(v: &mut [T], tw: &Twiddles, dir: Direction, stride: usize) {
    let n = v.len();
    let mut m = 1;
    while m < n {
        let step = stride * (n / (2 * m));
        for block in v.chunks_exact_mut(2 * m) {
            let (lo, hi) = block.split_at_mut(m);
            for (j, (u, w)) in lo.iter_mut().zip(hi.iter_mut()).enumerate() {
                let t = twiddled(*w, tw, dir, j * step);
                *w = *u - t;
                *u += t;
            }
        }
        m *= 2;
    }
}

/// `scale · x^rev(j)` for `j < n` (`n` a power of two, `rev` the bit reversal of
/// `log2 n` bits): what a coset shift by `x` multiplies coefficients held in bit-reversed
/// order by.
pub fn bit_reversed_powers(x: Fr, scale: Fr, n: usize) -> Vec<Fr> {
    let mut out = Vec::with_capacity(n);
    out.push(scale);
    let mut len = 1;
    while len < n {
        // The first half holds the even exponents, the second the odd ones: one more bit.
        let h = x.pow_vartime([(n / (2 * len)) as u64]);
        let (done, _) = out.split_at(len);
        let next: Vec<Fr> = if len >= Fr::PARALLEL {
            done.par_iter().map(|p| *p * h).collect()
        } else {
            done.iter().map(|p| *p * h).collect()
        };
        out.extend(next);
        len *= 2;
    }
    out
}

/// Permutes `v` (of power-of-two length) from bit-reversed to natural order, or back.
pub fn bit_reverse<T>(v: &mut [T]) {
    let n = v.len();
    if n <= 2 {
        return;
    }
    let shift = usize::BITS - n.trailing_zeros();
    for i in 0..n {
        let j = i.reverse_bits() >> shift;
        if i < j {
            v.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ff::PrimeField;
    use rand::SeedableRng;

    fn root(n: usize) -> Fr {
        let log = n.trailing_zeros();
        (log..Fr::S).fold(Fr::ROOT_OF_UNITY, |w, _| w.square())
    }

    fn naive(v: &[Fr], omega: Fr) -> Vec<Fr> {
        let n = v.len();
        (0..n)
            .map(|k| {
                let w = omega.pow_vartime([k as u64]);
                let mut x = Fr::ONE;
                let mut sum = Fr::ZERO;
                for a in v {
                    sum += *a * x;
                    x *= w;
                }
                sum
            })
            .collect()
    }

    fn random(n: usize, seed: u64) -> Vec<Fr> {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        (0..n).map(|_| Fr::random(&mut rng)).collect()
    }

    #[test]
    fn both_transforms_equal_the_definition_both_ways() {
        for log in [1, 2, 5, 11] {
            let n = 1 << log;
            let omega = root(n);
            let tw = Twiddles::new(omega, n);
            let v = random(n, log as u64);
            let mut natural = naive(&v, omega);
            let mut out = v.clone();
            dif(&mut out, &tw, Direction::Forward);
            bit_reverse(&mut out);
            assert_eq!(out, natural, "dif, n = {n}");
            let mut out = v.clone();
            bit_reverse(&mut out);
            dit(&mut out, &tw, Direction::Forward);
            assert_eq!(out, natural, "dit, n = {n}");
            let inverse = naive(&v, omega.invert().expect("root"));
            let mut out = v.clone();
            dif(&mut out, &tw, Direction::Inverse);
            bit_reverse(&mut out);
            assert_eq!(out, inverse, "inverse dif, n = {n}");
            // dif then dit of the inverse: n times the input, without any permutation.
            dit(natural_to_bitrev(&mut natural), &tw, Direction::Inverse);
            let n_fr = Fr::from(n as u64);
            assert_eq!(
                natural,
                v.iter().map(|x| *x * n_fr).collect::<Vec<_>>(),
                "round trip, n = {n}"
            );
        }
    }

    fn natural_to_bitrev(v: &mut Vec<Fr>) -> &mut Vec<Fr> {
        bit_reverse(v);
        v
    }

    #[test]
    fn large_transforms_equal_ec_gpu_gens_and_two_level_twiddles_agree() {
        let n = 1 << 16;
        let omega = root(n);
        let v = random(n, 9);
        let mut theirs = v.clone();
        ec_gpu_gen::fft_cpu::serial_fft::<Fr>(&mut theirs, &omega, 16);
        let mut ours = v.clone();
        dif(&mut ours, &Twiddles::new(omega, n), Direction::Forward);
        bit_reverse(&mut ours);
        assert_eq!(ours, theirs);
        // The two-level table gives the same powers as the flat one.
        let flat = Twiddles::new(omega, n);
        let half = n / 2;
        let split = half.trailing_zeros() / 2;
        let two = Twiddles {
            low: powers(omega, 1 << split),
            high: powers(omega.pow_vartime([1u64 << split]), half >> split),
            split,
            half,
        };
        for e in [0, 1, 255, 256, 257, 4097, half - 1] {
            assert_eq!(two.forward(e), flat.forward(e), "e = {e}");
            assert_eq!(two.inverse(e), flat.inverse(e), "e = {e}");
        }
    }

    #[test]
    fn the_transform_over_points_is_the_transform_of_their_scalars() {
        use group::Group;
        let n = 64;
        let g = G1Projective::generator();
        let v = random(n, 5);
        let tw = Twiddles::new(root(n), n);
        for direction in [Direction::Forward, Direction::Inverse] {
            let mut scalars = v.clone();
            dif(&mut scalars, &tw, direction);
            let mut points: Vec<G1Projective> = v.iter().map(|s| g * s).collect();
            dif(&mut points, &tw, direction);
            let expected: Vec<G1Projective> = scalars.iter().map(|s| g * s).collect();
            assert_eq!(points, expected, "{direction:?}");
        }
    }

    #[test]
    fn bit_reversed_powers_are_the_powers_in_bit_reversed_order() {
        let x = Fr::from(7u64);
        let scale = Fr::from(3u64);
        let n = 64;
        let mut natural: Vec<Fr> = (0..n as u64).map(|i| scale * x.pow_vartime([i])).collect();
        bit_reverse(&mut natural);
        assert_eq!(bit_reversed_powers(x, scale, n), natural);
    }
}
