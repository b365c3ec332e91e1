//! Under the `cuda` feature, compiles the kernels each prover thread loads onto its own GPU:
//! ec-gpu-gen's FFT and its G1 and G2 multiexps, and cuzk's quotient kernels
//! (`src/backend/ec_gpu/quotient.cu`), into one module.

fn main() {
    // ec-gpu-gen's `program!` macro, expanded in this crate, also tests an `opencl` feature.
    println!("cargo::rustc-check-cfg=cfg(feature, values(\"opencl\"))");
    #[cfg(feature = "cuda")]
    {
        use ec_gpu::GpuName;
        const QUOTIENT: &str = "src/backend/ec_gpu/quotient.cu";
        println!("cargo::rerun-if-changed={QUOTIENT}");
        let quotient = std::fs::read_to_string(QUOTIENT)
            .unwrap_or_else(|err| panic!("{QUOTIENT}: {err}"))
            .replace("FIELD", &blstrs::Scalar::name());
        let source = ec_gpu_gen::SourceBuilder::new()
            .add_fft::<blstrs::Scalar>()
            .add_multiexp::<blstrs::G1Affine, blstrs::Fp>()
            .add_multiexp::<blstrs::G2Affine, blstrs::Fp2>()
            .append_source(quotient);
        ec_gpu_gen::generate(&source);
    }
}
