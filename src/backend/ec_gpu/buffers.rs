//! Device memory a prover keeps for the whole run, and the pinned staging its uploads go
//! through.
//!
//! rust-gpu-tools allocates a buffer per call and copies from pageable memory; a prover that
//! keeps its buffers avoids the allocation, and a copy from page-locked memory runs at the
//! link's speed instead of the driver's bounce-buffer speed. Uploads are split into chunks
//! that alternate between two pinned buffers: while the GPU pulls one, threads fill the other.
//!
//! Every call here expects the device's context to be current (inside `Program::run`), except
//! `Drop`, which makes it current itself.

use std::ffi::c_void;
use std::marker::PhantomData;

use cuda_driver_sys::{
    cuCtxGetCurrent, cuCtxPopCurrent_v2, cuCtxPushCurrent_v2, cuCtxSynchronize, cuEventCreate,
    cuEventDestroy_v2, cuEventRecord, cuEventSynchronize, cuMemAllocHost_v2, cuMemAlloc_v2,
    cuMemFreeHost, cuMemFree_v2, cuMemcpyDtoH_v2, cuMemcpyHtoDAsync_v2, cuMemsetD8_v2,
    cuStreamCreate, cuStreamDestroy_v2, cuStreamSynchronize, cudaError_enum, CUcontext,
    CUdeviceptr, CUevent, CUresult, CUstream,
};
use ec_gpu_gen::rust_gpu_tools::cuda::KernelArgument;
use ec_gpu_gen::rust_gpu_tools::GPUError;
use rayon::prelude::*;

/// A failed call into the GPU.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    /// A CUDA driver call failed.
    #[error("{call} failed: {code:?}")]
    Driver {
        /// The driver function.
        call: &'static str,
        /// What it returned.
        code: CUresult,
    },
    /// Loading or launching a kernel failed.
    #[error("kernel: {0}")]
    Kernel(#[from] GPUError),
}

impl GpuError {
    /// True when the device ran out of memory: the caller may stream instead.
    pub fn is_out_of_memory(&self) -> bool {
        matches!(
            self,
            GpuError::Driver {
                code: cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY,
                ..
            }
        )
    }
}

fn check(call: &'static str, code: CUresult) -> Result<(), GpuError> {
    if code == cudaError_enum::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(GpuError::Driver { call, code })
    }
}

/// The context current on this thread.
fn current_context() -> Result<CUcontext, GpuError> {
    let mut context: CUcontext = std::ptr::null_mut();
    // SAFETY: a valid out-pointer.
    check("cuCtxGetCurrent", unsafe { cuCtxGetCurrent(&mut context) })?;
    Ok(context)
}

/// Types whose values are plain bytes with no padding, safe to copy as bytes: scalars,
/// exponents and affine points.
pub trait Plain: Copy + Sync {}
impl Plain for blstrs::Scalar {}
impl Plain for [u8; 32] {}
impl Plain for blstrs::G1Affine {}
impl Plain for blstrs::G2Affine {}

/// A device address, as a kernel argument.
#[derive(Clone, Copy, Debug)]
pub struct DevicePtr(CUdeviceptr);

impl DevicePtr {
    /// The address `elements` elements of `T` further on.
    pub fn offset<T>(self, elements: usize) -> DevicePtr {
        DevicePtr(self.0 + (elements * std::mem::size_of::<T>()) as CUdeviceptr)
    }
}

impl KernelArgument for DevicePtr {
    fn as_c_void(&self) -> *mut c_void {
        // The launch reads the argument's value through this pointer.
        &self.0 as *const CUdeviceptr as *mut c_void
    }
}

/// `len` elements of `T` in device memory, freed on drop.
pub struct DeviceVec<T> {
    ptr: CUdeviceptr,
    len: usize,
    context: CUcontext,
    _elements: PhantomData<T>,
}

// SAFETY: the allocation belongs to a context, not a thread; the prover that owns it moves
// between threads only as a whole.
unsafe impl<T> Send for DeviceVec<T> {}

impl<T: Copy> DeviceVec<T> {
    /// Room for `len` elements, uninitialized.
    pub fn alloc(len: usize) -> Result<DeviceVec<T>, GpuError> {
        let context = current_context()?;
        let mut ptr: CUdeviceptr = 0;
        let bytes = (len.max(1) * std::mem::size_of::<T>()).max(1);
        // SAFETY: a valid out-pointer; the context is current.
        check("cuMemAlloc", unsafe { cuMemAlloc_v2(&mut ptr, bytes) })?;
        Ok(DeviceVec {
            ptr,
            len,
            context,
            _elements: PhantomData,
        })
    }

    /// Makes room for at least `len` elements, reallocating (contents lost) when short.
    pub fn ensure_len(slot: &mut Option<DeviceVec<T>>, len: usize) -> Result<(), GpuError> {
        if slot.as_ref().is_some_and(|v| v.len >= len) {
            return Ok(());
        }
        *slot = None;
        *slot = Some(DeviceVec::alloc(len)?);
        Ok(())
    }

    /// Bytes it occupies.
    pub fn bytes(&self) -> u64 {
        (self.len * std::mem::size_of::<T>()) as u64
    }

    /// The address of element `offset`.
    pub fn at(&self, offset: usize) -> DevicePtr {
        assert!(
            offset <= self.len,
            "offset {offset} past {} elements",
            self.len
        );
        DevicePtr(self.ptr).offset::<T>(offset)
    }

    /// Zeroes elements `from..to`; returns when done.
    pub fn zero(&mut self, from: usize, to: usize) -> Result<(), GpuError> {
        assert!(from <= to && to <= self.len);
        if from == to {
            return Ok(());
        }
        let bytes = (to - from) * std::mem::size_of::<T>();
        // SAFETY: the range lies inside the allocation; the context is current. The memset
        // may run behind the host on the legacy stream, which the kernels' own stream does
        // not wait for: hence the synchronization. (It also waits for another prover's
        // kernels on the same GPU; a memset on the staging stream would not.)
        unsafe {
            check("cuMemsetD8", cuMemsetD8_v2(self.at(from).0, 0, bytes))?;
            check("cuCtxSynchronize", cuCtxSynchronize())
        }
    }

    /// Copies elements `0..out.len()` to the host.
    pub fn download(&self, out: &mut [T]) -> Result<(), GpuError> {
        assert!(out.len() <= self.len);
        let bytes = std::mem::size_of_val(out);
        // SAFETY: `out` is valid for `bytes` and the range lies inside the allocation.
        check("cuMemcpyDtoH", unsafe {
            cuMemcpyDtoH_v2(out.as_mut_ptr() as *mut c_void, self.ptr, bytes)
        })
    }
}

impl<T> Drop for DeviceVec<T> {
    fn drop(&mut self) {
        // SAFETY: the allocation came from `context`, which lives as long as the process.
        unsafe {
            if cuCtxPushCurrent_v2(self.context) == cudaError_enum::CUDA_SUCCESS {
                cuMemFree_v2(self.ptr);
                let mut popped: CUcontext = std::ptr::null_mut();
                cuCtxPopCurrent_v2(&mut popped);
            }
        }
    }
}

/// Bytes in each of the two pinned staging buffers.
const STAGING_BYTES: usize = 32 << 20;

/// Page-locked host memory and a stream for uploads.
pub struct Staging {
    buffers: [*mut u8; 2],
    copied: [CUevent; 2],
    stream: CUstream,
    context: CUcontext,
}

// SAFETY: as for `DeviceVec`: context-bound handles, used by one thread at a time.
unsafe impl Send for Staging {}

impl Staging {
    /// Two pinned buffers, their events and a stream.
    pub fn new() -> Result<Staging, GpuError> {
        let context = current_context()?;
        let mut staging = Staging {
            buffers: [std::ptr::null_mut(); 2],
            copied: [std::ptr::null_mut(); 2],
            stream: std::ptr::null_mut(),
            context,
        };
        // SAFETY: valid out-pointers; the context is current. A failure leaves nulls that
        // `Drop` skips.
        unsafe {
            for buffer in &mut staging.buffers {
                let mut host: *mut c_void = std::ptr::null_mut();
                check(
                    "cuMemAllocHost",
                    cuMemAllocHost_v2(&mut host, STAGING_BYTES),
                )?;
                *buffer = host as *mut u8;
            }
            for event in &mut staging.copied {
                check("cuEventCreate", cuEventCreate(event, 0))?;
            }
            check("cuStreamCreate", cuStreamCreate(&mut staging.stream, 0))?;
        }
        Ok(staging)
    }

    /// Copies `data` to elements `offset..` of `dst`; returns when the copy is complete, or
    /// failed (no copy is left reading the staging buffers either way).
    pub fn upload<T: Plain>(
        &mut self,
        dst: &mut DeviceVec<T>,
        offset: usize,
        data: &[T],
    ) -> Result<(), GpuError> {
        assert!(
            offset + data.len() <= dst.len,
            "upload past the buffer's end"
        );
        let dst = dst.at(offset);
        // SAFETY: `Plain` types are bytes without padding.
        let bytes = unsafe {
            std::slice::from_raw_parts(data.as_ptr() as *const u8, std::mem::size_of_val(data))
        };
        let queued = self.queue_upload(dst, bytes);
        // SAFETY: a live stream.
        let finished = check("cuStreamSynchronize", unsafe {
            cuStreamSynchronize(self.stream)
        });
        queued.and(finished)
    }

    /// Queues `bytes` to `dst` chunk by chunk, alternating between the pinned buffers.
    fn queue_upload(&mut self, dst: DevicePtr, bytes: &[u8]) -> Result<(), GpuError> {
        for (k, chunk) in bytes.chunks(STAGING_BYTES).enumerate() {
            let which = k % 2;
            // SAFETY: the event marks the end of the last copy out of this buffer, so it is
            // free to refill; the buffer holds `STAGING_BYTES` >= `chunk.len()`.
            unsafe {
                if k >= 2 {
                    check("cuEventSynchronize", cuEventSynchronize(self.copied[which]))?;
                }
                let staged = std::slice::from_raw_parts_mut(self.buffers[which], chunk.len());
                staged
                    .par_chunks_mut(1 << 20)
                    .zip(chunk.par_chunks(1 << 20))
                    .for_each(|(to, from)| to.copy_from_slice(from));
                check(
                    "cuMemcpyHtoDAsync",
                    cuMemcpyHtoDAsync_v2(
                        dst.offset::<u8>(k * STAGING_BYTES).0,
                        self.buffers[which] as *const c_void,
                        chunk.len(),
                        self.stream,
                    ),
                )?;
                check(
                    "cuEventRecord",
                    cuEventRecord(self.copied[which], self.stream),
                )?;
            }
        }
        Ok(())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        // SAFETY: handles made in `new` under `context`; nulls were never made.
        unsafe {
            if cuCtxPushCurrent_v2(self.context) != cudaError_enum::CUDA_SUCCESS {
                return;
            }
            if !self.stream.is_null() {
                cuStreamSynchronize(self.stream);
                cuStreamDestroy_v2(self.stream);
            }
            for event in self.copied {
                if !event.is_null() {
                    cuEventDestroy_v2(event);
                }
            }
            for buffer in self.buffers {
                if !buffer.is_null() {
                    cuMemFreeHost(buffer as *mut c_void);
                }
            }
            let mut popped: CUcontext = std::ptr::null_mut();
            cuCtxPopCurrent_v2(&mut popped);
        }
    }
}
