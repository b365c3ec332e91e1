#!/usr/bin/env bash
# Synthesis, path against path: full synthesis, the witness-only pass over pre-compiled
# constraints evaluated on the host with the witness from the circuit's gadgets
# (`precompiled`) and computed natively (`native`), and both with the evaluation deferred to
# the cuda backend's GPU (`deferred`, `native-deferred`); per sector size, each in a process
# of its own (peak memory). The circuit pass column is the witness: gadget against native.
#
#   scripts/bench-synthesis.sh [SIZES] [PARTITIONS]     # default "2KiB 512MiB", 3
#   UPDATE=1 scripts/bench-synthesis.sh ...             # SnapDeals update partitions
#
# Writes each size's shape parameters into a scratch benchmark directory (`cuzk bench
# --prepare-only`: the recorded constraints are keyed by their verifying key) and records its
# constraints there (`cuzk params constraints`), then prints a markdown table: wall and CPU
# seconds per partition, peak memory.
set -euo pipefail
cd "$(dirname "$0")/.."
sizes="${1:-2KiB 512MiB}"
partitions="${2:-3}"
bench_dir="${BENCH_DIR:-/var/tmp/cuzk-bench-synthesis}"
export FIL_PROOFS_PARAMETER_CACHE="$bench_dir/params"
# The dev profile is optimized (opt-level 3) in this crate and its dependencies.
cargo build --quiet --bin cuzk --example synthesis_bench
bin="${CARGO_TARGET_DIR:-target}/debug"
echo "| size | path | wall s/partition | CPU s/partition | circuit pass wall / CPU s | evaluation wall / CPU s | partition holds | peak memory |"
echo "|---|---|---|---|---|---|---|---|"
update=()
[ -z "${UPDATE:-}" ] || update=(--update)
for size in $sizes; do
  "$bin/cuzk" bench --sector-size "$size" --dir "$bench_dir" --sectors 1 --prepare-only "${update[@]}" >&2
  "$bin/cuzk" params constraints --sector-size "$size" "${update[@]}" >&2
  for path in full precompiled native deferred native-deferred; do
    "$bin/examples/synthesis_bench" --sector-size "$size" --path "$path" \
      --partitions "$partitions" --threads "$(nproc)" "${update[@]}"
  done
done
