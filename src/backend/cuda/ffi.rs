//! The C ABI of `groth16.cu`, declared once. Its safety rules (who owns each device buffer,
//! which stream, how errors come back) are stated at the top of that file; the safe
//! wrapper in [`super::device`] is the only caller.

use std::ffi::c_char;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
// groth16.cu calls sppark's device list (`ngpus()` and the like), which lives in the sppark
// crate's static library: named here so a build without SupraSeal (whose crate otherwise
// pulls sppark in) still links it.
use sppark as _;

/// The outcome of a call: `code` 0 on success, else a CUDA error code (negated by
/// sppark) or -1, with a message naming the step; `device_lost` non-zero once a sticky
/// error broke the device's context (every later call on the handle fails).
#[repr(C)]
pub struct Status {
    pub code: i32,
    pub device_lost: i32,
    pub message: [c_char; 500],
}

impl Status {
    /// The message as text.
    pub fn message(&self) -> String {
        let bytes: Vec<u8> = self
            .message
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

/// Parameter sets one device keeps at once, each in its slot (`CUZK_SETS` in groth16.cu).
pub const SET_SLOTS: usize = 4;

/// Sizes of a parameter set's base vectors.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BaseCounts {
    pub h: usize,
    pub l: usize,
    pub a: usize,
    pub b: usize,
}

/// One synthesized partition, borrowed for a call. See `cuzk_partition` in groth16.cu.
#[repr(C)]
pub struct Partition {
    pub a: *const Fr,
    pub b: *const Fr,
    pub c: *const Fr,
    pub abc_len: usize,
    pub abc_compact: [CompactAbc; 3],
    pub evaluate: i32,
    pub witness_id: u64,
    pub lg_domain: usize,
    pub inputs: *const Fr,
    pub input_len: usize,
    pub aux: *const Fr,
    pub aux_len: usize,
    pub aux_ones: *const u64,
    pub aux_wide_index: *const u32,
    pub aux_wide: *const Fr,
    pub aux_wide_len: usize,
    pub a_aux_words: *const u64,
    pub a_aux_prefix: *const u32,
    pub a_aux_total: usize,
    pub b_input_words: *const u64,
    pub b_input_prefix: *const u32,
    pub b_input_total: usize,
    pub b_aux_words: *const u64,
    pub b_aux_prefix: *const u32,
    pub b_aux_total: usize,
    pub host_h: *const u8,
    pub host_l: *const u8,
    pub host_a: *const u8,
    pub host_b_g1: *const u8,
    pub host_b_g2: *const u8,
    pub set_slot: usize,
    /// Its place in a batch whose ones are summed together ([`cuzk_gpu_batch_ones`]), 0
    /// for the batch's first call; -1: none.
    pub batch_position: i32,
}

/// How one of a, b and c is held compact in its own memory (`host_abc::compact`); all null
/// when it is whole. See `cuzk_compact_abc` in groth16.cu.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CompactAbc {
    pub ones: *const u64,
    pub wide: *const u64,
    pub wide_before: *const u32,
    pub chunk_wide: *const u32,
    pub chunk_rows: usize,
}

impl CompactAbc {
    /// A vector held whole.
    pub const WHOLE: CompactAbc = CompactAbc {
        ones: std::ptr::null(),
        wide: std::ptr::null(),
        wide_before: std::ptr::null(),
        chunk_wide: std::ptr::null(),
        chunk_rows: 0,
    };
}

/// A circuit's pre-compiled constraints, borrowed for an upload: A and B, as the GPU needs
/// no C. See `cuzk_matrices` in groth16.cu.
#[repr(C)]
pub struct Matrices {
    pub row_ptr: [*const u64; 2],
    pub entries: [*const u64; 2],
    pub nnz: [usize; 2],
    pub rows: usize,
    pub coeffs: *const Fr,
    pub ncoeffs: usize,
}

/// The five multiexps: Jacobian points, Montgomery limbs (blst's layout).
#[repr(C)]
pub struct MsmResults {
    pub h: [u64; 18],
    pub l: [u64; 18],
    pub a: [u64; 18],
    pub b_g1: [u64; 18],
    pub b_g2: [u64; 36],
    /// Non-zero where some of them left their ones' sums to the batch (a bit each: L, A,
    /// B in G1, B in G2).
    pub left_out: u32,
}

/// Milliseconds per step of one proof, and the bytes it sent to the device.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct StepMs {
    pub upload: f64,
    pub evaluate: f64,
    pub quotient: f64,
    pub msm_h: f64,
    pub msm_l: f64,
    pub msm_a: f64,
    pub msm_b_g1: f64,
    pub msm_b_g2: f64,
    pub total: f64,
    /// Not a time: bytes sent from the host to the device for this partition.
    pub host_to_device_bytes: u64,
    /// The query multiexps' work beside H: its wall time, within `msm_h`.
    pub beside_h: f64,
}

/// A device and what cuzk keeps on it (opaque).
#[repr(C)]
pub struct Gpu {
    _private: [u8; 0],
}

extern "C" {
    pub fn cuzk_gpu_count(count: *mut usize) -> Status;
    pub fn cuzk_gpu_open(
        index: usize,
        out: *mut *mut Gpu,
        name: *mut c_char,
        name_len: usize,
        free_bytes: *mut usize,
        total_bytes: *mut usize,
    ) -> Status;
    pub fn cuzk_gpu_close(gpu: *mut Gpu);
    pub fn cuzk_gpu_free_memory(gpu: *mut Gpu, free: *mut usize, total: *mut usize) -> Status;
    pub fn cuzk_gpu_set_limit(gpu: *mut Gpu, bytes: usize) -> Status;
    pub fn cuzk_gpu_reserve_bases(
        gpu: *mut Gpu,
        slot: usize,
        counts: *const BaseCounts,
        resident: u32,
    ) -> Status;
    pub fn cuzk_gpu_release_set(gpu: *mut Gpu, slot: usize) -> Status;
    pub fn cuzk_gpu_upload_bases(
        gpu: *mut Gpu,
        slot: usize,
        set: u32,
        first: usize,
        points: *const u8,
        count: usize,
    ) -> Status;
    pub fn cuzk_gpu_upload_matrices(
        gpu: *mut Gpu,
        slot: usize,
        matrices: *const Matrices,
        one_id: u32,
        minus_one_id: u32,
    ) -> Status;
    pub fn cuzk_gpu_derive_coset_h(
        gpu: *mut Gpu,
        h: *const G1Affine,
        m: usize,
        scalars: *const Fr,
        out: *mut G1Projective,
    ) -> Status;
    pub fn cuzk_gpu_msm_bench(
        gpu: *mut Gpu,
        bases: *const G1Affine,
        nbases: usize,
        scalars: *const Fr,
        n: usize,
        rounds: u32,
        streamed_chunk: usize,
        out: *mut G1Projective,
        ms: *mut f64,
    ) -> Status;
    pub fn cuzk_gpu_msm_bench_g2(
        gpu: *mut Gpu,
        bases: *const G2Affine,
        nbases: usize,
        scalars: *const Fr,
        n: usize,
        rounds: u32,
        streamed_chunk: usize,
        out: *mut G2Projective,
        ms: *mut f64,
    ) -> Status;
    pub fn cuzk_gpu_ceiling_bench(
        gpu: *mut Gpu,
        bases: *const G1Affine,
        nbases: usize,
        rounds: u32,
        lg_ntt: u32,
        ops: *mut f64,
        ms: *mut f64,
    ) -> Status;
    pub fn cuzk_gpu_batch_ones(
        gpu: *mut Gpu,
        set_slot: usize,
        positions: *const u32,
        count: usize,
        out: *mut MsmResults,
        ms: *mut f64,
    ) -> Status;
    pub fn cuzk_gpu_ones_bench(
        gpu: *mut Gpu,
        bases: *const G1Affine,
        nbases: usize,
        ones: *const u32,
        stride: usize,
        n: usize,
        k: u32,
        rounds: u32,
        out: *mut G1Projective,
        ms: *mut f64,
    ) -> Status;
    pub fn cuzk_gpu_ones_bench_g2(
        gpu: *mut Gpu,
        bases: *const G2Affine,
        nbases: usize,
        ones: *const u32,
        stride: usize,
        n: usize,
        k: u32,
        rounds: u32,
        out: *mut G2Projective,
        ms: *mut f64,
    ) -> Status;
    pub fn cuzk_host_alloc(bytes: usize, out: *mut *mut u8) -> Status;
    pub fn cuzk_host_free(ptr: *mut u8);
    pub fn cuzk_gpu_prove(
        gpu: *mut Gpu,
        partition: *const Partition,
        next: *const Partition,
        out: *mut MsmResults,
        ms: *mut StepMs,
    ) -> Status;
}
