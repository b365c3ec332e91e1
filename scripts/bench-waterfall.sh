#!/usr/bin/env bash
# Times `cuzk waterfall` on a generated timeline of ROWS rows (default 100,000).
#
# Usage: scripts/bench-waterfall.sh [ROWS]
# Uses target/release/cuzk when it exists, else target/debug/cuzk; CUZK=PATH picks another.
# It builds nothing: run `cargo build` (or `cargo build --release`) first.
set -euo pipefail

rows=${1:-100000}
root=$(cd "$(dirname "$0")/.." && pwd)
cuzk=${CUZK:-}
if [[ -z $cuzk ]]; then
    for candidate in "$root/target/release/cuzk" "$root/target/debug/cuzk"; do
        if [[ -x $candidate ]]; then
            cuzk=$candidate
            break
        fi
    done
fi
if [[ -z $cuzk || ! -x $cuzk ]]; then
    echo "bench-waterfall: no cuzk binary; run cargo build first or set CUZK" >&2
    exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# A run of single-partition jobs: 4 synthesis workers (about 3 s a partition) feeding 2 GPUs
# (about 1 s a partition), 11 rows a job, written job by job so rows are out of time order.
python3 - "$rows" >"$work/timeline.csv" <<'PY'
import random, sys

rows_wanted = int(sys.argv[1])
random.seed(7)
out = sys.stdout
out.write("run_id,t_ms,wall_clock,event,job,partition,worker,detail\n")
written = 0

def row(t, event, job="", part="", worker="", detail=""):
    global written
    written += 1
    out.write(f"bench,{t * 1000:.1f},2025-01-01T00:00:00.000Z,{event},{job},{part},{worker},{detail}\n")

row(0, "RUN_START", detail="synth_jobs=4;queue_depth=2")
synth_free = [0.0] * 4
lane_free = [0.0] * 2
job = 0
while written + 12 <= rows_wanted:
    name = f"s-t01000-{job}"
    w = job % len(synth_free)
    claim = synth_free[w]
    synth_start = claim + 0.01
    synth_end = synth_start + random.uniform(2.5, 3.5)
    synth_free[w] = synth_end
    lane = min(range(len(lane_free)), key=lambda i: lane_free[i])
    gpu_start = max(synth_end, lane_free[lane])
    gpu_end = gpu_start + random.uniform(0.8, 1.2)
    lane_free[lane] = gpu_end
    ms = (gpu_end - gpu_start) * 1000
    row(claim, "CLAIM", name)
    row(claim, "PARSED", name, detail=f"sector={name};size=2KiB;partitions=1")
    row(synth_start, "SYNTH_START", name, 0, f"synth-{w}")
    row(synth_end, "SYNTH_END", name, 0, f"synth-{w}", "constraints=1000")
    row(synth_end, "CHAN_SEND", name, 0, f"synth-{w}")
    row(gpu_start, "GPU_PICKUP", name, 0, f"gpu-{lane}")
    row(gpu_start, "GPU_START", name, 0, f"gpu-{lane}")
    row(gpu_end, "GPU_END", name, 0, f"gpu-{lane}",
        f"fft_ms={ms * .25:.1f};msm_g1_ms={ms * .4:.1f};msm_g2_ms={ms * .15:.1f};cpu_ms={ms * .1:.1f}")
    row(gpu_end, "VERIFY_START", name)
    row(gpu_end + 0.05, "VERIFY_END", name, detail="valid=true")
    row(gpu_end + 0.06, "DONE", name, detail=f"/srv/outbox/{name}.proof")
    job += 1
end = max(lane_free) + 0.06
row(end, "RUN_END", detail=f"proved={job};failed=0")
PY

lines=$(($(wc -l <"$work/timeline.csv") - 1))
echo "binary:   $cuzk"
echo "timeline: $lines rows"
echo
printf '%-32s %9s %12s\n' "command" "seconds" "output"
bench() {
    local label=$1
    shift
    local start end
    start=$(date +%s%N)
    "$cuzk" waterfall "$work/timeline.csv" "$@" >"$work/out" 2>"$work/err" || {
        echo "bench-waterfall: '$label' failed:" >&2
        cat "$work/err" >&2
        exit 1
    }
    end=$(date +%s%N)
    local bytes
    bytes=$(wc -c <"$work/out")
    if [[ -f $work/out.svg ]]; then
        bytes=$(wc -c <"$work/out.svg")
        rm -f "$work/out.svg"
    fi
    printf '%-32s %9.3f %10s B\n' "$label" "$(echo "($end - $start) / 1000000000" | bc -l)" "$bytes"
}
bench "waterfall" --width 100
bench "waterfall --partitions" --partitions --width 100
bench "waterfall --json" --json
bench "waterfall --svg" --svg "$work/out.svg"
