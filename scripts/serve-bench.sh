#!/usr/bin/env bash
# The same real C1 files proved through `cuzk serve` by CLIENTS concurrent gRPC clients (one
# Prove call per sector, as Curio sends them: examples/serve_load.rs, which checks every proof
# with verify_seal) and through `prove-dir --once`, one after the other on this machine:
#
#   scripts/serve-bench.sh BIN LOAD_BIN C1_DIR OUT_DIR [CLIENTS]
#
# Each is a fresh process with a fresh spool, so each loads the parameters once. Prints
# seconds per proof for both (wall time / files, the parameter load included) and each
# request's latency, then both waterfalls' summaries; logs and timelines stay in OUT_DIR.
# Generates the 2KiB parameters and records their constraints first.
set -euo pipefail
bin="$(realpath "$1")"; load="$(realpath "$2")"; c1="$(realpath "$3")"; out="$(realpath -m "$4")"
clients="${5:-4}"
mkdir -p "$out"
export FIL_PROOFS_PARAMETER_CACHE="${FIL_PROOFS_PARAMETER_CACHE:-/tmp/cuzk-params}"
"$bin" params gen --sector-size 2KiB > "$out/params.log" 2>&1
"$bin" params constraints --sector-size 2KiB >> "$out/params.log" 2>&1
files=("$c1"/*.json)
n=${#files[@]}

# prove-dir --once over the files.
mkdir -p "$out/prove-dir/inbox"
cp "${files[@]}" "$out/prove-dir/inbox/"
start=$(date +%s.%N)
"$bin" prove-dir "$out/prove-dir/inbox" --once --settle-secs 0 --require-gpu 2> "$out/prove-dir.log"
end=$(date +%s.%N)
proved=$(ls "$out/prove-dir/outbox"/*.proof | wc -l)

# cuzk serve, the same files sent by the clients.
"$bin" serve "$out/serve" --listen 127.0.0.1:9820 --require-gpu 2> "$out/serve.log" &
server=$!
for _ in $(seq 600); do grep -q "serving cuzk.v1.ProvingEngine" "$out/serve.log" && break; sleep 0.1; done
"$load" 127.0.0.1:9820 "$c1" "$clients" > "$out/serve-load.md" 2> "$out/serve-load.log" || status=$?
kill -TERM "$server"; wait "$server" || true

echo "| path | files | proved and verified | wall s | s/proof |"
echo "|---|---|---|---|---|"
awk -v n="$n" -v p="$proved" -v s="$start" -v e="$end" \
  'BEGIN { printf "| prove-dir --once | %d | %d | %.2f | %.3f |\n", n, p, e - s, (e - s) / n }'
echo
cat "$out/serve-load.md"
echo
echo "== prove-dir's waterfall"; "$bin" waterfall "$out/prove-dir/timeline.csv" | tail -25
echo "== serve's waterfall"; "$bin" waterfall "$out/serve/timeline.csv" | tail -25
exit "${status:-0}"
