#!/bin/sh
# `make fuzz`: the fuzzers of test/fuzz for longer than the bounded runs of
# `make test`. usage: run_fuzz.sh <build-dir> [seconds per fuzzer]
# The corpora grow in <build-dir>/test/fuzz/work; a crashing input is saved
# there as <fuzzer>-crash-<sha1> (libFuzzer) or under generated-long/found
# (the generator). Turn each into a file of test/fuzz/regressions/<fuzzer>.
set -eu
BUILD=${1:-build}
SECONDS_EACH=${2:-600}
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
WORK="$BUILD/test/fuzz/work"
mkdir -p "$WORK"
# LLVM keeps its registries to the end (no leak reports); a small
# quarantine keeps the fuzzer's memory flat over thousands of Clang runs.
export ASAN_OPTIONS=detect_leaks=0:quarantine_size_mb=64
status=0
run() { # name binary
  mkdir -p "$WORK/$1.corpus"
  echo "== $1: $SECONDS_EACH s"
  "$2" -max_total_time="$SECONDS_EACH" -timeout=20 -rss_limit_mb=4096 \
    -print_final_stats=1 -dict="$HERE/$1.dict" \
    -artifact_prefix="$WORK/$1-" "$WORK/$1.corpus" "$HERE/corpus/$1" ||
    status=1
}
run core_parsers "$BUILD/test/fuzz/spmd_core_parsers_fuzzer"
if [ -x "$BUILD/test/fuzz/spmd_attribute_fuzzer" ]; then
  run attributes "$BUILD/test/fuzz/spmd_attribute_fuzzer"
fi
if [ -f "$BUILD/lib/spmd-check.so" ]; then
  # About 1.5 s per case on one core: as many cases as fit the time.
  CASES=$((SECONDS_EACH / 8 + 1))
  echo "== generated: $CASES cases per class, seed ${FUZZ_SEED:-$$}"
  python3 "$HERE/run_generated.py" --clang "${CLANGXX:-clang++-19}" \
    --plugin "$BUILD/lib/spmd-check.so" --source-dir "$SRC" \
    --work-dir "$WORK/generated-long" --seed "${FUZZ_SEED:-$$}" \
    --cases "$CASES" --timeout 120 --jobs "${JOBS:-2}" || status=1
fi
exit $status
