#!/usr/bin/env bash
# The production-shape benchmarks, run on a GPU machine with a GPU build of cuzk
# (scripts/build-cuda.sh); no Rust toolchain needed there.
#
#   scripts/gpu-production.sh BIN OUT_DIR
#
# STEPS (default "check bench:32GiB:3") picks what runs, in order:
#   check              examples/backend_check beside BIN: SupraSeal and ec-gpu proofs of a
#                      2^18-constraint circuit, each checked with bellperson's verifier
#   bench:SIZE:N       `cuzk bench` on N shape sectors of SIZE with default settings:
#                      synthetic parameters of the real size on local disk, the real pipeline,
#                      nvidia-smi sampled every 500 ms; its waterfall and timeline are kept
#   once:SIZE          one shape file of SIZE: `cuzk prove-dir --once --benchmark` against
#                      `cuzk reference` (filecoin-proofs' seal_commit_phase2, timed until it
#                      rejects its own result, as it must on synthetic parameters)
#   reference:SIZE     `cuzk reference` alone on one shape file of SIZE (REF_TIMEOUT, 600 s)
# EXTRA_ARGS are added to every cuzk run (e.g. "--backend ec-gpu"). BENCH_DIR (default
# /tmp/cuzk-bench) holds the synthetic parameters (47 GB for 32GiB); a `<params>.shape.json`
# found there saves counting the circuit. Results go to OUT_DIR.
set -uo pipefail
bin="$(realpath "$1")"; out="$(realpath -m "$2")"
steps="${STEPS:-check bench:32GiB:3}"
bench="${BENCH_DIR:-/tmp/cuzk-bench}"
mkdir -p "$out" "$bench"
export RUST_LOG="${RUST_LOG:-cuzk=info}"
{ nvidia-smi -L; nproc; free -g; df -h "$bench"; } > "$out/machine.txt" 2>&1

sample() { # sample NAME: GPU utilisation every 500 ms, host memory in use every second
  nvidia-smi --query-gpu=timestamp,index,utilization.gpu,memory.used --format=csv,noheader,nounits \
    -lms 500 > "$out/smi-$1.csv" 2>/dev/null &
  sampler=$!
  ( while sleep 1; do echo "$SECONDS $(free -b | awk 'NR==2 {print $3}')"; done ) > "$out/mem-$1.txt" &
  mem_sampler=$!
}
stop_sample() {
  kill "$sampler" "$mem_sampler" 2>/dev/null; wait "$sampler" "$mem_sampler" 2>/dev/null
}

prepare() { # prepare SIZE: shape parameters and one shape C1 file; prints the C1 file
  "$bin" bench --sector-size "$1" --dir "$bench" --sectors 1 --prepare-only >&2 || return 1
  ls -td "$bench"/runs/*/inbox/*.json | head -n 1
}

timed() { # timed LOG CMD...: run, append the wall time and exit code to LOG
  local log="$1"; shift
  local started=$SECONDS
  "$@" >> "$log" 2>&1
  echo "exit $? after $((SECONDS - started)) s: $*" >> "$log"
  tail -n 1 "$log" >&2
}

for step in $steps; do
  IFS=: read -r what size n <<< "$step"
  echo "== $step" >&2
  case "$what" in
    check)
      checker="$(dirname "$bin")/backend_check"
      [ -x "$checker" ] && timed "$out/backend-check.log" "$checker" --log-constraints 18 --partitions 4
      ;;
    bench)
      sample "bench-$size"
      # A run cut short by BENCH_TIMEOUT still leaves its timeline for the waterfall below.
      timed "$out/bench-$size.log" timeout "${BENCH_TIMEOUT:-3600}" \
        "$bin" bench --sector-size "$size" --dir "$bench" --sectors "${n:-3}" ${EXTRA_ARGS:-}
      stop_sample
      run=$(ls -td "$bench"/runs/*/ | head -n 1)
      cp "$run/timeline.csv" "$out/timeline-bench-$size.csv" 2>/dev/null
      "$bin" waterfall "$run/timeline.csv" --width 140 > "$out/waterfall-bench-$size.txt" 2>&1
      ;;
    once)
      c1=$(prepare "$size") || continue
      spool=$(mktemp -d)
      mkdir "$spool/inbox" && cp "$c1" "$spool/inbox/"
      sample "once-$size"
      FIL_PROOFS_PARAMETER_CACHE="$bench/params" timed "$out/once-$size.log" \
        "$bin" prove-dir "$spool/inbox" --once --benchmark --settle-secs 0 ${EXTRA_ARGS:-}
      stop_sample
      "$bin" waterfall "$spool/timeline.csv" --width 140 > "$out/waterfall-once-$size.txt" 2>&1
      FIL_PROOFS_PARAMETER_CACHE="$bench/params" timed "$out/once-$size.log" \
        "$bin" reference "$c1"
      ;;
    reference)
      c1=$(prepare "$size") || continue
      sample "reference-$size"
      FIL_PROOFS_PARAMETER_CACHE="$bench/params" timed "$out/reference-$size.log" \
        timeout "${REF_TIMEOUT:-600}" "$bin" reference "$c1"
      stop_sample
      ;;
  esac
done
echo "== done" >&2
