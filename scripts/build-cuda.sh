#!/usr/bin/env bash
# Builds the CUDA cuzk binary, also on a machine with no GPU and no CUDA toolkit.
#
#   scripts/build-cuda.sh                 # sm_90 (H100/H200)
#   CUDA_ARCH=89 scripts/build-cuda.sh    # another architecture
#
# With a CUDA toolkit installed (nvcc on PATH, libcuda in /usr/local/cuda or
# $CUDA_LIBRARY_PATH/lib64) it just builds. Otherwise it fetches nvcc from PyPI and links
# against a stub libcuda that only satisfies the linker: at run time the driver's real
# libcuda.so.1 is loaded. The result is target/cuda/release/cuzk, one file with the kernels
# embedded.
set -euo pipefail
cd "$(dirname "$0")/.."
arch="${CUDA_ARCH:-90}"
tools="${CUZK_CUDA_TOOLS:-/var/tmp/cuzk-cuda-tools}"

if ! command -v nvcc >/dev/null; then
  if [ ! -x "$tools/nvidia/cu13/bin/nvcc" ]; then
    echo "nvcc not found: installing it from PyPI into $tools" >&2
    python3 -m pip install --quiet --target "$tools" \
      nvidia-cuda-nvcc==13.0.88 nvidia-cuda-crt==13.0.88 nvidia-nvvm==13.0.88 \
      nvidia-cuda-runtime==13.0.96
  fi
  export PATH="$tools/nvidia/cu13/bin:$PATH"
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

export EC_GPU_CUDA_NVCC_ARGS="${EC_GPU_CUDA_NVCC_ARGS:---optimize=6 --threads=0 --fatbin --generate-code=arch=compute_${arch},code=sm_${arch} --generate-code=arch=compute_${arch},code=compute_${arch}}"
nvcc --version | tail -n 1 >&2
cargo build --release --features cuda --target-dir "${CUDA_TARGET_DIR:-target/cuda}" "$@"
echo "built ${CUDA_TARGET_DIR:-target/cuda}/release/cuzk (sm_${arch})" >&2
