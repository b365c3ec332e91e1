//! Multiexps on a prover's GPU with the parameters' bases kept there between proofs.
//!
//! ec-gpu-gen's multiexp uploads its bases on every call: every partition re-sends the whole
//! parameter set (~47 GB at 32GiB). Here a set of bases is uploaded the first time it is used
//! and stays while its host copy lives and the prover's share of the device holds it; a set
//! that does not fit streams through one chunk buffer instead. The kernel is ec-gpu-gen's
//! (compiled by build.rs); its buckets and results are allocated once per prover.
//!
//! A resident set is known by its host vector's address, held through a `Weak`: while the
//! entry exists that address cannot be reused by other parameters, and once the parameters
//! are dropped the entry is freed on the next call.

use std::sync::{Arc, Weak};

use blstrs::Scalar as Fr;
use ec_gpu::GpuName;
use ec_gpu_gen::rust_gpu_tools::cuda::Program;
use ff::PrimeField;
use group::{prime::PrimeCurveAffine, Group};

use super::buffers::{DevicePtr, DeviceVec, GpuError, Plain, Staging};

/// Threads per block of the multiexp kernel, as ec-gpu-gen launches it.
const LOCAL_WORK_SIZE: usize = 128;
/// The largest window the kernel's buckets are sized for.
const MAX_WINDOW_SIZE: usize = 10;
/// Bases of a multiexp as ec-gpu-gen's sources hand them out: a shared vector and how many
/// leading bases to skip.
pub type Bases<G> = (Arc<Vec<G>>, usize);

/// Bases per launch when a set is not resident.
const STREAM_CHUNK: usize = 1 << 22;
/// Bits of an exponent.
const EXPONENT_BITS: usize = 256;

/// An exponent as the kernel reads it: the scalar's plain little-endian integer.
pub type Exponent = <Fr as PrimeField>::Repr;

/// Where a multiexp's exponents are.
pub enum ExponentSource<'a> {
    /// On the host: uploaded for the call.
    Host(&'a [Exponent]),
    /// Already on the device (the quotient left there), `n` of them.
    Device(DevicePtr, usize),
}

impl ExponentSource<'_> {
    fn len(&self) -> usize {
        match self {
            ExponentSource::Host(e) => e.len(),
            ExponentSource::Device(_, n) => *n,
        }
    }
}

/// What a prover's multiexps share: the staging for uploads, the exponents buffer and the
/// bytes resident bases may take.
pub struct MultiexpRoom {
    /// Pinned staging for every upload.
    pub staging: Staging,
    exponents: Option<DeviceVec<Exponent>>,
    /// Bases per launch when a set is not resident.
    stream_chunk: usize,
    /// Bytes resident bases may occupy (G1 and G2 together).
    resident_budget: u64,
    resident_bytes: u64,
}

impl MultiexpRoom {
    /// A room whose resident bases may take `resident_budget` bytes.
    pub fn new(staging: Staging, resident_budget: u64) -> MultiexpRoom {
        MultiexpRoom {
            staging,
            exponents: None,
            stream_chunk: STREAM_CHUNK,
            resident_budget,
            resident_bytes: 0,
        }
    }

    /// Bytes of bases resident now.
    pub fn resident_bytes(&self) -> u64 {
        self.resident_bytes
    }

    /// Keeps no more bases resident than `budget` bytes from now on, and streams the others
    /// `stream_chunk` bases per launch: lets a check drive both paths on a small circuit.
    pub fn limit(&mut self, budget: u64, stream_chunk: usize) {
        self.resident_budget = budget;
        self.stream_chunk = stream_chunk.max(1);
    }
}

struct Resident<G> {
    host: Weak<Vec<G>>,
    points: DeviceVec<G>,
}

/// The multiexp of one group (G1 or G2) on one prover's GPU.
pub struct Multiexp<G: PrimeCurveAffine> {
    resident: Vec<Resident<G>>,
    streamed: Option<DeviceVec<G>>,
    buckets: DeviceVec<G::Curve>,
    results: DeviceVec<G::Curve>,
    work_units: usize,
}

impl<G> Multiexp<G>
where
    G: PrimeCurveAffine<Scalar = Fr> + GpuName + Plain,
{
    /// Buckets and results for `work_units` threads (see [`work_units`]).
    pub fn new(work_units: usize) -> Result<Multiexp<G>, GpuError> {
        Ok(Multiexp {
            resident: Vec::new(),
            streamed: None,
            buckets: DeviceVec::alloc(work_units << MAX_WINDOW_SIZE)?,
            results: DeviceVec::alloc(work_units)?,
            work_units,
        })
    }

    /// `sum_i exps[i] * bases[skip + i]`.
    pub fn multiexp(
        &mut self,
        program: &Program,
        room: &mut MultiexpRoom,
        bases: &Bases<G>,
        exps: ExponentSource<'_>,
    ) -> Result<G::Curve, GpuError> {
        let (host, skip) = bases;
        let n = exps.len();
        assert!(skip + n <= host.len(), "more exponents than bases");
        if n == 0 {
            return Ok(G::Curve::identity());
        }
        self.forget_dropped(room);
        let resident = self.make_resident(room, host)?;

        let exps = match exps {
            ExponentSource::Device(ptr, _) => ptr,
            ExponentSource::Host(exps) => {
                DeviceVec::ensure_len(&mut room.exponents, n)?;
                let buffer = room.exponents.as_mut().expect("just made");
                room.staging.upload(buffer, 0, exps)?;
                buffer.at(0)
            }
        };
        let mut sum = G::Curve::identity();
        match resident {
            Some(index) => {
                let bases = self.resident[index].points.at(*skip);
                sum += self.launch(program, bases, exps, n)?;
            }
            None => {
                let chunk_len = room.stream_chunk;
                DeviceVec::ensure_len(&mut self.streamed, chunk_len.min(n))?;
                for start in (0..n).step_by(chunk_len) {
                    let len = chunk_len.min(n - start);
                    let chunk = &host[skip + start..skip + start + len];
                    let buffer = self.streamed.as_mut().expect("just made");
                    room.staging.upload(buffer, 0, chunk)?;
                    let bases = buffer.at(0);
                    sum += self.launch(program, bases, exps.offset::<Exponent>(start), len)?;
                }
            }
        }
        Ok(sum)
    }

    /// Frees sets whose parameters were dropped.
    fn forget_dropped(&mut self, room: &mut MultiexpRoom) {
        self.resident.retain(|r| {
            let alive = r.host.strong_count() > 0;
            if !alive {
                room.resident_bytes -= r.points.bytes();
            }
            alive
        });
    }

    /// The index of `host`'s resident copy, uploading it when it fits; `None` to stream.
    fn make_resident(
        &mut self,
        room: &mut MultiexpRoom,
        host: &Arc<Vec<G>>,
    ) -> Result<Option<usize>, GpuError> {
        if let Some(index) = self
            .resident
            .iter()
            .position(|r| std::ptr::eq(r.host.as_ptr(), Arc::as_ptr(host)))
        {
            return Ok(Some(index));
        }
        let bytes = std::mem::size_of_val(host.as_slice()) as u64;
        if room.resident_bytes + bytes > room.resident_budget {
            return Ok(None);
        }
        let mut points = match DeviceVec::alloc(host.len()) {
            Ok(points) => points,
            Err(err) if err.is_out_of_memory() => {
                // Others took the room: stop trying, stream from now on.
                room.resident_budget = room.resident_bytes;
                log::warn!("GPU memory ran short of the resident budget; streaming bases");
                return Ok(None);
            }
            Err(err) => return Err(err),
        };
        room.staging.upload(&mut points, 0, host)?;
        room.resident_bytes += bytes;
        self.resident.push(Resident {
            host: Arc::downgrade(host),
            points,
        });
        Ok(Some(self.resident.len() - 1))
    }

    /// One launch over `n` bases and exponents; the windows' sums are combined on the host.
    fn launch(
        &mut self,
        program: &Program,
        bases: DevicePtr,
        exps: DevicePtr,
        n: usize,
    ) -> Result<G::Curve, GpuError> {
        let window_size = window_size(n, self.work_units);
        // window_size * num_windows must cover the exponent's 256 bits.
        let num_windows = EXPONENT_BITS.div_ceil(window_size);
        let num_groups = self.work_units / num_windows;
        let global_work_size = (num_windows * num_groups).div_ceil(LOCAL_WORK_SIZE);
        let name = format!("{}_multiexp", G::name());
        let (n32, groups32, windows32, size32) = (
            n as u32,
            num_groups as u32,
            num_windows as u32,
            window_size as u32,
        );
        program
            .create_kernel(&name, global_work_size, LOCAL_WORK_SIZE)?
            .arg(&bases)
            .arg(&self.buckets.at(0))
            .arg(&self.results.at(0))
            .arg(&exps)
            .arg(&n32)
            .arg(&groups32)
            .arg(&windows32)
            .arg(&size32)
            .run()?;
        let mut results = vec![G::Curve::identity(); num_windows * num_groups];
        self.results.download(&mut results)?;

        // Thread `g * num_windows + i` summed window `i` of group `g`: shift the windows into
        // place from the most significant down.
        let mut acc = G::Curve::identity();
        let mut bits = 0;
        for i in 0..num_windows {
            let w = window_size.min(EXPONENT_BITS - bits);
            for _ in 0..w {
                acc = acc.double();
            }
            for g in 0..num_groups {
                acc += results[g * num_windows + i];
            }
            bits += w;
        }
        Ok(acc)
    }
}

/// Threads the multiexp kernel splits its work into on a device: ec-gpu-gen's choice, twice
/// the blocks on compute capability 8 (Ampere), where it measured faster.
pub fn work_units(compute_units: u32, compute_capability: (u32, u32)) -> usize {
    let per_unit = if compute_capability.0 == 8 { 2 } else { 1 };
    LOCAL_WORK_SIZE * compute_units as usize * per_unit
}

/// ec-gpu-gen's window: small enough that every thread has work, at most the buckets' size.
fn window_size(n: usize, work_units: usize) -> usize {
    let per_thread = n.div_ceil(work_units).max(1);
    ((per_thread as f64).log2() as usize + 2).min(MAX_WINDOW_SIZE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_grow_with_the_work_and_stop_at_the_buckets() {
        assert_eq!(window_size(1, 16896), 2);
        assert_eq!(window_size(16896 * 4, 16896), 4);
        assert_eq!(window_size(1 << 27, 16896), MAX_WINDOW_SIZE);
        assert_eq!(work_units(132, (9, 0)), 128 * 132);
        assert_eq!(work_units(108, (8, 0)), 2 * 128 * 108);
    }
}
