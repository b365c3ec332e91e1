#!/usr/bin/env bash
# The GPU benchmark, run on the GPU machine with a CUDA build of cuzk (scripts/build-cuda.sh)
# and real 2KiB C1 files; no Rust toolchain needed there.
#
#   scripts/gpu-bench.sh BIN C1_DIR OUT_DIR [8MIB_C1_DIR]
#
# Generates the 2KiB parameters, then on the same files and parameters runs, on GPU 0:
#   (a) filecoin-proofs seal_commit_phase2 one file at a time (`cuzk reference`),
#   (b) cuzk prove-dir with default settings,
#   (c) cuzk with --synth-jobs 1, 2, 4, 8,
#   (d) cuzk with --gpus none (on a subset),
#   and with two or more GPUs, cuzk on all of them,
# sampling GPU utilisation with nvidia-smi, and writes summary.md plus logs to OUT_DIR.
#
# GPU_BENCH_RUNS limits the runs, e.g. "8mib default overlap allgpus allgpus-overlap"
# (default: all of reference default overlap allgpus allgpus-overlap sweep cpu 8mib).
set -uo pipefail
runs="${GPU_BENCH_RUNS:-reference default overlap allgpus allgpus-overlap sweep cpu 8mib}"
want() { [[ " $runs " == *" $1 "* ]]; }
bin="$(realpath "$1")"; c1="$(realpath "$2")"; out="$(realpath -m "$3")"; c1_8m="${4:-}"
mkdir -p "$out/logs"
export FIL_PROOFS_PARAMETER_CACHE="${FIL_PROOFS_PARAMETER_CACHE:-/tmp/cuzk-params}"
export RUST_LOG="${RUST_LOG:-info}"
work="$(mktemp -d)"
started=$(date +%s)
files=("$c1"/*.json)
n=${#files[@]}

sample() { # sample NAME: GPU utilisation every 200 ms until stop_sample
  nvidia-smi --query-gpu=timestamp,index,utilization.gpu,memory.used --format=csv,noheader,nounits \
    -lms 200 > "$out/logs/smi-$1.csv" 2>/dev/null &
  sampler=$!
}
stop_sample() { kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null; }
now() { date +%s.%N; }

nvidia-smi > "$out/logs/nvidia-smi.txt" 2>&1
gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
nproc > "$out/logs/nproc.txt"
echo "== params" >&2
t0=$(now); "$bin" params gen --sector-size 2KiB > "$out/logs/params.log" 2>&1; t1=$(now)
echo "params_2kib_s $(awk "BEGIN{printf \"%.2f\", $t1 - $t0}")" > "$out/logs/times.txt"

budget_s="${GPU_BENCH_BUDGET_S:-480}"
run_cuzk() { # run_cuzk NAME FILES... -- ARGS...
  local name=$1; shift
  if [ $(( $(date +%s) - started )) -gt "$budget_s" ]; then
    echo "$name skipped: over the ${budget_s}s budget" >> "$out/logs/times.txt"; return
  fi
  local spool="$work/$name"; mkdir -p "$spool/inbox"
  while [ "$1" != "--" ]; do cp "$1" "$spool/inbox/"; shift; done; shift
  echo "== cuzk $name $*" >&2
  sample "$name"
  local t0=$(now)
  "$bin" prove-dir "$spool/inbox" --once --settle-secs 0 "$@" > "$out/logs/$name.log" 2>&1
  local rc=$?
  local t1=$(now)
  stop_sample
  cp "$spool/timeline.csv" "$out/logs/timeline-$name.csv"
  "$bin" waterfall --width 120 "$spool/timeline.csv" > "$out/logs/waterfall-$name.txt" 2>&1
  "$bin" waterfall --json "$spool/timeline.csv" > "$out/logs/metrics-$name.json" 2>/dev/null
  echo "$name rc=$rc wall_s=$(awk "BEGIN{printf \"%.2f\", $t1 - $t0}") proofs=$(ls "$spool/outbox"/*.proof 2>/dev/null | wc -l) failed=$(ls "$spool/failed"/*.error.json 2>/dev/null | wc -l)" >> "$out/logs/times.txt"
}

if want 8mib && [ -n "$c1_8m" ]; then
  t0=$(now); "$bin" params gen --sector-size 8MiB > "$out/logs/params-8mib.log" 2>&1; t1=$(now)
  echo "params_8mib_s $(awk "BEGIN{printf \"%.2f\", $t1 - $t0}")" >> "$out/logs/times.txt"
  run_cuzk 8mib "$c1_8m"/*.json -- --gpus 0
fi
if want reference; then
echo "== (a) reference" >&2
sample reference
# bellperson spreads each multiexp over every visible GPU: show it one, like cuzk's gpu-0.
t0=$(now); CUDA_VISIBLE_DEVICES=0 "$bin" reference "${files[@]}" > "$out/logs/reference.tsv" 2> "$out/logs/reference.log"; rc=$?; t1=$(now)
stop_sample
echo "reference rc=$rc wall_s=$(awk "BEGIN{printf \"%.2f\", $t1 - $t0}") proofs=$n" >> "$out/logs/times.txt"
fi

want default && run_cuzk default "${files[@]}" -- --gpus 0
want overlap && run_cuzk overlap "${files[@]}" -- --gpus 0 --provers-per-gpu 2
if [ "$gpus" -ge 2 ]; then
  want allgpus && run_cuzk allgpus "${files[@]}" -- --gpus all
  want allgpus-overlap && run_cuzk allgpus-overlap "${files[@]}" -- --gpus all --provers-per-gpu 2
fi
if want sweep; then
  for j in 1 2 4 8; do run_cuzk "synth$j" "${files[@]}" -- --gpus 0 --synth-jobs "$j"; done
fi
want cpu && run_cuzk cpu "${files[@]:0:4}" -- --gpus none
echo "total_s $(( $(date +%s) - started ))" >> "$out/logs/times.txt"
cp "$out/logs/waterfall-default.txt" "$out/" 2>/dev/null
python3 "$(dirname "$0")/gpu-summary.py" "$out/logs" > "$out/summary.md" 2> "$out/logs/summary.err"
tar -C "$out" -czf "$out/logs.tar.gz" logs && rm -rf "$out/logs"
cat "$out/summary.md"
