#!/usr/bin/env bash
# The test suite: makes sure the 2KiB test parameters exist, PoRep's, the two-partition
# 2KiB PoRep circuit's (tests/chaos.rs and tests/multi_partition.rs; they would otherwise
# generate them themselves on first use) and the SnapDeals update circuit's (generating them
# into the parameter cache on first use, about 3, 1.5 and 2 minutes on 2 cores), then runs
# every test.
set -euo pipefail
cd "$(dirname "$0")/.."
export FIL_PROOFS_PARAMETER_CACHE="${FIL_PROOFS_PARAMETER_CACHE:-/var/tmp/filecoin-proof-parameters}"
cargo build --tests --examples
cargo run --quiet -- params gen --sector-size 2KiB
CUZK_TEST_POREP_PARTITIONS=2048=2 cargo run --quiet -- params gen --sector-size 2KiB
cargo run --quiet -- params gen --sector-size 2KiB --update
cargo test "$@"
