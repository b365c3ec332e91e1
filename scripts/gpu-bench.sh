#!/usr/bin/env bash
# The GPU benchmark, run on the GPU machine with a CUDA build of cuzk (scripts/build-cuda.sh)
# and real 2KiB C1 files; no Rust toolchain needed there.
#
#   scripts/gpu-bench.sh BIN C1_DIR OUT_DIR [8MIB_C1_DIR]
#
# Generates the 2KiB parameters (filecoin-proofs' own generator) and records their
# pre-compiled constraints, then on the same files and parameters runs, each a fresh process:
#   reference        filecoin-proofs seal_commit_phase2 one file at a time (`cuzk reference`)
#   cuda             cuzk, cuda backend (sppark, parameters resident), GPU 0
#   supraseal        cuzk, SupraSeal backend, GPU 0 (CUDA_VISIBLE_DEVICES=0)
#   ecgpu            cuzk, ec-gpu backend, GPU 0, default provers per GPU
#   supraseal-full   as supraseal, with --synthesis full
#   split            as supraseal, with --prover-cpus K for each K in SPLIT_CPUS (default 4 8 0)
#   supraseal-all, ecgpu-all, cuda-all   every GPU (machines with two or more)
#   default, overlap, allgpus, allgpus-overlap, sweep (every GPU at each --synth-jobs in
#   SWEEP_JOBS, default 1 2 4 8), cpu (4 files), 8mib
# sampling GPU utilisation with nvidia-smi, and writes summary.md plus logs to OUT_DIR.
# Every proof cuzk writes has passed verify_seal; the reference checks its own.
#
# GPU_BENCH_RUNS picks the runs (default: reference supraseal ecgpu supraseal-all ecgpu-all).
set -uo pipefail
runs="${GPU_BENCH_RUNS:-reference supraseal ecgpu supraseal-all ecgpu-all}"
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
# Recorded ahead, so every cuzk run below synthesizes with them from its first partition.
t0=$(now); "$bin" params constraints --sector-size 2KiB > "$out/logs/constraints.log" 2>&1; t1=$(now)
echo "constraints_2kib_s $(awk "BEGIN{printf \"%.2f\", $t1 - $t0}")" >> "$out/logs/times.txt"

budget_s="${GPU_BENCH_BUDGET_S:-480}"
run_cuzk() { # run_cuzk NAME FILES... -- ARGS...  (VISIBLE=list limits CUDA_VISIBLE_DEVICES)
  local name=$1; shift
  if [ $(( $(date +%s) - started )) -gt "$budget_s" ]; then
    echo "$name skipped: over the ${budget_s}s budget" >> "$out/logs/times.txt"; return
  fi
  local spool="$work/$name"; mkdir -p "$spool/inbox"
  while [ "$1" != "--" ]; do cp "$1" "$spool/inbox/"; shift; done; shift
  echo "== cuzk $name $*" >&2
  sample "$name"
  local t0=$(now)
  if [ -n "${VISIBLE:-}" ]; then
    CUDA_VISIBLE_DEVICES="$VISIBLE" "$bin" prove-dir "$spool/inbox" --once --settle-secs 0 "$@" > "$out/logs/$name.log" 2>&1
  else
    "$bin" prove-dir "$spool/inbox" --once --settle-secs 0 "$@" > "$out/logs/$name.log" 2>&1
  fi
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
  VISIBLE=0 run_cuzk 8mib "$c1_8m"/*.json --
fi
if want reference; then
echo "== (a) reference" >&2
sample reference
# bellperson spreads each multiexp over every visible GPU: show it one, like cuzk's gpu-0.
t0=$(now); CUDA_VISIBLE_DEVICES=0 "$bin" reference "${files[@]}" > "$out/logs/reference.tsv" 2> "$out/logs/reference.log"; rc=$?; t1=$(now)
stop_sample
echo "reference rc=$rc wall_s=$(awk "BEGIN{printf \"%.2f\", $t1 - $t0}") proofs=$n" >> "$out/logs/times.txt"
fi

want cuda && run_cuzk cuda "${files[@]}" -- --backend cuda --gpus 0
want supraseal && VISIBLE=0 run_cuzk supraseal "${files[@]}" -- --backend supraseal
want ecgpu && run_cuzk ecgpu "${files[@]}" -- --backend ec-gpu --gpus 0
if want split; then
  # SupraSeal on GPU 0 with --prover-cpus K for each K in SPLIT_CPUS (0: no split).
  for k in ${SPLIT_CPUS:-4 8 0}; do VISIBLE=0 run_cuzk "split$k" "${files[@]}" -- --backend supraseal --prover-cpus "$k"; done
fi
want supraseal-full && VISIBLE=0 run_cuzk supraseal-full "${files[@]}" -- --backend supraseal --synthesis full
if [ "$gpus" -ge 2 ]; then
  want supraseal-all && run_cuzk supraseal-all "${files[@]}" -- --backend supraseal
  want ecgpu-all && run_cuzk ecgpu-all "${files[@]}" -- --backend ec-gpu --gpus all
  want cuda-all && run_cuzk cuda-all "${files[@]}" -- --backend cuda --gpus all
fi
want default && VISIBLE=0 run_cuzk default "${files[@]}" --
want overlap && run_cuzk overlap "${files[@]}" -- --backend ec-gpu --gpus 0 --provers-per-gpu 2
if [ "$gpus" -ge 2 ]; then
  want allgpus && run_cuzk allgpus "${files[@]}" --
  want allgpus-overlap && run_cuzk allgpus-overlap "${files[@]}" -- --backend ec-gpu --gpus all --provers-per-gpu 2
fi
if want sweep; then
  # SupraSeal on every GPU at each --synth-jobs in SWEEP_JOBS (default "1 2 4 8").
  for j in ${SWEEP_JOBS:-1 2 4 8}; do run_cuzk "synth$j" "${files[@]}" -- --synth-jobs "$j"; done
fi
want cpu && run_cuzk cpu "${files[@]:0:4}" -- --gpus none
echo "total_s $(( $(date +%s) - started ))" >> "$out/logs/times.txt"
cp "$out/logs/waterfall-cuda.txt" "$out/logs/waterfall-supraseal.txt" "$out/logs/waterfall-ecgpu.txt" "$out/" 2>/dev/null
python3 "$(dirname "$0")/gpu-summary.py" "$out/logs" > "$out/summary.md" 2> "$out/logs/summary.err"
tar -C "$out" -czf "$out/logs.tar.gz" logs && rm -rf "$out/logs"
cat "$out/summary.md"
