//! A parameter file's H query in the form that saves the quotient's last transform: derived
//! once, kept beside the file, loaded with it.
//!
//! The prover's H term is `Σ_{i<m-1} h_i H_i`, where `h` are the coefficients of the
//! quotient and `m` the domain size. The quotient is computed as evaluations `e_j` on the
//! coset `g·ω^j` and interpolated back by a coset inverse transform:
//! `h_i = (1/m) g^-i Σ_j e_j ω^-ij`. Putting that into the sum,
//!
//! ```text
//! Σ_{i<m-1} h_i H_i = Σ_j e_j H'_j,    H'_j = (1/m) Σ_{i<m-1} (g^-1 ω^-j)^i H_i
//! ```
//!
//! an identity of group elements that holds for any `e` (the dropped top coefficient
//! `h_{m-1}` meets no base on either side), so a prover multiplying the coset evaluations
//! into `H'` gets the same H term, and the same proof, without the seventh transform.
//! `H'` is the transform of `P_i = (g^-i / m) H_i` (with `P_{m-1}` the identity) at the
//! powers of `ω^-1`: a transform over points, whose every butterfly multiplies a point by a
//! twiddle ([`derive`]): about `m/2 · log m` multiplications of 70 µs each on one core,
//! minutes for a 2KiB set on a few cores and hours for 32GiB, so it is done once, on request
//! (`cuzk params coset-h`), and kept. Parameters cuzk generates itself know their `tau`, so
//! [`scalars_at_tau`] gives `H'` directly as multiples of the generator, as cheaply as `H`.
//!
//! The file sits beside the parameters, named after them and a digest of the `.vk` beside
//! them ([`coset_h_path`]): `H` is fixed by the setup's secrets, which the verifying key
//! fixes too, so parameters of another setup (regenerated test parameters, another file
//! under the same name) have another key and never meet this file. It holds a header (the
//! magic, the format, `m`, the digest) and the `m` points uncompressed as parameter files
//! hold theirs; loading checks the header against the parameters and every point on its
//! curve. It is written whole or not at all and never over a file that is there, since
//! another process may be reading it ([`atomic_file::write_new_with`]), and read under a
//! shared lock, so `cuzk params prune` leaves it while a run loads it.

use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{ensure, Context, Result};
use blstrs::{G1Affine, G1Projective, Scalar as Fr};
use ec_gpu_gen::multiexp_cpu::FullDensity;
use ff::{BatchInvert, Field, PrimeField};
use group::prime::PrimeCurveAffine;
use group::{Curve, Group};
use rayon::prelude::*;

use super::load::{decode_points_into, G1_BYTES};
use crate::atomic_file;
use crate::fft::{self, Direction, Domain, Twiddles};
use crate::msm;

/// The first bytes of a coset-H file.
const MAGIC: &[u8; 8] = b"cuzkCSH\0";
/// The version of the file's layout.
pub const VERSION: u32 = 1;
/// Header bytes: magic, version, a reserved word, `m`, the digest of the `.vk`.
const HEADER_BYTES: u64 = 8 + 4 + 4 + 8 + 32;
/// Hex digits of the digest in the file's name.
const NAME_HEX_LEN: usize = 16;
/// Points multiplied and normalized per task.
const POINTS_PER_TASK: usize = 1 << 12;

/// The H query in coset evaluation form: `m` points, `H'_j` at index `j`.
pub type CosetH = Arc<Vec<G1Affine>>;

/// The digest of the verifying key (its file's bytes) that a coset-H file is tied to.
fn vk_digest(vk: &[u8]) -> [u8; 32] {
    let mut hasher = blake3::Hasher::new();
    hasher.update(b"cuzk-coset-h");
    hasher.update(&VERSION.to_le_bytes());
    hasher.update(vk);
    *hasher.finalize().as_bytes()
}

/// The digest of the `.vk` beside the parameters at `params_path`.
fn vk_digest_of(params_path: &Path) -> Result<[u8; 32]> {
    let vk_path = params_path.with_extension("vk");
    let vk = std::fs::read(&vk_path).with_context(|| {
        format!(
            "reading the verifying key {} that names the coset H query (hint: it belongs beside the parameters; fetch or generate the set again)",
            vk_path.display()
        )
    })?;
    Ok(vk_digest(&vk))
}

/// Where the coset H query of the parameters at `params_path` is kept: beside them, named
/// after them and the digest of the `.vk` beside them.
pub fn coset_h_path(params_path: &Path) -> Result<PathBuf> {
    let digest = vk_digest_of(params_path)?;
    let stem = params_path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok(params_path.with_file_name(format!(
        "cuzk-coset-h-v{VERSION}-{stem}-{}.points",
        hex::encode(&digest[..NAME_HEX_LEN / 2])
    )))
}

/// Derives `H'` from the H query `h` (`m - 1` points, `m` a power of two): `m` points.
pub fn derive(h: &[G1Affine]) -> Result<Vec<G1Affine>> {
    let m = h.len() + 1;
    ensure!(
        m.is_power_of_two(),
        "an H query of {} points is not one short of a power of two",
        h.len()
    );
    let domain = Domain::for_constraints(m)?;
    // P_i = (g^-i / m) H_i, and P_{m-1} the identity.
    let mut points: Vec<G1Projective> = h
        .par_chunks(POINTS_PER_TASK)
        .enumerate()
        .flat_map_iter(|(chunk, h)| {
            let first = (chunk * POINTS_PER_TASK) as u64;
            let mut scale = domain.g_inv.pow_vartime([first]) * domain.m_inv;
            h.iter().map(move |point| {
                let scaled = G1Projective::from(point) * scale;
                scale *= domain.g_inv;
                scaled
            })
        })
        .collect();
    points.push(G1Projective::identity());
    // Σ_i P_i ω^-ij: the inverse transform (without its 1/m), left in bit-reversed order.
    fft::dif(
        &mut points,
        &Twiddles::new(domain.omega, m),
        Direction::Inverse,
    );
    fft::bit_reverse(&mut points);
    Ok(normalize(&points))
}

/// The scalars `s_j` with `H'_j = s_j · g1` for parameters made from the secret `tau`, where
/// `H_i = tau^i · z_over_delta · g1` (`z_over_delta = Z(tau) / delta`).
///
/// With `y_j = tau · g^-1 · ω^-j`, `H'_j = (z_over_delta / m) Σ_{i<m-1} y_j^i · g1`, and the
/// geometric sum is `(y^(m-1) - 1) / (y - 1) = (K - y) / (y (y - 1))` with `K = y^m =
/// (tau / g)^m`, the same for every `j`.
pub fn scalars_at_tau(m: usize, tau: Fr, z_over_delta: Fr) -> Result<Vec<Fr>> {
    let domain = Domain::for_constraints(m)?;
    ensure!(domain.m == m, "a domain of {m} is not a power of two");
    let y0 = tau * domain.g_inv;
    let k = y0.pow_vartime([m as u64]);
    let scale = z_over_delta * domain.m_inv;
    let mut out = vec![Fr::ZERO; m];
    out.par_chunks_mut(POINTS_PER_TASK)
        .enumerate()
        .try_for_each(|(chunk, values)| {
            let first = (chunk * POINTS_PER_TASK) as u64;
            let mut y = y0 * domain.omega_inv.pow_vartime([first]);
            let mut ys = Vec::with_capacity(values.len());
            for value in values.iter_mut() {
                *value = y * (y - Fr::ONE);
                ys.push(y);
                y *= domain.omega_inv;
            }
            ensure!(
                values.iter().all(|v| !bool::from(v.is_zero())),
                "tau lies on the coset or is zero"
            );
            values.iter_mut().batch_invert();
            for (value, y) in values.iter_mut().zip(ys) {
                *value *= (k - y) * scale;
            }
            Ok(())
        })?;
    Ok(out)
}

/// True when `coset` is the H query in coset evaluation form of `h`, checked by one random
/// combination: for random `r`, `Σ_j r_j H'_j` must equal `Σ_{i<m-1} c_i H_i` with
/// `c_i = (g^-i / m) Σ_j r_j ω^-ij` (the inverse transform of `r`, scaled), which holds for
/// every `r` exactly when every `H'_j` is right; a wrong query passes with probability about
/// `1/|Fr|`. Two multiexps of `m` points: seconds for 2KiB, a minute or two for 32GiB on 16
/// cores, against the derivation's minutes to hours. Nothing is written before it passes.
pub fn matches(h: &[G1Affine], coset: &[G1Affine]) -> Result<bool> {
    let m = coset.len();
    ensure!(
        m == h.len() + 1,
        "{} coset points for an H query of {}",
        m,
        h.len()
    );
    let domain = Domain::for_constraints(m)?;
    ensure!(domain.m == m, "a domain of {m} is not a power of two");
    let r: Vec<Fr> = (0..m)
        .into_par_iter()
        .map_init(rand::thread_rng, |rng, _| Fr::random(rng))
        .collect();
    let mut c = r.clone();
    fft::dif(&mut c, &Twiddles::new(domain.omega, m), Direction::Inverse);
    fft::bit_reverse(&mut c);
    c.truncate(m - 1);
    c.par_chunks_mut(POINTS_PER_TASK)
        .enumerate()
        .for_each(|(chunk, values)| {
            let first = (chunk * POINTS_PER_TASK) as u64;
            let mut scale = domain.g_inv.pow_vartime([first]) * domain.m_inv;
            for value in values {
                *value *= scale;
                scale *= domain.g_inv;
            }
        });
    let exponents = |v: &[Fr]| -> Vec<_> { v.par_iter().map(|x| x.to_repr()).collect() };
    let through_coset = msm::multiexp(coset, 0, &FullDensity, &exponents(&r))?;
    let through_h = msm::multiexp(h, 0, &FullDensity, &exponents(&c))?;
    Ok(through_coset == through_h)
}

/// Affine forms of `points`, in parallel.
pub fn normalize(points: &[G1Projective]) -> Vec<G1Affine> {
    let mut out = vec![G1Affine::identity(); points.len()];
    out.par_chunks_mut(POINTS_PER_TASK)
        .zip(points.par_chunks(POINTS_PER_TASK))
        .for_each(|(out, points)| G1Projective::batch_normalize(points, out));
    out
}

/// Writes `points`, the coset H query of the parameters at `params_path`, beside them,
/// unless a file is there already (left as it is: another process may be reading it).
/// Returns the file's path and whether this call wrote it.
pub fn save(points: &[G1Affine], params_path: &Path) -> Result<(PathBuf, bool)> {
    save_with(params_path, points.len() as u64, |out| {
        for point in points {
            out.write_all(&point.to_uncompressed())?;
        }
        Ok(())
    })
}

/// [`save`] for `count` points that `write_points` writes, uncompressed, in order (the
/// benchmark's shape parameters write theirs without holding them).
pub fn save_with(
    params_path: &Path,
    count: u64,
    write_points: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<(PathBuf, bool)> {
    let path = coset_h_path(params_path)?;
    let digest = vk_digest_of(params_path)?;
    atomic_file::remove_stale_temporaries_of(&path);
    let is_written = atomic_file::write_new_with(&path, |file| {
        let mut out = BufWriter::with_capacity(8 << 20, file);
        out.write_all(MAGIC)?;
        out.write_all(&VERSION.to_le_bytes())?;
        out.write_all(&0u32.to_le_bytes())?;
        out.write_all(&count.to_le_bytes())?;
        out.write_all(&digest)?;
        write_points(&mut out)?;
        out.flush()?;
        Ok(())
    })?;
    Ok((path, is_written))
}

/// Why a coset H query beside a parameter file is not used.
#[derive(Debug, thiserror::Error)]
pub enum CosetHError {
    /// No file has been derived for these parameters.
    #[error("no coset H query is kept for {params} (derive one with `cuzk params coset-h`)")]
    Missing {
        /// The parameter file.
        params: String,
    },
    /// The file is there and cannot be used.
    #[error("{path}: {reason} (hint: delete it and run `cuzk params coset-h` again)")]
    Unusable {
        /// The file.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// Loads the coset H query kept beside the parameters at `params_path`, whose domain has
/// `m` points.
pub fn load(params_path: &Path, m: usize) -> Result<CosetH, CosetHError> {
    let located = locate(params_path, m)?;
    read_points(&located, m).map_err(|e| CosetHError::Unusable {
        path: located.path.display().to_string(),
        reason: format!("{e:#}"),
    })
}

/// A coset H query file whose header fits its parameters: its points are checked as they
/// are decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Located {
    /// The file.
    pub path: PathBuf,
    /// Where its first point is.
    pub offset: u64,
    /// Its points, uncompressed as in a parameter file.
    pub count: u64,
}

/// Finds the coset H query kept beside the parameters at `params_path`, whose domain has
/// `m` points, and checks its header and length against them.
pub fn locate(params_path: &Path, m: usize) -> Result<Located, CosetHError> {
    let path = coset_h_path(params_path).map_err(|e| CosetHError::Unusable {
        path: params_path.display().to_string(),
        reason: format!("{e:#}"),
    })?;
    if !path.is_file() {
        return Err(CosetHError::Missing {
            params: params_path.display().to_string(),
        });
    }
    let checked = vk_digest_of(params_path).and_then(|digest| check_header(&path, m, &digest));
    match checked {
        Ok(()) => Ok(Located {
            path,
            offset: HEADER_BYTES,
            count: m as u64,
        }),
        Err(e) => Err(CosetHError::Unusable {
            path: path.display().to_string(),
            reason: format!("{e:#}"),
        }),
    }
}

/// Checks the header of the file at `path` against `m` and the verifying key's digest, and
/// its length against its count.
fn check_header(path: &Path, m: usize, digest: &[u8; 32]) -> Result<()> {
    let mut file = File::open(path).context("opening it")?;
    let mut header = [0u8; HEADER_BYTES as usize];
    file.read_exact(&mut header)
        .context("reading its header (the file is shorter)")?;
    ensure!(&header[..8] == MAGIC, "not a cuzk coset H file");
    let version = u32::from_le_bytes(header[8..12].try_into()?);
    ensure!(
        version == VERSION,
        "format version {version}, this cuzk reads {VERSION}"
    );
    let count = u64::from_le_bytes(header[16..24].try_into()?);
    ensure!(
        count == m as u64,
        "{count} points, the parameters' domain has {m}"
    );
    ensure!(
        &header[24..56] == digest,
        "derived from parameters with another verifying key"
    );
    let expected = HEADER_BYTES + count * G1_BYTES;
    let len = file.metadata().context("reading its length")?.len();
    ensure!(
        len == expected,
        "{len} bytes where {count} points take {expected} (incomplete or damaged)"
    );
    Ok(())
}

/// The points of the located file.
fn read_points(located: &Located, m: usize) -> Result<CosetH> {
    let file = File::open(&located.path).context("opening it")?;
    // Held while read: `cuzk params prune` removes no file a run is reading. A file system
    // without locks only loses that guard.
    if let Err(err) = file.lock_shared() {
        log::debug!(
            "{}: no shared lock ({err}); read all the same",
            located.path.display()
        );
    }
    let mut points: Vec<G1Affine> = Vec::with_capacity(m);
    decode_points_into::<G1Affine, { G1_BYTES as usize }>(
        &file,
        located.offset,
        &mut points.spare_capacity_mut()[..m],
    )
    .context("decoding its points (damaged)")?;
    // SAFETY: every one of the `m` slots was written, or we returned an error.
    unsafe { points.set_len(m) };
    Ok(Arc::new(points))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn rng(seed: u64) -> rand::rngs::StdRng {
        rand::rngs::StdRng::seed_from_u64(seed)
    }

    /// `H_i = tau^i · z_over_delta · g1` for `i < m - 1`.
    fn h_query(m: usize, tau: Fr, z_over_delta: Fr, g1: G1Projective) -> Vec<G1Affine> {
        let mut scalar = z_over_delta;
        let points: Vec<G1Projective> = (0..m - 1)
            .map(|_| {
                let point = g1 * scalar;
                scalar *= tau;
                point
            })
            .collect();
        normalize(&points)
    }

    /// The quotient's last steps as the prover takes them: coefficients from coset
    /// evaluations `e` (the coset inverse transform, top coefficient dropped).
    fn coefficients_of(e: &[Fr]) -> Vec<Fr> {
        let m = e.len();
        let domain = Domain::for_constraints(m).expect("domain");
        (0..m - 1)
            .map(|i| {
                let mut sum = Fr::ZERO;
                for (j, e_j) in e.iter().enumerate() {
                    sum += *e_j * domain.omega_inv.pow_vartime([(i * j) as u64]);
                }
                sum * domain.g_inv.pow_vartime([i as u64]) * domain.m_inv
            })
            .collect()
    }

    #[test]
    fn the_coset_query_gives_the_h_term_of_the_coefficients_for_any_evaluations() {
        let mut rng = rng(1);
        for log_m in [1, 3, 6] {
            let m = 1usize << log_m;
            let (tau, zd) = (Fr::random(&mut rng), Fr::random(&mut rng));
            let g1 = G1Projective::random(&mut rng);
            let h = h_query(m, tau, zd, g1);
            let derived = derive(&h).expect("derive");
            assert_eq!(derived.len(), m);
            // Any evaluations, not only those of a true quotient.
            let e: Vec<Fr> = (0..m).map(|_| Fr::random(&mut rng)).collect();
            let through_coefficients: G1Projective = coefficients_of(&e)
                .iter()
                .zip(&h)
                .map(|(c, p)| G1Projective::from(p) * c)
                .sum();
            let through_evaluations: G1Projective = e
                .iter()
                .zip(&derived)
                .map(|(e, p)| G1Projective::from(p) * e)
                .sum();
            assert_eq!(through_evaluations, through_coefficients, "m = {m}");
            // And the secrets' shortcut gives the same points.
            let at_tau: Vec<G1Affine> = scalars_at_tau(m, tau, zd)
                .expect("scalars")
                .iter()
                .map(|s| (g1 * s).to_affine())
                .collect();
            assert_eq!(at_tau, derived, "m = {m}");
        }
    }

    #[test]
    fn the_random_combination_tells_a_right_query_from_one_wrong_point() {
        let mut rng = rng(3);
        let m = 64;
        let g1 = G1Projective::random(&mut rng);
        let h = h_query(m, Fr::random(&mut rng), Fr::random(&mut rng), g1);
        let mut coset = derive(&h).expect("derive");
        assert!(matches(&h, &coset).expect("check"));
        coset[m / 3] = (G1Projective::from(coset[m / 3]) + g1).to_affine();
        assert!(!matches(&h, &coset).expect("check"));
        assert!(matches(&h, &coset[1..]).is_err(), "another length");
    }

    #[test]
    fn a_query_whose_length_is_not_a_domain_is_refused() {
        let h = vec![G1Affine::generator(); 4];
        assert!(derive(&h).is_err());
    }

    fn params_with_vk(dir: &Path, vk: &[u8]) -> PathBuf {
        let params = dir.join("v28-test.params");
        std::fs::write(&params, b"not read").expect("params");
        std::fs::write(params.with_extension("vk"), vk).expect("vk");
        params
    }

    #[test]
    fn a_saved_query_loads_for_its_parameters_only_and_is_never_replaced() {
        let dir = tempfile::tempdir().expect("tempdir");
        let params = params_with_vk(dir.path(), b"key one");
        let mut rng = rng(2);
        let m = 8;
        let h = h_query(
            m,
            Fr::random(&mut rng),
            Fr::random(&mut rng),
            G1Projective::random(&mut rng),
        );
        let derived = derive(&h).expect("derive");
        assert!(matches!(load(&params, m), Err(CosetHError::Missing { .. })));
        let (path, is_written) = save(&derived, &params).expect("save");
        assert!(is_written);
        assert_eq!(*load(&params, m).expect("load"), derived);
        // Another domain size is refused, naming the file.
        let err = load(&params, 16).expect_err("wrong m").to_string();
        assert!(
            err.contains("8 points") && err.contains(&path.display().to_string()),
            "{err}"
        );
        // A second save leaves the first file.
        let (_, is_written) = save(&derived[..4], &params).expect("save again");
        assert!(!is_written);
        assert_eq!(*load(&params, m).expect("load"), derived);
        // Another verifying key names another file: this one is not taken for it.
        std::fs::write(params.with_extension("vk"), b"key two").expect("vk");
        assert!(matches!(load(&params, m), Err(CosetHError::Missing { .. })));
        // A damaged or cut file is refused.
        std::fs::write(params.with_extension("vk"), b"key one").expect("vk");
        let mut bytes = std::fs::read(&path).expect("read");
        let at = HEADER_BYTES as usize + 5;
        bytes[at] ^= 0x55;
        std::fs::write(&path, &bytes).expect("damage");
        assert!(matches!(
            load(&params, m),
            Err(CosetHError::Unusable { .. })
        ));
        bytes.truncate(bytes.len() - 1);
        std::fs::write(&path, &bytes).expect("cut");
        let err = load(&params, m).expect_err("cut").to_string();
        assert!(err.contains("incomplete"), "{err}");
    }
}
