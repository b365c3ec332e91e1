#!/usr/bin/env bash
# Builds the GPU cuzk binary (the cuda and ec-gpu backends' kernels and the SupraSeal backend),
# also on a machine with no GPU and no CUDA toolkit.
#
#   scripts/build-cuda.sh                    # kernels for RTX 30/40/50, A100, H100/H200
#   CUDA_ARCHS="90" scripts/build-cuda.sh    # only sm_90: smaller, faster to build
#   CUZK_FEATURES=cuda scripts/build-cuda.sh # without SupraSeal
#
# With a CUDA toolkit installed (nvcc on PATH, libcuda in /usr/local/cuda or
# $CUDA_LIBRARY_PATH/lib64) it just builds. Otherwise it fetches nvcc, the CUDA runtime and the
# CCCL headers from PyPI into $CUZK_CUDA_TOOLS and links against a stub libcuda that only
# satisfies the linker: at run time the driver's real libcuda.so.1 is loaded. The result is
# target/cuda/release/cuzk, one file with the kernels embedded (cudart is linked statically).
set -euo pipefail
cd "$(dirname "$0")/.."
# sm_80 A100, sm_86 RTX 30xx, sm_89 RTX 40xx, sm_90 H100/H200, sm_120 RTX 50xx; the newest
# also as PTX, which later GPUs compile at load time.
archs="${CUDA_ARCHS:-80 86 89 90 120}"
features="${CUZK_FEATURES:-cuda,supraseal}"
tools="${CUZK_CUDA_TOOLS:-/var/tmp/cuzk-cuda-tools}"

if ! command -v nvcc >/dev/null; then
  if [ ! -x "$tools/nvidia/cu13/bin/nvcc" ] || [ ! -d "$tools/nvidia/cu13/include/cccl" ]; then
    echo "nvcc not found: installing it from PyPI into $tools" >&2
    python3 -m pip install --quiet --target "$tools" \
      nvidia-cuda-nvcc==13.0.88 nvidia-cuda-crt==13.0.88 nvidia-nvvm==13.0.88 \
      nvidia-cuda-runtime==13.0.96 nvidia-cuda-cccl==13.0.85
  fi
  cu="$tools/nvidia/cu13"
  export PATH="$cu/bin:$PATH"
  # sppark (SupraSeal) links cudart_static and cudadevrt from the wheel, and its sources
  # include <nv/target> from CCCL. No -arch here: sppark probes which ones it may emit.
  export LIBRARY_PATH="$cu/lib${LIBRARY_PATH:+:$LIBRARY_PATH}"
  export NVCC_PREPEND_FLAGS="-I$cu/include -I$cu/include/cccl ${NVCC_PREPEND_FLAGS:-}"
fi

# cuda-driver-sys links -lcuda at build time; cuda-config looks in $CUDA_LIBRARY_PATH/lib64.
has_libcuda() {
  local paths="${CUDA_LIBRARY_PATH:-}"
  for d in ${paths//:/ } /usr/local/cuda; do
    [ -e "$d/lib64/libcuda.so" ] && return 0
  done
  return 1
}
if ! has_libcuda; then
  stub="$tools/libcuda-stub"
  if [ ! -e "$stub/lib64/libcuda.so" ]; then
    echo "no libcuda to link against: building a stub in $stub" >&2
    cargo fetch --quiet
    decls=$(find "${CARGO_HOME:-$HOME/.cargo}/registry/src" -path '*cuda-driver-sys-0.3*/src/cuda.rs' | head -n 1)
    [ -n "$decls" ] || { echo "cuda-driver-sys 0.3 sources not found" >&2; exit 1; }
    mkdir -p "$stub/lib64"
    # One function per `pub fn cu*` the bindings declare, each failing with
    # CUDA_ERROR_NO_DEVICE (100), so a binary run without a driver falls back to the CPU.
    grep -oE 'pub fn cu[A-Za-z0-9_]+' "$decls" | sort -u | awk '{print "int " $3 "(void) { return 100; }"}' \
      > "$stub/libcuda_stub.c"
    gcc -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$stub/lib64/libcuda.so.1" "$stub/libcuda_stub.c"
    ln -sf libcuda.so.1 "$stub/lib64/libcuda.so"
  fi
  export CUDA_LIBRARY_PATH="$stub${CUDA_LIBRARY_PATH:+:$CUDA_LIBRARY_PATH}"
fi

# sppark's build script fixes SupraSeal's -gencode list (sm_80, sm_75, sm_120 and PTX): no sm_90,
# so an H100/H200 JIT-compiles the PTX at its first proof (~8 s on a fresh machine). A PATH shim
# adds sm_90 SASS to exactly those compiles; sppark's --dryrun probes and every other nvcc
# call pass through untouched. SUPRASEAL_EXTRA_ARCHS="" turns it off.
supra_extra="${SUPRASEAL_EXTRA_ARCHS-90}"
target_dir="${CUDA_TARGET_DIR:-target/cuda}"
if [[ "$features" == *supraseal* ]]; then
  shim="$tools/nvcc-shim"
  mkdir -p "$shim"
  if [ -n "$supra_extra" ]; then
    real_nvcc="$(PATH="${PATH//$shim:/}" command -v nvcc)"
    [ "$real_nvcc" != "$shim/nvcc" ] || { echo "no nvcc behind $shim" >&2; exit 1; }
    {
      echo '#!/usr/bin/env bash'
      echo "# Written by scripts/build-cuda.sh: adds sm_${supra_extra// /, sm_} to sppark's compiles."
      echo 'extra=()'
      echo 'case " $* " in *" --dryrun "*) ;; *"arch=compute_80,code=\"compute_80,sm_80\""*)'
      for a in $supra_extra; do echo "  extra+=(-gencode arch=compute_${a},code=sm_${a})"; done
      echo ';;'
      echo 'esac'
      printf 'exec %q "$@" "${extra[@]}"\n' "$real_nvcc"
    } > "$shim/nvcc.new"
    chmod +x "$shim/nvcc.new"
    mv "$shim/nvcc.new" "$shim/nvcc"
    export PATH="$shim:$PATH"
  fi
  # supraseal-c2's build script does not rebuild when only the architectures change: a stamp
  # of the last list built into this target directory decides.
  stamp="$target_dir/.supraseal-extra-archs"
  if [ -d "$target_dir" ] && [ "$(cat "$stamp" 2>/dev/null || echo unknown)" != "$supra_extra" ]; then
    echo "SupraSeal's extra architectures changed: rebuilding supraseal-c2" >&2
    cargo clean --quiet --release -p supraseal-c2 --target-dir "$target_dir"
  fi
  # Stamped now, not after the build: once cleaned, cargo rebuilds supraseal-c2 with these
  # architectures whatever else fails, so a failed build must not clean it again.
  mkdir -p "$target_dir"
  echo "$supra_extra" > "$stamp"
fi

# The ec-gpu FFT and multiexp kernels: SASS for every listed architecture, PTX for the last.
gencode=""
last=""
for a in $archs; do
  gencode+=" --generate-code=arch=compute_${a},code=sm_${a}"
  last="$a"
done
gencode+=" --generate-code=arch=compute_${last},code=compute_${last}"
# The cuda backend's own kernels (build.rs): the same architectures.
export CUZK_CUDA_ARCHS="$archs"
# For `cuzk --version`. build.rs does not stamp the commit under the cuda feature (a rerun
# per commit would recompile the kernels); rustc tracks these for the crate alone.
CUZK_GIT_COMMIT="$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
export CUZK_GIT_COMMIT
export CUZK_SUPRASEAL_EXTRA_ARCHS="$supra_extra"
export EC_GPU_CUDA_NVCC_ARGS="${EC_GPU_CUDA_NVCC_ARGS:---optimize=6 --threads=0 --fatbin$gencode}"
nvcc --version | tail -n 1 >&2
started=$(date +%s)
cargo build --release --features "$features" --target-dir "$target_dir" "$@"
bin="$target_dir/release/cuzk"
echo "built $bin ($features) in $(( $(date +%s) - started )) s, $(du -h "$bin" | cut -f1)" >&2
echo "ec-gpu and cuda backend kernels: sm_${archs// /, sm_} (+ compute_${last} PTX)" >&2
if [[ "$features" == *supraseal* ]]; then
  echo "SupraSeal kernels: sppark's list (sm_80 + compute_80 PTX, sm_75, compute_100 PTX, sm_120)${supra_extra:+ + sm_${supra_extra// /, sm_}}; other GPUs compile the PTX at first use" >&2
fi
