//! One ec-gpu prover's kernels and buffers on its GPU ([`GpuKernels`]), and the opening of
//! them for a run ([`open`], [`plan`]).

use blstrs::{G1Affine, G1Projective, G2Affine, Scalar as Fr};
use ec_gpu_gen::rust_gpu_tools::{cuda, Device, GPUError};

use super::buffers::{self, DevicePtr, GpuError, Staging};
use super::device_quotient::DeviceQuotient;
use super::memory;
use super::msm::{self, Bases, Exponent, ExponentSource, Multiexp, MultiexpRoom};
use crate::backend::gpu::env::GpuEnv;
use crate::backend::gpu::free_memory::GpuDescription;
use crate::backend::gpu::{describe, no_gpu_reason, GpuSelection};
use crate::backend::kernels::{KernelPlan, ProverKernels};
use crate::backend::quotient::Domain;

/// One prover's kernels and buffers on its GPU.
pub struct GpuKernels {
    program: cuda::Program,
    quotient: DeviceQuotient,
    /// Where the last quotient left `h`, and how many exponents.
    h: Option<(DevicePtr, usize)>,
    g1: Multiexp<G1Affine>,
    g2: Multiexp<G2Affine>,
    room: MultiexpRoom,
}

/// A group whose multiexps a [`GpuKernels`] runs.
pub trait GpuGroup:
    Sized + group::prime::PrimeCurveAffine<Scalar = Fr> + ec_gpu::GpuName + buffers::Plain
{
    /// This group's multiexp on `gpu`, with the program and the room it needs.
    fn parts(gpu: &mut GpuKernels) -> (&cuda::Program, &mut Multiexp<Self>, &mut MultiexpRoom);
}

impl GpuGroup for G1Affine {
    fn parts(gpu: &mut GpuKernels) -> (&cuda::Program, &mut Multiexp<Self>, &mut MultiexpRoom) {
        (&gpu.program, &mut gpu.g1, &mut gpu.room)
    }
}

impl GpuGroup for G2Affine {
    fn parts(gpu: &mut GpuKernels) -> (&cuda::Program, &mut Multiexp<Self>, &mut MultiexpRoom) {
        (&gpu.program, &mut gpu.g2, &mut gpu.room)
    }
}

impl GpuKernels {
    /// Loads the module on `device` and makes the buffers every proof needs; resident bases
    /// may take `resident_budget` bytes.
    fn open(device: &'static Device, resident_budget: u64) -> Result<GpuKernels, String> {
        let program = ec_gpu_gen::program!(device).map_err(|e| e.to_string())?;
        #[allow(irrefutable_let_patterns)]
        let ec_gpu_gen::rust_gpu_tools::Program::Cuda(program) = program
        else {
            return Err("not a CUDA device".into());
        };
        let work_units = msm::work_units(
            device.compute_units(),
            device.compute_capability().unwrap_or((0, 0)),
        );
        let (staging, g1, g2) = program
            .run(
                |_, ()| -> Result<_, GpuError> {
                    Ok((
                        Staging::new()?,
                        Multiexp::new(work_units)?,
                        Multiexp::new(work_units)?,
                    ))
                },
                (),
            )
            .map_err(|e| e.to_string())?;
        Ok(GpuKernels {
            program,
            quotient: DeviceQuotient::default(),
            h: None,
            g1,
            g2,
            room: MultiexpRoom::new(staging, resident_budget),
        })
    }

    /// The quotient of `a`, `b`, `c` over `domain`, left on the device for
    /// [`GpuKernels::multiexp_h`]; returns how many exponents `h` has.
    pub fn quotient(
        &mut self,
        domain: &Domain,
        a: &[Fr],
        b: &[Fr],
        c: &[Fr],
    ) -> Result<usize, GpuError> {
        self.h = None;
        let GpuKernels {
            program,
            quotient,
            room,
            ..
        } = self;
        let h = program.run(
            |program, ()| quotient.run(program, &mut room.staging, domain, a, b, c),
            (),
        )?;
        self.h = Some(h);
        Ok(h.1)
    }

    /// `sum_j h_j H_j` over the `h` the last quotient left on the device.
    pub fn multiexp_h(&mut self, bases: &Bases<G1Affine>) -> Result<G1Projective, GpuError> {
        let (ptr, n) = self.h.ok_or(GpuError::Kernel(GPUError::Generic(
            "no quotient on the device".into(),
        )))?;
        let (program, msm, room) = G1Affine::parts(self);
        program.run(
            |program, ()| msm.multiexp(program, room, bases, ExponentSource::Device(ptr, n)),
            (),
        )
    }

    /// `sum_i exps[i] * bases[skip + i]` in `G`.
    pub fn multiexp<G: GpuGroup>(
        &mut self,
        bases: &Bases<G>,
        exps: &[Exponent],
    ) -> Result<G::Curve, GpuError> {
        let (program, msm, room) = G::parts(self);
        program.run(
            |program, ()| msm.multiexp(program, room, bases, ExponentSource::Host(exps)),
            (),
        )
    }

    /// Bytes of parameters resident on the device now.
    pub fn resident_bytes(&self) -> u64 {
        self.room.resident_bytes()
    }

    /// See [`MultiexpRoom::limit`].
    pub fn limit(&mut self, resident_budget: u64, stream_chunk: usize) {
        self.room.limit(resident_budget, stream_chunk);
    }
}

/// What [`open`] found.
pub struct Opened {
    /// The provers' kernels, with each prover's name (`gpu-N` or `gpu-N.K`).
    pub provers: Vec<(String, Box<GpuKernels>)>,
    /// A note per GPU used: what device, what fits.
    pub notes: Vec<String>,
    /// The GPUs that could not be used, with why.
    pub problems: Vec<String>,
    /// The GPUs used.
    pub gpus: Vec<GpuDescription>,
}

/// Opens kernels on each selected device: up to `per_gpu` provers each, as many as its free
/// memory holds, each with its share of the rest for resident bases.
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
        let count = memory::provers_to_start(per_gpu, description.free_bytes);
        let budget = memory::resident_budget(&description, count);
        let mut names = Vec::new();
        for k in 0..count {
            let lane = (per_gpu > 1).then_some(k);
            let name = crate::event::WorkerName::Gpu { gpu: index, lane }.to_string();
            match GpuKernels::open(device, budget) {
                Ok(gpu) => {
                    log::info!("{name}: {} kernels ready", device.name());
                    names.push(name.clone());
                    provers.push((name, Box::new(gpu)));
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
                memory::note(&description, &names, per_gpu)
            ));
            // `--gpus 0,0` opens GPU 0 twice; it is still one GPU to watch.
            if !gpus.iter().any(|g| g.index == description.index) {
                gpus.push(description);
            }
        }
    }
    // GPUs that failed while others work are worth a note; with none working, the caller
    // says so once, with the fall back to the CPU.
    if !provers.is_empty() && !problems.is_empty() {
        notes.push(problems.join("; "));
    }
    opened
}

/// The kernel provers of a run on ec-gpu's kernels: those [`open`] started, or one CPU prover
/// with the reason when none started.
pub fn plan(selection: &GpuSelection, per_gpu: usize, env: &GpuEnv) -> KernelPlan {
    let Opened {
        provers,
        mut notes,
        problems,
        gpus,
    } = open(selection, per_gpu.max(1), env);
    if !provers.is_empty() {
        return KernelPlan {
            provers: provers
                .into_iter()
                .map(|(name, gpu)| ProverKernels::on_gpu(name, gpu))
                .collect(),
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
