//! The ec-gpu backend: cuzk's Groth16 ([`groth16`](super::groth16)) with its quotient and
//! multiexps on one GPU per prover, through ec-gpu-gen's CUDA kernels. Each prover's kernels,
//! buffers and resident bases live on its device; a step that fails there is done again on
//! the CPU by [`ProverKernels`](super::kernels::ProverKernels), which carries these kernels.
//!
//! A prover loads the module build.rs compiled (FFT, G1 and G2 multiexps, quotient kernels)
//! and keeps for the run what each proof would otherwise allocate: the quotient's vectors,
//! the multiexps' buckets, an exponents buffer, pinned staging, and as many of the
//! parameters' bases as its share of the device holds ([`memory`]).
//!
//! Its memory arithmetic ([`memory`]) is plain and built everywhere, so it is tested without
//! a GPU; the device code needs the `cuda` feature.

pub mod memory;

#[cfg(feature = "cuda")]
mod buffers;
#[cfg(feature = "cuda")]
mod device_quotient;
#[cfg(feature = "cuda")]
mod gpu_kernels;
#[cfg(feature = "cuda")]
mod msm;

#[cfg(feature = "cuda")]
pub use buffers::GpuError;
#[cfg(feature = "cuda")]
pub use gpu_kernels::{open, plan, GpuGroup, GpuKernels, Opened};
#[cfg(feature = "cuda")]
pub use msm::Bases;
