#!/usr/bin/env bash
# `make bench`: every benchmark, each reporting ratios measured in one run:
# collectives vs raw c10d (build/bin/bench_collectives), runtime checker on vs
# off (build/bin/bench_checker), plugin on vs off (bench/plugin/plugin_bench.py).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${SPMD_BUILD_DIR:-build}
shopt -s nullglob
for b in "$BUILD"/bin/bench_*; do
  echo "== $b"
  "$b"
done
if [ -e "$BUILD/lib/spmd-check.so" ]; then
  echo "== bench/plugin/plugin_bench.py"
  python3 bench/plugin/plugin_bench.py --build "$BUILD"
fi
