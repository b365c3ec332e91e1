//! A parameter set as the cuda backend proves with it ([`ResidentParams`]): the verifying key
//! and the file's layout on the host, the bases each GPU keeps (uploaded by each prover at
//! its first partition of the set), and in pinned host memory the bases that do not fit.
//!
//! H's bases come from the H query in coset evaluation form when one is kept beside the
//! file ([`crate::params::coset_h`]): `m` points, one more than the file's own `m - 1`, so
//! the GPU tells the two apart by their count and its quotient skips the last inverse
//! transform. Its points are checked when the set loads; a damaged file is named in a
//! warning and the file's own query is used instead, so a run never fails on it.

use std::mem::MaybeUninit;
use std::path::{Path, PathBuf};

use bellperson::groth16::VerifyingKey;
use blstrs::{Bls12, G1Affine, G2Affine};
use log::{info, warn};

use super::device::{CudaError, PinnedBuffer};
use super::residency::{plan_residency, set_extent, BaseSet};
use crate::params::coset_h::{self, CosetHError, Located};
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

/// Where a set's points are read from: a file, the byte of its first point, and how many.
#[derive(Clone, Copy, Debug)]
pub(super) struct Extent<'a> {
    pub path: &'a Path,
    pub offset: u64,
    pub count: u64,
}

/// The coset H query a set takes: where it is, and the file held open under a shared lock
/// for as long as the set lives, so `cuzk params prune` leaves it and every upload reads
/// the points that were checked.
struct CosetSource {
    located: Located,
    file: std::fs::File,
}

/// A parameter set as the cuda backend proves with it: the verifying key and the file's
/// layout on the host; the bases on each GPU, uploaded by each prover at first use.
pub struct ResidentParams {
    pub(super) path: PathBuf,
    pub(super) layout: ParamsLayout,
    vk: VerifyingKey<Bls12>,
    /// H's bases in coset evaluation form, when a checked file is kept beside the set;
    /// else the file's own H query.
    h_on_coset: Option<CosetSource>,
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
        Self::load_with(path, device_bytes, true)
    }

    /// [`ResidentParams::load`], taking H's bases in coset evaluation form only when
    /// `coset_h` (a prover compared against the file's own query takes `false`).
    pub fn load_with(
        path: &Path,
        device_bytes: u64,
        coset_h: bool,
    ) -> Result<ResidentParams, ResidentParamsError> {
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
        let mut params = ResidentParams {
            path: path.to_owned(),
            layout,
            vk,
            h_on_coset: None,
            resident,
            streamed: Vec::new(),
        };
        if coset_h {
            params.h_on_coset = params.checked_coset_h();
        }
        for set in BaseSet::ALL {
            if resident & set.bit() != 0 {
                continue;
            }
            let buffer = match params.stream(set) {
                Err(ResidentParamsError::Read { source, .. })
                    if set == BaseSet::H && params.h_on_coset.is_some() =>
                {
                    params.refuse_coset_h(&source.to_string());
                    params.stream(set)?
                }
                other => other?,
            };
            params.streamed.push((set, buffer));
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
        if let Some(CosetSource { located, .. }) = &params.h_on_coset {
            info!(
                "{}: H's bases in coset evaluation form from {}; the quotient takes six transforms",
                path.display(),
                located.path.display()
            );
        }
        Ok(params)
    }

    /// The coset H query kept beside the set, when its header fits the set and, where H is
    /// resident (its points are decoded only at the upload), every point decodes.
    fn checked_coset_h(&self) -> Option<CosetSource> {
        let m = (self.layout.h + 1).next_power_of_two() as usize;
        let located = match coset_h::locate(&self.path, m) {
            Ok(located) => located,
            Err(CosetHError::Missing { .. }) => return None,
            Err(err) => {
                warn!("{err}; H's bases come from the parameter file's own query");
                return None;
            }
        };
        let refuse = |err: std::io::Error| {
            warn!(
                "{}: {err}; H's bases come from the parameter file's own query",
                located.path.display()
            );
        };
        let file = match std::fs::File::open(&located.path) {
            Ok(file) => file,
            Err(err) => {
                refuse(err);
                return None;
            }
        };
        // A file system without locks only loses prune's guard.
        if let Err(err) = file.lock_shared() {
            log::debug!(
                "{}: no shared lock ({err}); read all the same",
                located.path.display()
            );
        }
        if self.resident & BaseSet::H.bit() != 0 {
            if let Err(err) = check_points(&file, &located) {
                refuse(err);
                return None;
            }
        }
        Some(CosetSource { located, file })
    }

    /// Gives up the coset H query for the file's own, naming why.
    fn refuse_coset_h(&mut self, why: &str) {
        if let Some(CosetSource { located, .. }) = self.h_on_coset.take() {
            warn!(
                "{}: {why}; H's bases come from the parameter file's own query",
                located.path.display()
            );
        }
    }

    /// `set`'s points decoded into a new pinned buffer.
    fn stream(&self, set: BaseSet) -> Result<PinnedBuffer, ResidentParamsError> {
        let extent = self.extent(set);
        let read = |source| ResidentParamsError::Read {
            path: extent.path.to_owned(),
            source,
        };
        let mut buffer =
            PinnedBuffer::new(extent.count as usize * set.point_bytes()).map_err(|source| {
                ResidentParamsError::Pinned {
                    path: self.path.clone(),
                    set: set.name(),
                    source,
                }
            })?;
        let file = self.open(set).map_err(read)?;
        decode_set(&file, set, extent.offset, buffer.as_mut_slice()).map_err(read)?;
        Ok(buffer)
    }

    /// Where `set`'s points are read from: H's from the coset file when the set takes it.
    pub(super) fn extent(&self, set: BaseSet) -> Extent<'_> {
        match (&self.h_on_coset, set) {
            (Some(CosetSource { located, .. }), BaseSet::H) => Extent {
                path: &located.path,
                offset: located.offset,
                count: located.count,
            },
            _ => {
                let (offset, count) = set_extent(&self.layout, set);
                Extent {
                    path: &self.path,
                    offset,
                    count,
                }
            }
        }
    }

    /// The file `set`'s points are read from ([`ResidentParams::extent`]): the coset H
    /// query through the handle the set holds.
    pub(super) fn open(&self, set: BaseSet) -> std::io::Result<std::fs::File> {
        match (&self.h_on_coset, set) {
            (Some(CosetSource { file, .. }), BaseSet::H) => file.try_clone(),
            _ => std::fs::File::open(&self.path),
        }
    }

    /// True when H's bases are in coset evaluation form.
    pub fn h_on_coset(&self) -> bool {
        self.h_on_coset.is_some()
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

/// Decodes every point of a coset H query, a piece at a time, keeping none.
fn check_points(file: &std::fs::File, located: &Located) -> std::io::Result<()> {
    const PIECE: usize = 1 << 20;
    let mut scratch = vec![0u8; PIECE * BaseSet::H.point_bytes()];
    let mut first = 0u64;
    while first < located.count {
        let take = PIECE.min((located.count - first) as usize);
        let at = located.offset + first * BaseSet::H.file_point_bytes();
        decode_set(
            file,
            BaseSet::H,
            at,
            &mut scratch[..take * BaseSet::H.point_bytes()],
        )?;
        first += take as u64;
    }
    Ok(())
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
