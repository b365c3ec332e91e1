#!/usr/bin/env bash
# A mixed workload on one GPU: PoRep sectors and SnapDeals updates interleaved in one inbox,
# proved by the cuda backend, counting how often each parameter set went up to the GPU
# (PARAMS_START rows of the cuda-N lanes). Run on the GPU machine with a CUDA build.
#
#   scripts/gpu-sets.sh BIN OUT_DIR [EXTRA_ARGS...]
#
# Uses the real 2KiB fixtures (tests/fixtures/c1, tests/fixtures/update), generates their
# parameters if missing and records their constraints. Every proof written has passed
# verify_seal / verify_empty_sector_update_proof. Prints one line per lane and set.
set -uo pipefail
bin="$(realpath "$1")"; out="$(realpath -m "$2")"; shift 2
here="$(cd "$(dirname "$0")/.." && pwd)"
export FIL_PROOFS_PARAMETER_CACHE="${FIL_PROOFS_PARAMETER_CACHE:-/tmp/cuzk-params}"
mkdir -p "$out"
"$bin" params gen --sector-size 2KiB > "$out/params.log" 2>&1
"$bin" params gen --sector-size 2KiB --update >> "$out/params.log" 2>&1
"$bin" params constraints --sector-size 2KiB >> "$out/params.log" 2>&1
"$bin" params constraints --sector-size 2KiB --update >> "$out/params.log" 2>&1
spool="$(mktemp -d)"; mkdir -p "$spool/inbox"
# Interleaved by time: PoRep, update, PoRep, update, PoRep.
t=$(( $(date +%s) - 600 ))
for f in c1/s-t01000-1.json update/s-t01000-11.json c1/s-t01000-2.json update/s-t02000-12.json c1/s-t02000-7.json; do
  cp "$here/tests/fixtures/$f" "$spool/inbox/"
  touch -d "@$t" "$spool/inbox/$(basename "$f")"
  t=$(( t + 1 ))
done
start=$(date +%s.%N)
"$bin" prove-dir "$spool/inbox" --once --settle-secs 0 "$@" > "$out/mixed.log" 2>&1
echo "mixed rc=$? wall_s=$(awk "BEGIN{printf \"%.2f\", $(date +%s.%N) - $start}") proofs=$(ls "$spool/outbox"/*.proof 2>/dev/null | wc -l) failed=$(ls "$spool/failed"/*.error.json 2>/dev/null | wc -l)"
cp "$spool/timeline.csv" "$out/timeline-mixed.csv"
"$bin" waterfall --width 120 "$spool/timeline.csv" > "$out/waterfall-mixed.txt" 2>&1
# Uploads to each GPU lane, per parameter file, and the order jobs were claimed in.
awk -F, '$4 == "PARAMS_START" && $7 ~ /^cuda-/ {n = split($8, p, "/"); print $7, p[n]}' \
  "$spool/timeline.csv" | sort | uniq -c | sed 's/^/uploads: /'
echo "claimed in order: $(awk -F, '$4 == "CLAIM" {printf "%s ", $5}' "$spool/timeline.csv")"
