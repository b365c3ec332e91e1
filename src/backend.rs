//! Backends: what turns synthesized partitions into Groth16 proofs, and which one a run uses.
//!
//! - `cpu` and `ec-gpu`: cuzk's own Groth16 ([`prove`]) on the FFT and multiexp kernels of
//!   [`kernels`]: the CPU, or bellperson's CUDA kernels with one set per GPU and prover thread.
//! - `supraseal`: whole batches handed to SupraSeal's CUDA prover ([`supraseal`]); one prover
//!   thread drives every GPU, a partition per GPU per call.
//!
//! `auto` takes SupraSeal when it is built and a GPU is there, else the ec-gpu kernels, else
//! the CPU; that is the order they measured fastest in (BENCHMARKS.md).

use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};

use anyhow::{bail, Result};
use bellperson::groth16::Proof;
use blstrs::Bls12;

use crate::kernels::{self, GpuSelection, ProverKernels};
use crate::params::LoadedParams;
use crate::pipeline::panic_message;
use crate::prove::{self, ProveTimings};
use crate::synth::SynthesizedPartition;

/// `--backend`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendChoice {
    /// The fastest this build and machine have.
    Auto,
    /// SupraSeal's CUDA prover.
    Supraseal,
    /// cuzk's Groth16 on bellperson's CUDA kernels.
    EcGpu,
    /// cuzk's Groth16 on the CPU.
    Cpu,
}

impl std::str::FromStr for BackendChoice {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s.trim() {
            "auto" => BackendChoice::Auto,
            "supraseal" => BackendChoice::Supraseal,
            "ec-gpu" => BackendChoice::EcGpu,
            "cpu" => BackendChoice::Cpu,
            other => {
                return Err(format!(
                    "--backend {other:?}: expected auto, supraseal, ec-gpu or cpu"
                ))
            }
        })
    }
}

/// What kind of parameters a prover needs loaded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamsKind {
    /// bellperson's `Parameters`, in ordinary memory.
    Groth16,
    /// SupraSeal's SRS, in pinned memory.
    Supraseal,
}

/// A prover: one thread's way of proving partitions.
pub enum Prover {
    /// cuzk's Groth16 on a CPU or one GPU's kernels; one partition at a time.
    Kernels(ProverKernels),
    /// SupraSeal on every visible GPU; up to `batch` partitions per call.
    Supraseal {
        /// Its name in the timeline.
        name: String,
        /// Partitions per call: one per GPU.
        batch: usize,
    },
}

impl fmt::Debug for Prover {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Prover {
    /// The prover's name in the timeline (`cpu-0`, `gpu-0.1`, `supraseal`).
    pub fn name(&self) -> &str {
        match self {
            Prover::Kernels(kernels) => kernels.name(),
            Prover::Supraseal { name, .. } => name,
        }
    }

    /// Partitions it proves per call.
    pub fn batch_size(&self) -> usize {
        match self {
            Prover::Kernels(_) => 1,
            Prover::Supraseal { batch, .. } => *batch,
        }
    }

    /// The parameters it needs.
    pub fn params_kind(&self) -> ParamsKind {
        match self {
            Prover::Kernels(_) => ParamsKind::Groth16,
            Prover::Supraseal { .. } => ParamsKind::Supraseal,
        }
    }

    /// Proves `batch` (partitions of one circuit) with `params`: a result per partition.
    pub fn prove(
        &mut self,
        batch: Vec<SynthesizedPartition>,
        params: &LoadedParams,
    ) -> Vec<Result<(Proof<Bls12>, ProveTimings), String>> {
        match (self, params) {
            (Prover::Kernels(kernels), LoadedParams::Groth16(params)) => batch
                .into_iter()
                .map(|partition| {
                    let (r, s) = prove::fresh_randomness();
                    // A panic inside a kernel fails this partition, not the run.
                    catch_unwind(AssertUnwindSafe(|| {
                        prove::prove_partition(partition, &**params, r, s, kernels)
                    }))
                    .map_err(|panic| panic_message(panic.as_ref()))?
                    .map_err(|e| e.to_string())
                })
                .collect(),
            #[cfg(feature = "supraseal")]
            (Prover::Supraseal { .. }, LoadedParams::Supraseal(params)) => {
                let started = std::time::Instant::now();
                let (r, s): (Vec<_>, Vec<_>) =
                    batch.iter().map(|_| prove::fresh_randomness()).unzip();
                let refs: Vec<&SynthesizedPartition> = batch.iter().collect();
                let proved = crate::supraseal::prove_batch(&refs, params, &r, &s);
                // Free a, b, c and the witness before reporting: the next batch needs the room.
                drop(refs);
                drop(batch);
                let timings = ProveTimings {
                    gpu_call_ms: started.elapsed().as_secs_f64() * 1e3,
                    ..Default::default()
                };
                match proved {
                    Ok(proofs) => proofs.into_iter().map(|p| Ok((p, timings))).collect(),
                    Err(err) => vec![Err(err); r.len()],
                }
            }
            (prover, _) => {
                let n = batch.len();
                let name = prover.name().to_owned();
                vec![Err(format!("{name} was handed parameters of another backend")); n]
            }
        }
    }
}

/// The provers for a run: `per_gpu` ec-gpu provers per selected GPU, one SupraSeal prover for
/// all GPUs, or one CPU prover. The note explains a fallback to the CPU, for the user.
pub fn provers_for(
    choice: BackendChoice,
    gpus: &GpuSelection,
    per_gpu: usize,
) -> Result<(Vec<Prover>, Option<String>)> {
    let want_supraseal = match choice {
        BackendChoice::Supraseal => {
            if !crate::supraseal::IS_BUILT {
                bail!("--backend supraseal: this cuzk was built without SupraSeal (hint: build with scripts/build-cuda.sh, which enables it)");
            }
            true
        }
        BackendChoice::Auto => crate::supraseal::IS_BUILT && *gpus != GpuSelection::None,
        BackendChoice::EcGpu | BackendChoice::Cpu => false,
    };
    if want_supraseal {
        let visible = kernels::gpu_count();
        if visible > 0 {
            if let GpuSelection::Indices(_) = gpus {
                bail!("--gpus with --backend supraseal: SupraSeal uses every GPU this process sees (hint: choose them with CUDA_VISIBLE_DEVICES, e.g. CUDA_VISIBLE_DEVICES=0,1)");
            }
            return Ok((
                vec![Prover::Supraseal {
                    name: "supraseal".into(),
                    batch: visible,
                }],
                None,
            ));
        }
        if choice == BackendChoice::Supraseal {
            bail!("--backend supraseal: no usable GPU found (no CUDA driver or device)");
        }
    }
    let selection = if choice == BackendChoice::Cpu {
        &GpuSelection::None
    } else {
        gpus
    };
    let (provers, note) = kernels::provers_for(selection, per_gpu);
    Ok((provers.into_iter().map(Prover::Kernels).collect(), note))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choices_parse_and_the_cpu_is_always_there() {
        assert_eq!("auto".parse(), Ok(BackendChoice::Auto));
        assert_eq!("ec-gpu".parse(), Ok(BackendChoice::EcGpu));
        assert!("opencl".parse::<BackendChoice>().is_err());
        let (provers, _) = provers_for(BackendChoice::Cpu, &GpuSelection::All, 2).expect("provers");
        assert_eq!(provers.len(), 1);
        assert_eq!(provers[0].name(), "cpu-0");
        assert_eq!(provers[0].params_kind(), ParamsKind::Groth16);
    }
}
