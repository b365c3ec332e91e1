#!/usr/bin/env bash
# Benchmark: s/proof of `cuzk prove-dir` against filecoin-proofs' seal_commit_phase2 (one
# file at a time, as lotus-bench proves), on the same 2KiB C1 files and the same
# parameters. Prints a table; this is a measurement, not a test.
#
#   scripts/bench-c2.sh [N]        N distinct 2KiB C1 files (default 4)
#   PROFILE=release scripts/bench-c2.sh 8
set -euo pipefail
cd "$(dirname "$0")/.."
n="${1:-4}"
profile="${PROFILE:-dev}"
export FIL_PROOFS_PARAMETER_CACHE="${FIL_PROOFS_PARAMETER_CACHE:-/var/tmp/filecoin-proof-parameters}"
flag=""; dir=debug
if [ "$profile" = release ]; then flag=--release; dir=release; fi
cargo build $flag --bin cuzk --example make_c1 >&2
target="${CARGO_TARGET_DIR:-target}/$dir"
"$target/cuzk" params gen --sector-size 2KiB >&2

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/c1" "$work/spool/inbox"
"$target/examples/make_c1" --sector-size 2KiB --miner-id 1000 --first-sector 100 --count "$n" \
  --rng-seed 42 --out "$work/c1" >&2

echo "== filecoin-proofs seal_commit_phase2, one file at a time" >&2
ref_start=$(date +%s.%N)
"$target/cuzk" reference "$work"/c1/*.json | tee "$work/reference.tsv" >&2
ref_end=$(date +%s.%N)

echo "== cuzk prove-dir --once" >&2
cp "$work"/c1/*.json "$work/spool/inbox/"
cuzk_start=$(date +%s.%N)
"$target/cuzk" prove-dir "$work/spool/inbox" --once --settle-secs 0 >&2
cuzk_end=$(date +%s.%N)
"$target/cuzk" waterfall "$work/spool/timeline.csv" >&2 || true
"$target/cuzk" waterfall --json "$work/spool/timeline.csv" > "$work/metrics.json" 2>/dev/null || true

python3 - "$n" "$ref_start" "$ref_end" "$cuzk_start" "$cuzk_end" "$work" "$profile" <<'PY'
import csv, json, sys, os, platform
n, rs, re_, cs, ce, work, profile = int(sys.argv[1]), *map(float, sys.argv[2:6]), sys.argv[6], sys.argv[7]
ref_wall, cuzk_wall = re_ - rs, ce - cs
ref_mean = float([l.split("\t")[1] for l in open(os.path.join(work, "reference.tsv")) if l.startswith("mean")][0])
# Synthesis and proving time per partition, read from the timeline.
starts, synth, prove = {}, [], []
for row in csv.DictReader(open(os.path.join(work, "spool", "timeline.csv"))):
    key = (row["job"], row["partition"])
    if row["event"] in ("SYNTH_START", "GPU_START"):
        starts[(row["event"], key)] = float(row["t_ms"])
    elif row["event"] == "SYNTH_END":
        synth.append(float(row["t_ms"]) - starts[("SYNTH_START", key)])
    elif row["event"] == "GPU_END":
        prove.append(float(row["t_ms"]) - starts[("GPU_START", key)])
avg = lambda xs: sum(xs) / len(xs) / 1e3 if xs else float("nan")
cpu = os.cpu_count()
print(f"machine: {platform.machine()}, {cpu} cores, profile {profile}, {n} distinct 2KiB C1 files")
print(f"| prover | wall s | s/proof | synthesis s/partition | prove s/partition |")
print(f"|---|---|---|---|---|")
print(f"| filecoin-proofs seal_commit_phase2 (one at a time) | {ref_wall:.1f} | {ref_mean:.2f} | - | - |")
print(f"| cuzk prove-dir --once | {cuzk_wall:.1f} | {cuzk_wall / n:.2f} | {avg(synth):.2f} | {avg(prove):.2f} |")
print(f"speedup (s/proof): {ref_mean / (cuzk_wall / n):.2f}x")
PY
