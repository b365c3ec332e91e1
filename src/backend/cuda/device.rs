//! One GPU as the cuda backend drives it: opened once per prover thread, holding the
//! resident bases of one parameter set and the working buffers of one partition. The safe
//! face of [`ffi`](super::ffi): every call checks its status and turns a failure into a
//! [`CudaError`] that names the GPU.

use std::ffi::c_char;
use std::ptr::NonNull;

use blst::{blst_fp, blst_fp2};
use blstrs::{Fp, Fp2, G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use ff::Field;
use group::Group;

use super::ffi;
use super::residency::BaseSet;
use crate::backend::groth16::Multiexps;
use crate::synth::{ConstraintMatrices, GPU_MATRICES};

/// A failed CUDA call, with the GPU it ran on.
#[derive(Debug, Clone, thiserror::Error)]
#[error("GPU {index} ({name}): {message}")]
pub struct CudaError {
    /// The device's index among the GPUs sppark sees.
    pub index: usize,
    /// The device's name.
    pub name: String,
    /// CUDA's error code (negated by sppark), or -1.
    pub code: i32,
    /// True once a sticky error broke the device's context: the handle fails every call
    /// from now on, so its prover stops.
    pub is_device_lost: bool,
    /// What failed and why.
    pub message: String,
}

fn fp(limbs: &[u64]) -> Fp {
    let mut l = [0u64; 6];
    l.copy_from_slice(limbs);
    Fp::from(blst_fp { l })
}

fn fp2(limbs: &[u64]) -> Fp2 {
    let mut c0 = [0u64; 6];
    let mut c1 = [0u64; 6];
    c0.copy_from_slice(&limbs[..6]);
    c1.copy_from_slice(&limbs[6..12]);
    Fp2::from(blst_fp2 {
        fp: [blst_fp { l: c0 }, blst_fp { l: c1 }],
    })
}

fn g1(raw: &[u64; 18]) -> G1Projective {
    G1Projective::from_raw_unchecked(fp(&raw[..6]), fp(&raw[6..12]), fp(&raw[12..]))
}

fn g2(raw: &[u64; 36]) -> G2Projective {
    G2Projective::from_raw_unchecked(fp2(&raw[..12]), fp2(&raw[12..24]), fp2(&raw[24..]))
}

impl From<&ffi::MsmResults> for Multiexps {
    fn from(raw: &ffi::MsmResults) -> Self {
        Multiexps {
            h: g1(&raw.h),
            l: g1(&raw.l),
            a: g1(&raw.a),
            b_g1: g1(&raw.b_g1),
            b_g2: g2(&raw.b_g2),
        }
    }
}

/// An open GPU. Dropping it frees everything cuzk allocated on the device.
pub struct CudaGpu {
    raw: NonNull<ffi::Gpu>,
    index: usize,
    name: String,
    total_bytes: usize,
}

// SAFETY: the handle is only used through `&mut self` (one thread at a time), and
// groth16.cu serializes work per device with a mutex of its own.
unsafe impl Send for CudaGpu {}

impl std::fmt::Debug for CudaGpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GPU {} ({})", self.index, self.name)
    }
}

fn check(status: ffi::Status, index: usize, name: &str) -> Result<(), CudaError> {
    if status.code == 0 {
        Ok(())
    } else {
        Err(CudaError {
            index,
            name: name.to_owned(),
            code: status.code,
            is_device_lost: status.device_lost != 0,
            message: status.message(),
        })
    }
}

/// How many GPUs sppark can use (compute capability 7.0 and up); 0 without a driver.
pub fn gpu_count() -> usize {
    let mut count = 0usize;
    // SAFETY: writes one usize; catches every C++ exception.
    let status = unsafe { ffi::cuzk_gpu_count(&mut count) };
    if status.code == 0 {
        count
    } else {
        0
    }
}

impl CudaGpu {
    /// Opens GPU `index` (in CUDA's order, among those sppark can use).
    pub fn open(index: usize) -> Result<CudaGpu, CudaError> {
        let mut raw = std::ptr::null_mut();
        let mut name = [0 as c_char; 256];
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: the out-pointers are valid for the call; `name` is NUL-terminated by it.
        let status = unsafe {
            ffi::cuzk_gpu_open(
                index,
                &mut raw,
                name.as_mut_ptr(),
                name.len(),
                &mut free,
                &mut total,
            )
        };
        let name = {
            let bytes: Vec<u8> = name
                .iter()
                .take_while(|&&c| c != 0)
                .map(|&c| c as u8)
                .collect();
            String::from_utf8_lossy(&bytes).into_owned()
        };
        check(status, index, &name)?;
        let raw = NonNull::new(raw).ok_or_else(|| CudaError {
            index,
            name: name.clone(),
            code: -1,
            is_device_lost: false,
            message: "opening the GPU returned no handle".into(),
        })?;
        Ok(CudaGpu {
            raw,
            index,
            name,
            total_bytes: total,
        })
    }

    /// The device's name, as the driver gives it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The device's index.
    pub fn index(&self) -> usize {
        self.index
    }

    /// The device's memory in bytes.
    pub fn total_bytes(&self) -> usize {
        self.total_bytes
    }

    fn check(&self, status: ffi::Status) -> Result<(), CudaError> {
        check(status, self.index, &self.name)
    }

    /// Holds what the handle takes on the device to `bytes` beyond what was in use when it
    /// opened: the second witness slot and the memory pool, which the device sizes alone.
    pub fn set_limit(&mut self, bytes: u64) -> Result<(), CudaError> {
        let bytes = usize::try_from(bytes).unwrap_or(usize::MAX);
        // SAFETY: a live handle.
        self.check(unsafe { ffi::cuzk_gpu_set_limit(self.raw.as_ptr(), bytes) })
    }

    /// Free device memory now, in bytes.
    pub fn free_bytes(&mut self) -> Result<usize, CudaError> {
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: a live handle; out-pointers valid for the call.
        self.check(unsafe { ffi::cuzk_gpu_free_memory(self.raw.as_ptr(), &mut free, &mut total) })?;
        Ok(free)
    }

    /// Allocates in slot `slot` (below [`ffi::SET_SLOTS`]) the resident base vectors in
    /// `resident` (a mask of [`BaseSet::bit`]s) for a set of `counts`, freeing whatever the
    /// slot held.
    pub fn reserve_bases(
        &mut self,
        slot: usize,
        counts: ffi::BaseCounts,
        resident: u32,
    ) -> Result<(), CudaError> {
        // SAFETY: a live handle; `counts` is read during the call only; the slot is checked.
        self.check(unsafe {
            ffi::cuzk_gpu_reserve_bases(self.raw.as_ptr(), slot, &counts, resident)
        })
    }

    /// Frees slot `slot`'s bases and constraints.
    pub fn release_set(&mut self, slot: usize) -> Result<(), CudaError> {
        // SAFETY: a live handle; the slot is checked.
        self.check(unsafe { ffi::cuzk_gpu_release_set(self.raw.as_ptr(), slot) })
    }

    /// Copies `points` (whole points of `set`, Montgomery affine) into slot `slot`'s
    /// resident vector of `set` from point `first` on.
    pub fn upload_bases(
        &mut self,
        slot: usize,
        set: BaseSet,
        first: usize,
        points: &[u8],
    ) -> Result<(), CudaError> {
        let count = points.len() / set.point_bytes();
        debug_assert_eq!(count * set.point_bytes(), points.len());
        // SAFETY: a live handle; `points` holds `count` points and is read during the call.
        self.check(unsafe {
            ffi::cuzk_gpu_upload_bases(
                self.raw.as_ptr(),
                slot,
                set as u32,
                first,
                points.as_ptr(),
                count,
            )
        })
    }

    /// Uploads `matrices` (a circuit's pre-compiled constraints) into slot `slot`, beside
    /// its bases, so that partitions whose a, b and c were deferred are evaluated on the
    /// device: A and B, [`GPU_MATRICES`]; c is a ∘ b there.
    pub fn upload_matrices(
        &mut self,
        slot: usize,
        matrices: &dyn ConstraintMatrices,
    ) -> Result<(), CudaError> {
        let sections = GPU_MATRICES.map(|which| matrices.matrix(which));
        let rows = matrices.rows();
        if let Some(bad) = sections
            .iter()
            .position(|(row_ptr, _)| row_ptr.len() != rows + 1)
        {
            return Err(CudaError {
                index: self.index,
                name: self.name.clone(),
                code: -1,
                is_device_lost: false,
                message: format!(
                    "matrix {bad} of the pre-compiled constraints has the wrong number of rows"
                ),
            });
        }
        let coeffs = matrices.coefficients();
        // The kernel adds or subtracts where the coefficient is one or minus one.
        let id_of = |x: Fr| {
            coeffs
                .iter()
                .position(|c| *c == x)
                .map_or(u32::MAX, |i| i as u32)
        };
        let raw = ffi::Matrices {
            row_ptr: sections.map(|(row_ptr, _)| row_ptr.as_ptr()),
            entries: sections.map(|(_, entries)| entries.as_ptr()),
            nnz: sections.map(|(_, entries)| entries.len()),
            rows,
            coeffs: coeffs.as_ptr(),
            ncoeffs: coeffs.len(),
        };
        // SAFETY: a live handle; every pointer in `raw` borrows `matrices` for the call.
        self.check(unsafe {
            ffi::cuzk_gpu_upload_matrices(
                self.raw.as_ptr(),
                slot,
                &raw,
                id_of(Fr::ONE),
                id_of(-Fr::ONE),
            )
        })
    }

    /// Runs the quotient and the five multiexps of `partition`, uploading the witness of
    /// `next` (whose constraints the device evaluates too) meanwhile. With a batch position
    /// in `partition`, some multiexps may leave their ones' sums to the batch's pattern pass
    /// ([`Self::batch_ones`]): the flag says so.
    ///
    /// # Safety
    /// Every pointer in `partition` and `next` must be valid for the lengths it states, for
    /// the call.
    pub unsafe fn prove(
        &mut self,
        partition: &ffi::Partition,
        next: Option<&ffi::Partition>,
    ) -> Result<(Multiexps, ffi::StepMs, bool), CudaError> {
        let mut results = std::mem::MaybeUninit::<ffi::MsmResults>::zeroed();
        let mut ms = ffi::StepMs::default();
        self.check(ffi::cuzk_gpu_prove(
            self.raw.as_ptr(),
            partition,
            next.map_or(std::ptr::null(), |n| n as *const ffi::Partition),
            results.as_mut_ptr(),
            &mut ms,
        ))?;
        // SAFETY: a successful call wrote every field; zeroed before in any case.
        let results = results.assume_init();
        Ok((Multiexps::from(&results), ms, results.left_out != 0))
    }

    /// The ones' sums the calls of a batch left out ([`Self::prove`]), by pattern: for each
    /// of `positions` (the batch positions of its calls that did), the sums to add to that
    /// partition's multiexps (identities where it left none out), and the pass's
    /// milliseconds per query for the whole batch (L, A, B in G1, B in G2). Every kept
    /// bit map goes back to the device.
    pub fn batch_ones(
        &mut self,
        set_slot: usize,
        positions: &[u32],
    ) -> Result<(Vec<Multiexps>, [f64; 4]), CudaError> {
        let mut results: Vec<std::mem::MaybeUninit<ffi::MsmResults>> = (0..positions.len())
            .map(|_| std::mem::MaybeUninit::zeroed())
            .collect();
        let mut ms = [0f64; 4];
        // SAFETY: a live handle; `positions` and `results` hold `positions.len()` each and
        // `ms` four, used during the call only.
        self.check(unsafe {
            ffi::cuzk_gpu_batch_ones(
                self.raw.as_ptr(),
                set_slot,
                positions.as_ptr(),
                positions.len(),
                results.as_mut_ptr().cast(),
                ms.as_mut_ptr(),
            )
        })?;
        let sums = results
            .iter()
            // SAFETY: a successful call wrote every field; zeroed before in any case.
            .map(|r| Multiexps::from(unsafe { r.assume_init_ref() }))
            .collect();
        Ok((sums, ms))
    }
}

impl CudaGpu {
    /// The H query in coset evaluation form derived on this GPU from `h` (`m - 1` points),
    /// as `m` Jacobian points in natural order; `scalars` are `g^-1`, `1/m` and `ω^-1`.
    /// Takes 192 bytes of device memory per point for the call.
    pub fn derive_coset_h(
        &mut self,
        h: &[G1Affine],
        scalars: &[Fr; 3],
    ) -> Result<Vec<G1Projective>, CudaError> {
        let m = h.len() + 1;
        let mut out = vec![G1Projective::identity(); m];
        // SAFETY: a live handle; `h` holds m - 1 points and `out` m, blst's layouts (the
        // device writes Jacobian points in Montgomery form, as blstrs holds them); both are
        // used during the call only.
        self.check(unsafe {
            ffi::cuzk_gpu_derive_coset_h(
                self.raw.as_ptr(),
                h.as_ptr(),
                m,
                scalars.as_ptr(),
                out.as_mut_ptr(),
            )
        })?;
        Ok(out)
    }

    /// H's multiexp by sppark's Pippenger and by the wide multiexp on the same inputs:
    /// `bases` repeated up to `scalars.len()` points where `at` says, each run `rounds`
    /// times. Takes about 128 bytes of device memory per scalar for the call (32 streamed,
    /// and 96 of pinned host memory).
    pub fn msm_bench(
        &mut self,
        bases: &[G1Affine],
        scalars: &[Fr],
        rounds: u32,
        at: BenchBases,
    ) -> Result<[MultiexpTiming<G1Projective>; 2], CudaError> {
        self.bench_with(bases, scalars, rounds, at, ffi::cuzk_gpu_msm_bench)
    }

    /// As [`Self::msm_bench`], in G2 (B's multiexp).
    pub fn msm_bench_g2(
        &mut self,
        bases: &[G2Affine],
        scalars: &[Fr],
        rounds: u32,
        at: BenchBases,
    ) -> Result<[MultiexpTiming<G2Projective>; 2], CudaError> {
        self.bench_with(bases, scalars, rounds, at, ffi::cuzk_gpu_msm_bench_g2)
    }

    fn bench_with<A, P: Group>(
        &mut self,
        bases: &[A],
        scalars: &[Fr],
        rounds: u32,
        at: BenchBases,
        bench: BenchFn<A, P>,
    ) -> Result<[MultiexpTiming<P>; 2], CudaError> {
        let streamed_chunk = match at {
            BenchBases::Device => 0,
            BenchBases::Streamed { chunk } => chunk.max(1),
        };
        let mut out = [P::identity(); 2];
        let mut ms = [0f64; 2];
        // SAFETY: a live handle; `bases` and `scalars` hold the counts passed, in blst's
        // layouts (Montgomery form), and `out` and `ms` two each; all used during the call
        // only.
        self.check(unsafe {
            bench(
                self.raw.as_ptr(),
                bases.as_ptr(),
                bases.len(),
                scalars.as_ptr(),
                scalars.len(),
                rounds,
                streamed_chunk,
                out.as_mut_ptr(),
                ms.as_mut_ptr(),
            )
        })?;
        Ok([0, 1].map(|i| MultiexpTiming {
            result: out[i],
            seconds: ms[i] / 1e3,
        }))
    }
}

impl CudaGpu {
    /// The arithmetic's ceiling (`ceiling.cuh`): the rates of Fr multiplications, Fp
    /// multiplications and G1 bucket additions with every operand in registers, then, for
    /// `lg_ntt` above 0, sppark's transforms of 2^lg_ntt elements as the quotient runs them:
    /// the inverse (natural order in, bit-reversed out), the forward back, and the forward
    /// on the coset (its shift a pass of its own); then a vector to the coset with sppark's
    /// steps and with the quotient's (whose results must be equal, else an error). The best
    /// of `rounds` each. `bases` (at least 32) are the additions' operands.
    pub fn ceiling_bench(
        &mut self,
        bases: &[G1Affine],
        rounds: u32,
        lg_ntt: u32,
    ) -> Result<[ArithmeticRate; 8], CudaError> {
        let mut ops = [0f64; 8];
        let mut ms = [0f64; 8];
        // SAFETY: a live handle; `bases` holds the count passed in blst's layout, and `ops`
        // and `ms` eight each (CEILING_RATES); all used during the call only.
        self.check(unsafe {
            ffi::cuzk_gpu_ceiling_bench(
                self.raw.as_ptr(),
                bases.as_ptr(),
                bases.len(),
                rounds,
                lg_ntt,
                ops.as_mut_ptr(),
                ms.as_mut_ptr(),
            )
        })?;
        Ok(std::array::from_fn(|i| ArithmeticRate {
            operations: ops[i],
            seconds: ms[i] / 1e3,
        }))
    }
}

impl CudaGpu {
    /// A batch of partitions' sums of the bases where their bit is set, two ways on the same
    /// inputs: each partition by batch addition (as a query's ones are summed today), and
    /// the whole batch by pattern (`batch_ones.cuh`). `bases` repeated up to `ones.terms()`
    /// on the device, each way run `rounds` times. Takes about 100 bytes of device memory
    /// per term for the call.
    pub fn ones_bench(
        &mut self,
        bases: &[G1Affine],
        ones: &BatchOnes,
        rounds: u32,
    ) -> Result<[OnesTiming<G1Projective>; 2], CudaError> {
        self.ones_bench_with(bases, ones, rounds, ffi::cuzk_gpu_ones_bench)
    }

    /// As [`Self::ones_bench`], in G2 (B's query).
    pub fn ones_bench_g2(
        &mut self,
        bases: &[G2Affine],
        ones: &BatchOnes,
        rounds: u32,
    ) -> Result<[OnesTiming<G2Projective>; 2], CudaError> {
        self.ones_bench_with(bases, ones, rounds, ffi::cuzk_gpu_ones_bench_g2)
    }

    fn ones_bench_with<A, P: Group>(
        &mut self,
        bases: &[A],
        ones: &BatchOnes,
        rounds: u32,
        bench: OnesBenchFn<A, P>,
    ) -> Result<[OnesTiming<P>; 2], CudaError> {
        let k = ones.partitions();
        let mut out = vec![P::identity(); 2 * k];
        let mut ms = [0f64; 2];
        // SAFETY: a live handle; `bases` holds the count passed, `ones` its partitions'
        // `stride` words each (BatchOnes keeps them so), `out` 2 k points and `ms` two; all
        // used during the call only.
        self.check(unsafe {
            bench(
                self.raw.as_ptr(),
                bases.as_ptr(),
                bases.len(),
                ones.words.as_ptr(),
                ones.stride,
                ones.terms,
                k as u32,
                rounds,
                out.as_mut_ptr(),
                ms.as_mut_ptr(),
            )
        })?;
        let mut halves = out.chunks(k).map(<[P]>::to_vec);
        Ok([0, 1].map(|way| OnesTiming {
            sums: halves.next().unwrap_or_default(),
            seconds: ms[way] / 1e3,
        }))
    }
}

/// A batch of partitions' ones over one query, for [`CudaGpu::ones_bench`]: a bit a term
/// and partition, in batch addition's layout (32-bit words, least significant bit first,
/// each partition's words padded to rows of 1024 terms).
#[derive(Clone, Debug)]
pub struct BatchOnes {
    words: Vec<u32>,
    stride: usize,
    terms: usize,
}

impl BatchOnes {
    /// The most partitions a batch holds (1023 patterns).
    pub const MOST_PARTITIONS: usize = 10;

    /// No ones, for `partitions` (1 to [`Self::MOST_PARTITIONS`]) over `terms` terms.
    pub fn new(partitions: usize, terms: usize) -> BatchOnes {
        let partitions = partitions.clamp(1, Self::MOST_PARTITIONS);
        let stride = terms.div_ceil(1024) * 32;
        BatchOnes {
            words: vec![0; partitions * stride],
            stride,
            terms,
        }
    }

    /// How many partitions.
    pub fn partitions(&self) -> usize {
        self.words.len() / self.stride.max(1)
    }

    /// How many terms.
    pub fn terms(&self) -> usize {
        self.terms
    }

    /// Partition `j`'s words (32 terms each).
    pub fn words(&self, j: usize) -> &[u32] {
        let terms = self.terms.div_ceil(32);
        &self.words[j * self.stride..][..terms]
    }

    /// Partition `j`'s words, writable.
    pub fn words_mut(&mut self, j: usize) -> &mut [u32] {
        let terms = self.terms.div_ceil(32);
        &mut self.words[j * self.stride..][..terms]
    }

    /// Whether partition `j`'s scalar is one at term `i`.
    pub fn is_one(&self, j: usize, i: usize) -> bool {
        self.words[j * self.stride + i / 32] >> (i % 32) & 1 == 1
    }
}

/// A batch's sums one way and its best wall time ([`CudaGpu::ones_bench`]).
#[derive(Clone, Debug)]
pub struct OnesTiming<P> {
    /// Each partition's sum.
    pub sums: Vec<P>,
    /// The best wall time for the whole batch, the device synchronized.
    pub seconds: f64,
}

/// The FFI's ones bench in one group (as [`BenchFn`]).
type OnesBenchFn<A, P> = unsafe extern "C" fn(
    *mut ffi::Gpu,
    *const A,
    usize,
    *const u32,
    usize,
    usize,
    u32,
    u32,
    *mut P,
    *mut f64,
) -> ffi::Status;

/// The FFI's multiexp bench in one group: affine bases `A`, results `P` (blst's layouts).
type BenchFn<A, P> = unsafe extern "C" fn(
    *mut ffi::Gpu,
    *const A,
    usize,
    *const Fr,
    usize,
    u32,
    usize,
    *mut P,
    *mut f64,
) -> ffi::Status;

/// Where the multiexp bench keeps its bases ([`CudaGpu::msm_bench`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BenchBases {
    /// On the device, as resident bases are.
    Device,
    /// In pinned host memory, streamed at each multiexp as a card that keeps few bases
    /// streams H's.
    Streamed {
        /// The most bases in one of the wide multiexp's chunks (`usize::MAX`: as many as
        /// its memory allows).
        chunk: usize,
    },
}

/// One multiexp's result and its best wall time ([`CudaGpu::msm_bench`]).
#[derive(Clone, Copy, Debug)]
pub struct MultiexpTiming<P> {
    /// The multiexp's value.
    pub result: P,
    /// Its best wall time, the device synchronized.
    pub seconds: f64,
}

/// How many operations took how long ([`CudaGpu::ceiling_bench`]): Fr multiplications,
/// Fp multiplications, G1 bucket additions, then the transforms' elements.
#[derive(Clone, Copy, Debug)]
pub struct ArithmeticRate {
    /// Operations done.
    pub operations: f64,
    /// Their best wall time, the device synchronized.
    pub seconds: f64,
}

impl Drop for CudaGpu {
    fn drop(&mut self) {
        // SAFETY: the handle is live and dropped once.
        unsafe { ffi::cuzk_gpu_close(self.raw.as_ptr()) }
    }
}

/// Page-locked host memory, which the GPU reads at full speed.
pub struct PinnedBuffer {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: plain memory, owned by this value alone.
unsafe impl Send for PinnedBuffer {}
unsafe impl Sync for PinnedBuffer {}

impl PinnedBuffer {
    /// Allocates `len` bytes of pinned memory.
    pub fn new(len: usize) -> Result<PinnedBuffer, CudaError> {
        let mut ptr = std::ptr::null_mut();
        // SAFETY: one out-pointer, valid for the call.
        let status = unsafe { ffi::cuzk_host_alloc(len.max(1), &mut ptr) };
        check(status, 0, "host")?;
        let ptr = NonNull::new(ptr).ok_or_else(|| CudaError {
            index: 0,
            name: "host".into(),
            code: -1,
            is_device_lost: false,
            message: "pinned allocation returned nothing".into(),
        })?;
        Ok(PinnedBuffer { ptr, len })
    }

    /// Its size in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when it holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: `len` bytes allocated and owned by self.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// The bytes, writable.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: `len` bytes allocated and owned by self; &mut self is unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for PinnedBuffer {
    fn drop(&mut self) {
        // SAFETY: allocated by cuzk_host_alloc, freed once.
        unsafe { ffi::cuzk_host_free(self.ptr.as_ptr()) }
    }
}
