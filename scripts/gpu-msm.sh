#!/usr/bin/env bash
# The multiexp at wide windows (backend/cuda/wide_msm.cuh) against sppark's Pippenger, run
# on the GPU machine with a CUDA build of cuzk and its examples beside it
# (scripts/build-cuda.sh --bins --example backend_check --example msm_bench); no Rust
# toolchain needed there.
#
#   scripts/gpu-msm.sh BIN OUT_DIR [STEP...]     # STEP: table, check, real, bench
#
# table: examples/msm_bench --gpu --streamed from 2^FROM to 2^TO points (default 12, 27):
#        both multiexps on the same inputs, the bases on the device and streamed from
#        pinned host memory, points per second, results compared (and with the CPU's at
#        the smallest size).
# check: backend_check at 2^LOG constraints (default 20) with CUZK_MULTIEXP=wide (or
#        MULTIEXP, e.g. sppark, or wide:from=12 for every size): the
#        cuda proofs (every multiexp over device bases by the wide one: H where resident,
#        the splits' tails) equal the CPU's at r = s = 0.
# real:  a real 2KiB sector (tests/fixtures/c1), the same way: the cuda proof of partition 0
#        equals the CPU's, the sector's proof passes verify_seal.
# bench: `cuzk bench --sector-size SIZE --sectors N` (default 32GiB, 3) with
#        CUZK_MULTIEXP=wide (the default) and then CUZK_MULTIEXP=sppark (ENGINES picks),
#        for each --gpu-memory in CARDS (default all: no cap), one bench directory; for
#        each of SHARED (default "on"; "off" sets CUZK_SHARED_PASS=0: every partition its
#        own pass over the streamed bases), and for each of EVALS (default "compact";
#        "whole" sets CUZK_HOST_EVALUATION=whole: the host evaluates a, b and c from the
#        expanded witness and makes them compact after). scripts/bench-summary.py OUT_DIR
#        prints the bench runs as one table.
set -uo pipefail
bin="$(realpath "$1")"; out="$(realpath -m "$2")"; shift 2
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(table check real)
here="$(cd "$(dirname "$0")/.." && pwd)"
examples="$(dirname "$bin")"
mkdir -p "$out"
export FIL_PROOFS_PARAMETER_CACHE="${FIL_PROOFS_PARAMETER_CACHE:-/tmp/cuzk-params}"
export RUST_LOG="${RUST_LOG:-cuzk=info}"

. "$(dirname "$0")/timed.sh"

for step in "${steps[@]}"; do
  case "$step" in
  table)
    echo "== msm_bench --gpu, 2^${FROM:-12} .. 2^${TO:-27}"
    timed "$out/table.log" "$examples/msm_bench" --gpu --from "${FROM:-12}" --to "${TO:-27}" --streamed \
      --rounds "${ROUNDS:-3}"
    grep -E "^\||H100|H200|disagree|Error" "$out/table.log"
    ;;
  check)
    echo "== backend_check at 2^${LOG:-20}"
    CUZK_MULTIEXP="${MULTIEXP:-wide}" timed "$out/check-${MULTIEXP:-wide}.log" \
      "$examples/backend_check" --log-constraints "${LOG:-20}" --partitions 2
    grep -E "^(cuda|Cuda)|Error|disagree" "$out/check-${MULTIEXP:-wide}.log" | cut -c1-300
    ;;
  real)
    echo "== a real 2KiB sector"
    timed "$out/real.log" "$bin" params gen --sector-size 2KiB
    c1=$(ls "$here"/tests/fixtures/c1/*.json | head -n 1)
    CUZK_MULTIEXP="${MULTIEXP:-wide}" timed "$out/real.log" "$examples/backend_check" --c1 "$c1" --log-constraints 10 --partitions 1
    grep -E "^real sector|verify|Error" "$out/real.log" | cut -c1-300
    ;;
  bench)
    size="${SIZE:-32GiB}"
    for card in ${CARDS:-all}; do
      extra=""
      [ "$card" = all ] || extra="--gpu-memory $card"
      echo "== cuzk bench $size, --gpu-memory $card, the wide multiexp against sppark's"
      for engine in ${ENGINES:-wide sppark}; do
        for shared in ${SHARED:-on}; do
        for eval in ${EVALS:-compact}; do
          name="$engine-$card-shared-$shared-$eval"
          log="$out/bench-$name.log"
          export CUZK_MULTIEXP="$engine"
          if [ "$shared" = off ]; then export CUZK_SHARED_PASS=0; else unset CUZK_SHARED_PASS; fi
          if [ "$eval" = whole ]; then export CUZK_HOST_EVALUATION=whole; else unset CUZK_HOST_EVALUATION; fi
          timed "$log" timeout "${BENCH_TIMEOUT:-420}" "$bin" bench --sector-size "$size" \
            --sectors "${SECTORS:-3}" --dir /tmp/cuzk-bench-msm $extra
          run=$(ls -td /tmp/cuzk-bench-msm/runs/*/ | head -n 1)
          cp "$run/timeline.csv" "$out/timeline-$name.csv"
          "$bin" waterfall "$run/timeline.csv" --width 140 > "$out/waterfall-$name.txt" 2>&1
          echo "-- $engine, --gpu-memory $card, shared pass $shared, host evaluation $eval"
          grep -E "^(wall time|per partition|steady|peak memory)" "$log"
          grep -E "^verdict|kernels by step|over PCIe|host evaluation" -A2 "$out/waterfall-$name.txt" | cut -c1-300
        done
        done
      done
    done
    unset CUZK_MULTIEXP CUZK_SHARED_PASS CUZK_HOST_EVALUATION
    ;;
  *) echo "unknown step $step" >&2 ;;
  esac
done
