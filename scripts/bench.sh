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
# typed program against the same model hand-written on raw c10d
# (bench/gpt/raw_c10d.cpp), two interleaved rounds, best of each. The ratio
# is reported, never asserted; the last losses must agree (same math).
if [ -x "$BUILD/bin/gpt_train" ] && [ -x "$BUILD/bin/gpt_raw_c10d" ]; then
  echo "== GPT tokens/s: typed examples/gpt vs hand-written raw c10d (4 ranks)"
  gpt_args=(--tp 2 --steps "${GPT_BENCH_STEPS:-30}")
  best_typed=0; best_raw=0; loss_typed=""; loss_raw=""
  for round in 1 2; do
    typed=$(examples/tools/run_ranks.sh --launcher direct --nproc 4 -- \
              "$BUILD/bin/gpt_train" "${gpt_args[@]}" --no-reference --quiet 2>&1)
    raw=$(examples/tools/run_ranks.sh --launcher direct --nproc 4 -- \
            "$BUILD/bin/gpt_raw_c10d" "${gpt_args[@]}" 2>&1)
    t=$(sed -n 's/.*throughput: \([0-9]*\) tokens.*/\1/p' <<<"$typed")
    r=$(sed -n 's/.*throughput: \([0-9]*\) tokens.*/\1/p' <<<"$raw")
    loss_typed=$(sed -n 's/.*last loss \([0-9.]*\).*/\1/p' <<<"$typed")
    loss_raw=$(sed -n 's/.*last loss \([0-9.]*\).*/\1/p' <<<"$raw")
    echo "  round $round: typed ${t:-?} tokens/s, raw c10d ${r:-?} tokens/s"
    [ -n "$t" ] && [ "$t" -gt "$best_typed" ] && best_typed=$t
    [ -n "$r" ] && [ "$r" -gt "$best_raw" ] && best_raw=$r
  done
  echo "  last loss: typed $loss_typed, raw c10d $loss_raw"
  if [ "$best_typed" -gt 0 ]; then
    python3 -c "print(f'  best: typed $best_typed, raw $best_raw tokens/s; time ratio typed/raw (raw tokens/s over typed) = {$best_raw/$best_typed:.3f}')"
  fi
fi
