//! A parameter set as the cuda backend proves with it ([`ResidentParams`]): the verifying key
//! and the file's layout on the host, the bases each GPU keeps (uploaded by each prover at
//! its first partition of the set), and in pinned host memory the bases that do not fit.

use std::mem::MaybeUninit;
use std::path::{Path, PathBuf};

use bellperson::groth16::VerifyingKey;
use blstrs::{Bls12, G1Affine, G2Affine};
use log::info;

use super::device::{CudaError, PinnedBuffer};
use super::residency::{plan_residency, set_extent, BaseSet};
use crate::params::load::{decode_points_into, ParamsLayout};

/// Why a parameter set could not be made ready for the cuda backend.
#[derive(Debug, thiserror::Error)]
pub enum ResidentParamsError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Read {
        /// The parameter file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Pinned host memory for streamed bases could not be had.
    #[error("{path}: keeping the {set} bases in pinned host memory: {source}")]
    Pinned {
        /// The parameter file.
        path: PathBuf,
        /// Which bases.
        set: &'static str,
        /// Why.
        #[source]
        source: CudaError,
    },
}

/// A parameter set as the cuda backend proves with it: the verifying key and the file's
/// layout on the host; the bases on each GPU, uploaded by each prover at first use.
pub struct ResidentParams {
    pub(super) path: PathBuf,
    pub(super) layout: ParamsLayout,
    vk: VerifyingKey<Bls12>,
    /// Bases kept on every GPU (a mask of [`BaseSet::bit`]s).
    pub(super) resident: u32,
    /// The others, in pinned host memory, streamed at each proof.
    streamed: Vec<(BaseSet, PinnedBuffer)>,
}

impl std::fmt::Debug for ResidentParams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ResidentParams({})", self.path.display())
    }
}

impl ResidentParams {
    /// Reads the verifying key and layout of `path` and decides which bases each GPU keeps,
    /// given `device_bytes`, the least device memory any prover may take (free memory, or
    /// `--gpu-memory` when smaller). Bases left over are loaded into pinned host memory now.
    pub fn load(path: &Path, device_bytes: u64) -> Result<ResidentParams, ResidentParamsError> {
        let read = |source| ResidentParamsError::Read {
            path: path.to_owned(),
            source,
        };
        let layout = ParamsLayout::read(path).map_err(read)?;
        let vk = {
            let file = std::fs::File::open(path).map_err(read)?;
            let mut head = vec![0u8; layout.vk_bytes as usize];
            std::os::unix::fs::FileExt::read_exact_at(&file, &mut head, 0).map_err(read)?;
            VerifyingKey::<Bls12>::read(&head[..]).map_err(read)?
        };
        let resident = plan_residency(&layout, device_bytes);
        let mut streamed = Vec::new();
        for set in BaseSet::ALL {
            if resident & set.bit() != 0 {
                continue;
            }
            let (offset, count) = set_extent(&layout, set);
            let mut buffer =
                PinnedBuffer::new(count as usize * set.point_bytes()).map_err(|source| {
                    ResidentParamsError::Pinned {
                        path: path.to_owned(),
                        set: set.name(),
                        source,
                    }
                })?;
            let file = std::fs::File::open(path).map_err(read)?;
            decode_set(&file, set, offset, buffer.as_mut_slice()).map_err(read)?;
            streamed.push((set, buffer));
        }
        let names: Vec<&str> = BaseSet::ALL
            .iter()
            .filter(|s| resident & s.bit() == 0)
            .map(|s| s.name())
            .collect();
        if !names.is_empty() {
            info!(
                "{}: {} GiB of GPU memory per prover keep all but the {} bases, which stream from pinned host memory at each proof",
                path.display(),
                device_bytes >> 30,
                names.join(", ")
            );
        }
        Ok(ResidentParams {
            path: path.to_owned(),
            layout,
            vk,
            resident,
            streamed,
        })
    }

    /// Bytes this set keeps in host memory: the streamed bases (the verifying key is small).
    pub fn host_bytes(&self) -> u64 {
        self.streamed
            .iter()
            .map(|(_, b)| b.len() as u64)
            .sum::<u64>()
            + self.layout.vk_bytes
    }

    /// The verifying key.
    pub fn vk(&self) -> &VerifyingKey<Bls12> {
        &self.vk
    }

    /// Where the streamed `set` is in pinned host memory; null when it is resident.
    pub(super) fn streamed(&self, set: BaseSet) -> *const u8 {
        self.streamed
            .iter()
            .find(|(s, _)| *s == set)
            .map_or(std::ptr::null(), |(_, b)| b.as_slice().as_ptr())
    }
}

/// Decodes `set`'s points, starting at byte `offset` of `file`, into `out` (Montgomery
/// affine, the layout the GPU reads), in parallel.
pub(super) fn decode_set(
    file: &std::fs::File,
    set: BaseSet,
    offset: u64,
    out: &mut [u8],
) -> std::io::Result<()> {
    // SAFETY (both arms): `out` is plain bytes sized for whole points of `set`; blstrs'
    // affine points are plain data of exactly `point_bytes()` bytes (blst's layout), and
    // every slot is written by `decode_points_into` or it fails.
    match set {
        BaseSet::BG2 => {
            let slots = unsafe {
                std::slice::from_raw_parts_mut(
                    out.as_mut_ptr() as *mut MaybeUninit<G2Affine>,
                    out.len() / std::mem::size_of::<G2Affine>(),
                )
            };
            decode_points_into::<G2Affine, 192>(file, offset, slots)
        }
        _ => {
            let slots = unsafe {
                std::slice::from_raw_parts_mut(
                    out.as_mut_ptr() as *mut MaybeUninit<G1Affine>,
                    out.len() / std::mem::size_of::<G1Affine>(),
                )
            };
            decode_points_into::<G1Affine, 96>(file, offset, slots)
        }
    }
}
