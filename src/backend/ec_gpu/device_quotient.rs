//! The quotient on a prover's GPU by the textbook's seven transforms (the same `h` as
//! [`crate::backend::quotient`]'s six), on device buffers kept for the run. `a`, `b`, `c` go up once; `h` stays on the device, out of Montgomery form,
//! for the H multiexp to read. The host's vectors are only read, so a failure here leaves
//! them whole for the CPU to start over.
//!
//! The FFT is ec-gpu-gen's radix kernel, driven here over buffers that persist; the coset
//! scaling, the division by `Z` and the conversion to exponents are cuzk's kernels
//! (`quotient.cu`).

use blstrs::Scalar as Fr;
use ec_gpu::GpuName;
use ec_gpu_gen::rust_gpu_tools::cuda::Program;
use ec_gpu_gen::rust_gpu_tools::LocalBuffer;
use ff::Field;

use super::buffers::{DevicePtr, DeviceVec, GpuError, Staging};
use crate::backend::quotient::Domain;

/// The FFT kernel's largest radix, `2^8`, and its largest block, `2^7` threads.
const MAX_LOG2_RADIX: u32 = 8;
const MAX_LOG2_LOCAL_WORK_SIZE: u32 = 7;
/// Elements per thread in cuzk's kernels, and threads per block.
const CHUNK: u32 = 64;
const THREADS: usize = 128;

/// An FFT's precomputed powers of its root of unity, on the device.
struct Twiddles {
    omega: Fr,
    log_n: u32,
    /// `omega^(k n / 2^max_deg)` for `k < 2^(max_deg - 1)`.
    pq: DeviceVec<Fr>,
    /// `omega^(2^i)` for `i < 32`.
    omegas: DeviceVec<Fr>,
}

/// The buffers of the quotient on one prover's GPU.
#[derive(Default)]
pub struct DeviceQuotient {
    /// `a` (then `h`), `b`, `c` and the FFT's second buffer.
    vectors: [Option<DeviceVec<Fr>>; 4],
    /// Scalars the kernels read: the coset scaling's `(scale, g)`, or `1/Z`.
    constants: Option<DeviceVec<Fr>>,
    twiddles: Vec<Twiddles>,
}

impl DeviceQuotient {
    /// Runs the steps; returns where `h`'s `m - 1` exponents are, valid until the next call.
    pub fn run(
        &mut self,
        program: &Program,
        staging: &mut Staging,
        domain: &Domain,
        a: &[Fr],
        b: &[Fr],
        c: &[Fr],
    ) -> Result<(DevicePtr, usize), GpuError> {
        let Domain { m, log_m, .. } = *domain;
        assert!(a.len() <= m && b.len() <= m && c.len() <= m);
        for slot in &mut self.vectors {
            DeviceVec::ensure_len(slot, m)?;
        }
        DeviceVec::ensure_len(&mut self.constants, 2)?;
        let omega = self.twiddles(staging, domain.omega, log_m)?;
        let omega_inv = self.twiddles(staging, domain.omega_inv, log_m)?;
        let DeviceQuotient {
            vectors,
            constants,
            twiddles,
        } = self;
        let [Some(va), Some(vb), Some(vc), Some(scratch)] = vectors else {
            unreachable!("made above");
        };
        let constants = constants.as_mut().expect("made above");
        let (omega, omega_inv) = (&twiddles[omega], &twiddles[omega_inv]);

        for (device, host) in [(&mut *va, a), (&mut *vb, b), (&mut *vc, c)] {
            staging.upload(device, 0, host)?;
            device.zero(host.len(), m)?;
        }
        // iFFT: evaluations -> coefficients.
        for v in [&mut *va, &mut *vb, &mut *vc] {
            fft(program, v, scratch, omega_inv, log_m)?;
        }
        // Coset FFT: coefficients -> evaluations on g * roots (the 1/m folded in).
        staging.upload(constants, 0, &[domain.m_inv, domain.g])?;
        for v in [&mut *va, &mut *vb, &mut *vc] {
            distribute_powers(program, v, m, constants)?;
            fft(program, v, scratch, omega, log_m)?;
        }
        // (a*b - c) / Z on the coset.
        staging.upload(constants, 0, &[domain.z_inv])?;
        let (n, threads) = (m as u32, chunks(m));
        program
            .create_kernel(&kernel("cuzk_divide_by_z"), threads.0, threads.1)?
            .arg(&va.at(0))
            .arg(&vb.at(0))
            .arg(&vc.at(0))
            .arg(&n)
            .arg(&CHUNK)
            .arg(&constants.at(0))
            .run()?;
        // Coset iFFT: evaluations on the coset -> coefficients of h, then out of Montgomery
        // form for the multiexp; the top coefficient (always zero) is left out.
        fft(program, va, scratch, omega_inv, log_m)?;
        staging.upload(constants, 0, &[domain.m_inv, domain.g_inv])?;
        distribute_powers(program, va, m, constants)?;
        let h_len = m - 1;
        let (n, threads) = (h_len as u32, chunks(h_len));
        program
            .create_kernel(&kernel("cuzk_to_exponents"), threads.0, threads.1)?
            .arg(&va.at(0))
            .arg(&n)
            .arg(&CHUNK)
            .run()?;
        Ok((va.at(0), h_len))
    }

    /// The index of the twiddles for `omega` over `2^log_n`, made on first use.
    fn twiddles(
        &mut self,
        staging: &mut Staging,
        omega: Fr,
        log_n: u32,
    ) -> Result<usize, GpuError> {
        if let Some(index) = self
            .twiddles
            .iter()
            .position(|t| t.omega == omega && t.log_n == log_n)
        {
            return Ok(index);
        }
        let max_deg = MAX_LOG2_RADIX.min(log_n);
        let twiddle = omega.pow_vartime([((1u64 << log_n) >> max_deg)]);
        let mut pq = vec![Fr::ONE; (1usize << max_deg >> 1).max(1)];
        for i in 1..pq.len() {
            pq[i] = pq[i - 1] * twiddle;
        }
        let mut omegas = vec![omega; 32];
        for i in 1..omegas.len() {
            omegas[i] = omegas[i - 1].square();
        }
        let mut pq_device = DeviceVec::alloc(pq.len())?;
        let mut omegas_device = DeviceVec::alloc(omegas.len())?;
        staging.upload(&mut pq_device, 0, &pq)?;
        staging.upload(&mut omegas_device, 0, &omegas)?;
        self.twiddles.push(Twiddles {
            omega,
            log_n,
            pq: pq_device,
            omegas: omegas_device,
        });
        Ok(self.twiddles.len() - 1)
    }
}

/// The name of one of the scalar field's kernels.
fn kernel(name: &str) -> String {
    format!("{}_{name}", Fr::name())
}

/// Blocks and threads per block for one thread per `CHUNK` of `n` elements.
fn chunks(n: usize) -> (usize, usize) {
    let threads = n.div_ceil(CHUNK as usize);
    (threads.div_ceil(THREADS).max(1), THREADS)
}

/// `v[i] *= constants[0] * constants[1]^i` for `i < n`.
fn distribute_powers(
    program: &Program,
    v: &DeviceVec<Fr>,
    n: usize,
    constants: &DeviceVec<Fr>,
) -> Result<(), GpuError> {
    let (n32, threads) = (n as u32, chunks(n));
    program
        .create_kernel(&kernel("cuzk_distribute_powers"), threads.0, threads.1)?
        .arg(&v.at(0))
        .arg(&n32)
        .arg(&CHUNK)
        .arg(&constants.at(0))
        .run()?;
    Ok(())
}

/// A radix FFT of `data` (`2^log_n` elements) at the powers of the twiddles' root; rounds
/// alternate between `data` and `scratch`, and the result ends up in `data`.
fn fft(
    program: &Program,
    data: &mut DeviceVec<Fr>,
    scratch: &mut DeviceVec<Fr>,
    twiddles: &Twiddles,
    log_n: u32,
) -> Result<(), GpuError> {
    let n = 1u32 << log_n;
    let max_deg = MAX_LOG2_RADIX.min(log_n);
    let mut log_p = 0u32;
    while log_p < log_n {
        let deg = max_deg.min(log_n - log_p);
        let local_work_size = 1usize << (deg - 1).min(MAX_LOG2_LOCAL_WORK_SIZE);
        let global_work_size = (n >> deg) as usize;
        program
            .create_kernel(&kernel("radix_fft"), global_work_size, local_work_size)?
            .arg(&data.at(0))
            .arg(&scratch.at(0))
            .arg(&twiddles.pq.at(0))
            .arg(&twiddles.omegas.at(0))
            .arg(&LocalBuffer::<Fr>::new(1 << deg))
            .arg(&n)
            .arg(&log_p)
            .arg(&deg)
            .arg(&max_deg)
            .run()?;
        log_p += deg;
        std::mem::swap(data, scratch);
    }
    Ok(())
}
