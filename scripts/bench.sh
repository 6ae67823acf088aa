#!/usr/bin/env bash
# `make bench`: runs every benchmark under build/bin/bench_*.
set -euo pipefail
cd "$(dirname "$0")/.."
shopt -s nullglob
benches=(build/bin/bench_*)
if [ ${#benches[@]} -eq 0 ]; then echo "no benchmarks built yet"; exit 0; fi
for b in "${benches[@]}"; do echo "== $b"; "$b"; done
