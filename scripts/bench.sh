#!/usr/bin/env bash
# `make bench`: every benchmark, each reporting ratios measured in one run:
# collectives vs raw c10d (build/bin/bench_collectives), runtime checker on vs
# off (build/bin/bench_checker), plugin on vs off (bench/plugin/plugin_bench.py),
# runtime checker vs the reference spmd_types (test/conformance/conformance.py).
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
# The runtime checker against the reference spmd_types on the same random
# programs (test/conformance): agreement and the per-step cost of each.
VENV_PY=${SPMD_VENV:-.venv}/bin/python
if [ -x "$BUILD/bin/conformance_driver" ] && [ -x "$VENV_PY" ]; then
  echo "== test/conformance/conformance.py --time (reference vs ours)"
  "$VENV_PY" test/conformance/conformance.py run \
    --driver "$BUILD/bin/conformance_driver" --seed 2 --count 2000 --time 3 \
    --work "$BUILD/conformance-bench"
fi
# The GPT of examples/gpt on 4 ranks (dp=2 x tp=2, Gloo): tokens/s of the
# typed program (consistency check on and off) against the same model
# hand-written on raw c10d (bench/gpt/raw_c10d.cpp), interleaved over
# GPT_BENCH_ROUNDS rounds (default 5), median and best of each, time ratios
# of the medians and of the bests. Reported, never asserted; the last losses
# must agree (same math).
if [ -x "$BUILD/bin/gpt_train" ] && [ -x "$BUILD/bin/gpt_raw_c10d" ]; then
  echo "== GPT tokens/s: typed examples/gpt vs hand-written raw c10d (4 ranks)"
  python3 bench/gpt/compare.py --build "$BUILD"
fi
