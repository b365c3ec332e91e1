//! Random (INSECURE) Groth16 parameters for a circuit, computed the way the math reads.
//!
//! The parameters are the circuit's QAP polynomials evaluated at a secret `tau` and
//! multiplied into fixed generators `g1`, `g2`:
//!
//! - `h[i]    = g1 · tau^i · Z(tau) / delta`, `i < m - 1`, with `Z(x) = x^m - 1` over the
//!   domain of `m` (the constraints rounded up to a power of two) roots of unity;
//! - `l[j]    = g1 · (beta·A_j(tau) + alpha·B_j(tau) + C_j(tau)) / delta` per aux variable,
//!   and `ic[i]` the same over `gamma` per input;
//! - `a[j]    = g1 · A_j(tau)`, `b_g1[j] = g1 · B_j(tau)`, `b_g2[j] = g2 · B_j(tau)`, without
//!   the variables whose polynomial vanishes at `tau` (those points would be the identity).
//!
//! `A_j(tau) = Σ_rows A[row][j] · L_row(tau)` comes from the recorded constraints and the
//! Lagrange basis at `tau`, `L_i(tau) = Z(tau) · ω^i / (m · (tau - ω^i))`, all in the field.
//! bellperson's generator computes the same scalars, then spends most of its time in
//! per-point windowed multiplications (255 doublings each); here every query multiplies one
//! fixed base, so a table of `base · d · 2^(8w)` for each byte position `w` and byte `d`
//! makes each multiplication 32 mixed additions. The secrets are drawn from the rng in
//! bellperson's order (`g1, g2, alpha, beta, gamma, delta, tau`), so a seeded rng gives
//! byte-identical parameters to `bellperson::groth16::generate_random_parameters`
//! (tested), and the result is written with bellperson's own writer. Knowing `tau`, the
//! generator also makes the H query in coset evaluation form (`coset_h`) as cheaply as the
//! H query itself, and writes it beside the set.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::ops::AddAssign;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, ensure, Context, Result};
use bellperson::groth16::{Parameters, VerifyingKey};
use bellperson::{Circuit, SynthesisError};
use blstrs::{Bls12, Fp, Fp2, G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use ff::{BatchInvert, Field, PrimeField};
use group::prime::PrimeCurveAffine;
use group::{Curve, Group};
use rand::RngCore;
use rayon::prelude::*;

use super::coset_h;
use crate::r1cs::{decode_entry, Column, R1cs};
use crate::synth::ConstraintMatrices;

/// Points multiplied and normalized per task.
const POINTS_PER_TASK: usize = 1 << 12;

/// The secrets of one parameter set ("toxic waste"): whoever knows them can forge proofs,
/// which is why parameters made here are for tests only.
struct Secrets {
    g1: G1Projective,
    g2: G2Projective,
    alpha: Fr,
    beta: Fr,
    gamma: Fr,
    delta: Fr,
    tau: Fr,
}

impl Secrets {
    /// Drawn in the order bellperson's `generate_random_parameters` draws them.
    fn draw(rng: &mut impl RngCore) -> Secrets {
        Secrets {
            g1: G1Projective::random(&mut *rng),
            g2: G2Projective::random(&mut *rng),
            alpha: Fr::random(&mut *rng),
            beta: Fr::random(&mut *rng),
            gamma: Fr::random(&mut *rng),
            delta: Fr::random(&mut *rng),
            tau: Fr::random(&mut *rng),
        }
    }
}

/// Random parameters and the H query in coset evaluation form that goes with them.
pub struct RandomSet {
    /// The parameters.
    pub params: Parameters<Bls12>,
    /// Their H query in coset evaluation form ([`super::coset_h`]).
    pub coset_h: Vec<G1Affine>,
}

/// Random parameters for `circuit` (a blank one will do: no value is asked for).
pub fn random_parameters<C: Circuit<Fr>>(circuit: C, rng: &mut impl RngCore) -> Result<RandomSet> {
    let secrets = Secrets::draw(rng);
    let started = Instant::now();
    let r1cs = R1cs::record(circuit).context("recording the circuit's constraints")?;
    log::debug!(
        "params: constraints recorded in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    parameters_for(&r1cs, &secrets)
}

fn parameters_for(r1cs: &R1cs, s: &Secrets) -> Result<RandomSet> {
    let counts = r1cs.counts();
    let (inputs, aux) = (counts.inputs as usize, counts.aux as usize);
    let domain = Domain::new(counts.constraints as usize)?;
    let gamma_inv = Option::<Fr>::from(s.gamma.invert()).context("gamma is zero")?;
    let delta_inv = Option::<Fr>::from(s.delta.invert()).context("delta is zero")?;

    let phase = Phase::start();
    let lagrange = domain.lagrange_at(s.tau)?;
    let [at, bt, ct] = evaluate_at_tau(r1cs, &lagrange, inputs, aux);
    drop(lagrange);
    phase.done("QAP evaluated at tau");

    // (beta·A + alpha·B + C) over gamma for inputs, over delta for aux.
    let ext: Vec<Fr> = (0..inputs + aux)
        .into_par_iter()
        .map(|j| {
            let inv = if j < inputs { gamma_inv } else { delta_inv };
            (s.beta * at[j] + s.alpha * bt[j] + ct[j]) * inv
        })
        .collect();
    if let Some(j) = ext[inputs..].iter().position(|e| bool::from(e.is_zero())) {
        return Err(SynthesisError::UnconstrainedVariable)
            .with_context(|| format!("aux variable {j} is in no constraint"));
    }
    let nonzero = |v: &[Fr]| -> Vec<Fr> {
        v.iter()
            .copied()
            .filter(|x| !bool::from(x.is_zero()))
            .collect()
    };
    let (a_scalars, b_scalars) = (nonzero(&at), nonzero(&bt));
    drop((at, ct));

    let g1 = FixedBase::<G1Projective>::new(s.g1);
    let g2 = FixedBase::<G2Projective>::new(s.g2);
    let phase = Phase::start();
    let h = g1.multiply_all(&domain.h_scalars(s.tau, delta_inv));
    let phase = phase.next("H");
    let coset_h = g1.multiply_all(&coset_h::scalars_at_tau(
        domain.m,
        s.tau,
        domain.z(s.tau) * delta_inv,
    )?);
    let phase = phase.next("H in coset evaluation form");
    let ic = g1.multiply_all(&ext[..inputs]);
    let l = g1.multiply_all(&ext[inputs..]);
    drop(ext);
    let phase = phase.next("IC and L");
    let a = g1.multiply_all(&a_scalars);
    let phase = phase.next("A");
    let b_g1 = g1.multiply_all(&b_scalars);
    let phase = phase.next("B in G1");
    let b_g2 = g2.multiply_all(&b_scalars);
    phase.done("B in G2");

    let (g1, g2) = (s.g1, s.g2);
    let vk = VerifyingKey::<Bls12> {
        alpha_g1: (g1 * s.alpha).to_affine(),
        beta_g1: (g1 * s.beta).to_affine(),
        beta_g2: (g2 * s.beta).to_affine(),
        gamma_g2: (g2 * s.gamma).to_affine(),
        delta_g1: (g1 * s.delta).to_affine(),
        delta_g2: (g2 * s.delta).to_affine(),
        ic,
    };
    Ok(RandomSet {
        params: Parameters {
            vk,
            h: Arc::new(h),
            l: Arc::new(l),
            a: Arc::new(a),
            b_g1: Arc::new(b_g1),
            b_g2: Arc::new(b_g2),
        },
        coset_h,
    })
}

/// Writes random parameters for the circuit `blank` makes (a blank one: no value is asked
/// for) to `params_path` unless a file is there, the `.vk` beside it from the `.params`
/// file that is there (see [`write_set`]), and the coset H query beside them when these
/// parameters are the ones there.
pub fn generate_set<C: bellperson::Circuit<blstrs::Scalar>>(
    blank: impl FnOnce() -> C,
    params_path: &Path,
    vk_path: &Path,
) -> Result<()> {
    if !params_path.is_file() {
        let started = std::time::Instant::now();
        let set = random_parameters(blank(), &mut rand::rngs::OsRng)?;
        if write_set(&set.params, params_path, vk_path)? {
            coset_h::save(&set.coset_h, params_path)?;
        }
        log::info!(
            "generated {} in {:.1} s",
            params_path.display(),
            started.elapsed().as_secs_f64()
        );
    } else if !vk_path.is_file() {
        write_vk_of(params_path, vk_path)?;
    }
    Ok(())
}

/// Writes a parameter set as filecoin-proofs keeps it: the `.params` file, then the `.vk`
/// file read back from the `.params` file that is there. Neither replaces a file already
/// present, so two processes generating at once end with one set whose two files agree
/// (the second's parameters are discarded). False when the `.params` file was there.
pub fn write_set(params: &Parameters<Bls12>, params_path: &Path, vk_path: &Path) -> Result<bool> {
    if let Some(dir) = params_path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let is_written = crate::atomic_file::write_new_with(params_path, |file| {
        let mut out = BufWriter::with_capacity(8 << 20, file);
        params.write(&mut out)?;
        out.flush()?;
        Ok(())
    })?;
    write_vk_of(params_path, vk_path)?;
    Ok(is_written)
}

/// Writes the `.vk` file of the `.params` file at `params_path` (its head), unless it is
/// there already; one that is there must be that key.
pub fn write_vk_of(params_path: &Path, vk_path: &Path) -> Result<()> {
    let vk = read_vk_of(params_path)?;
    let mut vk_bytes = Vec::new();
    vk.write(&mut vk_bytes)?;
    match std::fs::read(vk_path) {
        Ok(existing) if existing == vk_bytes => Ok(()),
        Ok(_) => bail!(
            "{} does not belong to {} (hint: remove both and generate them again)",
            vk_path.display(),
            params_path.display()
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            crate::atomic_file::write_new_with(vk_path, |file| {
                file.write_all(&vk_bytes)?;
                Ok(())
            })?;
            Ok(())
        }
        Err(e) => Err(e).with_context(|| format!("reading {}", vk_path.display())),
    }
}

/// The verifying key at the head of a `.params` file.
fn read_vk_of(params_path: &Path) -> Result<VerifyingKey<Bls12>> {
    let file =
        File::open(params_path).with_context(|| format!("opening {}", params_path.display()))?;
    let mut reader = BufReader::new(file.take(64 << 20));
    VerifyingKey::read(&mut reader)
        .with_context(|| format!("reading the verifying key of {}", params_path.display()))
}

/// Logs how long each step took, at debug.
struct Phase(Instant);

impl Phase {
    fn start() -> Phase {
        Phase(Instant::now())
    }

    fn done(self, what: &str) {
        log::debug!("params: {what} in {:.1} s", self.0.elapsed().as_secs_f64());
    }

    fn next(self, what: &str) -> Phase {
        self.done(what);
        Phase::start()
    }
}

/// The evaluation domain: `m` roots of unity, `m` the constraints rounded up to a power of
/// two, as bellperson's `EvaluationDomain` picks it.
struct Domain {
    m: usize,
    omega: Fr,
}

impl Domain {
    fn new(constraints: usize) -> Result<Domain> {
        let m = constraints.max(1).next_power_of_two();
        let exp = m.trailing_zeros();
        ensure!(
            exp <= Fr::S,
            "{constraints} constraints need a domain of 2^{exp}, over the field's 2^{}",
            Fr::S
        );
        let mut omega = Fr::ROOT_OF_UNITY;
        for _ in exp..Fr::S {
            omega = omega.square();
        }
        Ok(Domain { m, omega })
    }

    /// `Z(tau) = tau^m - 1`.
    fn z(&self, tau: Fr) -> Fr {
        tau.pow_vartime([self.m as u64]) - Fr::ONE
    }

    /// `L_i(tau)` for every `i < m`.
    fn lagrange_at(&self, tau: Fr) -> Result<Vec<Fr>> {
        let z = self.z(tau);
        ensure!(
            !bool::from(z.is_zero()),
            "tau is a root of unity of the domain"
        );
        let m_inv = Option::<Fr>::from(Fr::from(self.m as u64).invert()).context("m is zero")?;
        let scale = z * m_inv;
        let mut out = vec![Fr::ZERO; self.m];
        out.par_chunks_mut(POINTS_PER_TASK)
            .enumerate()
            .for_each(|(chunk, values)| {
                let first = (chunk * POINTS_PER_TASK) as u64;
                let mut omega_i = self.omega.pow_vartime([first]);
                let mut numerators = Vec::with_capacity(values.len());
                for value in values.iter_mut() {
                    *value = tau - omega_i;
                    numerators.push(omega_i);
                    omega_i *= self.omega;
                }
                values.iter_mut().batch_invert();
                for (value, omega_i) in values.iter_mut().zip(numerators) {
                    *value *= omega_i * scale;
                }
            });
        Ok(out)
    }

    /// `tau^i · Z(tau) / delta` for `i < m - 1`: the H query's scalars.
    fn h_scalars(&self, tau: Fr, delta_inv: Fr) -> Vec<Fr> {
        let coeff = self.z(tau) * delta_inv;
        let mut out = vec![Fr::ZERO; self.m - 1];
        out.par_chunks_mut(POINTS_PER_TASK)
            .enumerate()
            .for_each(|(chunk, values)| {
                let mut power = tau.pow_vartime([(chunk * POINTS_PER_TASK) as u64]) * coeff;
                for value in values {
                    *value = power;
                    power *= tau;
                }
            });
        out
    }
}

/// `[A_j(tau), B_j(tau), C_j(tau)]` for every variable `j`, inputs first, then aux.
fn evaluate_at_tau(r1cs: &R1cs, lagrange: &[Fr], inputs: usize, aux: usize) -> [Vec<Fr>; 3] {
    let one = Fr::ONE;
    let minus_one = -Fr::ONE;
    let coeffs = ConstraintMatrices::coefficients(r1cs);
    let column_sums = |which: usize| -> Vec<Fr> {
        let (row_ptr, entries) = ConstraintMatrices::matrix(r1cs, which);
        let mut sums = vec![Fr::ZERO; inputs + aux];
        for (row, l) in lagrange.iter().enumerate().take(row_ptr.len() - 1) {
            for &e in &entries[row_ptr[row] as usize..row_ptr[row + 1] as usize] {
                let (column, coeff) = decode_entry(e);
                let j = match column {
                    Column::Input(i) => i,
                    Column::Aux(i) => inputs + i,
                };
                let c = coeffs[coeff as usize];
                if c == one {
                    sums[j] += l;
                } else if c == minus_one {
                    sums[j] -= l;
                } else {
                    sums[j] += *l * c;
                }
            }
        }
        sums
    };
    let (a, (b, c)) = rayon::join(
        || column_sums(0),
        || rayon::join(|| column_sums(1), || column_sums(2)),
    );
    [a, b, c]
}

/// A projective group whose points blst keeps in Jacobian coordinates
/// (`x = X/Z²`, `y = Y/Z³`), normalized many at a time with one field inversion.
trait Jacobian:
    Group + Curve + for<'a> AddAssign<&'a <Self as Curve>::AffineRepr> + Send + Sync
where
    <Self as Curve>::AffineRepr: PrimeCurveAffine + Send + Sync,
{
    /// The base field of the coordinates.
    type Base: Field;
    fn z(&self) -> Self::Base;
    /// The affine point, given `1/Z` (the point is not the identity).
    fn to_affine_with(&self, z_inv: Self::Base) -> Self::AffineRepr;
}

impl Jacobian for G1Projective {
    type Base = Fp;
    fn z(&self) -> Fp {
        G1Projective::z(self)
    }
    fn to_affine_with(&self, z_inv: Fp) -> G1Affine {
        let z_inv2 = z_inv.square();
        G1Affine::from_raw_unchecked(self.x() * z_inv2, self.y() * z_inv2 * z_inv, false)
    }
}

impl Jacobian for G2Projective {
    type Base = Fp2;
    fn z(&self) -> Fp2 {
        G2Projective::z(self)
    }
    fn to_affine_with(&self, z_inv: Fp2) -> G2Affine {
        let z_inv2 = z_inv.square();
        G2Affine::from_raw_unchecked(self.x() * z_inv2, self.y() * z_inv2 * z_inv, false)
    }
}

/// Affine forms of `points`, with one inversion for all of them.
fn normalize<G: Jacobian>(points: &[G], out: &mut [G::AffineRepr])
where
    G::AffineRepr: PrimeCurveAffine + Send + Sync,
{
    let mut z_inv: Vec<G::Base> = points.iter().map(Jacobian::z).collect();
    z_inv.iter_mut().batch_invert();
    for ((point, z_inv), out) in points.iter().zip(z_inv).zip(out) {
        *out = if bool::from(point.is_identity()) {
            G::AffineRepr::identity()
        } else {
            point.to_affine_with(z_inv)
        };
    }
}

/// Fixed-base multiplication by one generator: `windows[w][d - 1] = base · d · 256^w`, so
/// `base · s` is one mixed addition per non-zero byte of `s`.
struct FixedBase<G: Jacobian>
where
    G::AffineRepr: PrimeCurveAffine + Send + Sync,
{
    windows: Vec<Vec<G::AffineRepr>>,
}

impl<G: Jacobian> FixedBase<G>
where
    G::AffineRepr: PrimeCurveAffine + Send + Sync,
{
    fn new(base: G) -> Self {
        let bytes = Fr::ZERO.to_repr().as_ref().len();
        let mut window_base = base;
        let windows = (0..bytes)
            .map(|_| {
                let mut multiples = Vec::with_capacity(255);
                let mut acc = window_base;
                for _ in 0..255 {
                    multiples.push(acc);
                    acc += window_base;
                }
                window_base = acc; // 256 · the window's base
                let mut affine = vec![G::AffineRepr::identity(); multiples.len()];
                normalize(&multiples, &mut affine);
                affine
            })
            .collect();
        FixedBase { windows }
    }

    fn multiply(&self, scalar: &Fr) -> G {
        let repr = scalar.to_repr();
        let mut acc = G::identity();
        for (window, &byte) in self.windows.iter().zip(repr.as_ref()) {
            if byte != 0 {
                acc += &window[byte as usize - 1];
            }
        }
        acc
    }

    /// `base · s` for every scalar, in affine form.
    fn multiply_all(&self, scalars: &[Fr]) -> Vec<G::AffineRepr> {
        let mut out = vec![G::AffineRepr::identity(); scalars.len()];
        out.par_chunks_mut(POINTS_PER_TASK)
            .zip(scalars.par_chunks(POINTS_PER_TASK))
            .for_each(|(out, scalars)| {
                let points: Vec<G> = scalars.iter().map(|s| self.multiply(s)).collect();
                normalize(&points, out);
            });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bellperson::{ConstraintSystem, Variable};
    use rand::SeedableRng;

    /// Inputs, aux variables that appear only in A, only in B or only in C, coefficients of
    /// all kinds, and enough constraints for a domain of several chunks.
    struct Mixed {
        constraints: usize,
    }

    impl Circuit<Fr> for Mixed {
        fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
            let x = cs.alloc_input(|| "x", || Ok(Fr::from(3)))?;
            let y = cs.alloc_input(|| "y", || Ok(Fr::from(5)))?;
            let mut vars: Vec<Variable> = vec![x, y];
            for i in 0..self.constraints {
                let a = vars[i % vars.len()];
                let b = vars[(i * 7 + 1) % vars.len()];
                let v = cs.alloc(|| format!("v{i}"), || Ok(Fr::from(i as u64)))?;
                let coeff = Fr::from((i as u64) * 0x9e37_79b9 + 2);
                match i % 4 {
                    0 => cs.enforce(|| "ab", |lc| lc + a, |lc| lc + (coeff, b), |lc| lc + v),
                    1 => cs.enforce(
                        || "a-only",
                        |lc| lc + v - a,
                        |lc| lc + CS::one(),
                        |lc| lc + (coeff, b),
                    ),
                    2 => cs.enforce(|| "b-only", |lc| lc + a, |lc| lc + v + b, |lc| lc),
                    _ => cs.enforce(
                        || "c-only",
                        |lc| lc + (-Fr::ONE, a),
                        |lc| lc + CS::one(),
                        |lc| lc + (coeff, v) + x,
                    ),
                }
                vars.push(v);
            }
            Ok(())
        }
    }

    #[test]
    fn the_same_bytes_as_bellpersons_generator_for_the_same_secrets() {
        for (constraints, seed) in [(5, 1), (3000, 2), (9000, 3)] {
            let mut ours = Vec::new();
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
            random_parameters(Mixed { constraints }, &mut rng)
                .expect("ours")
                .params
                .write(&mut ours)
                .expect("write ours");
            let mut theirs = Vec::new();
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
            bellperson::groth16::generate_random_parameters::<Bls12, _, _>(
                Mixed { constraints },
                &mut rng,
            )
            .expect("bellperson's")
            .write(&mut theirs)
            .expect("write theirs");
            assert_eq!(
                ours.len(),
                theirs.len(),
                "{constraints} constraints: length"
            );
            let first = ours.iter().zip(&theirs).position(|(x, y)| x != y);
            assert_eq!(
                first, None,
                "{constraints} constraints: first differing byte"
            );
        }
    }

    #[test]
    fn the_coset_query_made_from_tau_is_the_one_derived_from_h() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(4);
        let set = random_parameters(Mixed { constraints: 600 }, &mut rng).expect("set");
        assert_eq!(set.coset_h.len(), set.params.h.len() + 1);
        assert_eq!(
            set.coset_h,
            coset_h::derive(&set.params.h).expect("derived")
        );
    }

    #[test]
    fn batch_normalization_agrees_with_one_at_a_time() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let mut points: Vec<G1Projective> =
            (0..50).map(|_| G1Projective::random(&mut rng)).collect();
        points[17] = G1Projective::identity();
        let mut out = vec![G1Affine::identity(); points.len()];
        normalize(&points, &mut out);
        for (p, a) in points.iter().zip(&out) {
            assert_eq!(p.to_affine(), *a);
        }
        let points: Vec<G2Projective> = (0..20).map(|_| G2Projective::random(&mut rng)).collect();
        let mut out = vec![G2Affine::identity(); points.len()];
        normalize(&points, &mut out);
        for (p, a) in points.iter().zip(&out) {
            assert_eq!(p.to_affine(), *a);
        }
    }

    #[test]
    fn fixed_base_multiplication_agrees_with_the_group_law() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(8);
        let base = G2Projective::random(&mut rng);
        let table = FixedBase::new(base);
        let mut scalars: Vec<Fr> = (0..40).map(|_| Fr::random(&mut rng)).collect();
        scalars.extend([Fr::ZERO, Fr::ONE, -Fr::ONE, Fr::from(256)]);
        for s in scalars {
            assert_eq!(table.multiply(&s), base * s, "scalar {s:?}");
        }
    }

    #[test]
    fn an_unconstrained_variable_is_refused() {
        struct Loose;
        impl Circuit<Fr> for Loose {
            fn synthesize<CS: ConstraintSystem<Fr>>(
                self,
                cs: &mut CS,
            ) -> Result<(), SynthesisError> {
                let a = cs.alloc(|| "a", || Ok(Fr::ONE))?;
                cs.alloc(|| "loose", || Ok(Fr::ONE))?;
                cs.enforce(|| "a", |lc| lc + a, |lc| lc + a, |lc| lc + a);
                Ok(())
            }
        }
        let mut rng = rand::rngs::StdRng::seed_from_u64(9);
        let error = random_parameters(Loose, &mut rng).err().expect("refused");
        assert!(format!("{error:#}").contains("aux variable 1"), "{error:#}");
    }
}
