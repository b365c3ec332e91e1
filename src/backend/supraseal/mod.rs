//! The SupraSeal backend: proves synthesized partitions with the `supraseal-c2` crate's CUDA
//! Groth16 prover, fed by cuzk's own synthesis.
//!
//! One call proves a batch of partitions of one circuit: the NTTs, the MSMs and the final
//! combination run on the GPUs (one partition per GPU at a time), the B-in-G2 multiexp on CPU
//! threads. Its parameters are a [`SRS`] read from the standard `.params` file into pinned
//! host memory once per run. The crate takes a process-wide lock for the whole call, so one
//! prover thread drives every GPU; it aborts the process on a failed C++ assertion, so every
//! length it will check is checked here first; and it panics on a CUDA error, which becomes a
//! failed partition with the reason.
//!
//! Without the `supraseal` feature this module only says the backend is absent, and keeps
//! what is pure and tested in every build: [`check_batch`], the guard against those
//! assertions, the memory it needs ([`host_buffers`], [`note`]) and the plan of its one
//! prover ([`plan`]).

pub mod host_buffers;

use anyhow::{bail, Result};

use super::gpu::env::GpuEnv;
use super::gpu::free_memory::{gib, GpuDescription, GIB};
use super::gpu::{self, GpuSelection};
use super::{BackendChoice, Prover, ProverPlan};
use crate::event::WorkerName;
use crate::params::load::ParamsLayout;
use crate::synth::SynthesizedPartition;

/// What SupraSeal needs on each GPU for a 32GiB or 64GiB partition (Curio's figure).
pub const GPU_BYTES_32GIB: u64 = 12 * GIB;

/// SupraSeal's prover: one thread drives every visible GPU, a partition per GPU per call.
pub struct SuprasealProver {
    /// Partitions per call: one per GPU.
    batch: usize,
}

impl SuprasealProver {
    /// Its name in the timeline.
    pub fn name(&self) -> &str {
        WorkerName::SUPRASEAL
    }

    /// Partitions it proves per call.
    pub fn batch_size(&self) -> usize {
        self.batch
    }
}

/// Bytes of a set of `layout` the host keeps for SupraSeal: all of it, and the host buffers
/// of its calls of `batch` partitions, which the run holds for as long as the set.
pub fn host_bytes(layout: &ParamsLayout, batch: usize) -> u64 {
    layout.memory_bytes() + host_buffers::estimated_call_bytes(layout, batch as u64)
}

/// The SupraSeal prover of a run that `choice` asks for, or lets take the GPUs (`auto` in a
/// build that has it, when no cuda prover started); `None` where another backend proves.
/// SupraSeal uses every GPU this process sees, so `--gpus` cannot choose among them.
pub fn plan(
    choice: BackendChoice,
    gpus: &GpuSelection,
    env: &GpuEnv,
) -> Result<Option<ProverPlan>> {
    let wanted = match choice {
        BackendChoice::Supraseal => {
            if !IS_BUILT {
                bail!("--backend supraseal: this cuzk was built without SupraSeal (hint: build with scripts/build-cuda.sh, which enables it)");
            }
            true
        }
        BackendChoice::Auto => IS_BUILT,
        BackendChoice::Cuda | BackendChoice::EcGpu | BackendChoice::Cpu => false,
    };
    if !wanted {
        return Ok(None);
    }
    let visible = gpu::gpu_descriptions();
    if visible.is_empty() {
        if choice == BackendChoice::Supraseal {
            bail!(
                "--backend supraseal: {} (hint: check `nvidia-smi` and CUDA_VISIBLE_DEVICES)",
                gpu::no_gpu_reason(env)
            );
        }
        return Ok(None);
    }
    if let GpuSelection::Indices(_) = gpus {
        bail!("--gpus with --backend supraseal: SupraSeal uses every GPU this process sees (hint: choose them with CUDA_VISIBLE_DEVICES, e.g. CUDA_VISIBLE_DEVICES=0,1)");
    }
    Ok(Some(ProverPlan {
        provers: vec![Prover::Supraseal(SuprasealProver {
            batch: visible.len(),
        })],
        notes: vec![format!("{}{}", env.visible_prefix(), note(&visible))],
        cpu_reason: None,
        gpus: visible,
    }))
}

/// Why SupraSeal did not prove a batch; every partition of the batch fails with it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SuprasealError {
    /// A length SupraSeal's prover asserts on is wrong: calling it would abort the process.
    #[error("the partition does not fit these parameters ({what}: {found} != {expected})")]
    DoesNotFit {
        /// Which lengths disagree.
        what: &'static str,
        /// The length found.
        found: u64,
        /// The length the prover expects.
        expected: u64,
    },
    /// The prover merges the batch's density masks, so every partition must share them.
    #[error("the partitions of one batch differ in shape")]
    ShapesDiffer,
    /// The prover panicked, with a CUDA error's text.
    #[error("{0}")]
    Panicked(String),
}

/// Why a batch of partitions cannot go to SupraSeal: the lengths its prover asserts on.
pub fn check_batch(
    batch: &[&SynthesizedPartition],
    layout: &ParamsLayout,
) -> Result<(), SuprasealError> {
    let Some(first) = batch.first() else {
        return Ok(());
    };
    for p in batch {
        let (inputs, aux) = (
            p.input_assignment.len() as u64,
            p.aux_assignment.len() as u64,
        );
        let checks = [
            (
                p.a_aux_density.bv.len() as u64,
                aux,
                "A density bits vs aux variables",
            ),
            (
                p.b_aux_density.bv.len() as u64,
                aux,
                "B density bits vs aux variables",
            ),
            (
                p.b_input_density.bv.len() as u64,
                inputs,
                "B input density bits vs inputs",
            ),
            (layout.l, aux, "L points vs aux variables"),
            (
                layout.a,
                inputs + p.a_aux_density.get_total_density() as u64,
                "A points vs inputs plus A density",
            ),
            (
                layout.b,
                (p.b_input_density.get_total_density() + p.b_aux_density.get_total_density())
                    as u64,
                "B points vs B density",
            ),
            (
                layout.h + 1,
                (p.a.len() as u64).next_power_of_two(),
                "H points vs the domain",
            ),
        ];
        for (found, expected, what) in checks {
            if found != expected {
                return Err(SuprasealError::DoesNotFit {
                    what,
                    found,
                    expected,
                });
            }
        }
        // The prover merges the batch's density masks: every partition must share them.
        if p.a_aux_density != first.a_aux_density
            || p.b_aux_density != first.b_aux_density
            || p.b_input_density != first.b_input_density
            || p.a.len() != first.a.len()
        {
            return Err(SuprasealError::ShapesDiffer);
        }
    }
    Ok(())
}

/// The note for SupraSeal on `gpus` (all it will use), and whether each has room.
pub fn note(gpus: &[GpuDescription]) -> String {
    let short: Vec<String> = gpus
        .iter()
        .filter(|gpu| {
            gpu.free_bytes
                .unwrap_or(gpu.total_bytes)
                .lt(&GPU_BYTES_32GIB)
        })
        .map(|gpu| format!("GPU {}", gpu.index))
        .collect();
    let listed: Vec<String> = gpus
        .iter()
        .map(|gpu| format!("GPU {} ({})", gpu.index, gpu.describe()))
        .collect();
    let verdict = if short.is_empty() {
        "fits".to_owned()
    } else {
        format!(
            "too little on {}: a 32GiB partition may fail there (hint: SupraSeal uses every GPU it sees; leave {} out with CUDA_VISIBLE_DEVICES, or use --backend ec-gpu)",
            short.join(", "),
            if short.len() == 1 { "it" } else { "them" }
        )
    };
    format!(
        "supraseal on {}; it needs ~{} per GPU for a 32GiB or 64GiB partition, less for smaller sectors: {verdict}",
        listed.join("; "),
        gib(GPU_BYTES_32GIB)
    )
}

#[cfg(feature = "supraseal")]
pub use calls::{prove_batch, SuprasealParams, SRS};

/// True when this build has the SupraSeal backend.
pub const IS_BUILT: bool = cfg!(feature = "supraseal");

#[cfg(feature = "supraseal")]
mod calls {
    //! The calls into supraseal-c2.

    use std::panic::{catch_unwind, AssertUnwindSafe};
    use std::path::Path;

    use bellperson::groth16::Proof;
    use blstrs::{Bls12, G1Affine, G2Affine, Scalar as Fr};
    use group::prime::PrimeCurveAffine;
    pub use supraseal_c2::SRS;
    use supraseal_c2::{generate_groth16_proofs, Assignment};

    use super::{check_batch, SuprasealError};
    use crate::params::load::ParamsLayout;
    use crate::synth::SynthesizedPartition;

    /// A parameter file loaded for SupraSeal, with the counts its prover checks against.
    #[derive(Clone)]
    pub struct SuprasealParams {
        /// The SRS in pinned host memory.
        pub srs: SRS,
        /// The file's counts.
        pub layout: ParamsLayout,
    }

    impl SuprasealParams {
        /// Reads `path` into pinned memory (asynchronously: the first proof waits for it).
        pub fn load(path: &Path) -> Result<SuprasealParams, String> {
            let layout = ParamsLayout::read(path).map_err(|e| e.to_string())?;
            let srs = SRS::try_new(path.to_owned(), false).map_err(String::from)?;
            Ok(SuprasealParams { srs, layout })
        }
    }

    /// Proves `batch` (partitions of one circuit) with randomness `r`, `s`: one proof per
    /// partition, or the reason the whole batch failed.
    pub fn prove_batch(
        batch: &[&SynthesizedPartition],
        params: &SuprasealParams,
        r: &[Fr],
        s: &[Fr],
    ) -> Result<Vec<Proof<Bls12>>, SuprasealError> {
        check_batch(batch, &params.layout)?;
        let assignments: Vec<Assignment<Fr>> = batch
            .iter()
            .map(|p| Assignment {
                a_aux_density: p.a_aux_density.bv.as_raw_slice().as_ptr(),
                a_aux_bit_len: p.a_aux_density.bv.len(),
                a_aux_popcount: p.a_aux_density.get_total_density(),
                b_inp_density: p.b_input_density.bv.as_raw_slice().as_ptr(),
                b_inp_bit_len: p.b_input_density.bv.len(),
                b_inp_popcount: p.b_input_density.get_total_density(),
                b_aux_density: p.b_aux_density.bv.as_raw_slice().as_ptr(),
                b_aux_bit_len: p.b_aux_density.bv.len(),
                b_aux_popcount: p.b_aux_density.get_total_density(),
                a: p.a.as_ptr(),
                b: p.b.as_ptr(),
                c: p.c.as_ptr(),
                abc_size: p.a.len(),
                inp_assignment_data: p.input_assignment.as_ptr(),
                inp_assignment_size: p.input_assignment.len(),
                aux_assignment_data: p.aux_assignment.as_ptr(),
                aux_assignment_size: p.aux_assignment.len(),
            })
            .collect();
        let mut proofs = vec![
            Proof::<Bls12> {
                a: G1Affine::identity(),
                b: G2Affine::identity(),
                c: G1Affine::identity(),
            };
            batch.len()
        ];
        // The crate panics with the CUDA error's text; the vectors it reads outlive the call.
        catch_unwind(AssertUnwindSafe(|| {
            generate_groth16_proofs(&assignments, r, s, &mut proofs, &params.srs)
        }))
        .map_err(|panic| SuprasealError::Panicked(crate::util::panic_message(panic.as_ref())))?;
        Ok(proofs)
    }
}

#[cfg(feature = "supraseal")]
impl SuprasealProver {
    /// Proves `batch` (partitions of one circuit, at most [`SuprasealProver::batch_size`])
    /// in one call with fresh randomness: a proof per partition, or the call's failure for
    /// each.
    pub fn prove_each(
        &mut self,
        batch: Vec<SynthesizedPartition>,
        params: &SuprasealParams,
    ) -> Vec<
        Result<
            (
                bellperson::groth16::Proof<blstrs::Bls12>,
                crate::event::ProveTimings,
            ),
            super::ProveError,
        >,
    > {
        let started = std::time::Instant::now();
        let mut batch = batch;
        for partition in &mut batch {
            partition.evaluate_deferred();
            partition.own_abc();
        }
        let (r, s): (Vec<_>, Vec<_>) = batch
            .iter()
            .map(|_| super::groth16::fresh_randomness())
            .unzip();
        let refs: Vec<&SynthesizedPartition> = batch.iter().collect();
        // What the budget charged for the call's own buffers, against what this batch makes
        // it allocate (a pass over the witness: only when asked for).
        if log::log_enabled!(log::Level::Debug) {
            let tail = host_buffers::TailCounts::of(&refs);
            log::debug!(
                "supraseal call of {} partition(s): host buffers {} bytes (tail {:?}, {:.1}% of the points), {} charged",
                refs.len(),
                host_buffers::call_bytes(&params.layout, refs.len() as u64, tail),
                tail,
                100.0 * tail.share_of(&params.layout),
                host_buffers::estimated_call_bytes(&params.layout, refs.len() as u64)
            );
        }
        let proved = prove_batch(&refs, params, &r, &s);
        // Free a, b, c and the witness before reporting: the next batch needs the room.
        drop(refs);
        drop(batch);
        let timings = crate::event::ProveTimings {
            gpu_call_ms: started.elapsed().as_secs_f64() * 1e3,
            ..Default::default()
        };
        match proved {
            Ok(proofs) => proofs.into_iter().map(|p| Ok((p, timings))).collect(),
            Err(err) => (0..r.len()).map(|_| Err(err.clone().into())).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::gpu::free_memory::tests::h200;
    use crate::synth::synthesize;
    use crate::synth::tests::CubeCircuit;

    fn cube(x: u64) -> SynthesizedPartition {
        synthesize(CubeCircuit {
            x: Some(blstrs::Scalar::from(x)),
        })
        .expect("synthesis")
    }

    /// The counts of parameters made for `p`'s circuit, as the file would say them.
    fn layout_of(p: &SynthesizedPartition) -> ParamsLayout {
        let inputs = p.input_assignment.len() as u64;
        ParamsLayout {
            vk_bytes: 0,
            ic: inputs,
            h: (p.a.len() as u64).next_power_of_two() - 1,
            l: p.aux_assignment.len() as u64,
            a: inputs + p.a_aux_density.get_total_density() as u64,
            b: (p.b_input_density.get_total_density() + p.b_aux_density.get_total_density()) as u64,
        }
    }

    #[test]
    fn a_batch_that_fits_its_parameters_passes() {
        let (one, two) = (cube(3), cube(5));
        assert_eq!(check_batch(&[&one, &two], &layout_of(&one)), Ok(()));
        assert_eq!(
            check_batch(&[], &layout_of(&one)),
            Ok(()),
            "nothing to check"
        );
    }

    #[test]
    fn every_length_supraseal_asserts_on_is_checked_first() {
        let p = cube(3);
        type Damage = fn(&mut ParamsLayout);
        let cases: [(&str, Damage); 4] = [
            ("L points vs aux variables", |l| l.l += 1),
            ("A points vs inputs plus A density", |l| l.a -= 1),
            ("B points vs B density", |l| l.b += 2),
            ("H points vs the domain", |l| l.h *= 2),
        ];
        for (what, damage) in cases {
            let mut layout = layout_of(&p);
            damage(&mut layout);
            let err = check_batch(&[&p], &layout).expect_err(what);
            assert!(
                matches!(err, SuprasealError::DoesNotFit { what: found, .. } if found == what),
                "{what}: {err}"
            );
            assert!(
                err.to_string().starts_with("the partition does not fit"),
                "{err}"
            );
        }
        let mut short = cube(3);
        short.a_aux_density.bv.push(true);
        let err = check_batch(&[&short], &layout_of(&p)).expect_err("density bits");
        let aux = p.aux_assignment.len() as u64;
        assert_eq!(
            err,
            SuprasealError::DoesNotFit {
                what: "A density bits vs aux variables",
                found: aux + 1,
                expected: aux,
            }
        );
    }

    #[test]
    fn partitions_of_one_batch_must_share_their_shape() {
        // Both fit the parameters (one domain of 8), but SupraSeal would merge shapes that
        // do not agree.
        let (mut one, mut other) = (cube(3), cube(5));
        one.a.resize(6, blstrs::Scalar::from(0u64));
        other.a.resize(7, blstrs::Scalar::from(0u64));
        let layout = layout_of(&one);
        assert_eq!(check_batch(&[&other], &layout), Ok(()));
        assert_eq!(
            check_batch(&[&one, &other], &layout),
            Err(SuprasealError::ShapesDiffer)
        );
    }

    #[test]
    fn supraseal_warns_about_a_gpu_without_room() {
        let roomy = note(&[h200(Some(139))]);
        assert!(roomy.ends_with(": fits"), "{roomy}");
        let mut small = h200(Some(8));
        small.index = 1;
        let note = note(&[h200(Some(139)), small]);
        assert!(note.contains("too little on GPU 1"), "{note}");
        assert!(note.contains("CUDA_VISIBLE_DEVICES"), "{note}");
    }
}
