#!/usr/bin/env bash
# The cards storage providers own, side by side on one GPU machine: `cuzk bench --sector-size
# 32GiB --sectors N` once per card size, one run after the other on one bench directory (its
# parameters and recorded constraints made once, before the first card, and reused).
#
#   scripts/gpu-cards.sh BIN OUT_DIR [CARD...]    # CARD: a --gpu-memory value, "all" or "fresh"
#
# "fresh" is a run at defaults as on a machine that has not recorded the circuit's constraints:
# recorded constraints left in the bench directory are removed first, and the run records them.
# Before any other card, the shape parameters are written and the constraints recorded ahead
# (`cuzk params constraints`) where the bench directory lacks them, so that no card's run
# counts the recording.
# Default cards: all 48GiB 32GiB 24GiB 16GiB. SECTORS (default 3), BENCH_DIR and BENCH_TIMEOUT
# as scripts/gpu-production.sh takes them. Each card's log, timeline and waterfall go to
# OUT_DIR/gm-CARD/; the lines that matter are printed as they come, with the most device
# memory nvidia-smi saw in use. scripts/bench-summary.py OUT_DIR prints them as one table.
set -uo pipefail
bin="$(realpath "$1")"; out="$(realpath -m "$2")"; shift 2
mkdir -p "$out"
cards=("$@")
[ ${#cards[@]} -gt 0 ] || cards=(all 48GiB 32GiB 24GiB 16GiB)
here="$(dirname "$0")"
bench="${BENCH_DIR:-/tmp/cuzk-bench}"
record_ahead() {
  ls "$bench"/params/cuzk-r1cs-*.r1cs >/dev/null 2>&1 && return
  local started=$SECONDS
  { "$bin" bench --sector-size 32GiB --dir "$bench" --sectors 1 --prepare-only &&
    "$bin" params constraints --params "$bench/params" --sector-size 32GiB; } > "$out/prepare.log" 2>&1
  echo "== parameters and constraints ready in $((SECONDS - started)) s (exit $?)"
}
for card in "${cards[@]}"; do
  extra=""
  case "$card" in
    all) record_ahead ;;
    fresh) rm -f "$bench"/params/cuzk-r1cs-*.r1cs ;;
    *) record_ahead; extra="--gpu-memory $card" ;;
  esac
  EXTRA_ARGS="$extra" STEPS="bench:32GiB:${SECTORS:-3}" \
    "$here/gpu-production.sh" "$bin" "$out/gm-$card" > "$out/gm-$card.stderr" 2>&1
  echo "== --gpu-memory $card"
  grep -E "^(wall time|per partition|peak memory)" "$out/gm-$card/bench-32GiB.log"
  grep -E "^verdict|^  cuda-0|kernels by step" "$out/gm-$card/waterfall-bench-32GiB.txt" | cut -c1-300
  # The most device memory in use while it ran (nvidia-smi, MiB), against the card size.
  sort -t, -k4 -n "$out/gm-$card/smi-bench-32GiB.csv" 2>/dev/null | tail -n 1 |
    awk -F, '{printf "peak GPU memory            %.1f GiB\n", $4 / 1024}'
done
