//! The kernels cuzk's Groth16 ([`groth16`](super::groth16)) runs its quotient and multiexps
//! on, and the one place each step is dispatched: the CPU's ([`cpu`](super::cpu)), or one
//! GPU's ec-gpu kernels (`ec_gpu`, under the `cuda` feature) with the CPU taking over a step
//! that fails there.
//!
//! Each prover thread owns one [`ProverKernels`] for the whole run. On the CPU they use the
//! shared worker pool. A GPU prover of the ec-gpu backend carries its device's kernels in
//! them, set up once for that device only, so two prover threads on two GPUs never wait on
//! each other (bellperson's locked kernels take a machine-wide lock and are rebuilt for every
//! proof). A GPU step that fails is done again on the CPU where its inputs are still on the
//! host, and fails the partition where they are not (the H multiexp over a quotient left on
//! the device).

use std::sync::Arc;

use blstrs::{G1Affine, G1Projective, G2Affine, Scalar as Fr};
use ec_gpu_gen::multiexp_cpu::{FullDensity, QueryDensity, SourceBuilder};
use ec_gpu_gen::threadpool::Worker;
use ff::PrimeField;
use group::prime::PrimeCurveAffine;
use rayon::prelude::*;

use super::cpu;
#[cfg(feature = "cuda")]
use super::ec_gpu;
use super::gpu::env::GpuEnv;
use super::gpu::free_memory::GpuDescription;
use super::gpu::GpuSelection;
use super::msm;
use super::quotient::{Domain, QuotientForm};

/// Exponents of a multiexp, in the representation the kernels take.
pub type Exponents = Arc<Vec<<Fr as PrimeField>::Repr>>;

/// Scalars as multiexp exponents: plain integers, out of Montgomery form.
pub fn to_exponents(scalars: Vec<Fr>) -> Exponents {
    Arc::new(scalars.into_par_iter().map(|s| s.to_repr()).collect())
}

/// The quotient's coefficients as the H multiexp's exponents: on the host, or left on the
/// prover's GPU by [`ProverKernels::quotient`].
pub enum QuotientExponents {
    /// On the host.
    Host(Exponents),
    /// On the prover's GPU, this many.
    OnGpu(usize),
}

impl QuotientExponents {
    /// How many exponents: the domain size less one.
    pub fn len(&self) -> usize {
        match self {
            QuotientExponents::Host(exps) => exps.len(),
            QuotientExponents::OnGpu(n) => *n,
        }
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Why a multiexp failed where no other kernel could take it over.
#[derive(Debug, thiserror::Error)]
pub enum MultiexpError {
    /// The CPU's multiexp failed.
    #[error("multiexp on the CPU: {0}")]
    Cpu(#[source] msm::TooFewBasesError),
    /// The H multiexp over a quotient left on the GPU failed there; the quotient is not on
    /// the host for the CPU to take over.
    #[cfg(feature = "cuda")]
    #[error("{prover}: GPU H multiexp failed: {source}")]
    Gpu {
        /// The prover.
        prover: String,
        /// What the GPU said.
        #[source]
        source: ec_gpu::GpuError,
    },
    /// The quotient is said to be on a GPU the prover does not have.
    #[error("{prover}: the quotient is on a GPU it does not have")]
    NoQuotient {
        /// The prover.
        prover: String,
    },
}

/// The quotient and multiexp kernels of one prover.
pub struct ProverKernels {
    name: String,
    /// GPU steps that failed and were done again on the CPU.
    gpu_fallbacks: usize,
    /// Why each GPU step fell back to the CPU since the prover thread last took them.
    fallbacks: Vec<String>,
    #[cfg(feature = "cuda")]
    gpu: Option<Box<ec_gpu::GpuKernels>>,
}

impl ProverKernels {
    /// Kernels on the CPU, using the shared worker pool.
    pub fn cpu(index: usize) -> ProverKernels {
        ProverKernels {
            name: crate::event::WorkerName::Cpu(index).to_string(),
            gpu_fallbacks: 0,
            fallbacks: Vec::new(),
            #[cfg(feature = "cuda")]
            gpu: None,
        }
    }

    /// Kernels on one GPU's ec-gpu `gpu`, the CPU taking over a step that fails there.
    #[cfg(feature = "cuda")]
    pub fn on_gpu(name: String, gpu: Box<ec_gpu::GpuKernels>) -> ProverKernels {
        ProverKernels {
            name,
            gpu_fallbacks: 0,
            fallbacks: Vec::new(),
            gpu: Some(gpu),
        }
    }

    /// The prover's name in the timeline: `cpu-N` or `gpu-N`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// True when the kernels run on a GPU.
    pub fn is_gpu(&self) -> bool {
        #[cfg(feature = "cuda")]
        return self.gpu.is_some();
        #[cfg(not(feature = "cuda"))]
        false
    }

    /// How many GPU steps failed and were done again on the CPU (each also logged): a check
    /// that compares GPU and CPU results must see none, or it compared the CPU with itself.
    pub fn gpu_fallbacks(&self) -> usize {
        self.gpu_fallbacks
    }

    /// Why each GPU step failed and was done again on the CPU since the last call, for the
    /// timeline: a run that quietly proves on the CPU must say so where it is looked at.
    pub fn take_fallbacks(&mut self) -> Vec<String> {
        std::mem::take(&mut self.fallbacks)
    }

    /// A GPU `step` failed with `err` and is done again on the CPU: counted, logged, kept.
    #[cfg(feature = "cuda")]
    fn fall_back(&mut self, step: &str, err: &dyn std::fmt::Display) {
        self.gpu_fallbacks += 1;
        let reason = format!("GPU {step} failed, done again on the CPU: {err}");
        log::warn!("{}: {reason}", self.name);
        self.fallbacks.push(reason);
    }

    /// Bytes of parameters its GPU keeps for it now (0 on the CPU).
    pub fn resident_bytes(&self) -> u64 {
        #[cfg(feature = "cuda")]
        if let Some(gpu) = &self.gpu {
            return gpu.resident_bytes();
        }
        0
    }

    /// Keeps no more than `resident_budget` bytes of bases on the GPU from now on and streams
    /// the rest `stream_chunk` bases per launch; for checks that must drive both paths on a
    /// small circuit. Nothing on the CPU.
    pub fn limit_gpu_memory(&mut self, resident_budget: u64, stream_chunk: usize) {
        #[cfg(feature = "cuda")]
        if let Some(gpu) = &mut self.gpu {
            gpu.limit(resident_budget, stream_chunk);
        }
        let _ = (resident_budget, stream_chunk);
    }

    /// The quotient `h = (a*b - c) / Z` over `domain` in `form` ([`quotient`]).
    ///
    /// On a GPU `h` stays there for [`ProverKernels::multiexp_quotient`]. The GPU only reads
    /// `a`, `b`, `c`, so when it fails they are whole and the CPU computes `h` instead.
    pub fn quotient(
        &mut self,
        worker: &Worker,
        domain: &Domain,
        a: Vec<Fr>,
        b: Vec<Fr>,
        c: Vec<Fr>,
        form: QuotientForm,
    ) -> QuotientExponents {
        // ec-gpu's quotient ends in coefficients; coset evaluations come from the CPU (a
        // GPU prover's parameters are loaded without the coset H query, so never here).
        #[cfg(feature = "cuda")]
        if let (Some(gpu), QuotientForm::Coefficients) = (&mut self.gpu, form) {
            match gpu.quotient(domain, &a, &b, &c) {
                Ok(n) => return QuotientExponents::OnGpu(n),
                Err(err) => self.fall_back("quotient", &err),
            }
        }
        QuotientExponents::Host(to_exponents(cpu::quotient(worker, domain, a, b, c, form)))
    }

    /// `sum_j h_j H_j` over the quotient's exponents, wherever they are.
    pub fn multiexp_quotient<S>(
        &mut self,
        worker: &Worker,
        bases: S,
        h: QuotientExponents,
    ) -> Result<G1Projective, MultiexpError>
    where
        S: SourceBuilder<G1Affine>,
    {
        match h {
            QuotientExponents::Host(exps) => self.multiexp(worker, bases, FullDensity, exps),
            QuotientExponents::OnGpu(_) => {
                #[cfg(feature = "cuda")]
                if let Some(gpu) = &mut self.gpu {
                    return gpu
                        .multiexp_h(&bases.get())
                        .map_err(|source| MultiexpError::Gpu {
                            prover: self.name.clone(),
                            source,
                        });
                }
                Err(MultiexpError::NoQuotient {
                    prover: self.name.clone(),
                })
            }
        }
    }

    /// `sum_i exps[i] * bases[i]` in G1 or G2 over the bases the density selects.
    pub(crate) fn multiexp<G, S, D, Q>(
        &mut self,
        worker: &Worker,
        bases: S,
        density: D,
        exps: Exponents,
    ) -> Result<G::Curve, MultiexpError>
    where
        G: ProverGroup,
        S: SourceBuilder<G>,
        for<'a> &'a Q: QueryDensity,
        D: Send + Sync + 'static + Clone + AsRef<Q>,
    {
        let bases = bases.get();
        #[cfg(feature = "cuda")]
        if let Some(gpu) = &mut self.gpu {
            // The GPU kernel takes dense inputs: keep only the exponents whose bases exist.
            let dense = density.as_ref().generate_exps::<Fr>(exps.clone());
            match gpu.multiexp::<G>(&bases, &dense) {
                Ok(sum) => return Ok(sum),
                Err(err) => self.fall_back("multiexp", &err),
            }
        }
        let _ = worker;
        cpu::multiexp(bases, density, &exps).map_err(MultiexpError::Cpu)
    }
}

/// A group a Groth16 proof has multiexps in (G1 or G2).
#[cfg(feature = "cuda")]
pub(crate) trait ProverGroup:
    PrimeCurveAffine<Scalar = Fr> + msm::AffinePoint + ec_gpu::GpuGroup + ::ec_gpu::GpuName
{
}

/// A group a Groth16 proof has multiexps in (G1 or G2).
#[cfg(not(feature = "cuda"))]
pub(crate) trait ProverGroup: PrimeCurveAffine<Scalar = Fr> + msm::AffinePoint {}

impl ProverGroup for G1Affine {}
impl ProverGroup for G2Affine {}

/// The kernels a run proves with, and what the user should hear about them.
pub struct KernelPlan {
    /// One per prover thread.
    pub provers: Vec<ProverKernels>,
    /// For the user: each GPU's physical device and what fits in its memory, GPUs that could
    /// not be used, a fall back to the CPU.
    pub notes: Vec<String>,
    /// Why the run proves on the CPU, when it does.
    pub cpu_reason: Option<String>,
    /// The GPUs the provers run on, each once.
    pub gpus: Vec<GpuDescription>,
}

impl KernelPlan {
    /// One CPU prover, because of `reason`.
    pub fn cpu(reason: String, notes: Vec<String>) -> KernelPlan {
        KernelPlan {
            provers: vec![ProverKernels::cpu(0)],
            notes,
            cpu_reason: Some(reason),
            gpus: Vec::new(),
        }
    }
}

/// The provers for a selection: up to `per_gpu` per usable GPU on ec-gpu's kernels (more than
/// one lets one prover's CPU-side work overlap another's kernels; fewer where the GPU's free
/// memory holds fewer, see `ec_gpu::memory`), or one CPU prover when no GPU is usable.
/// `GpuSelection::None` gives the CPU.
pub fn provers_for(selection: &GpuSelection, per_gpu: usize, env: &GpuEnv) -> KernelPlan {
    if *selection == GpuSelection::None {
        return KernelPlan::cpu("--gpus none".into(), Vec::new());
    }
    #[cfg(feature = "cuda")]
    {
        ec_gpu::plan(selection, per_gpu, env)
    }
    #[cfg(not(feature = "cuda"))]
    {
        let _ = (per_gpu, env);
        let reason = "this cuzk was built without the `cuda` feature".to_owned();
        // The default build proves on the CPU by design; only a list of GPUs asked for more.
        let notes = match selection {
            GpuSelection::Indices(_) => vec![format!(
                "{reason}: proving on the CPU (hint: build with scripts/build-cuda.sh)"
            )],
            _ => Vec::new(),
        };
        KernelPlan::cpu(reason, notes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_gpus_there_is_one_cpu_prover() {
        let plan = provers_for(&GpuSelection::None, 2, &GpuEnv::default());
        assert_eq!(plan.provers.len(), 1);
        assert_eq!(plan.provers[0].name(), "cpu-0");
        assert!(!plan.provers[0].is_gpu());
        assert_eq!(plan.cpu_reason.as_deref(), Some("--gpus none"));
        assert!(plan.notes.is_empty());
    }
}
