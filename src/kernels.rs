//! Kernels: where a prover's FFTs and multiexps run, the CPU or one GPU.
//!
//! Each prover thread owns one [`ProverKernels`] for the whole run. On a GPU the FFT and the
//! two multiexp kernels are created once, for that device only, so two prover threads on two
//! GPUs never wait on each other (bellperson's locked kernels take a machine-wide lock and
//! are rebuilt for every proof). A GPU call that fails falls back to the CPU for that step.
//!
//! GPUs are numbered as this process sees them: the CUDA driver hides those left out of
//! `CUDA_VISIBLE_DEVICES` and numbers the rest from 0, so `--gpus 0` is the first visible GPU,
//! whichever physical device that is. The notes name each physical device (model, UUID) and
//! what fits in its memory ([`gpu_memory`](crate::gpu_memory)).

use std::sync::Arc;

use blstrs::{G1Affine, G2Affine, Scalar as Fr};
use ec_gpu_gen::fft_cpu;
use ec_gpu_gen::multiexp_cpu::{multiexp_cpu, QueryDensity, SourceBuilder};
use ec_gpu_gen::threadpool::Worker;
use ff::PrimeField;
use group::prime::PrimeCurveAffine;

use crate::gpu_env::GpuEnv;
use crate::gpu_memory::GpuDescription;

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

/// Every GPU this process sees, in `--gpus` order, with its memory; none without the `cuda`
/// feature.
pub fn gpu_descriptions() -> Vec<GpuDescription> {
    #[cfg(feature = "cuda")]
    return ec_gpu_gen::rust_gpu_tools::Device::all()
        .into_iter()
        .enumerate()
        .map(|(index, device)| gpu::describe(index, device))
        .collect();
    #[cfg(not(feature = "cuda"))]
    Vec::new()
}

/// Why a run without a usable GPU proves on the CPU: none found, with `CUDA_VISIBLE_DEVICES`
/// if it may be why.
pub fn no_gpu_reason(env: &GpuEnv) -> String {
    let visible = env
        .visible_devices
        .as_ref()
        .map(|list| format!("; CUDA_VISIBLE_DEVICES={list:?}"))
        .unwrap_or_default();
    format!("no usable GPU found (no CUDA driver or device{visible})")
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

/// The provers for a selection: up to `per_gpu` per usable GPU (more than one lets one
/// prover's CPU-side work overlap another's kernels; fewer where the GPU's free memory holds
/// fewer, see [`gpu_memory`](crate::gpu_memory)), or one CPU prover when no GPU is usable.
/// `GpuSelection::None` gives the CPU.
pub fn provers_for(selection: &GpuSelection, per_gpu: usize, env: &GpuEnv) -> KernelPlan {
    if *selection == GpuSelection::None {
        return KernelPlan::cpu("--gpus none".into(), Vec::new());
    }
    #[cfg(feature = "cuda")]
    {
        let gpu::Opened {
            provers,
            mut notes,
            problems,
            gpus,
        } = gpu::open(selection, per_gpu.max(1), env);
        if !provers.is_empty() {
            return KernelPlan {
                provers,
                notes,
                cpu_reason: None,
                gpus,
            };
        }
        let reason = if problems.is_empty() {
            no_gpu_reason(env)
        } else {
            problems.join("; ")
        };
        notes.push(format!("{reason}: proving on the CPU"));
        KernelPlan::cpu(reason, notes)
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

#[cfg(feature = "cuda")]
mod gpu {
    //! The CUDA side: kernels bound to one device each.

    use super::*;
    use crate::gpu_memory;
    use bellperson::gpu::CpuGpuMultiexpKernel;
    use ec_gpu_gen::fft::FftKernel;
    use ec_gpu_gen::rust_gpu_tools::{cuda, Device, GPUError, UniqueId};

    pub struct GpuKernels {
        pub fft: FftKernel<'static, Fr>,
        pub g1: CpuGpuMultiexpKernel<'static, G1Affine>,
        pub g2: CpuGpuMultiexpKernel<'static, G2Affine>,
    }

    /// What [`open`] found.
    pub struct Opened {
        /// The provers.
        pub provers: Vec<ProverKernels>,
        /// A note per GPU used: what device, what fits.
        pub notes: Vec<String>,
        /// The GPUs that could not be used, with why.
        pub problems: Vec<String>,
        /// The GPUs used.
        pub gpus: Vec<GpuDescription>,
    }

    /// Opens kernels on each selected device: up to `per_gpu` provers each, as many as its
    /// free memory holds.
    pub fn open(selection: &GpuSelection, per_gpu: usize, env: &GpuEnv) -> Opened {
        let devices = Device::all();
        let mut opened = Opened {
            provers: Vec::new(),
            notes: Vec::new(),
            problems: Vec::new(),
            gpus: Vec::new(),
        };
        if devices.is_empty() {
            return opened;
        }
        let Opened {
            provers,
            notes,
            problems,
            gpus,
        } = &mut opened;
        let indices: Vec<usize> = match selection {
            GpuSelection::Indices(list) => list.clone(),
            _ => (0..devices.len()).collect(),
        };
        for index in indices {
            let Some(device) = devices.get(index).copied() else {
                problems.push(format!(
                    "{}GPU {index} does not exist: {} found, numbered from 0 among the GPUs this process sees",
                    env.visible_prefix(),
                    devices.len()
                ));
                continue;
            };
            let description = describe(index, device);
            let count = gpu_memory::ec_gpu_provers_to_start(per_gpu, description.free_bytes);
            let mut names = Vec::new();
            for k in 0..count {
                let name = if per_gpu == 1 {
                    format!("gpu-{index}")
                } else {
                    format!("gpu-{index}.{k}")
                };
                match open_device(device) {
                    Ok(gpu) => {
                        log::info!("{name}: {} kernels ready", device.name());
                        names.push(name.clone());
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
            if !names.is_empty() {
                notes.push(format!(
                    "{}{}",
                    env.visible_prefix(),
                    gpu_memory::ec_gpu_note(&description, &names, per_gpu)
                ));
                // `--gpus 0,0` opens GPU 0 twice; it is still one GPU to watch.
                if !gpus.iter().any(|g| g.index == description.index) {
                    gpus.push(description);
                }
            }
        }
        // GPUs that failed while others work are worth a note; with none working, the
        // caller says so once, with the fall back to the CPU.
        if !provers.is_empty() && !problems.is_empty() {
            notes.push(problems.join("; "));
        }
        opened
    }

    /// The device at `index`: its model, physical id and memory now.
    pub fn describe(index: usize, device: &'static Device) -> GpuDescription {
        GpuDescription {
            index,
            name: device.name(),
            id: Some(match device.unique_id() {
                UniqueId::Uuid(uuid) => format!("GPU-{uuid}"),
                UniqueId::PciId(pci) => format!("PCI {pci}"),
            }),
            total_bytes: device.memory(),
            free_bytes: free_bytes(device),
        }
    }

    /// The device's free memory as the driver reports it, `None` when it cannot say.
    fn free_bytes(device: &'static Device) -> Option<u64> {
        // cuMemGetInfo answers for the current context: a program makes the device's current.
        let program = ec_gpu_gen::program!(device).ok()?;
        let query = |_: &cuda::Program, ()| -> Result<Option<u64>, GPUError> {
            let (mut free, mut total) = (0usize, 0usize);
            // SAFETY: both pointers are to live locals; `run` made the device's context
            // current for the call.
            let status = unsafe { cuda_driver_sys::cuMemGetInfo_v2(&mut free, &mut total) };
            Ok((status == cuda_driver_sys::cudaError_enum::CUDA_SUCCESS).then_some(free as u64))
        };
        program.run((query, ()), ()).ok().flatten()
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
        let plan = provers_for(&GpuSelection::None, 2, &GpuEnv::default());
        assert_eq!(plan.provers.len(), 1);
        assert_eq!(plan.provers[0].name(), "cpu-0");
        assert!(!plan.provers[0].is_gpu());
        assert_eq!(plan.cpu_reason.as_deref(), Some("--gpus none"));
        assert!(plan.notes.is_empty());
    }

    #[test]
    fn no_gpu_reason_names_cuda_visible_devices() {
        assert_eq!(
            no_gpu_reason(&GpuEnv::default()),
            "no usable GPU found (no CUDA driver or device)"
        );
        let env = GpuEnv {
            visible_devices: Some(String::new()),
            ..GpuEnv::default()
        };
        assert_eq!(
            no_gpu_reason(&env),
            "no usable GPU found (no CUDA driver or device; CUDA_VISIBLE_DEVICES=\"\")"
        );
    }
}
