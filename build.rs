//! Stamps what `cuzk --version` names: the git commit (`CUZK_GIT_COMMIT`) and, under the
//! `cuda` feature, the GPU architectures the kernels are built for (`CUZK_BUILT_CUDA_ARCHS`,
//! `CUZK_BUILT_EC_GPU_ARCHS`).
//!
//! Under the `cuda` feature, compiles what the GPU backends load:
//! - for the ec-gpu backend, ec-gpu-gen's FFT and its G1 and G2 multiexps, and cuzk's
//!   quotient kernels (`src/backend/ec_gpu/quotient.cu`), into one module;
//! - for the cuda backend, cuzk's Groth16 on sppark (`src/backend/cuda/groth16.cu`), linked
//!   into the binary, with SASS for each architecture in `CUZK_CUDA_ARCHS` (set by
//!   scripts/build-cuda.sh) and PTX for the last.
//!
//! Always, compiles `proto/cuzk/v1/proving.proto` into the gRPC code of `cuzk serve` with
//! protox, a protobuf compiler in Rust, so no `protoc` has to be installed.

fn main() {
    grpc_code();
    // ec-gpu-gen's `program!` macro, expanded in this crate, also tests an `opencl` feature.
    println!("cargo::rustc-check-cfg=cfg(feature, values(\"opencl\"))");
    #[cfg(not(feature = "cuda"))]
    git_commit();
    #[cfg(feature = "cuda")]
    {
        ec_gpu_kernels();
        sppark_prover();
    }
}

/// The server and client of `cuzk.v1.ProvingEngine`, written to `OUT_DIR/cuzk.v1.rs`.
fn grpc_code() {
    const PROTO: &str = "proto/cuzk/v1/proving.proto";
    println!("cargo::rerun-if-changed={PROTO}");
    let descriptors =
        protox::compile([PROTO], ["proto"]).unwrap_or_else(|err| panic!("{PROTO}: {err}"));
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_fds(descriptors)
        .unwrap_or_else(|err| panic!("generating the gRPC code of {PROTO}: {err}"));
}

/// `CUZK_GIT_COMMIT`: the commit checked out, or `unknown` outside a git checkout, watched so
/// that a new commit stamps again.
///
/// Not under the `cuda` feature: this script also compiles the kernels there, and a rerun per
/// commit would recompile them (minutes). scripts/build-cuda.sh exports `CUZK_GIT_COMMIT`
/// instead, which rustc tracks for the crate alone (it is read with `option_env!`).
#[cfg(not(feature = "cuda"))]
fn git_commit() {
    let git = |args: &[&str]| -> Option<String> {
        let out = std::process::Command::new("git").args(args).output().ok()?;
        let text = String::from_utf8(out.stdout).ok()?;
        (out.status.success() && !text.trim().is_empty()).then(|| text.trim().to_owned())
    };
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo::rustc-env=CUZK_GIT_COMMIT={commit}");
    // HEAD names the branch; the branch's ref file (or packed-refs) moves with each commit.
    // In a worktree these live outside `.git/`, so git says where.
    let mut watched = vec!["HEAD".to_owned(), "packed-refs".to_owned()];
    watched.extend(git(&["symbolic-ref", "-q", "HEAD"]));
    for name in watched {
        if let Some(path) = git(&["rev-parse", "--git-path", &name]) {
            // A path that does not exist would make cargo rerun this script at every build.
            if std::path::Path::new(&path).exists() {
                println!("cargo::rerun-if-changed={path}");
            }
        }
    }
}

#[cfg(feature = "cuda")]
fn ec_gpu_kernels() {
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
    // For `cuzk --version`: ec-gpu-gen compiles for the architectures its nvcc arguments name.
    println!("cargo::rerun-if-env-changed=EC_GPU_CUDA_NVCC_ARGS");
    // `code=` says what is embedded: sm_NN as SASS, compute_NN as PTX.
    let mut archs: Vec<String> = Vec::new();
    for word in std::env::var("EC_GPU_CUDA_NVCC_ARGS")
        .unwrap_or_default()
        .split_whitespace()
    {
        let Some((_, codes)) = word.split_once("code=") else {
            continue;
        };
        for code in codes
            .trim_matches(|c: char| c == '"' || c == '\'')
            .split(',')
        {
            if !code.is_empty() && !archs.iter().any(|a| a == code) {
                archs.push(code.to_owned());
            }
        }
    }
    let archs = archs.join(" ");
    println!("cargo::rustc-env=CUZK_BUILT_EC_GPU_ARCHS={archs}");
}

#[cfg(feature = "cuda")]
fn sppark_prover() {
    const SOURCE: &str = "src/backend/cuda/groth16.cu";
    println!("cargo::rerun-if-changed={SOURCE}");
    // The headers groth16.cu includes from its own directory: every one there, so that a new
    // header is never missed (one is added with an #include, which reruns this).
    const HEADERS: &str = "src/backend/cuda";
    let mut headers: Vec<_> = std::fs::read_dir(HEADERS)
        .map(|entries| {
            entries
                .flatten()
                .map(|entry| entry.path())
                .filter(|path| path.extension().is_some_and(|ext| ext == "cuh"))
                .collect()
        })
        .unwrap_or_default();
    headers.sort();
    for header in headers {
        println!("cargo::rerun-if-changed={}", header.display());
    }
    println!("cargo::rerun-if-env-changed=CUZK_CUDA_ARCHS");
    let archs = std::env::var("CUZK_CUDA_ARCHS").unwrap_or_else(|_| "80 86 89 90 120".into());
    let archs: Vec<&str> = archs.split_whitespace().collect();
    // For `cuzk --version`: what this binary's cuda backend runs on.
    println!("cargo::rustc-env=CUZK_BUILT_CUDA_ARCHS={}", archs.join(" "));
    let mut nvcc = cc::Build::new();
    nvcc.cuda(true)
        .flag("-std=c++17")
        .flag("-t0")
        .define("FEATURE_BLS12_381", None)
        .define("TAKE_RESPONSIBILITY_FOR_ERROR_MESSAGE", None)
        // Host asserts would abort the process; the Rust side checks inputs instead.
        .define("NDEBUG", None)
        .flag("-Xcompiler")
        .flag("-Wno-unused-function");
    for arch in &archs {
        nvcc.flag("-gencode")
            .flag(format!("arch=compute_{arch},code=sm_{arch}"));
    }
    if let Some(last) = archs.last() {
        nvcc.flag("-gencode")
            .flag(format!("arch=compute_{last},code=compute_{last}"));
    }
    // sppark's headers (its build script exports where they are) and blst's, which sppark's
    // host-side field types use.
    // blst's build picks its ADX assembly when this machine has ADX; its headers must
    // name the same symbols.
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("adx") {
        nvcc.define("__ADX__", None);
    }
    for var in ["DEP_SPPARK_ROOT", "DEP_BLST_C_SRC"] {
        let dir = std::env::var(var).unwrap_or_else(|_| panic!("{var} is not set"));
        nvcc.include(dir);
    }
    nvcc.file(SOURCE).compile("cuzk_groth16");
}
