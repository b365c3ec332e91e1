//! One prover thread's GPU ([`CudaProver`]): the bases and the pre-compiled constraints it
//! keeps there, and the proof of a partition on it, every step on the device but the
//! densities' prefix counts before and the combination with `r`, `s` after.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::{Arc, Weak};
use std::time::Instant;

use bellperson::groth16::Proof;
use blstrs::{Bls12, Scalar as Fr};
use log::{debug, info, warn};

use super::abc_sets::{PinnedAbcSets, PinnedMaker};
use super::device::{CudaError, CudaGpu, PinnedBuffer};
use super::ffi;
use super::params::{decode_set, ResidentParams};
use super::residency::{
    evaluating_working_bytes, query_densities, resident_bases_bytes, slots_to_free, BaseSet,
    CircuitDensities, Density, DensityMismatch, KeptSet,
};
use crate::backend::groth16::{self, ms_since, Groth16Error};
use crate::backend::quotient::Domain;
use crate::backend::ProveError;
use crate::event::ProveTimings;
use crate::host_abc::LendsAbc;
use crate::synth::{ConstraintMatrices, SynthesizedPartition};
use crate::util::panic_message;

/// Bytes of the pinned buffer bases are staged through on their way to a GPU.
const STAGING_BYTES: usize = 256 << 20;

/// Device memory left free beyond what an upload takes, for the multiexps' temporaries: a
/// set goes beside the others only where the card has that much more.
const UPLOAD_MARGIN_BYTES: u64 = 1 << 30;

/// Why the cuda backend could not prove a partition.
#[derive(Debug, thiserror::Error)]
pub enum CudaProveError {
    /// The GPU failed (a CUDA error, out of memory, a sticky fault).
    #[error(transparent)]
    Gpu(#[from] CudaError),
    /// The bases could not be read from the parameter file.
    #[error("{path}: uploading the bases to the GPU: {source}")]
    Bases {
        /// The parameter file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The proof's assembly refused (a subverted setup, a domain too large).
    #[error(transparent)]
    Groth16(#[from] Groth16Error),
    /// The partition does not match the parameters.
    #[error("the partition does not match the parameters: {0}")]
    Mismatch(String),
}

/// A parameter set on the GPU, in one of its slots.
struct SetOnGpu {
    /// The set. A weak handle: it keeps the set's allocation, so no later set can take its
    /// address and pass for it.
    params: Weak<ResidentParams>,
    /// Its pre-compiled constraints, when the GPU evaluates its circuit; held the same way.
    matrices: Option<Weak<dyn ConstraintMatrices>>,
    /// Device bytes of its resident bases and of its constraints.
    bases_bytes: u64,
    matrices_bytes: u64,
    /// Device bytes a partition of it works in, its constraints evaluated on the GPU.
    working_bytes: u64,
    /// When it last served a partition ([`CudaProver::uses`]).
    last_used: u64,
}

/// One prover thread's GPU.
pub struct CudaProver {
    name: String,
    gpu: CudaGpu,
    /// The sets on the GPU, by slot: as many as its memory holds (a PoRep circuit's and an
    /// update circuit's together on a large card), the least recently used freed for a
    /// newcomer that does not fit beside them.
    sets: [Option<SetOnGpu>; ffi::SET_SLOTS],
    /// Device memory this prover may take (`--gpu-memory`, or the card's free memory when
    /// the run started): what the sets and a partition's working set are planned within.
    device_bytes: u64,
    /// Partitions proved or sets uploaded so far: the clock of [`SetOnGpu::last_used`].
    uses: u64,
    /// Constraints whose upload failed, and why: not tried again (an upload of 8.9 GB at
    /// 32GiB for every partition would be a storm), their partitions are evaluated on the
    /// host within the memory budget instead (see `pipeline::evaluation`).
    refused: Option<(Weak<dyn ConstraintMatrices>, CudaError)>,
    densities: CircuitDensities,
    staging: Option<PinnedBuffer>,
    /// Where the host evaluates this prover's partitions' a, b and c.
    abc_sets: Arc<PinnedAbcSets>,
    /// Partitions whose ones were summed by a batch's pattern pass, since it opened.
    summed_by_pattern: usize,
}

impl std::fmt::Debug for CudaProver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name)
    }
}

impl CudaProver {
    /// The most partitions of one parameter set a batch holds ([`Self::prove_batch`]):
    /// their ones' sums share one pass over the bases, a base's addition into its pattern's
    /// bucket serving them all (`batch_ones.cuh`). Ten, a 32GiB sector's partitions: at
    /// 2^27 terms the ones of ten partitions take 58 ms by pattern against 330 ms one
    /// partition at a time (H100).
    pub const BATCH: usize = 10;

    /// Partitions the pipeline hands it per call: [`Self::BATCH`] unless `CUZK_CUDA_BATCH`
    /// asks for fewer (1: one at a time, each summing its own ones).
    pub fn batch_size() -> usize {
        static SIZE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
        *SIZE.get_or_init(|| batch_of(std::env::var("CUZK_CUDA_BATCH").ok().as_deref()))
    }

    /// A prover on GPU `index`, named `name` in the timeline.
    pub fn open(index: usize, name: String) -> Result<CudaProver, CudaError> {
        let mut gpu = CudaGpu::open(index)?;
        let device_bytes = gpu.free_bytes()? as u64;
        Ok(CudaProver {
            name: name.clone(),
            gpu,
            sets: Default::default(),
            device_bytes,
            uses: 0,
            refused: None,
            densities: CircuitDensities::default(),
            staging: None,
            abc_sets: Arc::new(PinnedAbcSets::new(&name, PinnedMaker)),
            summed_by_pattern: 0,
        })
    }

    /// How many partitions had their ones summed by a batch's pattern pass
    /// ([`Self::prove_batch`]) since it opened.
    pub fn summed_by_pattern(&self) -> usize {
        self.summed_by_pattern
    }

    /// Its name in the timeline.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The pinned sets the host evaluates its partitions' a, b and c into.
    pub fn abc_lender(&self) -> Arc<dyn LendsAbc> {
        self.abc_sets.clone()
    }

    /// The GPU it proves on.
    pub fn gpu(&self) -> &CudaGpu {
        &self.gpu
    }

    /// Free device memory now.
    pub fn free_bytes(&mut self) -> Result<usize, CudaError> {
        self.gpu.free_bytes()
    }

    /// Caps the device memory this prover plans for at `bytes`: the sets and a working set.
    pub fn take_at_most(&mut self, bytes: u64) {
        self.device_bytes = self.device_bytes.min(bytes);
    }

    /// `--gpu-memory`: [`CudaProver::take_at_most`], and the device holds the allocations it
    /// sizes alone (the second witness slot, the memory pool) to `bytes` too.
    pub fn limit_to(&mut self, bytes: u64) -> Result<(), CudaError> {
        self.take_at_most(bytes);
        self.gpu.set_limit(bytes)
    }

    /// The slot holding `params`' resident bases, if they are on the GPU.
    fn slot_of(&self, params: &Arc<ResidentParams>) -> Option<usize> {
        let wanted = Arc::downgrade(params);
        self.sets
            .iter()
            .position(|set| set.as_ref().is_some_and(|set| set.params.ptr_eq(&wanted)))
    }

    /// True when `params`' resident bases are on the GPU.
    pub fn has_bases_of(&self, params: &Arc<ResidentParams>) -> bool {
        self.slot_of(params).is_some()
    }

    /// Marks the set in `slot` as used now.
    fn touch(&mut self, slot: usize) {
        self.uses += 1;
        if let Some(set) = &mut self.sets[slot] {
            set.last_used = self.uses;
        }
    }

    /// Frees the sets in `slots`, and those whose parameters the run gave up (their
    /// bases serve no partition any more).
    fn release(&mut self, slots: &[usize]) -> Result<(), CudaError> {
        for slot in 0..ffi::SET_SLOTS {
            let is_gone = self.sets[slot]
                .as_ref()
                .is_some_and(|set| set.params.strong_count() == 0);
            if !(is_gone || slots.contains(&slot)) {
                continue;
            }
            if let Some(set) = self.sets[slot].take() {
                self.gpu.release_set(slot)?;
                info!(
                    "{}: freed {:.1} GB of another parameter set's bases and constraints on {} for the set at hand",
                    self.name,
                    (set.bases_bytes + set.matrices_bytes) as f64 / 1e9,
                    self.gpu.name()
                );
            }
        }
        Ok(())
    }

    /// Makes room for `bytes` more on the GPU beside every set but `keep`: frees the least
    /// recently used sets the plan cannot keep, and all of them where the card itself has
    /// not that much free (another process, a PoSt, may hold part of it).
    fn make_room(&mut self, bytes: u64, keep: Option<usize>) -> Result<(), CudaError> {
        self.release(&[])?;
        let working = self
            .sets
            .iter()
            .flatten()
            .map(|set| set.working_bytes)
            .max()
            .unwrap_or(0);
        let kept_bytes = keep
            .and_then(|slot| self.sets[slot].as_ref())
            .map_or(0, |set| set.bases_bytes + set.matrices_bytes);
        let others: Vec<KeptSet> = (0..ffi::SET_SLOTS)
            .filter(|&slot| Some(slot) != keep)
            .filter_map(|slot| {
                self.sets[slot].as_ref().map(|set| KeptSet {
                    slot,
                    bytes: set.bases_bytes + set.matrices_bytes,
                    last_used: set.last_used,
                })
            })
            .collect();
        let free = slots_to_free(
            &others,
            kept_bytes + bytes + working,
            self.device_bytes,
            ffi::SET_SLOTS - 1,
        );
        self.release(&free)?;
        if self.free_bytes()? as u64 >= bytes + UPLOAD_MARGIN_BYTES {
            return Ok(());
        }
        self.release_all_but(keep)
    }

    /// Frees every set but the one in `keep`.
    fn release_all_but(&mut self, keep: Option<usize>) -> Result<(), CudaError> {
        let others: Vec<usize> = (0..ffi::SET_SLOTS).filter(|&s| Some(s) != keep).collect();
        self.release(&others)
    }

    /// Runs `upload` into `slot`; where it fails beside other sets (out of memory through
    /// fragmentation, or a pool that grew), frees them and tries once more, alone.
    fn alone_if_refused(
        &mut self,
        slot: usize,
        upload: impl Fn(&mut CudaGpu) -> Result<(), CudaError>,
    ) -> Result<(), CudaError> {
        let Err(error) = upload(&mut self.gpu) else {
            return Ok(());
        };
        let has_others = (0..ffi::SET_SLOTS).any(|s| s != slot && self.sets[s].is_some());
        if !has_others {
            return Err(error);
        }
        self.release_all_but(Some(slot))?;
        upload(&mut self.gpu)
    }

    /// Uploads `params`' resident bases unless they are already on the GPU, calling
    /// `on_upload` first (the timeline shows an upload as a parameter load): true when it
    /// uploaded.
    pub fn upload(
        &mut self,
        params: &Arc<ResidentParams>,
        on_upload: impl FnOnce(),
    ) -> Result<bool, CudaProveError> {
        if self.has_bases_of(params) {
            return Ok(false);
        }
        on_upload();
        self.ensure_bases(params).map(|_| true)
    }

    /// Proves each partition of `batch` with fresh randomness ([`Self::prove_batch`]). A
    /// panic fails its partition, not the run.
    pub fn prove_each(
        &mut self,
        batch: Vec<SynthesizedPartition>,
        params: &Arc<ResidentParams>,
        next: Option<&SynthesizedPartition>,
        released: &mut dyn FnMut(usize),
    ) -> Vec<Result<(Proof<Bls12>, ProveTimings), ProveError>> {
        let randomness: Vec<(Fr, Fr)> = batch.iter().map(|_| groth16::fresh_randomness()).collect();
        self.prove_batch(batch, params, &randomness, next, released)
    }

    /// Proves the partitions of `batch` (of one parameter set) one after another, each with
    /// its `randomness` (`r`, `s`); `next` is the partition after the batch, whose witness
    /// goes up while the last one is proved. Where the batch has two partitions or more (at
    /// most [`Self::BATCH`]), their calls leave the ones' sums of their resident split
    /// queries to one pattern pass after the last (`batch_ones.cuh`), and each proof is
    /// assembled then. A panic fails its partition, not the run; a failed pattern pass fails
    /// the partitions that waited on it. `released(k)` once partition `k`'s own call is
    /// over: its vectors are dropped then, not held until the batch's proofs.
    pub fn prove_batch(
        &mut self,
        batch: Vec<SynthesizedPartition>,
        params: &Arc<ResidentParams>,
        randomness: &[(Fr, Fr)],
        next: Option<&SynthesizedPartition>,
        released: &mut dyn FnMut(usize),
    ) -> Vec<Result<(Proof<Bls12>, ProveTimings), ProveError>> {
        let together = batch.len() > 1 && batch.len() <= Self::BATCH;
        let mut batch: std::collections::VecDeque<_> = batch.into();
        let mut proved = Vec::with_capacity(batch.len());
        let mut position = 0;
        while let Some(partition) = batch.pop_front() {
            // Fresh randomness for any partition `randomness` does not cover: never zero.
            let (r, s) = randomness
                .get(position)
                .copied()
                .unwrap_or_else(groth16::fresh_randomness);
            let following = batch.front().or(next);
            let at = together.then_some(position as u32);
            proved.push(
                catch_unwind(AssertUnwindSafe(|| {
                    self.multiexps(partition, params, r, s, following, at)
                }))
                .map_err(|panic| ProveError::Panicked(panic_message(panic.as_ref())))
                .and_then(|result| result.map_err(ProveError::from)),
            );
            released(position);
            position += 1;
        }
        self.add_batch_ones(&mut proved);
        proved
            .into_iter()
            .map(|result| result.and_then(|p| self.assemble(p, params).map_err(ProveError::from)))
            .collect()
    }

    /// The pattern pass over the ones the batch's calls left out, its sums added to their
    /// partitions' multiexps and its time shared among them; where it fails, so do they.
    fn add_batch_ones(&mut self, proved: &mut [Result<Pending, ProveError>]) {
        let waiting: Vec<usize> = proved
            .iter()
            .enumerate()
            .filter(|(_, p)| matches!(p, Ok(p) if p.left_out))
            .map(|(i, _)| i)
            .collect();
        let Some(slot) = waiting
            .first()
            .and_then(|&i| proved[i].as_ref().ok())
            .map(|p| p.slot)
        else {
            return;
        };
        let positions: Vec<u32> = waiting.iter().map(|&i| i as u32).collect();
        let started = Instant::now();
        // Each partition that waited gets its own copy of a failure.
        let summed = catch_unwind(AssertUnwindSafe(|| self.gpu.batch_ones(slot, &positions)))
            .map_err(|panic| {
                let message = panic_message(panic.as_ref());
                Box::new(move || ProveError::Panicked(message.clone())) as Box<dyn Fn() -> _>
            })
            .and_then(|result| {
                result.map_err(|error| {
                    Box::new(move || ProveError::from(CudaProveError::from(error.clone())))
                        as Box<dyn Fn() -> _>
                })
            });
        let share = 1.0 / waiting.len() as f64;
        match summed {
            Ok((sums, ms)) => {
                self.summed_by_pattern += waiting.len();
                debug!(
                    "{}: the ones of {} partitions by pattern in {:.0} ms (L {:.0}, A {:.0}, B_G1 {:.0}, B_G2 {:.0} ms)",
                    self.name,
                    waiting.len(),
                    ms_since(started),
                    ms[0],
                    ms[1],
                    ms[2],
                    ms[3]
                );
                for (&i, ones) in waiting.iter().zip(sums) {
                    if let Ok(p) = &mut proved[i] {
                        p.msm.l += ones.l;
                        p.msm.a += ones.a;
                        p.msm.b_g1 += ones.b_g1;
                        p.msm.b_g2 += ones.b_g2;
                        let t = &mut p.timings;
                        for (split, pass) in t.msm_g1_split_ms[1..].iter_mut().zip(&ms[..3]) {
                            *split += pass * share;
                        }
                        t.msm_g1_ms += (ms[0] + ms[1] + ms[2]) * share;
                        t.msm_g2_ms += ms[3] * share;
                    }
                }
            }
            Err(failure) => {
                warn!("{}: the batch's ones by pattern: {}", self.name, failure());
                for &i in &waiting {
                    proved[i] = Err(failure());
                }
            }
        }
    }

    /// Uploads `params`' resident bases unless they are already on the GPU, beside the sets
    /// there where the card holds them all: read from the file piece by piece, decoded by
    /// every core into the pinned staging buffer, copied up. Returns their slot.
    pub fn ensure_bases(&mut self, params: &Arc<ResidentParams>) -> Result<usize, CudaProveError> {
        if let Some(slot) = self.slot_of(params) {
            self.touch(slot);
            return Ok(slot);
        }
        let started = Instant::now();
        let layout = &params.layout;
        let bases_bytes = resident_bases_bytes(layout, params.resident);
        let n = (layout.h + 1).next_power_of_two();
        let working_bytes = evaluating_working_bytes(n, layout.l, layout.ic);
        self.make_room(bases_bytes, None)?;
        let Some(slot) = self.sets.iter().position(Option::is_none) else {
            unreachable!("make_room leaves a slot free")
        };
        // H's count tells the GPU its form: the file's own m - 1 points, or m on the coset.
        let counts = ffi::BaseCounts {
            h: params.extent(BaseSet::H).count as usize,
            l: layout.l as usize,
            a: layout.a as usize,
            b: layout.b as usize,
        };
        self.alone_if_refused(slot, |gpu| gpu.reserve_bases(slot, counts, params.resident))?;
        let staging = match &mut self.staging {
            Some(staging) => staging,
            none => none.insert(PinnedBuffer::new(STAGING_BYTES)?),
        };
        let mut bytes = 0u64;
        for set in BaseSet::ALL {
            if params.resident & set.bit() == 0 {
                continue;
            }
            let extent = params.extent(set);
            let (offset, count) = (extent.offset, extent.count);
            let bases = |source| CudaProveError::Bases {
                path: extent.path.to_owned(),
                source,
            };
            let file = params.open(set).map_err(bases)?;
            let size = set.point_bytes();
            let per_piece = STAGING_BYTES / size;
            let mut first = 0usize;
            while first < count as usize {
                let take = per_piece.min(count as usize - first);
                let piece = &mut staging.as_mut_slice()[..take * size];
                let at = offset + first as u64 * set.file_point_bytes();
                decode_set(&file, set, at, piece).map_err(bases)?;
                self.gpu.upload_bases(slot, set, first, piece)?;
                first += take;
            }
            bytes += count * size as u64;
        }
        let kept = self.sets.iter().flatten().count();
        info!(
            "{}: {} GB of bases resident on {} in {:.1} s{}",
            self.name,
            bytes / 1_000_000_000,
            self.gpu.name(),
            started.elapsed().as_secs_f64(),
            if kept > 0 {
                format!(", beside {kept} other parameter set(s) kept there")
            } else {
                String::new()
            }
        );
        self.sets[slot] = Some(SetOnGpu {
            params: Arc::downgrade(params),
            matrices: None,
            bases_bytes,
            matrices_bytes: 0,
            working_bytes,
            last_used: 0,
        });
        self.touch(slot);
        Ok(slot)
    }

    /// The slot whose constraints are `matrices`, if they are on the GPU.
    fn slot_of_matrices(&self, matrices: &Arc<dyn ConstraintMatrices>) -> Option<usize> {
        let wanted = Arc::downgrade(matrices);
        self.sets.iter().position(|set| {
            set.as_ref()
                .and_then(|set| set.matrices.as_ref())
                .is_some_and(|on_gpu| on_gpu.ptr_eq(&wanted))
        })
    }

    /// `next`'s witness as the GPU reads it, when its constraints are on the GPU.
    fn witness_view(&self, next: &SynthesizedPartition) -> Option<ffi::Partition> {
        let matrices = next.deferred.as_ref()?;
        self.slot_of_matrices(matrices)?;
        Some(witness_only_view(next, matrices.rows()))
    }

    /// Uploads `matrices`, the constraints of `params`' circuit, beside `params`' bases
    /// unless they are already on the GPU, so that it evaluates their partitions; once
    /// refused (out of device memory, a PoSt holding the card), a set is not tried again
    /// and says why. Bases not on the GPU yet are left to the proof, which uploads them
    /// first and says why if it cannot.
    pub fn take_constraints(
        &mut self,
        params: &Arc<ResidentParams>,
        matrices: &Arc<dyn ConstraintMatrices>,
    ) -> Result<(), CudaError> {
        if let Some((set, error)) = &self.refused {
            if set.ptr_eq(&Arc::downgrade(matrices)) {
                return Err(error.clone());
            }
        }
        let Some(slot) = self.slot_of(params) else {
            return Ok(());
        };
        self.ensure_matrices(slot, matrices).inspect_err(|error| {
            warn!(
                "{}: {error}; the constraints are not tried again on this GPU, the host evaluates their partitions",
                self.name
            );
            self.refused = Some((Arc::downgrade(matrices), error.clone()));
        })
    }

    /// Uploads `matrices` into `slot`, beside its bases, unless they are already there.
    fn ensure_matrices(
        &mut self,
        slot: usize,
        matrices: &Arc<dyn ConstraintMatrices>,
    ) -> Result<(), CudaError> {
        let wanted = Arc::downgrade(matrices);
        let is_there = self.sets[slot]
            .as_ref()
            .and_then(|set| set.matrices.as_ref())
            .is_some_and(|on_gpu| on_gpu.ptr_eq(&wanted));
        if is_there {
            return Ok(());
        }
        if let Some(set) = &mut self.sets[slot] {
            set.matrices = None;
            set.matrices_bytes = 0;
        }
        let started = Instant::now();
        let bytes = matrices.gpu_bytes() as usize;
        self.make_room(bytes as u64, Some(slot))?;
        self.alone_if_refused(slot, |gpu| gpu.upload_matrices(slot, &**matrices))?;
        info!(
            "{}: {:.1} GB of pre-compiled constraints on {} in {:.1} s; partitions in flight hold only their witness",
            self.name,
            bytes as f64 / 1e9,
            self.gpu.name(),
            started.elapsed().as_secs_f64()
        );
        if let Some(set) = &mut self.sets[slot] {
            set.matrices = Some(Arc::downgrade(matrices));
            set.matrices_bytes = bytes as u64;
        }
        Ok(())
    }

    /// Proves `partition` with randomness `r`, `s`. The witness of `next`, the partition
    /// this prover takes after it, goes up meanwhile where the GPU evaluates both one's
    /// constraints (its upload then overlaps this one's kernels).
    pub fn prove(
        &mut self,
        partition: SynthesizedPartition,
        params: &Arc<ResidentParams>,
        r: Fr,
        s: Fr,
        next: Option<&SynthesizedPartition>,
    ) -> Result<(Proof<Bls12>, ProveTimings), CudaProveError> {
        let pending = self.multiexps(partition, params, r, s, next, None)?;
        self.assemble(pending, params)
    }

    /// The proof from a partition's multiexps, all of them summed.
    fn assemble(
        &self,
        pending: Pending,
        params: &Arc<ResidentParams>,
    ) -> Result<(Proof<Bls12>, ProveTimings), CudaProveError> {
        let started = Instant::now();
        groth16::check_delta(params.vk())?;
        let proof = groth16::assemble(params.vk(), pending.r, pending.s, &pending.msm);
        let mut timings = pending.timings;
        timings.cpu_tail_ms += ms_since(started);
        Ok((proof, timings))
    }

    /// The quotient and the multiexps of `partition` on the GPU: at `batch_position` of a
    /// batch, less the ones' sums its call leaves to the batch's pattern pass.
    fn multiexps(
        &mut self,
        partition: SynthesizedPartition,
        params: &Arc<ResidentParams>,
        r: Fr,
        s: Fr,
        next: Option<&SynthesizedPartition>,
        batch_position: Option<u32>,
    ) -> Result<Pending, CudaProveError> {
        let started = Instant::now();
        let slot = self.ensure_bases(params)?;
        // A partition left to the GPU's evaluation comes only once its constraints are there
        // (`take_constraints`); the host's fallback is the pipeline's, within the budget.
        let evaluate = match partition.deferred.clone() {
            Some(matrices) => {
                self.take_constraints(params, &matrices)?;
                true
            }
            None => false,
        };
        let bases_ms = ms_since(started);

        let started = Instant::now();
        let rows = partition.num_constraints();
        let domain = Domain::for_constraints(rows).map_err(Groth16Error::from)?;
        let densities = self.densities.of(&partition).map_err(mismatch)?;
        let host = |set| params.streamed(set);
        // From the prover's pinned sets when the host evaluated them there.
        let [a, b, c] = partition.abc().map(|v| {
            if evaluate {
                std::ptr::null()
            } else {
                v.as_ptr()
            }
        });
        // Held compact in that memory where the host made them so: expanded on the device.
        let abc_compact = match &partition.compact_abc {
            Some(layouts) if !evaluate => layouts.each_ref().map(|layout| ffi::CompactAbc {
                ones: layout.ones.as_ptr(),
                wide: layout.wide.as_ptr(),
                wide_before: layout.wide_before.as_ptr(),
                chunk_wide: layout.chunk_wide.as_ptr(),
                chunk_rows: layout.chunk_rows,
            }),
            _ => [ffi::CompactAbc::WHOLE; 3],
        };
        let view = ffi::Partition {
            a,
            b,
            c,
            abc_compact,
            evaluate: i32::from(evaluate),
            lg_domain: domain.log_m as usize,
            host_h: host(BaseSet::H),
            host_l: host(BaseSet::L),
            host_a: host(BaseSet::A),
            host_b_g1: host(BaseSet::BG1),
            host_b_g2: host(BaseSet::BG2),
            set_slot: slot,
            batch_position: batch_position.map_or(-1, |p| p as i32),
            ..with_densities(witness_only_view(&partition, rows), &densities)
        };
        let compact_rows_differ = partition
            .compact_abc
            .iter()
            .flat_map(|layouts| layouts.iter())
            .any(|layout| !layout.is_layout_of(rows));
        if !evaluate && (partition.abc().iter().any(|v| v.len() != rows) || compact_rows_differ) {
            return Err(CudaProveError::Mismatch(
                "a, b and c differ in length".into(),
            ));
        }
        let layout = &params.layout;
        let a_len = (view.input_len + view.a_aux_total) as u64;
        let b_len = (view.b_input_total + view.b_aux_total) as u64;
        let h_count = params.extent(BaseSet::H).count;
        let h_fits = if params.h_on_coset() {
            h_count == domain.m as u64
        } else {
            layout.h + 1 >= domain.m as u64
        };
        if !h_fits || layout.l != view.aux_len as u64 || layout.a != a_len || layout.b != b_len {
            return Err(CudaProveError::Mismatch(format!(
                "{} constraints (a domain of {}), {} aux, A {a_len}, B {b_len} against parameters with H {h_count}{}, L {}, A {}, B {}",
                view.abc_len, domain.m, view.aux_len,
                if params.h_on_coset() { " on the coset" } else { "" },
                layout.l, layout.a, layout.b
            )));
        }
        let prepare_ms = ms_since(started);

        // SAFETY: every pointer in `view` borrows `partition`, the densities or `params`,
        // all alive until the call returns; lengths were checked against the parameters.
        // The next partition: its witness goes up ahead where the GPU evaluates both; where
        // the host evaluated this one, its queries may share this call's pass over the
        // streamed bases (the GPU checks that they fit it), so it goes with its densities.
        let next_densities = next
            .filter(|next| !evaluate && next.deferred.is_none())
            .and_then(|next| query_densities(next).ok());
        let next_view = match (next, &next_densities) {
            (Some(next), _) if evaluate => self.witness_view(next),
            (Some(next), Some(densities)) => Some(ffi::Partition {
                evaluate: 0,
                set_slot: slot,
                ..with_densities(witness_only_view(next, 0), densities)
            }),
            _ => None,
        };
        // SAFETY (both): `next_view` borrows `next` and `next_densities`, alive for the call
        // as well.
        let (msm, step, left_out) = unsafe { self.gpu.prove(&view, next_view.as_ref())? };
        drop(partition);

        let timings = ProveTimings {
            upload_ms: step.upload,
            fft_ms: step.quotient,
            evaluate_ms: step.evaluate,
            msm_g1_ms: step.msm_h + step.msm_l + step.msm_a + step.msm_b_g1,
            msm_g1_split_ms: [step.msm_h, step.msm_l, step.msm_a, step.msm_b_g1],
            msm_g2_ms: step.msm_b_g2,
            cpu_tail_ms: prepare_ms,
            gpu_call_ms: 0.0,
            pcie_bytes: step.host_to_device_bytes,
            beside_h_ms: step.beside_h,
        };
        debug!(
            "{}: proved partition (bases {bases_ms:.0} ms; upload {:.0}, evaluation {:.0}, quotient {:.0}, H {:.0}, L {:.0}, A {:.0}, B_G1 {:.0}, B_G2 {:.0} ms)",
            self.name, step.upload, step.evaluate, step.quotient, step.msm_h, step.msm_l, step.msm_a, step.msm_b_g1, step.msm_b_g2
        );
        Ok(Pending {
            msm,
            left_out,
            slot,
            r,
            s,
            timings,
        })
    }
}

/// A partition through the GPU, its proof not yet assembled: its multiexps, less the ones'
/// sums its call left to the batch's pattern pass where `left_out`.
struct Pending {
    msm: groth16::Multiexps,
    left_out: bool,
    /// The GPU slot of its parameter set.
    slot: usize,
    r: Fr,
    s: Fr,
    timings: ProveTimings,
}

/// The batch size `CUZK_CUDA_BATCH` asks for: 1 to [`CudaProver::BATCH`], the most where
/// unset or not a number.
fn batch_of(value: Option<&str>) -> usize {
    value
        .and_then(|v| v.trim().parse::<usize>().ok())
        .map_or(CudaProver::BATCH, |n| n.clamp(1, CudaProver::BATCH))
}

/// A density that does not fit its partition, as the prover's error.
fn mismatch(error: DensityMismatch) -> CudaProveError {
    CudaProveError::Mismatch(error.to_string())
}

/// `view` with `densities` ([`query_densities`]) for the GPU's filters.
fn with_densities(view: ffi::Partition, densities: &[Density; 3]) -> ffi::Partition {
    let [a_aux, b_input, b_aux] = densities;
    ffi::Partition {
        a_aux_words: a_aux.words.as_ptr(),
        a_aux_prefix: a_aux.prefix.as_ptr(),
        a_aux_total: a_aux.total,
        b_input_words: b_input.words.as_ptr(),
        b_input_prefix: b_input.prefix.as_ptr(),
        b_input_total: b_input.total,
        b_aux_words: b_aux.words.as_ptr(),
        b_aux_prefix: b_aux.prefix.as_ptr(),
        b_aux_total: b_aux.total,
        ..view
    }
}

/// `partition` as the GPU reads it from its witness alone, the constraints evaluated there:
/// the inputs, and the aux variables whole or, when compact, as bits and wide values (`aux`
/// null). No a, b and c, densities or streamed bases: a proof's view adds those.
fn witness_only_view(partition: &SynthesizedPartition, rows: usize) -> ffi::Partition {
    use std::ptr::null;
    let (aux, aux_len, aux_ones, aux_wide_index, aux_wide, aux_wide_len) =
        match &partition.compact_aux {
            Some(compact) => (
                null(),
                compact.len,
                compact.ones.as_ptr(),
                compact.wide_index.as_ptr(),
                compact.wide_values.as_ptr(),
                compact.wide_values.len(),
            ),
            None => (
                partition.aux_assignment.as_ptr(),
                partition.aux_assignment.len(),
                null(),
                null(),
                null(),
                0,
            ),
        };
    ffi::Partition {
        a: null(),
        b: null(),
        c: null(),
        abc_len: rows,
        abc_compact: [ffi::CompactAbc::WHOLE; 3],
        evaluate: 1,
        witness_id: partition.witness_id,
        lg_domain: 0,
        inputs: partition.input_assignment.as_ptr(),
        input_len: partition.input_assignment.len(),
        aux,
        aux_len,
        aux_ones,
        aux_wide_index,
        aux_wide,
        aux_wide_len,
        a_aux_words: null(),
        a_aux_prefix: null(),
        a_aux_total: 0,
        b_input_words: null(),
        b_input_prefix: null(),
        b_input_total: 0,
        b_aux_words: null(),
        b_aux_prefix: null(),
        b_aux_total: 0,
        host_h: null(),
        host_l: null(),
        host_a: null(),
        host_b_g1: null(),
        host_b_g2: null(),
        set_slot: 0,
        batch_position: -1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_batch_size_is_a_whole_batch_unless_asked_for_fewer() {
        assert_eq!(batch_of(None), CudaProver::BATCH);
        assert_eq!(batch_of(Some("not a number")), CudaProver::BATCH);
        assert_eq!(batch_of(Some("1")), 1);
        assert_eq!(batch_of(Some("0")), 1);
        assert_eq!(batch_of(Some(" 5 ")), 5);
        assert_eq!(batch_of(Some("64")), CudaProver::BATCH);
    }
}
