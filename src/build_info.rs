//! What this binary was built from and with, for `cuzk --version`: the commit, the cargo
//! features that decide which backends exist, and the GPU architectures its kernels are for.
//!
//! A binary is copied to GPU machines far from the tree it was built in, so it carries these
//! itself. The build script stamps them (see `build.rs`; scripts/build-cuda.sh passes the
//! commit and SupraSeal's extra architectures); this module only words them.

use std::sync::LazyLock;

/// The commit the binary was built from, `unknown` outside a git checkout.
pub const COMMIT: &str = match option_env!("CUZK_GIT_COMMIT") {
    Some(commit) => commit,
    None => "unknown",
};

/// The cargo features built in that change what can prove.
pub fn features() -> Vec<&'static str> {
    let mut features = Vec::new();
    if cfg!(feature = "cuda") {
        features.push("cuda");
    }
    if cfg!(feature = "supraseal") {
        features.push("supraseal");
    }
    features
}

/// The `--backend` values this build can prove with.
pub fn backends() -> Vec<&'static str> {
    let mut backends = vec!["cpu"];
    if cfg!(feature = "cuda") {
        backends.extend(["cuda", "ec-gpu"]);
    }
    if cfg!(feature = "supraseal") {
        backends.push("supraseal");
    }
    backends
}

/// `--version`'s text after the program name: the version, then one line each for the
/// commit, the features, the backends and the GPU kernels.
pub fn long_version() -> &'static str {
    static TEXT: LazyLock<String> = LazyLock::new(|| {
        let features = features();
        let features = if features.is_empty() {
            "none (proves on the CPU; scripts/build-cuda.sh builds the GPU backends)".to_owned()
        } else {
            features.join(", ")
        };
        let mut text = format!(
            "{}\ncommit: {COMMIT}\nfeatures: {features}\nbackends: {}\n",
            env!("CARGO_PKG_VERSION"),
            backends().join(", ")
        );
        match gpu_kernels() {
            None => text += "GPU kernels: none",
            Some(lines) => {
                text += "GPU kernels:";
                for line in lines {
                    text += &format!("\n  {line}");
                }
            }
        }
        text
    });
    &TEXT
}

/// One line per GPU backend: the architectures its kernels were compiled for.
fn gpu_kernels() -> Option<Vec<String>> {
    if !cfg!(feature = "cuda") {
        return None;
    }
    let cuda = option_env!("CUZK_BUILT_CUDA_ARCHS").unwrap_or("");
    let sass: Vec<String> = cuda.split_whitespace().map(|a| format!("sm_{a}")).collect();
    let ptx: Vec<String> = cuda
        .split_whitespace()
        .last()
        .map(|a| format!("compute_{a}"))
        .into_iter()
        .collect();
    let mut lines = vec![format!("cuda backend: {}", show_codes(&sass, &ptx))];
    let ec_gpu: Vec<String> = option_env!("CUZK_BUILT_EC_GPU_ARCHS")
        .unwrap_or("")
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    let (sass, ptx): (Vec<String>, Vec<String>) =
        ec_gpu.into_iter().partition(|code| code.starts_with("sm_"));
    lines.push(if sass.is_empty() && ptx.is_empty() {
        "ec-gpu: ec-gpu-gen's default architectures".to_owned()
    } else {
        format!("ec-gpu: {}", show_codes(&sass, &ptx))
    });
    if cfg!(feature = "supraseal") {
        // sppark's build script fixes SupraSeal's list; build-cuda.sh's shim adds to it.
        let extra: Vec<String> = option_env!("CUZK_SUPRASEAL_EXTRA_ARCHS")
            .unwrap_or("")
            .split_whitespace()
            .map(|a| format!("sm_{a}"))
            .collect();
        let extra = if extra.is_empty() {
            String::new()
        } else {
            format!(" + {}", extra.join(" "))
        };
        lines.push(format!(
            "supraseal: sppark's fixed list (sm_75 sm_80 sm_120, PTX compute_80 compute_100){extra}"
        ));
    }
    Some(lines)
}

/// `sm_80 sm_90, PTX compute_90`: machine code for the first, code compiled at load for
/// the rest.
fn show_codes(sass: &[String], ptx: &[String]) -> String {
    let mut text = if sass.is_empty() {
        "no SASS".to_owned()
    } else {
        sass.join(" ")
    };
    if !ptx.is_empty() {
        text += &format!(", PTX {}", ptx.join(" "));
    }
    text
}
