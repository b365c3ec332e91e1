//! Backends: what turns synthesized partitions into Groth16 proofs, and which one a run uses.
//! The pipeline knows them only through this room: the [`Prover`] it hands partitions to,
//! the [`ParamsKind`] its parameter cache loads for them, and the [`ProveError`] a failed
//! partition carries.
//!
//! One room per way of proving, each with its own memory arithmetic and plan:
//!
//! - [`cuda`] (the default where built): cuzk's own CUDA Groth16 on sppark's NTT and
//!   multiexp, the parameters resident on each GPU, every step of a partition on the device;
//!   one prover thread per GPU;
//! - [`cpu`]: cuzk's own Groth16 ([`groth16`], its [`quotient`], [`fft`], [`msm`]) on the
//!   CPU's kernels;
//! - [`ec_gpu`]: the same Groth16 on ec-gpu-gen's CUDA kernels, with one set, and its own
//!   buffers, per GPU and prover thread; [`kernels`] dispatches each step of cuzk's Groth16
//!   to the CPU or to these, the CPU taking over a failed step;
//! - [`supraseal`]: whole batches handed to SupraSeal's CUDA prover; one prover thread drives
//!   every GPU, a partition per GPU per call;
//!
//! and beside them [`gpu`], what every GPU backend shares. The device code of `cuda`,
//! `ec_gpu` and `supraseal` needs their features; their arithmetic is built everywhere.
//!
//! `auto` takes the cuda backend when it is built and a GPU is there, else the CPU: it
//! measured fastest (BENCHMARKS.md: 2.6 s of GPU time per 32GiB partition against 7.5 s
//! for SupraSeal); SupraSeal and ec-gpu stay as alternatives by name. The GPU conventions of
//! the other Filecoin provers apply to all of them ([`gpu::env`]): `BELLMAN_NO_GPU` turns the
//! GPUs off, and `--require-gpu` turns a run that would prove on the CPU into a
//! [`RequireGpuError`] before anything is claimed.

pub mod cpu;
pub mod cuda;
pub mod ec_gpu;
pub mod gpu;
pub mod groth16;
mod groth16_params;
pub mod kernels;
pub mod quotient;
// The transform and the CPU multiexp live below both the backend and the parameter files
// (the coset H query derives with them); the backend's kernels still call them by these names.
pub use crate::{fft, msm};
pub mod supraseal;

use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::Arc;

use anyhow::{bail, Result};
use bellperson::groth16::Proof;
use blstrs::Bls12;

use crate::event::ProveTimings;
use crate::params::load::{read_parameters, ParamsLayout, G1_BYTES};
use crate::synth::SynthesizedPartition;
use crate::util::panic_message;
use gpu::env::GpuEnv;
use gpu::free_memory::GpuDescription;
use gpu::GpuSelection;
use groth16::Groth16Error;
pub use groth16_params::Groth16Params;
use kernels::{KernelPlan, ProverKernels};
use supraseal::{SuprasealError, SuprasealProver};

/// `--backend`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendChoice {
    /// The fastest this build and machine have: the cuda backend if built and a GPU is
    /// there, else the CPU.
    Auto,
    /// cuzk's own CUDA Groth16 on sppark's kernels, the parameters resident on each GPU.
    Cuda,
    /// SupraSeal's CUDA prover.
    Supraseal,
    /// cuzk's Groth16 on ec-gpu-gen's CUDA kernels.
    EcGpu,
    /// cuzk's Groth16 on the CPU.
    Cpu,
}

impl BackendChoice {
    /// The name `--backend` takes.
    pub fn as_str(self) -> &'static str {
        match self {
            BackendChoice::Auto => "auto",
            BackendChoice::Cuda => "cuda",
            BackendChoice::Supraseal => "supraseal",
            BackendChoice::EcGpu => "ec-gpu",
            BackendChoice::Cpu => "cpu",
        }
    }
}

// By hand rather than derived: a derived ValueEnum gives each value its doc as help, and
// clap then lays out every command's help in its long form; `--backend`'s help says it all.
impl clap::ValueEnum for BackendChoice {
    fn value_variants<'a>() -> &'a [Self] {
        &[
            BackendChoice::Auto,
            BackendChoice::Cuda,
            BackendChoice::Supraseal,
            BackendChoice::EcGpu,
            BackendChoice::Cpu,
        ]
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.as_str()))
    }
}

/// What kind of parameters a prover needs loaded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamsKind {
    /// bellperson's `Parameters`, in ordinary memory; with `coset_h`, the H query in coset
    /// evaluation form replaces the file's own where one is kept beside it (the CPU's
    /// kernels take it; ec-gpu's quotient ends in coefficients on its GPU).
    Groth16 {
        /// Whether the provers take the coset H query.
        coset_h: bool,
    },
    /// SupraSeal's SRS, in pinned memory, and its own buffers for calls of `batch`
    /// partitions ([`supraseal::host_buffers`]).
    Supraseal {
        /// Partitions per call.
        batch: usize,
    },
    /// The cuda backend's: the verifying key on the host, the bases on each GPU; what does
    /// not fit in `device_bytes` of a GPU stays in pinned host memory.
    Resident {
        /// The least device memory any of the run's provers may take.
        device_bytes: u64,
    },
}

impl ParamsKind {
    /// Loads the parameter file at `path` in this form; the parameter cache calls it once
    /// per file and run.
    pub fn load(self, path: &Path) -> Result<ProverParams, String> {
        match self {
            ParamsKind::Groth16 { coset_h } => {
                let params = read_parameters(path).map_err(|e| e.to_string())?;
                let params = Groth16Params::with_coset_h(params, path, coset_h)?;
                Ok(ProverParams::Groth16(Arc::new(params)))
            }
            #[cfg(feature = "supraseal")]
            ParamsKind::Supraseal { .. } => {
                supraseal::SuprasealParams::load(path).map(ProverParams::Supraseal)
            }
            #[cfg(not(feature = "supraseal"))]
            ParamsKind::Supraseal { .. } => Err("this cuzk was built without SupraSeal".into()),
            #[cfg(feature = "cuda")]
            ParamsKind::Resident { device_bytes } => cuda::ResidentParams::load(path, device_bytes)
                .map(|params| ProverParams::Resident(Arc::new(params)))
                .map_err(|e| e.to_string()),
            #[cfg(not(feature = "cuda"))]
            ParamsKind::Resident { .. } => Err("this cuzk was built without CUDA".into()),
        }
    }
}

impl ParamsKind {
    /// Bytes of a set of `layout` the host keeps in this form: all of it (and for SupraSeal
    /// the host buffers of its calls, which the run holds for as long as the set), or for
    /// the cuda backend the verifying key and the bases no GPU has room for.
    pub fn host_bytes(self, layout: &ParamsLayout) -> u64 {
        match self {
            // The coset H query replaces the file's own, one point longer.
            ParamsKind::Groth16 { coset_h } => {
                layout.memory_bytes() + if coset_h { G1_BYTES } else { 0 }
            }
            ParamsKind::Supraseal { batch } => supraseal::host_bytes(layout, batch),
            ParamsKind::Resident { device_bytes } => {
                cuda::residency::host_bytes(layout, device_bytes)
            }
        }
    }

    /// True when the prover's thread may evaluate a partition's a, b and c on the host right
    /// before its proof, so partitions wait for it as their witness: every prover but
    /// SupraSeal's, whose batches take a, b and c with the call.
    pub fn evaluates_at_prover(self) -> bool {
        !matches!(self, ParamsKind::Supraseal { .. })
    }

    /// Device memory a GPU has for the pre-compiled constraints of `layout`'s circuit when
    /// the prover evaluates them there (the cuda backend, every base resident); `None`
    /// when the host must evaluate them.
    pub fn gpu_room_for_constraints(self, layout: &ParamsLayout) -> Option<u64> {
        match self {
            ParamsKind::Groth16 { .. } | ParamsKind::Supraseal { .. } => None,
            ParamsKind::Resident { device_bytes } => {
                cuda::residency::room_for_constraints(layout, device_bytes)
            }
        }
    }
}

/// A parameter set loaded in the form its backend proves with.
#[derive(Clone)]
pub enum ProverParams {
    /// bellperson's parameters in ordinary memory (the CPU and ec-gpu backends).
    Groth16(Arc<Groth16Params>),
    /// SupraSeal's SRS in pinned memory.
    #[cfg(feature = "supraseal")]
    Supraseal(supraseal::SuprasealParams),
    /// The cuda backend's verifying key and layout; its bases live on the GPUs.
    #[cfg(feature = "cuda")]
    Resident(Arc<cuda::ResidentParams>),
}

/// Why a partition could not be proved.
#[derive(Debug, thiserror::Error)]
pub enum ProveError {
    /// cuzk's Groth16 failed: the parameters, the domain, a multiexp, a subverted setup.
    #[error(transparent)]
    Groth16(#[from] Groth16Error),
    /// SupraSeal refused or failed the batch the partition was in.
    #[error(transparent)]
    Supraseal(#[from] SuprasealError),
    /// The cuda backend failed: the GPU (named), the bases' upload, the assembly.
    #[cfg(feature = "cuda")]
    #[error(transparent)]
    Cuda(Box<cuda::CudaProveError>),
    /// A kernel panicked: this partition fails, not the run.
    #[error("{0}")]
    Panicked(String),
    /// The prover was handed parameters loaded for another backend.
    #[error("{prover} was handed parameters of another backend")]
    WrongParams {
        /// The prover.
        prover: String,
    },
    /// A device fault injected by a test (`CUZK_TEST_DEVICE_FAULTS`), before the prover ran.
    #[error("{0}")]
    Injected(String),
    /// A lost device injected by a test (`CUZK_TEST_DEVICE_FAULTS=lost=N`).
    #[error("{0}")]
    InjectedLoss(String),
    /// The prover's call gave no answer within its deadline, and the prover stays with it
    /// (see `pipeline::deadline`): the device is lost to the run.
    #[error("{0}")]
    CallLost(String),
}

// Boxed: a cuda error is large, and every partition's result carries a ProveError.
#[cfg(feature = "cuda")]
impl From<cuda::CudaProveError> for ProveError {
    fn from(error: cuda::CudaProveError) -> Self {
        ProveError::Cuda(Box::new(error))
    }
}

impl ProveError {
    /// True when the prover's device is lost (a sticky CUDA error broke its context): every
    /// later call fails, so the prover stops at once and its files go back, none blamed.
    pub fn is_device_lost(&self) -> bool {
        match self {
            #[cfg(feature = "cuda")]
            ProveError::Cuda(error) => {
                matches!(&**error, cuda::CudaProveError::Gpu(error) if error.is_device_lost)
            }
            ProveError::InjectedLoss(_) | ProveError::CallLost(_) => true,
            _ => false,
        }
    }
}

/// A prover: one thread's way of proving partitions.
pub enum Prover {
    /// cuzk's Groth16 on a CPU or one GPU's kernels; one partition at a time.
    Kernels(ProverKernels),
    /// SupraSeal on every visible GPU; a partition per GPU per call.
    Supraseal(SuprasealProver),
    /// cuzk's CUDA Groth16 on one GPU, its parameters resident there; one partition after
    /// another, a batch's ones summed together.
    #[cfg(feature = "cuda")]
    Cuda(Box<cuda::CudaProver>, ParamsKind),
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
            Prover::Supraseal(prover) => prover.name(),
            #[cfg(feature = "cuda")]
            Prover::Cuda(prover, _) => prover.name(),
        }
    }

    /// True when it proves on GPUs: it gives way to PoSt ([`gpu::priority_lock`]).
    pub fn is_gpu(&self) -> bool {
        match self {
            Prover::Kernels(kernels) => kernels.is_gpu(),
            Prover::Supraseal(_) => true,
            #[cfg(feature = "cuda")]
            Prover::Cuda(..) => true,
        }
    }

    /// Partitions it proves per call.
    pub fn batch_size(&self) -> usize {
        match self {
            Prover::Kernels(_) => 1,
            Prover::Supraseal(prover) => prover.batch_size(),
            #[cfg(feature = "cuda")]
            Prover::Cuda(..) => cuda::CudaProver::batch_size(),
        }
    }

    /// Whether a batch waits for partitions still to come to fill up: SupraSeal's proves a
    /// batch in one pass, so a full one pays; the cuda backend's proves one partition after
    /// another and only shares the ones' sums, so it takes what is waiting and never holds
    /// the GPU back for more.
    pub fn waits_for_batch(&self) -> bool {
        matches!(self, Prover::Supraseal(_))
    }

    /// The parameters it needs.
    pub fn params_kind(&self) -> ParamsKind {
        match self {
            Prover::Kernels(kernels) => ParamsKind::Groth16 {
                coset_h: !kernels.is_gpu(),
            },
            Prover::Supraseal(prover) => ParamsKind::Supraseal {
                batch: prover.batch_size(),
            },
            #[cfg(feature = "cuda")]
            Prover::Cuda(_, kind) => *kind,
        }
    }

    /// Host memory it lends for its partitions' a, b and c, when it has its own (the cuda
    /// backend's pinned sets: see [`crate::host_abc`]).
    pub fn abc_lender(&self) -> Option<Arc<dyn crate::host_abc::LendsAbc>> {
        match self {
            #[cfg(feature = "cuda")]
            Prover::Cuda(prover, _) => Some(prover.abc_lender()),
            _ => None,
        }
    }

    /// True when it reads the next partition while proving ([`Prover::prove`]'s `next`: it
    /// uploads its witness ahead, or shares its pass over streamed bases with it), so the
    /// loop should hand it the next partition when one is queued, or a copy of its witness
    /// while its a, b and c are evaluated beside the call.
    pub fn uploads_ahead(&self) -> bool {
        match self {
            #[cfg(feature = "cuda")]
            Prover::Cuda(..) => true,
            _ => false,
        }
    }

    /// Makes `params` ready on the prover's device: the cuda backend uploads a set's bases
    /// once per GPU, the others have nothing to do. `on_upload` is called when an upload
    /// starts (the timeline shows it as the lane's parameter load); true when it uploaded. A
    /// failure here is tried again, and reported per partition, by [`Prover::prove`].
    pub fn upload(
        &mut self,
        #[cfg_attr(not(feature = "cuda"), allow(unused_variables))] params: &ProverParams,
        #[cfg_attr(not(feature = "cuda"), allow(unused_variables))] on_upload: impl FnOnce(),
    ) -> Result<bool, ProveError> {
        match (self, params) {
            #[cfg(feature = "cuda")]
            (Prover::Cuda(prover, _), ProverParams::Resident(params)) => {
                prover.upload(params, on_upload).map_err(ProveError::from)
            }
            _ => Ok(false),
        }
    }

    /// Makes `matrices`, the constraints of `params`' circuit, ones this prover's GPU
    /// evaluates partitions with (the cuda backend uploads them once, beside the set's
    /// bases); `Err` says why it cannot, and is remembered, so the host evaluates those
    /// partitions instead. Provers that evaluate on no GPU never get a partition left to
    /// the GPU.
    pub fn take_constraints(
        &mut self,
        #[cfg_attr(not(feature = "cuda"), allow(unused_variables))] params: &ProverParams,
        #[cfg_attr(not(feature = "cuda"), allow(unused_variables))] matrices: &Arc<
            dyn crate::synth::ConstraintMatrices,
        >,
    ) -> Result<(), String> {
        match (self, params) {
            #[cfg(feature = "cuda")]
            (Prover::Cuda(prover, _), ProverParams::Resident(params)) => prover
                .take_constraints(params, matrices)
                .map_err(|e| e.to_string()),
            (prover, _) => Err(format!(
                "{} evaluates no constraints on a GPU",
                prover.name()
            )),
        }
    }

    /// Why each GPU step of the last call fell back to the CPU (ec-gpu's kernels do, step
    /// by step; the others never do).
    pub fn take_cpu_fallbacks(&mut self) -> Vec<String> {
        match self {
            Prover::Kernels(kernels) => kernels.take_fallbacks(),
            Prover::Supraseal(_) => Vec::new(),
            #[cfg(feature = "cuda")]
            Prover::Cuda(..) => Vec::new(),
        }
    }

    /// Proves `batch` (partitions of one circuit) with `params`: a result per partition.
    ///
    /// `next` is the partition the prover takes after this batch (of the same parameter
    /// set), when it already has it, or a copy of its witness: a prover that can upload
    /// ahead (the cuda backend) starts on its witness meanwhile, or shares its pass over
    /// streamed bases with it.
    ///
    /// `released(k)` says that the batch's `k`-th partition is no longer held, before the
    /// call returns (a batch proved one partition at a time), so its memory can be given
    /// back while the rest are proved; a partition not released so is held to the end.
    pub fn prove(
        &mut self,
        batch: Vec<SynthesizedPartition>,
        params: &ProverParams,
        #[cfg_attr(not(feature = "cuda"), allow(unused_variables))] next: Option<
            &SynthesizedPartition,
        >,
        released: &mut dyn FnMut(usize),
    ) -> Vec<Result<(Proof<Bls12>, ProveTimings), ProveError>> {
        match (self, params) {
            (Prover::Kernels(kernels), ProverParams::Groth16(params)) => batch
                .into_iter()
                .enumerate()
                .map(|(k, partition)| {
                    let (r, s) = groth16::fresh_randomness();
                    // A panic inside a kernel fails this partition, not the run.
                    let proved = catch_unwind(AssertUnwindSafe(|| {
                        groth16::prove_partition(
                            partition,
                            &params.params,
                            params.coset_h.as_ref(),
                            r,
                            s,
                            kernels,
                        )
                    }));
                    released(k);
                    proved
                        .map_err(|panic| ProveError::Panicked(panic_message(panic.as_ref())))?
                        .map_err(ProveError::from)
                })
                .collect(),
            #[cfg(feature = "supraseal")]
            (Prover::Supraseal(prover), ProverParams::Supraseal(params)) => {
                prover.prove_each(batch, params)
            }
            #[cfg(feature = "cuda")]
            (Prover::Cuda(prover, _), ProverParams::Resident(params)) => {
                prover.prove_each(batch, params, next, released)
            }
            (prover, _) => {
                let prover = prover.name().to_owned();
                batch
                    .iter()
                    .map(|_| {
                        Err(ProveError::WrongParams {
                            prover: prover.clone(),
                        })
                    })
                    .collect()
            }
        }
    }
}

/// The parameters a run's `provers` need, loaded once for all of them: the first one's
/// kind, with the coset H query only when every prover takes it (no prover runs without
/// parameters it can prove with). No prover: the CPU's.
pub fn params_kind_of(provers: &[Prover]) -> ParamsKind {
    let every_takes_coset_h = provers
        .iter()
        .all(|p| matches!(p.params_kind(), ParamsKind::Groth16 { coset_h: true }));
    match provers.first().map(Prover::params_kind) {
        Some(ParamsKind::Groth16 { .. }) | None => ParamsKind::Groth16 {
            coset_h: every_takes_coset_h,
        },
        Some(kind) => kind,
    }
}

/// The provers a run starts, and what the user should hear about them.
pub struct ProverPlan {
    /// One per prover thread.
    pub provers: Vec<Prover>,
    /// Notes for the user: the physical GPUs and what fits in their memory, ignored
    /// variables, a fall back to the CPU.
    pub notes: Vec<String>,
    /// Why the run proves on the CPU, when it does.
    pub cpu_reason: Option<String>,
    /// The GPUs the provers use, each once; none on the CPU. Their kernel activity is what
    /// [`gpu::activity`] watches.
    pub gpus: Vec<GpuDescription>,
}

impl ProverPlan {
    /// The note for a run whose `--prover-cpus` (see [`gpu::cpu_split`]) nobody uses: none
    /// of its provers is SupraSeal.
    pub fn unused_cpu_split_note(&self, prover_cpus: usize) -> Option<String> {
        let has_supraseal = self
            .provers
            .iter()
            .any(|p| matches!(p.params_kind(), ParamsKind::Supraseal { .. }));
        (prover_cpus > 0 && !has_supraseal).then(|| {
            format!(
                "--prover-cpus {prover_cpus} keeps CPUs for SupraSeal, and this run proves without it ({}): they stay idle (hint: leave --prover-cpus at 0 unless SupraSeal proves)",
                self.provers.first().map_or("no prover", |p| p.name())
            )
        })
    }

    /// The plan with `notes` (the run's own, about the GPU variables) before its own.
    fn after(mut self, mut notes: Vec<String>) -> ProverPlan {
        notes.append(&mut self.notes);
        self.notes = notes;
        self
    }

    /// The plan, unless `--require-gpu` (`is_gpu_required`) forbids proving on the CPU.
    pub fn require_gpu(self, is_gpu_required: bool) -> Result<ProverPlan, RequireGpuError> {
        match &self.cpu_reason {
            Some(reason) if is_gpu_required => Err(RequireGpuError {
                reason: reason.clone(),
            }),
            _ => Ok(self),
        }
    }
}

/// `--require-gpu` was given and the run would prove on the CPU.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("--require-gpu: this run would prove on the CPU ({reason}), and a CPU proof of a 32GiB sector takes hours; nothing was claimed (hint: check `nvidia-smi`, CUDA_VISIBLE_DEVICES and BELLMAN_NO_GPU, and that this cuzk was built with scripts/build-cuda.sh; without --require-gpu it proves on the CPU)")]
pub struct RequireGpuError {
    /// Why there is no GPU to prove on.
    pub reason: String,
}

/// The provers for a run: one cuda prover per selected GPU, up to `per_gpu` ec-gpu provers
/// per selected GPU, one SupraSeal prover for all GPUs, or one CPU prover; `env` is the GPU
/// variables (`BELLMAN_NO_GPU` turns the GPUs off).
pub fn provers_for(
    choice: BackendChoice,
    gpus: &GpuSelection,
    per_gpu: usize,
    env: &GpuEnv,
) -> Result<ProverPlan> {
    provers_within(choice, gpus, per_gpu, None, env)
}

/// [`provers_for`], with the cuda backend taking at most `gpu_memory` bytes of each GPU
/// (`--gpu-memory`; all its free memory when `None`).
pub fn provers_within(
    choice: BackendChoice,
    gpus: &GpuSelection,
    per_gpu: usize,
    gpu_memory: Option<u64>,
    env: &GpuEnv,
) -> Result<ProverPlan> {
    #[cfg(not(feature = "cuda"))]
    let _ = gpu_memory;
    let mut notes = env.notes();
    let off = match (choice, gpus) {
        (BackendChoice::Cpu, _) => Some(("--backend cpu".to_owned(), false)),
        (_, GpuSelection::None) => Some(("--gpus none".to_owned(), false)),
        _ => env.gpus_off_reason().map(|reason| (reason, true)),
    };
    if let Some((reason, is_surprising)) = off {
        if choice == BackendChoice::Supraseal {
            bail!("--backend supraseal: {reason}, and SupraSeal proves only on GPUs (hint: use --backend cpu to prove on the CPU)");
        }
        if choice == BackendChoice::Cuda {
            bail!("--backend cuda: {reason}, and the cuda backend proves only on GPUs (hint: use --backend cpu to prove on the CPU)");
        }
        // A flag asked for the CPU; a variable left in the environment may not have meant to.
        if is_surprising {
            notes.push(format!("{reason}: proving on the CPU"));
        }
        return Ok(from_kernels(KernelPlan::cpu(reason, Vec::new()), notes));
    }
    #[cfg(feature = "cuda")]
    if matches!(choice, BackendChoice::Cuda | BackendChoice::Auto) {
        match cuda::plan(gpus, gpu_memory, env)? {
            Some(plan) => return Ok(plan.after(notes)),
            None if choice == BackendChoice::Cuda => bail!(
                "--backend cuda: {} (hint: check `nvidia-smi` and CUDA_VISIBLE_DEVICES)",
                gpu::no_gpu_reason(env)
            ),
            None => {}
        }
    }
    #[cfg(not(feature = "cuda"))]
    if choice == BackendChoice::Cuda {
        bail!("--backend cuda: this cuzk was built without CUDA (hint: build with scripts/build-cuda.sh)");
    }
    if let Some(plan) = supraseal::plan(choice, gpus, env)? {
        return Ok(plan.after(notes));
    }
    Ok(from_kernels(
        kernels::provers_for(gpus, per_gpu, env),
        notes,
    ))
}
/// A plan of kernel provers, after `notes`.
fn from_kernels(plan: KernelPlan, notes: Vec<String>) -> ProverPlan {
    ProverPlan {
        provers: plan.provers.into_iter().map(Prover::Kernels).collect(),
        notes: plan.notes,
        cpu_reason: plan.cpu_reason,
        gpus: plan.gpus,
    }
    .after(notes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_on_the_cpu_lets_each_partition_go_once_proved() {
        use crate::synth::{synthesize, tests::CubeCircuit};
        use bellperson::groth16::{generate_random_parameters, prepare_verifying_key};
        use blstrs::Scalar as Fr;
        use rand::SeedableRng;
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        let params = generate_random_parameters::<Bls12, _, _>(CubeCircuit { x: None }, &mut rng)
            .expect("parameters");
        let pvk = prepare_verifying_key(&params.vk);
        let params = ProverParams::Groth16(Arc::new(Groth16Params {
            params,
            coset_h: None,
        }));
        let batch = [3u64, 4]
            .iter()
            .map(|&x| {
                synthesize(CubeCircuit {
                    x: Some(Fr::from(x)),
                })
                .expect("synthesis")
            })
            .collect();
        let mut prover = Prover::Kernels(ProverKernels::cpu(0));
        let mut released = Vec::new();
        let proved = prover.prove(batch, &params, None, &mut |k| released.push(k));
        assert_eq!(released, [0, 1]);
        // x^3 + x + 5: 35 for 3, 73 for 4.
        for (result, output) in proved.into_iter().zip([35u64, 73]) {
            let (proof, _) = result.expect("proof");
            let valid = bellperson::groth16::verify_proof(&pvk, &proof, &[Fr::from(output)]);
            assert!(valid.expect("verify"));
        }
    }

    fn no_gpu(value: &str) -> GpuEnv {
        GpuEnv {
            no_gpu: Some(value.into()),
            ..GpuEnv::default()
        }
    }

    #[test]
    fn choices_parse_and_the_cpu_is_always_there() {
        use clap::ValueEnum;
        assert_eq!(
            BackendChoice::from_str("auto", false),
            Ok(BackendChoice::Auto)
        );
        assert_eq!(
            BackendChoice::from_str("ec-gpu", false),
            Ok(BackendChoice::EcGpu)
        );
        assert!(BackendChoice::from_str("opencl", false).is_err());
        let plan = provers_for(
            BackendChoice::Cpu,
            &GpuSelection::All,
            2,
            &GpuEnv::default(),
        )
        .expect("provers");
        assert_eq!(plan.provers.len(), 1);
        assert_eq!(plan.provers[0].name(), "cpu-0");
        assert!(!plan.provers[0].is_gpu());
        assert_eq!(
            plan.provers[0].params_kind(),
            ParamsKind::Groth16 { coset_h: true }
        );
        assert_eq!(plan.cpu_reason.as_deref(), Some("--backend cpu"));
        assert!(plan.notes.is_empty(), "{:?}", plan.notes);
        assert!(plan.gpus.is_empty(), "no GPU to watch");
    }

    #[test]
    fn bellman_no_gpu_proves_on_the_cpu_and_says_so_once() {
        for choice in [BackendChoice::Auto, BackendChoice::EcGpu] {
            let plan = provers_for(choice, &GpuSelection::All, 2, &no_gpu("1")).expect("provers");
            assert_eq!(plan.provers.len(), 1);
            assert!(!plan.provers[0].is_gpu());
            assert_eq!(plan.notes.len(), 1, "{:?}", plan.notes);
            assert!(
                plan.notes[0].starts_with("BELLMAN_NO_GPU=\"1\" is set")
                    && plan.notes[0].ends_with(": proving on the CPU"),
                "{:?}",
                plan.notes
            );
        }
        // "0" leaves the GPUs on, as in bellperson.
        let plan = provers_for(BackendChoice::Auto, &GpuSelection::None, 2, &no_gpu("0"))
            .expect("provers");
        assert_eq!(plan.cpu_reason.as_deref(), Some("--gpus none"));
        let err = provers_for(
            BackendChoice::Supraseal,
            &GpuSelection::All,
            1,
            &no_gpu("1"),
        )
        .err()
        .expect("SupraSeal needs a GPU");
        assert!(
            err.to_string()
                .starts_with("--backend supraseal: BELLMAN_NO_GPU="),
            "{err}"
        );
    }

    #[test]
    fn require_gpu_refuses_a_cpu_plan_saying_why() {
        let plan = provers_for(BackendChoice::Auto, &GpuSelection::All, 2, &no_gpu("yes"))
            .expect("provers");
        let err = plan.require_gpu(true).err().expect("refused");
        let text = err.to_string();
        assert!(
            text.starts_with(
                "--require-gpu: this run would prove on the CPU (BELLMAN_NO_GPU=\"yes\""
            ),
            "{text}"
        );
        assert!(
            text.contains("takes hours") && text.contains("(hint: "),
            "{text}"
        );
        let plan = provers_for(
            BackendChoice::Cpu,
            &GpuSelection::All,
            2,
            &GpuEnv::default(),
        )
        .expect("provers");
        assert!(plan.require_gpu(false).is_ok());
    }

    #[test]
    fn custom_gpu_variables_are_noted_as_ignored() {
        let env = GpuEnv {
            custom_gpu: Some(("RUST_GPU_TOOLS_CUSTOM_GPU", "GeForce RTX 3090:10496".into())),
            ..GpuEnv::default()
        };
        let plan = provers_for(BackendChoice::Cpu, &GpuSelection::All, 1, &env).expect("provers");
        assert_eq!(plan.notes.len(), 1);
        assert!(plan.notes[0].contains("is ignored"), "{:?}", plan.notes);
    }
}
