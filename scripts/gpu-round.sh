#!/usr/bin/env bash
# One round of GPU measurements on a machine held for a limited time: the checks first, then
# the multiexp tables, the real 2KiB sectors and the 32GiB cards, each step's results packed
# into OUT_DIR/results.tgz as soon as it ends, so a round cut short keeps what it finished.
# No Rust toolchain needed there.
#
#   scripts/gpu-round.sh BIN_DIR OUT_DIR
#
# BIN_DIR holds cuzk, backend_check and msm_bench (scripts/build-cuda.sh --bins --example
# backend_check --example msm_bench; stripped and gzipped as NAME.gz, or not). Steps, by
# environment:
#   CHECKS=1   backend_check at 2^LOG constraints (default 16) with every multiexp of 2^12
#              bases or more at wide windows and H's streamed bases in many small chunks
#              (CUZK_MULTIEXP=wide:from=12 CUZK_TEST_GPU_FAULT=small-chunks) and a batch's
#              ones summed by pattern however small its queries (small-batches): every cuda
#              proof, resident, streamed, in the shared pass and in batches, equals the
#              CPU's at r = s = 0. FAULTS adds faults (e.g. one-window-groups: every wide
#              multiexp on the device takes its windows one group at a time, as at 2^27)
#   TABLE=0    msm_bench --gpu --streamed from 2^FROM to 2^TO (16, 27), ROUNDS (2), with
#              CUZK_WIDE_PHASES=1 (each wide multiexp's steps in the log); BEFORE_DIR, a
#              directory with another build's msm_bench, runs that one too, after
#   CEILING=0  msm_bench --gpu --ceiling --from TO --to TO (27) with CUZK_WIDE_PHASES=1: the
#              rates with every operand in registers and sppark's transforms at that size,
#              beside H's steps
#   SMALL=0    the real 2KiB sectors in C1_DIR (scripts/gpu-bench.sh, the cuda run), once
#              for each CUZK_MULTIEXP in ENGINES (default "default wide:from=20 sppark
#              default"; "default" leaves it unset), each a fresh process
#   REAL=0     a real 2KiB sector through backend_check (scripts/gpu-msm.sh real)
#   PROVE=     directories of real C1 files (e.g. a 512MiB sector's), each proved by
#              `cuzk prove-dir --once` for each --gpu-memory in PROVE_CARDS (default "2GiB
#              all"; "all" sets none), after `cuzk params gen` for SIZE (default 512MiB):
#              every proof written has passed verify_seal, and the waterfall says where
#              the time went
#   CARDS=     scripts/gpu-cards.sh for each card in turn (e.g. "16GiB 24GiB", "all"), SECTORS
#              (3) each; a card is skipped unless NEED seconds (120) are left of LIMIT (590)
# scripts/bench-summary.py OUT_DIR/cards prints the cards' runs as one table.
set -uo pipefail
bins="$(realpath "$1")"; out="$(realpath -m "$2")"
here="$(cd "$(dirname "$0")" && pwd)"
# The binaries outside OUT_DIR, which should hold only what comes back.
work="${WORK_DIR:-/tmp/cuzk-round}"
run="$work/bin"
mkdir -p "$run" "$out/results"
for name in cuzk backend_check msm_bench; do
  if [ -e "$bins/$name.gz" ]; then gunzip -c "$bins/$name.gz" > "$run/$name"; else cp "$bins/$name" "$run/"; fi
  chmod +x "$run/$name"
done
started=$SECONDS
pack() { tar czf "$out/results.tgz" -C "$out" results 2>/dev/null; }
left() { echo $(( ${LIMIT:-590} - (SECONDS - started) )); }

if [ "${CHECKS:-1}" = 1 ]; then
  CUZK_TEST_GPU_FAULT="small-chunks,small-batches${FAULTS:+,$FAULTS}" MULTIEXP=wide:from=12 LOG="${LOG:-16}" \
    "$here/gpu-msm.sh" "$run/cuzk" "$out/results/check" check
  pack
fi
if [ "${TABLE:-0}" = 1 ]; then
  tables=(after)
  [ -n "${BEFORE_DIR:-}" ] && tables+=(before)
  for which in "${tables[@]}"; do
    dir="$run"
    if [ "$which" = before ]; then
      dir="$work/before"; mkdir -p "$dir"
      if [ -e "$BEFORE_DIR/msm_bench.gz" ]; then gunzip -c "$BEFORE_DIR/msm_bench.gz" > "$dir/msm_bench"; else cp "$BEFORE_DIR/msm_bench" "$dir/"; fi
      chmod +x "$dir/msm_bench"
    fi
    CUZK_WIDE_PHASES=1 FROM="${FROM:-16}" TO="${TO:-27}" ROUNDS="${ROUNDS:-2}" \
      "$here/gpu-msm.sh" "$dir/cuzk" "$out/results/table-$which" table
    pack
  done
fi
if [ "${CEILING:-0}" = 1 ]; then
  mkdir -p "$out/results/ceiling"
  echo "== msm_bench --ceiling at 2^${TO:-27}"
  CUZK_WIDE_PHASES=1 timeout 170 "$run/msm_bench" --gpu --ceiling --from "${TO:-27}" \
    --to "${TO:-27}" --rounds "${ROUNDS:-2}" > "$out/results/ceiling/ceiling.txt" 2>&1
  grep -E "^\| (Fr|Fp|G1 bucket|sppark|2\^)|false|resident n=[0-9]{6}|rror" \
    "$out/results/ceiling/ceiling.txt" | cut -c1-200
  pack
fi
if [ "${SMALL:-0}" = 1 ]; then
  k=0
  for engine in ${ENGINES:-default wide:from=20 sppark default}; do
    k=$((k + 1))
    if [ "$engine" = default ]; then unset CUZK_MULTIEXP; else export CUZK_MULTIEXP="$engine"; fi
    echo "== 2KiB sectors, CUZK_MULTIEXP=${CUZK_MULTIEXP:-(default)}"
    GPU_BENCH_RUNS=cuda "$here/gpu-bench.sh" "$run/cuzk" "${C1_DIR:?C1_DIR: real 2KiB C1 files}" \
      "$out/results/small-$k-${engine//[:=]/-}" | tail -n 12
    unset CUZK_MULTIEXP
    pack
  done
fi
if [ "${REAL:-0}" = 1 ]; then
  "$here/gpu-msm.sh" "$run/cuzk" "$out/results/real" real
  pack
fi
if [ -n "${PROVE:-}" ]; then
  export FIL_PROOFS_PARAMETER_CACHE="${FIL_PROOFS_PARAMETER_CACHE:-/tmp/cuzk-params}"
  echo "== cuzk params gen --sector-size ${SIZE:-512MiB}"
  "$run/cuzk" params gen --sector-size "${SIZE:-512MiB}" > "$out/results/params-gen.log" 2>&1 ||
    tail -n 3 "$out/results/params-gen.log"
  k=0
  for dir in $PROVE; do
    for card in ${PROVE_CARDS:-2GiB all}; do
      k=$((k + 1))
      spool="$work/prove-$k"; logs="$out/results/prove-$k-$card"
      rm -rf "$spool"; mkdir -p "$spool/inbox" "$logs"
      cp "$dir"/*.json "$spool/inbox/"
      extra=(); [ "$card" = all ] || extra=(--gpu-memory "$card")
      echo "== prove-dir $dir, --gpu-memory $card"
      RUST_LOG="${RUST_LOG:-info}" timeout "${PROVE_TIMEOUT:-300}" "$run/cuzk" prove-dir \
        "$spool/inbox" --once --settle-secs 0 "${extra[@]}" > "$logs/prove-dir.log" 2>&1
      rc=$?
      proofs=$(find "$spool/outbox" -maxdepth 1 -name '*.proof' 2>/dev/null | wc -l)
      echo "exit $rc: $proofs proofs written, $(ls "$spool/failed" 2>/dev/null | wc -l) failed"
      "$run/cuzk" waterfall "$spool/timeline.csv" > "$logs/waterfall.txt" 2>&1
      grep -E "proved|^verdict" "$logs/waterfall.txt" | cut -c1-300
      pack
    done
  done
fi
for card in ${CARDS:-}; do
  if [ "$(left)" -lt "${NEED:-120}" ]; then
    echo "== --gpu-memory $card skipped: $(left) s left"
    continue
  fi
  BENCH_TIMEOUT=$(( $(left) - 20 )) SECTORS="${SECTORS:-3}" \
    "$here/gpu-cards.sh" "$run/cuzk" "$out/results/cards" "$card"
  pack
done
[ -d "$out/results/cards" ] && python3 "$here/bench-summary.py" "$out/results/cards"
pack
echo "== round done in $((SECONDS - started)) s"
