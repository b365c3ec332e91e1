//! The H query in coset evaluation form derived on a GPU (`coset_h.cuh`): the transform
//! `params::coset_h::derive` does on the CPU, over the same scalars: at 32GiB about 2·10^9
//! multiplications of a point, hours on a CPU. The caller
//! checks the result against the file's H query (`params::coset_h::matches`) before
//! keeping it, and derives on the CPU where the GPU fails.

use blstrs::G1Affine;

use super::device::{CudaError, CudaGpu};
use crate::fft::{Domain, DomainTooLarge};
use crate::params::coset_h;

/// Domains below this size are derived on the CPU: a few seconds there.
pub const SMALLEST_ON_GPU: usize = 1 << 10;

/// Why the GPU did not derive the query.
#[derive(Debug, thiserror::Error)]
pub enum GpuDeriveError {
    /// The query is not one short of a power of two the field has roots for.
    #[error("an H query of {0} points is not one short of a supported power of two")]
    Domain(usize),
    /// The GPU failed (out of memory on a small card, say).
    #[error(transparent)]
    Gpu(#[from] CudaError),
}

impl From<DomainTooLarge> for GpuDeriveError {
    fn from(err: DomainTooLarge) -> Self {
        GpuDeriveError::Domain(err.0)
    }
}

/// `H'` from the H query `h` (`m - 1` points) on GPU 0: `m` points, `H'_j` at index `j`.
pub fn derive(h: &[G1Affine]) -> Result<Vec<G1Affine>, GpuDeriveError> {
    let m = h.len() + 1;
    if !m.is_power_of_two() {
        return Err(GpuDeriveError::Domain(h.len()));
    }
    let domain = Domain::for_constraints(m)?;
    let mut gpu = CudaGpu::open(0)?;
    let points = gpu.derive_coset_h(h, &[domain.g_inv, domain.m_inv, domain.omega_inv])?;
    Ok(coset_h::normalize(&points))
}
