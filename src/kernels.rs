//! Kernels: where a prover's FFTs and multiexps run, the CPU or one GPU.
//!
//! Each prover thread owns one [`ProverKernels`] for the whole run. On a GPU the FFT and the
//! two multiexp kernels are created once, for that device only, so two prover threads on two
//! GPUs never wait on each other (bellperson's locked kernels take a machine-wide lock and
//! are rebuilt for every proof). A GPU call that fails falls back to the CPU for that step.

use std::sync::Arc;

use blstrs::{G1Affine, G2Affine, Scalar as Fr};
use ec_gpu_gen::fft_cpu;
use ec_gpu_gen::multiexp_cpu::{multiexp_cpu, QueryDensity, SourceBuilder};
use ec_gpu_gen::threadpool::Worker;
use ff::PrimeField;
use group::prime::PrimeCurveAffine;

/// Exponents of a multiexp, in the representation the kernels take.
pub type Exponents = Arc<Vec<<Fr as PrimeField>::Repr>>;

/// Bases of a multiexp: a shared vector and how many leading bases to skip.
pub type Bases<G> = (Arc<Vec<G>>, usize);

/// The FFT and multiexp kernels of one prover.
pub struct ProverKernels {
    name: String,
    #[cfg(feature = "cuda")]
    gpu: Option<gpu::GpuKernels>,
}

impl ProverKernels {
    /// Kernels on the CPU, using the shared worker pool.
    pub fn cpu(index: usize) -> ProverKernels {
        ProverKernels {
            name: format!("cpu-{index}"),
            #[cfg(feature = "cuda")]
            gpu: None,
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

    /// Radix-2 FFTs in place: `coeffs[i]` has length `2^log_ns[i]` and is evaluated at the
    /// powers of `omegas[i]`.
    ///
    /// A GPU FFT that fails is an error, not a fall back to the CPU: it may have transformed
    /// some of the vectors in place already, and transforming those again would make a wrong
    /// proof.
    pub fn fft_many(
        &mut self,
        worker: &Worker,
        coeffs: &mut [&mut [Fr]],
        omegas: &[Fr],
        log_ns: &[u32],
    ) -> Result<(), String> {
        #[cfg(feature = "cuda")]
        if let Some(gpu) = &mut self.gpu {
            return gpu
                .fft
                .radix_fft_many(coeffs, omegas, log_ns)
                .map_err(|err| format!("{}: GPU FFT failed: {err}", self.name));
        }
        let log_cpus = worker.log_num_threads();
        for ((a, omega), &log_n) in coeffs.iter_mut().zip(omegas).zip(log_ns) {
            if log_n <= log_cpus {
                fft_cpu::serial_fft::<Fr>(a, omega, log_n);
            } else {
                fft_cpu::parallel_fft::<Fr>(a, worker, omega, log_n, log_cpus);
            }
        }
        Ok(())
    }

    /// `sum_i exps[i] * bases[i]` in G1 or G2 over the bases the density selects.
    pub(crate) fn multiexp<G, S, D, Q>(
        &mut self,
        worker: &Worker,
        bases: S,
        density: D,
        exps: Exponents,
    ) -> Result<G::Curve, String>
    where
        G: ProverGroup,
        S: SourceBuilder<G>,
        for<'a> &'a Q: QueryDensity,
        D: Send + Sync + 'static + Clone + AsRef<Q>,
    {
        let bases = bases.get();
        #[cfg(feature = "cuda")]
        if let Some(gpu) = &mut self.gpu {
            let kernel = G::kernel(gpu);
            if let Some(sum) = gpu::multiexp(kernel, &self.name, worker, &bases, &density, &exps) {
                return Ok(sum);
            }
        }
        cpu_multiexp(worker, bases, density, exps)
    }
}

/// A group a Groth16 proof has multiexps in (G1 or G2), and which of a GPU's kernels serves it.
pub(crate) trait ProverGroup:
    PrimeCurveAffine<Scalar = Fr> + bellperson::gpu::GpuName
{
    /// The multiexp kernel for this group on `gpu`.
    #[cfg(feature = "cuda")]
    fn kernel(
        gpu: &mut gpu::GpuKernels,
    ) -> &mut bellperson::gpu::CpuGpuMultiexpKernel<'static, Self>;
}

impl ProverGroup for G1Affine {
    #[cfg(feature = "cuda")]
    fn kernel(
        gpu: &mut gpu::GpuKernels,
    ) -> &mut bellperson::gpu::CpuGpuMultiexpKernel<'static, Self> {
        &mut gpu.g1
    }
}

impl ProverGroup for G2Affine {
    #[cfg(feature = "cuda")]
    fn kernel(
        gpu: &mut gpu::GpuKernels,
    ) -> &mut bellperson::gpu::CpuGpuMultiexpKernel<'static, Self> {
        &mut gpu.g2
    }
}

fn cpu_multiexp<G, D, Q>(
    worker: &Worker,
    bases: Bases<G>,
    density: D,
    exps: Exponents,
) -> Result<G::Curve, String>
where
    G: PrimeCurveAffine<Scalar = Fr>,
    for<'a> &'a Q: QueryDensity,
    D: Send + Sync + 'static + Clone + AsRef<Q>,
{
    multiexp_cpu(worker, bases, density, exps)
        .wait()
        .map_err(|e| e.to_string())
}

/// GPUs this process can use (after `CUDA_VISIBLE_DEVICES`); 0 without the `cuda` feature.
pub fn gpu_count() -> usize {
    #[cfg(feature = "cuda")]
    return ec_gpu_gen::rust_gpu_tools::Device::all().len();
    #[cfg(not(feature = "cuda"))]
    0
}

/// Which GPUs to prove on (`--gpus`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GpuSelection {
    /// Every GPU found.
    All,
    /// None: prove on the CPU.
    None,
    /// These device indices.
    Indices(Vec<usize>),
}

impl std::str::FromStr for GpuSelection {
    type Err = String;

    fn from_str(s: &str) -> Result<GpuSelection, String> {
        match s.trim() {
            "all" => Ok(GpuSelection::All),
            "none" | "" => Ok(GpuSelection::None),
            list => list
                .split(',')
                .map(|i| {
                    i.trim().parse::<usize>().map_err(|_| {
                        format!("--gpus {s:?}: expected all, none or indices like 0,1")
                    })
                })
                .collect::<Result<Vec<_>, _>>()
                .map(GpuSelection::Indices),
        }
    }
}

/// The provers for a selection: `per_gpu` per usable GPU (more than one lets one prover's
/// CPU-side work overlap another's kernels), or one CPU prover when no GPU is usable. The
/// second value explains a fallback to the CPU, for the user.
pub fn provers_for(
    selection: &GpuSelection,
    per_gpu: usize,
) -> (Vec<ProverKernels>, Option<String>) {
    #[cfg(feature = "cuda")]
    {
        if *selection != GpuSelection::None {
            let (gpus, note) = gpu::open(selection, per_gpu.max(1));
            if !gpus.is_empty() {
                return (gpus, note);
            }
            return (vec![ProverKernels::cpu(0)], note);
        }
        (vec![ProverKernels::cpu(0)], None)
    }
    #[cfg(not(feature = "cuda"))]
    {
        let _ = per_gpu;
        let note = (*selection != GpuSelection::None && *selection != GpuSelection::All)
            .then(|| "this cuzk was built without the `cuda` feature: proving on the CPU (hint: build with scripts/build-cuda.sh)".to_owned());
        (vec![ProverKernels::cpu(0)], note)
    }
}

#[cfg(feature = "cuda")]
mod gpu {
    //! The CUDA side: kernels bound to one device each.

    use super::*;
    use bellperson::gpu::CpuGpuMultiexpKernel;
    use ec_gpu_gen::fft::FftKernel;
    use ec_gpu_gen::rust_gpu_tools::Device;

    pub struct GpuKernels {
        pub fft: FftKernel<'static, Fr>,
        pub g1: CpuGpuMultiexpKernel<'static, G1Affine>,
        pub g2: CpuGpuMultiexpKernel<'static, G2Affine>,
    }

    /// Opens kernels on each selected device.
    pub fn open(selection: &GpuSelection, per_gpu: usize) -> (Vec<ProverKernels>, Option<String>) {
        let devices = Device::all();
        if devices.is_empty() {
            return (
                Vec::new(),
                Some("no usable GPU found (no CUDA driver or device): proving on the CPU".into()),
            );
        }
        let indices: Vec<usize> = match selection {
            GpuSelection::Indices(list) => list.clone(),
            _ => (0..devices.len()).collect(),
        };
        let mut provers = Vec::new();
        let mut problems = Vec::new();
        for index in indices {
            let Some(device) = devices.get(index).copied() else {
                problems.push(format!(
                    "GPU {index} does not exist ({} found)",
                    devices.len()
                ));
                continue;
            };
            for k in 0..per_gpu {
                let name = if per_gpu == 1 {
                    format!("gpu-{index}")
                } else {
                    format!("gpu-{index}.{k}")
                };
                match open_device(device) {
                    Ok(gpu) => {
                        log::info!("{name}: {} kernels ready", device.name());
                        provers.push(ProverKernels {
                            name,
                            gpu: Some(gpu),
                        })
                    }
                    Err(err) => {
                        problems.push(format!("GPU {index} ({}): {err}", device.name()));
                        break;
                    }
                }
            }
        }
        let note = (!problems.is_empty()).then(|| {
            let fallback = if provers.is_empty() {
                "; proving on the CPU"
            } else {
                ""
            };
            format!("{}{fallback}", problems.join("; "))
        });
        (provers, note)
    }

    fn open_device(device: &'static Device) -> Result<GpuKernels, String> {
        let program = ec_gpu_gen::program!(device).map_err(|e| e.to_string())?;
        Ok(GpuKernels {
            fft: FftKernel::create(vec![program]).map_err(|e| e.to_string())?,
            g1: CpuGpuMultiexpKernel::create(&[device]).map_err(|e| e.to_string())?,
            g2: CpuGpuMultiexpKernel::create(&[device]).map_err(|e| e.to_string())?,
        })
    }

    /// A multiexp on the GPU; `None` (after a warning) when the GPU failed.
    pub fn multiexp<G, D, Q>(
        kernel: &mut CpuGpuMultiexpKernel<'static, G>,
        name: &str,
        worker: &Worker,
        bases: &Bases<G>,
        density: &D,
        exps: &Exponents,
    ) -> Option<G::Curve>
    where
        G: PrimeCurveAffine<Scalar = Fr> + bellperson::gpu::GpuName,
        for<'a> &'a Q: QueryDensity,
        D: AsRef<Q>,
    {
        // The GPU kernel takes dense inputs: keep only the exponents whose bases exist.
        let exps = density.as_ref().generate_exps::<Fr>(exps.clone());
        match kernel.multiexp(worker, bases.0.clone(), exps, bases.1) {
            Ok(sum) => Some(sum),
            Err(err) => {
                log::warn!("{name}: GPU multiexp failed, using the CPU: {err}");
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpu_selection_parses() {
        assert_eq!("all".parse(), Ok(GpuSelection::All));
        assert_eq!("none".parse(), Ok(GpuSelection::None));
        assert_eq!("0, 2".parse(), Ok(GpuSelection::Indices(vec![0, 2])));
        assert!("zero".parse::<GpuSelection>().is_err());
    }

    #[test]
    fn without_gpus_there_is_one_cpu_prover() {
        let (provers, _) = provers_for(&GpuSelection::None, 2);
        assert_eq!(provers.len(), 1);
        assert_eq!(provers[0].name(), "cpu-0");
        assert!(!provers[0].is_gpu());
    }
}
