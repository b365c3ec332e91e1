//! The `cuda` backend: cuzk's own Groth16 on sppark's NTT and multiexp kernels
//! (`groth16.cu`), with the parameters resident on each GPU, one prover thread per GPU.
//!
//! - **Parameters** ([`ResidentParams`]): the host keeps only the verifying key and the
//!   file's layout. Each prover uploads the bases to its GPU at its first partition of a
//!   set, straight from the file through one pinned staging buffer, and keeps them for the
//!   run. Bases that do not fit beside a partition's working set (a card smaller than the
//!   parameters, or `--gpu-memory`) stay in pinned host memory, loaded once, and stream
//!   through the multiexp's chunk buffers at each proof.
//! - **Pre-compiled constraints**: where they fit beside every base, each prover uploads a
//!   circuit's A and B matrices once, and partitions arrive as their witness alone
//!   ([`SynthesizedPartition::deferred`]): a = A·w and b = B·w are evaluated on the GPU,
//!   and c = a ∘ b, which equals C·w for a witness that satisfies the circuit (C is not
//!   needed there). Elsewhere a, b and c come from the host.
//! - **Per partition, on the GPU**: the witness (and a, b, c from the host, written by the
//!   host's evaluation straight into the prover's pinned sets, `abc_sets`) go up once;
//!   the quotient, the density filtering of the A and B queries and all five multiexps (B
//!   in G2 too) run there. The host computes the densities' prefix counts before and the
//!   combination with fresh `r`, `s` after ([`groth16::assemble`]).
//! - **Failures**: a CUDA error comes back as a [`CudaError`] naming the GPU and the step;
//!   it fails the partition, never the process (see the safety rules in `groth16.cu`).
//!
//! Its plan ([`residency`]: which bases a GPU keeps, what stays on the host) is plain
//! arithmetic built everywhere, so it is tested without a GPU; the device code needs the
//! `cuda` feature.

pub mod residency;

#[cfg(feature = "cuda")]
mod abc_sets;
#[cfg(feature = "cuda")]
pub mod coset_h;
#[cfg(feature = "cuda")]
mod device;
#[cfg(feature = "cuda")]
mod ffi;
#[cfg(feature = "cuda")]
mod params;
#[cfg(feature = "cuda")]
mod prover;

#[cfg(feature = "cuda")]
pub use device::{
    gpu_count, ArithmeticRate, BatchOnes, BenchBases, CudaError, CudaGpu, MultiexpTiming,
    OnesTiming, PinnedBuffer,
};
#[cfg(feature = "cuda")]
pub use params::{ResidentParams, ResidentParamsError};
#[cfg(feature = "cuda")]
pub use prover::{CudaProveError, CudaProver};
pub use residency::BaseSet;

#[cfg(feature = "cuda")]
use super::gpu::{self, env::GpuEnv, GpuSelection};
#[cfg(feature = "cuda")]
use super::{ParamsKind, Prover, ProverPlan};

/// One cuda prover per selected GPU (`cuda-N`), or `None` when no GPU is there. Each takes
/// its GPU's free memory, or `gpu_memory` when smaller; the parameters are planned for the
/// least of them.
#[cfg(feature = "cuda")]
pub fn plan(
    gpus: &GpuSelection,
    gpu_memory: Option<u64>,
    env: &GpuEnv,
) -> anyhow::Result<Option<ProverPlan>> {
    let count = gpu_count();
    if count == 0 {
        return Ok(None);
    }
    let indices: Vec<usize> = match gpus {
        GpuSelection::All => (0..count).collect(),
        GpuSelection::None => return Ok(None),
        GpuSelection::Indices(indices) => {
            if let Some(bad) = indices.iter().find(|&&i| i >= count) {
                anyhow::bail!("--gpus {bad}: this process sees {count} GPU(s), numbered from 0 (hint: CUDA_VISIBLE_DEVICES renumbers them)");
            }
            let mut unique = indices.clone();
            unique.sort_unstable();
            unique.dedup();
            unique
        }
    };
    let mut provers = Vec::new();
    let mut notes = Vec::new();
    let mut least = u64::MAX;
    for index in &indices {
        let mut prover =
            CudaProver::open(*index, crate::event::WorkerName::Cuda(*index).to_string())?;
        let free = prover.free_bytes()? as u64;
        let take = gpu_memory.map_or(free, |cap| cap.min(free));
        match gpu_memory {
            Some(_) => prover.limit_to(take)?,
            None => prover.take_at_most(take),
        }
        least = least.min(take);
        notes.push(format!(
            "{}{}: {} with {} free; cuzk takes up to {}",
            env.visible_prefix(),
            prover.name(),
            prover.gpu().name(),
            crate::memory::show_bytes(free),
            crate::memory::show_bytes(take)
        ));
        provers.push(prover);
    }
    let kind = ParamsKind::Resident {
        device_bytes: least,
    };
    let described = gpu::gpu_descriptions();
    Ok(Some(ProverPlan {
        provers: provers
            .into_iter()
            .map(|p| Prover::Cuda(Box::new(p), kind))
            .collect(),
        notes,
        cpu_reason: None,
        gpus: described
            .into_iter()
            .filter(|d| indices.contains(&d.index))
            .collect(),
    }))
}
