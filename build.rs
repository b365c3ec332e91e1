//! Under the `cuda` feature, compiles the FFT kernel that each prover thread loads onto its own
//! GPU (the multiexp kernels come precompiled with bellperson).

fn main() {
    // ec-gpu-gen's `program!` macro, expanded in this crate, also tests an `opencl` feature.
    println!("cargo::rustc-check-cfg=cfg(feature, values(\"opencl\"))");
    #[cfg(feature = "cuda")]
    {
        let source = ec_gpu_gen::SourceBuilder::new().add_fft::<blstrs::Scalar>();
        ec_gpu_gen::generate(&source);
    }
}
