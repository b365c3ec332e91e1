//! Loading a `.params` file at the speed of the disk and the cores.
//!
//! bellperson's `Parameters::read` decodes the points one by one on one thread, about
//! 150 MB/s: minutes for a 47 GB production set. Here the file is read in large pieces by
//! every core at once (positioned reads, so no shared cursor) and each piece is decoded into
//! its place in the final vectors. Extra memory is one piece per thread, never a second copy
//! of the file, so the page cache is the only other holder of the bytes.
//!
//! The layout is bellperson's: the verifying key, then `h`, `l`, `a`, `b_g1` (G1, 96 bytes
//! uncompressed) and `b_g2` (G2, 192 bytes), each after a big-endian u32 count. Points are not
//! subgroup-checked (the files are checked by digest when fetched; the check would cost
//! minutes), but each must be on its curve and none may be the point at infinity, as
//! bellperson's reader insists.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::mem::MaybeUninit;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use bellperson::groth16::{Parameters, VerifyingKey};
use blstrs::{Bls12, G1Affine, G2Affine};
use group::prime::PrimeCurveAffine;
use rayon::prelude::*;

use crate::r1cs::R1cs;

/// Bytes of one uncompressed G1 point.
pub const G1_BYTES: u64 = 96;
/// Bytes of one uncompressed G2 point.
pub const G2_BYTES: u64 = 192;

/// Points decoded per task: big enough for sequential reads, small enough to spread.
const POINTS_PER_PIECE: usize = 1 << 16;

/// Where each vector of a parameter file lies, read from its counts without decoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParamsLayout {
    /// Bytes of the verifying key.
    pub vk_bytes: u64,
    /// Public inputs plus one (the verifying key's `ic` count).
    pub ic: u64,
    /// `h` points: the FFT domain size minus one.
    pub h: u64,
    /// `l` points: one per aux variable.
    pub l: u64,
    /// `a` points: inputs plus aux variables used in some A.
    pub a: u64,
    /// `b_g1` points (and as many `b_g2`): variables used in some B.
    pub b: u64,
}

impl ParamsLayout {
    /// Reads the counts of the file at `path`, skipping over the points.
    pub fn read(path: &Path) -> std::io::Result<ParamsLayout> {
        let mut file = BufReader::new(File::open(path)?);
        let u32_at = |file: &mut BufReader<File>| -> std::io::Result<u64> {
            let mut bytes = [0u8; 4];
            file.read_exact(&mut bytes)?;
            Ok(u64::from(u32::from_be_bytes(bytes)))
        };
        // alpha_g1, beta_g1, beta_g2, gamma_g2, delta_g1, delta_g2, then ic.
        let fixed = 3 * G1_BYTES + 3 * G2_BYTES;
        file.seek(SeekFrom::Start(fixed))?;
        let ic = u32_at(&mut file)?;
        let vk_bytes = fixed + 4 + ic * G1_BYTES;
        file.seek(SeekFrom::Start(vk_bytes))?;
        let mut counts = [0u64; 5];
        for (i, count) in counts.iter_mut().enumerate() {
            *count = u32_at(&mut file)?;
            let size = if i == 4 { G2_BYTES } else { G1_BYTES };
            file.seek(SeekFrom::Current((*count * size) as i64))?;
        }
        let [h, l, a, b_g1, b_g2] = counts;
        if b_g1 != b_g2 {
            return Err(invalid("b_g1 and b_g2 have different lengths"));
        }
        Ok(ParamsLayout {
            vk_bytes,
            ic,
            h,
            l,
            a,
            b: b_g1,
        })
    }

    /// Bytes the decoded parameters occupy in memory (about the file's size).
    pub fn memory_bytes(&self) -> u64 {
        (self.h + self.l + self.a + self.b) * G1_BYTES + self.b * G2_BYTES + self.vk_bytes
    }

    /// Size of the file this layout describes.
    pub fn file_bytes(&self) -> u64 {
        self.vk_bytes + 5 * 4 + (self.h + self.l + self.a + self.b) * G1_BYTES + self.b * G2_BYTES
    }
}

fn invalid(what: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_owned())
}

/// Opens the parameter file at `path` with its layout, checked against the file's length.
fn open_whole(path: &Path) -> std::io::Result<(ParamsLayout, File)> {
    let layout = ParamsLayout::read(path)?;
    let file = File::open(path)?;
    let len = file.metadata()?.len();
    if len != layout.file_bytes() {
        return Err(invalid(&format!(
            "the file has {len} bytes but its counts say {} (truncated or damaged)",
            layout.file_bytes()
        )));
    }
    Ok((layout, file))
}

/// Reads the parameter file at `path` with every core.
pub fn read_parameters(path: &Path) -> std::io::Result<Parameters<Bls12>> {
    let (layout, file) = open_whole(path)?;
    let vk = {
        let mut head = vec![0u8; layout.vk_bytes as usize];
        file.read_exact_at(&mut head, 0)?;
        VerifyingKey::<Bls12>::read(&head[..])?
    };
    let mut offset = layout.vk_bytes + 4;
    let mut next_g1 = |count: u64| -> std::io::Result<Arc<Vec<G1Affine>>> {
        let points = read_points::<G1Affine, 96>(&file, offset, count)?;
        offset += count * G1_BYTES + 4;
        Ok(Arc::new(points))
    };
    let h = next_g1(layout.h)?;
    let l = next_g1(layout.l)?;
    let a = next_g1(layout.a)?;
    let b_g1 = next_g1(layout.b)?;
    let b_g2 = Arc::new(read_points::<G2Affine, 192>(&file, offset, layout.b)?);
    Ok(Parameters {
        vk,
        h,
        l,
        a,
        b_g1,
        b_g2,
    })
}

/// Reads only the H query of the parameter file at `path`, with every core.
pub fn read_h_query(path: &Path) -> std::io::Result<Vec<G1Affine>> {
    let (layout, file) = open_whole(path)?;
    read_points::<G1Affine, 96>(&file, layout.vk_bytes + 4, layout.h)
}

/// A point type with a fixed-size uncompressed encoding.
pub trait Uncompressed: PrimeCurveAffine + Send + Sync {
    /// Decodes one point, or `None` when it is not on its curve.
    fn decode(bytes: &[u8]) -> Option<Self>;
}

impl Uncompressed for G1Affine {
    fn decode(bytes: &[u8]) -> Option<Self> {
        let bytes: &[u8; 96] = bytes.try_into().ok()?;
        Option::from(G1Affine::from_uncompressed_unchecked(bytes))
    }
}

impl Uncompressed for G2Affine {
    fn decode(bytes: &[u8]) -> Option<Self> {
        let bytes: &[u8; 192] = bytes.try_into().ok()?;
        Option::from(G2Affine::from_uncompressed_unchecked(bytes))
    }
}

/// `count` points of `SIZE` bytes starting at byte `offset`, read and decoded in parallel.
fn read_points<G: Uncompressed, const SIZE: usize>(
    file: &File,
    offset: u64,
    count: u64,
) -> std::io::Result<Vec<G>> {
    let count = usize::try_from(count).map_err(|_| invalid("too many points"))?;
    let mut points: Vec<G> = Vec::with_capacity(count);
    decode_points_into::<G, SIZE>(file, offset, &mut points.spare_capacity_mut()[..count])?;
    // SAFETY: every one of the `count` slots was written, or we returned an error.
    unsafe { points.set_len(count) };
    Ok(points)
}

/// Fills `slots` with the points of `SIZE` bytes that start at byte `offset` of `file`,
/// read and decoded by every core; each slot is written, or an error is returned. The GPU
/// backend decodes straight into pinned memory with it.
pub fn decode_points_into<G: Uncompressed, const SIZE: usize>(
    file: &File,
    offset: u64,
    slots: &mut [MaybeUninit<G>],
) -> std::io::Result<()> {
    slots
        .par_chunks_mut(POINTS_PER_PIECE)
        .enumerate()
        .try_for_each_init(
            || vec![0u8; POINTS_PER_PIECE * SIZE],
            |buffer, (piece, slots): (usize, &mut [MaybeUninit<G>])| {
                let bytes = &mut buffer[..slots.len() * SIZE];
                let at = offset + (piece * POINTS_PER_PIECE * SIZE) as u64;
                file.read_exact_at(bytes, at)?;
                for (slot, encoded) in slots.iter_mut().zip(bytes.chunks_exact(SIZE)) {
                    let point =
                        G::decode(encoded).ok_or_else(|| invalid("a point is not on its curve"))?;
                    if bool::from(point.is_identity()) {
                        return Err(invalid("a point is the point at infinity"));
                    }
                    slot.write(point);
                }
                Ok(())
            },
        )
}

/// Checks that `r1cs` (loaded from `file`) has the counts the parameters at `params_path`
/// were made for: inputs, aux variables, the FFT domain, and the A and B densities.
pub fn check_recorded(r1cs: &R1cs, file: &Path, params_path: &Path) -> anyhow::Result<()> {
    let layout = ParamsLayout::read(params_path)
        .with_context(|| format!("reading the counts of {}", params_path.display()))?;
    let recorded = r1cs.parameter_counts();
    let expected = [layout.ic, layout.l, layout.h, layout.a, layout.b];
    anyhow::ensure!(
        recorded == expected,
        "{}: recorded for another circuit than the parameters {} (inputs, aux, h, a, b: {recorded:?}, the parameters hold {expected:?}); they are recorded again",
        file.display(),
        params_path.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::tests::CubeCircuit;
    use bellperson::groth16::generate_random_parameters;
    use rand::SeedableRng;

    #[test]
    fn reads_what_bellperson_writes_and_refuses_damage() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        let params = generate_random_parameters::<Bls12, _, _>(CubeCircuit { x: None }, &mut rng)
            .expect("parameters");
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("cube.params");
        let mut bytes = Vec::new();
        params.write(&mut bytes).expect("write");
        std::fs::write(&path, &bytes).expect("file");

        let layout = ParamsLayout::read(&path).expect("layout");
        assert_eq!(layout.file_bytes(), bytes.len() as u64);
        assert_eq!(
            (layout.h, layout.l, layout.a, layout.b),
            (
                params.h.len() as u64,
                params.l.len() as u64,
                params.a.len() as u64,
                params.b_g1.len() as u64
            )
        );
        assert!(read_parameters(&path).expect("read") == params);

        // Truncated: the counts promise more than the file holds.
        std::fs::write(&path, &bytes[..bytes.len() - 10]).expect("file");
        assert!(read_parameters(&path).is_err());
        // A point of `l` moved off the curve.
        let mut damaged = bytes.clone();
        let first_l = (layout.vk_bytes + 4 + layout.h * G1_BYTES + 4) as usize;
        damaged[first_l + 50] ^= 0x55;
        std::fs::write(&path, &damaged).expect("file");
        let Err(err) = read_parameters(&path) else {
            panic!("a point off the curve was accepted")
        };
        assert!(err.to_string().contains("not on its curve"), "{err}");
    }
}
