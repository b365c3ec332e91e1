//! The CPU multiexp: `sum_i s_i · P_i` in G1 or G2 by Pippenger's bucket method, with signed
//! window digits and bucket additions in affine coordinates, many at a time.
//!
//! Each `c`-bit window of every scalar becomes a digit in `[-2^(c-1), 2^(c-1))` (a digit in
//! the upper half borrows from the next window), so a window has `2^(c-1)` buckets and a
//! negative digit adds the negated point. Adding a point to an affine bucket costs one
//! field inversion; a batch of additions into distinct buckets shares one inversion
//! (Montgomery's trick), which makes an addition about 6 field multiplications against 11
//! for the mixed Jacobian addition the generic multiexp does. A point whose bucket is
//! already in the batch waits for the next one. Equal x coordinates (a bucket plus its own
//! point, or its negation) are done apart, exactly.
//!
//! Points are taken in chunks: the digits of a chunk are computed once for every window,
//! then every window, in parallel, feeds the chunk into its buckets. Memory beyond the
//! inputs is the chunk's digits and each window's buckets (a few MB), whatever the size.
//! The result equals bellperson's multiexp on every input (tested); zero scalars and bases
//! at infinity are skipped.

use std::ops::Neg;

use blstrs::{Fp, Fp2, G1Affine, G2Affine, Scalar as Fr};
use ec_gpu_gen::multiexp_cpu::QueryDensity;
use ff::{Field, PrimeField};
use group::prime::PrimeCurveAffine;
use group::{Curve, Group};
use rayon::prelude::*;

/// Points whose digits are computed together.
const CHUNK: usize = 1 << 14;
/// Bucket additions that share one inversion.
const BATCH: usize = 1024;

/// Why a multiexp could not be computed.
#[derive(Debug, thiserror::Error)]
#[error("the density selects {wanted} bases but {have} are given")]
pub struct TooFewBasesError {
    /// Bases the density selects.
    pub wanted: usize,
    /// Bases there are.
    pub have: usize,
}

/// An affine point type whose coordinates can be read and set, with the projective type it
/// sums into.
pub trait AffinePoint: PrimeCurveAffine<Scalar = Fr> + Neg<Output = Self> {
    /// The coordinates' field.
    type Base: Field;
    /// `(x, y)`; not for the point at infinity.
    fn coordinates(&self) -> (Self::Base, Self::Base);
    /// The point `(x, y)`, which must be on the curve.
    fn from_coordinates(x: Self::Base, y: Self::Base) -> Self;
}

impl AffinePoint for G1Affine {
    type Base = Fp;
    fn coordinates(&self) -> (Fp, Fp) {
        (self.x(), self.y())
    }
    fn from_coordinates(x: Fp, y: Fp) -> G1Affine {
        G1Affine::from_raw_unchecked(x, y, false)
    }
}

impl AffinePoint for G2Affine {
    type Base = Fp2;
    fn coordinates(&self) -> (Fp2, Fp2) {
        (self.x(), self.y())
    }
    fn from_coordinates(x: Fp2, y: Fp2) -> G2Affine {
        G2Affine::from_raw_unchecked(x, y, false)
    }
}

/// `sum exps[i] · bases[k]` over the indices `i` the density selects, the `k`-th selected
/// index taking `bases[first + k]`.
pub fn multiexp<G, Q>(
    bases: &[G],
    first: usize,
    density: Q,
    exps: &[<Fr as PrimeField>::Repr],
) -> Result<G::Curve, TooFewBasesError>
where
    G: AffinePoint,
    Q: QueryDensity,
{
    let bases = bases.get(first..).unwrap_or(&[]);
    let mut terms: Vec<(usize, &[u8])> = Vec::with_capacity(exps.len().min(bases.len()));
    let mut selected = 0usize;
    for (exp, is_selected) in exps.iter().zip(density.iter()) {
        if !is_selected {
            continue;
        }
        let k = selected;
        selected += 1;
        let bytes: &[u8] = exp.as_ref();
        if bytes.iter().all(|&b| b == 0) {
            continue;
        }
        terms.push((k, bytes));
    }
    if selected > bases.len() {
        return Err(TooFewBasesError {
            wanted: selected,
            have: bases.len(),
        });
    }
    terms.retain(|&(k, _)| !bool::from(bases[k].is_identity()));
    // Scalars equal to one (most of a witness's bits) are a plain sum of their bases: one
    // bucket would take them all, so they are summed apart, pairwise.
    let one = Fr::ONE.to_repr();
    let (ones, others): (Vec<_>, Vec<_>) = terms
        .into_iter()
        .partition(|&(_, bytes)| bytes == one.as_ref());
    let ones: Vec<G> = ones.into_iter().map(|(k, _)| bases[k]).collect();
    let (sum_of_ones, sum) = rayon::join(|| sum_affine(ones), || pippenger(bases, &others));
    Ok(sum_of_ones + sum)
}

/// `sum points`, by adding them in pairs, each round's additions sharing inversions.
fn sum_affine<G: AffinePoint>(mut points: Vec<G>) -> G::Curve {
    const PAIRS_PER_TASK: usize = 1 << 12;
    while points.len() > 1 {
        let odd = (points.len() % 2 == 1).then(|| points[points.len() - 1]);
        let mut next: Vec<G> = points
            .par_chunks(2 * PAIRS_PER_TASK)
            .flat_map_iter(|chunk| {
                let pairs: Vec<(G, G)> = chunk.chunks_exact(2).map(|p| (p[0], p[1])).collect();
                add_pairs(&pairs)
            })
            .collect();
        next.extend(odd);
        points = next;
    }
    points
        .first()
        .map_or_else(G::Curve::identity, |p| p.to_curve())
}

/// Replaces each of `values` (none zero) by its inverse, with one field inversion:
/// prefix products forward, then the inverse of the whole product walked back. Not
/// constant time: the values are public (the points of a multiexp).
fn invert_all<F: Field>(values: &mut [F], scratch: &mut Vec<F>) {
    scratch.clear();
    let mut acc = F::ONE;
    for v in values.iter() {
        scratch.push(acc);
        acc *= v;
    }
    let mut inverse = Option::<F>::from(acc.invert()).unwrap_or(F::ZERO);
    for (v, prefix) in values.iter_mut().zip(scratch.iter()).rev() {
        let next = inverse * *v;
        *v = inverse * prefix;
        inverse = next;
    }
}

/// `a + b` for each pair, with one inversion for all; sums at infinity are left out.
fn add_pairs<G: AffinePoint>(pairs: &[(G, G)]) -> Vec<G> {
    // Equal x coordinates get a stand-in denominator of one and are done apart.
    let mut inverses: Vec<G::Base> = pairs
        .iter()
        .map(|(a, b)| {
            let d = b.coordinates().0 - a.coordinates().0;
            if bool::from(d.is_zero()) {
                G::Base::ONE
            } else {
                d
            }
        })
        .collect();
    invert_all(&mut inverses, &mut Vec::with_capacity(pairs.len()));
    let mut out = Vec::with_capacity(pairs.len());
    for ((a, b), inverse) in pairs.iter().zip(inverses) {
        let (x1, y1) = a.coordinates();
        let (x2, y2) = b.coordinates();
        if x1 == x2 {
            // Doubling, or a point and its negation: rare, done exactly.
            let sum = (a.to_curve() + b.to_curve()).to_affine();
            if !bool::from(sum.is_identity()) {
                out.push(sum);
            }
            continue;
        }
        let lambda = (y2 - y1) * inverse;
        let x3 = lambda.square() - x1 - x2;
        out.push(G::from_coordinates(x3, lambda * (x1 - x3) - y1));
    }
    out
}

/// The window width for `n` terms.
fn window_bits(n: usize) -> usize {
    let log = usize::BITS as usize - n.max(1).leading_zeros() as usize;
    log.saturating_sub(4).clamp(3, 16)
}

fn pippenger<G>(bases: &[G], terms: &[(usize, &[u8])]) -> G::Curve
where
    G: AffinePoint,
{
    if terms.len() < 32 {
        // Too few for buckets to pay: one multiplication each.
        let mut sum = G::Curve::identity();
        for &(k, bytes) in terms {
            sum += bases[k] * scalar_of(bytes);
        }
        return sum;
    }
    let c = window_bits(terms.len());
    // 255-bit scalars, and one more window for the last borrow.
    let windows = 256usize.div_ceil(c) + 1;
    let mut states: Vec<Window<G>> = (0..windows).map(|_| Window::new(c)).collect();
    let mut digits = vec![0i32; CHUNK * windows];
    for chunk in terms.chunks(CHUNK) {
        digits[..chunk.len() * windows]
            .par_chunks_mut(windows)
            .zip(chunk.par_iter())
            .for_each(|(out, &(_, bytes))| signed_digits(bytes, c, out));
        let digits = &digits[..chunk.len() * windows];
        states.par_iter_mut().enumerate().for_each(|(w, state)| {
            for (t, &(k, _)) in chunk.iter().enumerate() {
                let digit = digits[t * windows + w];
                if digit != 0 {
                    state.add(digit, &bases[k]);
                }
            }
        });
    }
    let sums: Vec<G::Curve> = states.into_par_iter().map(Window::finish).collect();
    let mut total = G::Curve::identity();
    for sum in sums.into_iter().rev() {
        for _ in 0..c {
            total = total.double();
        }
        total += sum;
    }
    total
}

/// A little-endian scalar as a field element (for the few-term path).
fn scalar_of(bytes: &[u8]) -> Fr {
    let mut repr = <Fr as PrimeField>::Repr::default();
    repr.as_mut().copy_from_slice(bytes);
    Option::from(Fr::from_repr(repr)).unwrap_or(Fr::ZERO)
}

/// The signed `c`-bit digits of a little-endian 256-bit integer, lowest first:
/// `sum out[w] · 2^(c·w)` equals it, each digit in `[-2^(c-1), 2^(c-1))`.
fn signed_digits(bytes: &[u8], c: usize, out: &mut [i32]) {
    let mut limbs = [0u64; 5];
    for (i, chunk) in bytes.chunks(8).take(4).enumerate() {
        let mut word = [0u8; 8];
        word[..chunk.len()].copy_from_slice(chunk);
        limbs[i] = u64::from_le_bytes(word);
    }
    let half = 1i64 << (c - 1);
    let mut borrow = 0i64;
    for (w, out) in out.iter_mut().enumerate() {
        let bit = w * c;
        let raw = if bit >= 256 {
            0
        } else {
            let (limb, shift) = (bit / 64, bit % 64);
            let mut v = limbs[limb] >> shift;
            if shift + c > 64 {
                v |= limbs[limb + 1] << (64 - shift);
            }
            (v & ((1u64 << c) - 1)) as i64
        };
        let mut digit = raw + borrow;
        borrow = 0;
        if digit >= half {
            digit -= 1 << c;
            borrow = 1;
        }
        *out = digit as i32;
    }
}

/// One window's buckets and its pending batch of affine additions.
struct Window<G: AffinePoint> {
    /// Bucket `j` holds the sum of the points of digit `±(j + 1)` when `occupied[j]`.
    buckets: Vec<G>,
    occupied: Vec<bool>,
    /// Buckets with an addition in the current batch.
    in_batch: Vec<bool>,
    /// The batch: bucket and point.
    batch: Vec<(u32, G)>,
    /// Additions whose bucket was already in the batch.
    waiting: Vec<(u32, G)>,
    /// Points that met their bucket in a batch twice, added the generic way: a bucket many
    /// points fall into would otherwise hold them all back.
    side: Vec<G::Curve>,
    /// Scratch for the denominators' inverses.
    inverses: Vec<G::Base>,
    prefix: Vec<G::Base>,
    /// Batch entries whose x coordinates are equal.
    special: Vec<usize>,
}

impl<G: AffinePoint> Window<G> {
    fn new(c: usize) -> Self {
        let buckets = 1usize << (c - 1);
        Window {
            buckets: vec![G::identity(); buckets],
            occupied: vec![false; buckets],
            in_batch: vec![false; buckets],
            batch: Vec::with_capacity(BATCH),
            waiting: Vec::new(),
            side: Vec::new(),
            inverses: Vec::with_capacity(BATCH),
            prefix: Vec::with_capacity(BATCH),
            special: Vec::new(),
        }
    }

    /// Adds `point` times the sign of `digit` to bucket `|digit| - 1`.
    fn add(&mut self, digit: i32, point: &G) {
        let bucket = digit.unsigned_abs() - 1;
        let point = if digit < 0 { -*point } else { *point };
        self.push(bucket, point);
        if self.batch.len() == BATCH {
            self.flush();
        }
    }

    fn push(&mut self, bucket: u32, point: G) {
        let j = bucket as usize;
        if self.in_batch[j] {
            self.waiting.push((bucket, point));
        } else if !self.occupied[j] {
            self.buckets[j] = point;
            self.occupied[j] = true;
        } else {
            self.in_batch[j] = true;
            self.batch.push((bucket, point));
        }
    }

    /// Does the batch's additions, then takes what waited into the next batch; what meets
    /// its bucket in the batch again goes to the side sums.
    fn flush(&mut self) {
        self.apply_batch();
        let waiting = std::mem::take(&mut self.waiting);
        for (bucket, point) in waiting {
            let j = bucket as usize;
            if self.in_batch[j] {
                if self.side.is_empty() {
                    self.side = vec![G::Curve::identity(); self.buckets.len()];
                }
                self.side[j] += point;
            } else {
                self.push(bucket, point);
            }
            if self.batch.len() == BATCH {
                self.apply_batch();
            }
        }
    }

    fn apply_batch(&mut self) {
        // Denominators x2 - x1; equal x coordinates (doubling or cancelling) get a stand-in
        // of one and are done apart.
        self.inverses.clear();
        self.special.clear();
        for (i, &(bucket, point)) in self.batch.iter().enumerate() {
            let d = point.coordinates().0 - self.buckets[bucket as usize].coordinates().0;
            if bool::from(d.is_zero()) {
                self.special.push(i);
                self.inverses.push(G::Base::ONE);
            } else {
                self.inverses.push(d);
            }
        }
        invert_all(&mut self.inverses, &mut self.prefix);
        let mut special = self.special.iter().copied().peekable();
        for (i, &(bucket, point)) in self.batch.iter().enumerate() {
            let j = bucket as usize;
            self.in_batch[j] = false;
            let current = self.buckets[j];
            if special.peek() == Some(&i) {
                special.next();
                let mut sum = current.to_curve();
                sum += point;
                let sum = sum.to_affine();
                self.occupied[j] = !bool::from(sum.is_identity());
                self.buckets[j] = sum;
                continue;
            }
            let (x1, y1) = current.coordinates();
            let (x2, y2) = point.coordinates();
            let lambda = (y2 - y1) * self.inverses[i];
            let x3 = lambda.square() - x1 - x2;
            let y3 = lambda * (x1 - x3) - y1;
            self.buckets[j] = G::from_coordinates(x3, y3);
        }
        self.batch.clear();
    }

    /// `sum_j (j + 1) · bucket_j`, by running sums from the top.
    fn finish(mut self) -> G::Curve {
        while !self.batch.is_empty() || !self.waiting.is_empty() {
            self.flush();
        }
        let mut running = G::Curve::identity();
        let mut sum = G::Curve::identity();
        for (j, bucket) in self.buckets.iter().enumerate().rev() {
            if self.occupied[j] {
                running += bucket;
            }
            if let Some(side) = self.side.get(j) {
                running += side;
            }
            sum += running;
        }
        sum
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use blstrs::{G1Projective, G2Projective};
    use ec_gpu_gen::multiexp_cpu::{multiexp_cpu, DensityTracker, FullDensity};
    use ec_gpu_gen::threadpool::Worker;
    use rand::{Rng, SeedableRng};
    use std::sync::Arc;

    fn reference<G>(bases: &[G], exps: &[Fr]) -> G::Curve
    where
        G: AffinePoint,
    {
        let mut sum = G::Curve::identity();
        for (b, e) in bases.iter().zip(exps) {
            sum += *b * e;
        }
        sum
    }

    /// Scalars of every kind a witness has: zeros, ones, small, minus one, random.
    fn scalars(n: usize, rng: &mut impl Rng) -> Vec<Fr> {
        (0..n)
            .map(|i| match i % 7 {
                0 => Fr::ZERO,
                1 => Fr::ONE,
                2 => Fr::from(rng.gen::<u16>() as u64),
                3 => -Fr::ONE,
                _ => Fr::random(&mut *rng),
            })
            .collect()
    }

    #[test]
    fn signed_digits_sum_back_to_the_scalar() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        for c in [3, 5, 8, 13, 16] {
            let windows = 256usize.div_ceil(c) + 1;
            for s in scalars(50, &mut rng) {
                let mut out = vec![0; windows];
                signed_digits(s.to_repr().as_ref(), c, &mut out);
                let mut back = Fr::ZERO;
                for &d in out.iter().rev() {
                    back *= Fr::from(1u64 << c);
                    back += if d < 0 {
                        -Fr::from(d.unsigned_abs() as u64)
                    } else {
                        Fr::from(d as u64)
                    };
                }
                assert_eq!(back, s, "c = {c}");
                let half = 1 << (c - 1);
                assert!(out.iter().all(|&d| (-half..half).contains(&d)));
            }
        }
    }

    #[test]
    fn equals_the_sum_in_g1_and_g2_with_repeated_and_opposite_points() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(2);
        for n in [1, 31, 40, 700, 5000] {
            let mut bases: Vec<G1Affine> = (0..n)
                .map(|_| G1Projective::random(&mut rng).to_affine())
                .collect();
            // The same point many times, and its negation: buckets meet their own point.
            for i in (0..n).step_by(3) {
                bases[i] = bases[0];
            }
            for i in (1..n).step_by(5) {
                bases[i] = -bases[0];
            }
            let exps = scalars(n, &mut rng);
            let reprs: Vec<_> = exps.iter().map(|s| s.to_repr()).collect();
            let ours = multiexp(&bases, 0, &FullDensity, &reprs).expect("msm");
            assert_eq!(ours, reference(&bases, &exps), "G1, {n} terms");
        }
        let bases: Vec<G2Affine> = (0..300)
            .map(|_| G2Projective::random(&mut rng).to_affine())
            .collect();
        let exps = scalars(300, &mut rng);
        let reprs: Vec<_> = exps.iter().map(|s| s.to_repr()).collect();
        let ours = multiexp(&bases, 0, &FullDensity, &reprs).expect("msm");
        assert_eq!(ours, reference(&bases, &exps), "G2");
    }

    #[test]
    fn a_witness_of_mostly_bits_and_repeated_small_values_sums_right() {
        // Ones go to the pairwise sum; the many twos all fall into one bucket of the
        // lowest window, which overflows into its side sum.
        let mut rng = rand::rngs::StdRng::seed_from_u64(4);
        let n = 20_000;
        let bases: Vec<G1Affine> = (0..n)
            .map(|_| G1Projective::random(&mut rng).to_affine())
            .collect();
        let exps: Vec<Fr> = (0..n)
            .map(|i| match i % 10 {
                0..=6 => Fr::ONE,
                7 | 8 => Fr::from(2),
                _ => Fr::random(&mut rng),
            })
            .collect();
        let reprs: Vec<_> = exps.iter().map(|s| s.to_repr()).collect();
        let ours = multiexp(&bases, 0, &FullDensity, &reprs).expect("msm");
        assert_eq!(ours, reference(&bases, &exps));
    }

    #[test]
    fn equals_bellpersons_multiexp_over_a_sparse_density_with_an_offset() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        let n = 3000;
        let mut density = DensityTracker::new();
        let mut selected = 0;
        for i in 0..n {
            density.add_element();
            if i % 3 != 1 {
                density.inc(i);
                selected += 1;
            }
        }
        let first = 17;
        let bases: Vec<G1Affine> = (0..first + selected)
            .map(|_| G1Projective::random(&mut rng).to_affine())
            .collect();
        let exps: Vec<_> = scalars(n, &mut rng).iter().map(|s| s.to_repr()).collect();
        let ours = multiexp(&bases, first, &density, &exps).expect("msm");
        let theirs = multiexp_cpu(
            &Worker::new(),
            (Arc::new(bases.clone()), first),
            Arc::new(density.clone()),
            Arc::new(exps.clone()),
        )
        .wait()
        .expect("bellperson's");
        assert_eq!(ours, theirs);
        let error = multiexp(&bases[..first + selected - 1], first, &density, &exps)
            .expect_err("one base short");
        assert_eq!((error.wanted, error.have), (selected, selected - 1));
    }
}
