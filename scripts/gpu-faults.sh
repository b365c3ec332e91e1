#!/usr/bin/env bash
# The cuda backend's failure paths on a GPU machine, with faults injected where real ones
# cannot be had on demand (CUZK_TEST_GPU_FAULT, read by groth16.cu), on real 2KiB C1 files:
#
#   scripts/gpu-faults.sh BIN C1_DIR OUT_DIR
#
#   none       no fault: every file proved (and so verified)
#   split-oom  the bit split's tail finds no memory: plain Pippenger, every file proved
#   tail-oom   the tail's gathered bases find no memory: plain Pippenger, every file proved
#   matrices-oom  the pre-compiled constraints' upload finds no memory: tried once per
#              prover, the partitions evaluated on the host within the budget, every file
#              proved
#   sticky     the L multiexp writes through a null pointer (an illegal address: the context
#              is lost): the process survives, every prover stops at once, the run exits 2
#              with every file back in the inbox and none failed
#   hang       the L multiexp waits for a kernel that never ends: the call's deadline
#              (--call-deadline-secs 20) stops the prover, the run exits 2 with every file
#              back in the inbox and none failed, and the process ends (a 300 s timeout
#              says it did not: exit 124)
#
# CASES="none hang" runs only those.
# Generates the 2KiB parameters and records their constraints first. Prints one line per
# case and leaves each run's log and timeline in OUT_DIR/CASE/.
set -uo pipefail
bin="$(realpath "$1")"; c1="$(realpath "$2")"; out="$(realpath -m "$3")"
mkdir -p "$out"
export FIL_PROOFS_PARAMETER_CACHE="${FIL_PROOFS_PARAMETER_CACHE:-/tmp/cuzk-params}"
"$bin" params gen --sector-size 2KiB > "$out/params.log" 2>&1 || { echo "params gen failed"; exit 1; }
"$bin" params constraints --sector-size 2KiB >> "$out/params.log" 2>&1
files=("$c1"/*.json)
printf '%-12s %5s %7s %7s %6s %6s %11s %14s %9s %5s %8s %7s\n' case exit proved failed inbox faults device_lost prover_stopped fallbacks evals uploads seconds
for case in ${CASES:-none split-oom tail-oom matrices-oom sticky hang}; do
  spool="$(mktemp -d)"
  mkdir -p "$spool/inbox"
  cp "${files[@]}" "$spool/inbox/"
  fault="$case"; [ "$case" = none ] && fault=""
  extra=(); [ "$case" = hang ] && extra=(--call-deadline-secs 20)
  start=$(date +%s.%N)
  (cd "$spool" && CUZK_TEST_GPU_FAULT="$fault" timeout 300 "$bin" prove-dir inbox --once \
      --settle-secs 0 --backend cuda --require-gpu "${extra[@]}" > run.log 2>&1)
  code=$?
  secs=$(awk "BEGIN{print $(date +%s.%N) - $start}")
  proved=$(ls "$spool"/outbox/*.proof 2>/dev/null | wc -l)
  failed=$(ls "$spool"/failed/*.error.json 2>/dev/null | wc -l)
  inbox=$(ls "$spool"/inbox/*.json 2>/dev/null | wc -l)
  faults=$(grep -c ',DEVICE_FAULT,' "$spool/timeline.csv" 2>/dev/null)
  lost=$(grep -c "the GPU failed earlier\|illegal\|past the call's deadline" "$spool/timeline.csv" 2>/dev/null)
  stopped=$(grep -c ',PROVER_STOPPED,' "$spool/timeline.csv" 2>/dev/null)
  fallbacks=$(grep -c ',CPU_FALLBACK,' "$spool/timeline.csv" 2>/dev/null)
  evals=$(grep -c ',EVAL_END,' "$spool/timeline.csv" 2>/dev/null)
  uploads=$(grep -c 'not tried again on this GPU' "$spool/run.log" 2>/dev/null)
  printf '%-12s %5s %7s %7s %6s %6s %11s %14s %9s %5s %8s %7.1f\n' "$case" "$code" "$proved" \
    "$failed" "$inbox" "$faults" "$lost" "$stopped" "$fallbacks" "$evals" "$uploads" "$secs"
  mkdir -p "$out/$case"
  cp "$spool/run.log" "$spool/timeline.csv" "$out/$case/" 2>/dev/null
  rm -rf "$spool"
done
if [ -f "$out/none/timeline.csv" ]; then
  echo "== the run without a fault, as the waterfall sees it"
  "$bin" waterfall "$out/none/timeline.csv" 2>&1 | head -30
fi
