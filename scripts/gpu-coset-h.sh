#!/usr/bin/env bash
# The H query in coset evaluation form on the cuda backend, run on the GPU machine with a
# CUDA build of cuzk and examples/backend_check beside it (scripts/build-cuda.sh --bins
# --example backend_check); no Rust toolchain needed there.
#
#   scripts/gpu-coset-h.sh BIN OUT_DIR
#
# 1. backend_check at 2^LOG constraints (default 18): the cuda proofs with the file's own H
#    query and with the coset one, resident and streamed, equal the CPU's at r = s = 0.
# 2. The 2KiB parameters (cuzk's generator writes their coset query from tau), the query
#    derived again on the GPU (`cuzk params coset-h`: the same bytes), and a real 2KiB sector
#    (tests/fixtures/c1): the cuda proof of partition 0 equals the CPU's, and the sector's
#    proof passes verify_seal.
# 3. `cuzk bench --sector-size SIZE --sectors N` (default 512MiB, 3) without and then with
#    --coset-h, ROUNDS times (default 1), one bench directory: GPU per partition by step.
set -uo pipefail
bin="$(realpath "$1")"; out="$(realpath -m "$2")"
here="$(cd "$(dirname "$0")/.." && pwd)"
checker="$(dirname "$bin")/backend_check"
size="${SIZE:-512MiB}"
mkdir -p "$out"
export FIL_PROOFS_PARAMETER_CACHE="${FIL_PROOFS_PARAMETER_CACHE:-/tmp/cuzk-params}"
export RUST_LOG="${RUST_LOG:-cuzk=info}"

. "$(dirname "$0")/timed.sh"

echo "== backend_check at 2^${LOG:-18}"
timed "$out/check.log" "$checker" --log-constraints "${LOG:-18}" --partitions 4
grep -E "^(cuda|Cuda)" "$out/check.log"

echo "== a real 2KiB sector"
timed "$out/real.log" "$bin" params gen --sector-size 2KiB
# The generator wrote the coset query from tau; derived again from the H query, on the GPU,
# it must be the same file byte for byte.
stem=$(basename "$("$bin" params path --sector-size 2KiB 2>/dev/null | grep -o '[^ ]*\.params' | head -n 1)" .params)
made=("$FIL_PROOFS_PARAMETER_CACHE"/cuzk-coset-h-v1-"$stem"-*.points)
if [ -n "$stem" ] && [ ${#made[@]} -eq 1 ] && [ -f "${made[0]}" ]; then
  mv "${made[0]}" "$out/from-tau.points"
  timed "$out/real.log" "$bin" params coset-h --sector-size 2KiB
  grep -E "derived|GPU" "$out/real.log" | tail -n 3 | cut -c1-300
  if cmp "${made[0]}" "$out/from-tau.points"; then
    echo "the GPU's derivation equals the generator's, byte for byte"
    rm -f "$out/from-tau.points"
  else
    mv -f "$out/from-tau.points" "${made[0]}"   # the generator's stays
  fi
else
  echo "no single coset H query of the 2KiB set (${made[*]}): the derivation is not compared"
fi
c1=$(ls "$here"/tests/fixtures/c1/*.json | head -n 1)
timed "$out/real.log" "$checker" --c1 "$c1" --log-constraints 10 --partitions 1
grep -E "^real sector|verify" "$out/real.log" | cut -c1-300

echo "== cuzk bench $size, the file's own H query against the coset one"
for round in $(seq "${ROUNDS:-1}"); do
  for form in own coset; do
    flag=""; [ "$form" = coset ] && flag="--coset-h"
    log="$out/bench-$form-$round.log"
    timed "$log" timeout "${BENCH_TIMEOUT:-240}" "$bin" bench --sector-size "$size" \
      --sectors "${SECTORS:-3}" --dir /tmp/cuzk-bench-coset $flag
    run=$(ls -td /tmp/cuzk-bench-coset/runs/*/ | head -n 1)
    "$bin" waterfall "$run/timeline.csv" --width 140 > "$out/waterfall-$form-$round.txt" 2>&1
    echo "-- $form, round $round"
    grep -E "^(wall time|per partition|steady)" "$log"
    grep -E "^verdict|kernels by step" -A2 "$out/waterfall-$form-$round.txt" | cut -c1-300
  done
done
