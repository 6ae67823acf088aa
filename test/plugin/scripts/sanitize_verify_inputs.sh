#!/bin/sh
# Runs a sanitizer-instrumented spmd-check (preset asan-all) over every
# -verify input of test/plugin and the engine corpus, with and without
# --strict. Diagnostics are expected (exit status 1); a sanitizer report, a
# crash or any other exit status fails the run.
#   sanitize_verify_inputs.sh <spmd-check> <source-dir>
set -u
tool=$1
src=$2
inc="-I$src/annotations/include -I$src/runtime/include -I$src/test/plugin/Inputs/mini-torch"
runs=0
failed=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for f in "$src"/test/plugin/*.cpp "$src"/test/plugin/corpus/*.cpp; do
  std=-std=c++17
  grep -q 'std=c++23' "$f" && std=-std=c++23
  for mode in "" --strict; do
    runs=$((runs + 1))
    "$tool" $mode "$f" -- $std $inc >"$log" 2>&1
    rc=$?
    if [ $rc -gt 1 ] || grep -q 'Sanitizer\|runtime error:' "$log"; then
      failed=$((failed + 1))
      echo "FAILED (exit $rc): $tool $mode $f -- $std"
      grep -A40 'Sanitizer\|runtime error:' "$log" | head -60
    fi
  done
done
echo "sanitize_verify_inputs: $runs runs, $failed failed"
[ $failed -eq 0 ]
