#!/usr/bin/env bash
# Compiles every plugin -verify input (test/plugin/*.cpp) and every corpus
# translation unit (test/plugin/corpus*/*.cpp) through the plugin in the four
# modes (local, strict, global, strict global) and writes each compile's
# diagnostics to OUT/<mode>/<file>.txt, so that two plugins can be compared
# byte for byte:  diag_modes.sh build/lib/spmd-check.so /tmp/before
#                 diag_modes.sh build/lib/spmd-check.so /tmp/after
#                 diff -r /tmp/before /tmp/after
# No -verify: the raw diagnostics are what is compared.
set -uo pipefail
cd "$(dirname "$0")/.."
PLUGIN=${1:?plugin .so}
OUT=${2:?output directory}
JOBS=${JOBS:-2}
CXX=${CXX:-clang++-19}
mkdir -p "$OUT"
INC="-Iannotations/include -Iruntime/include -Icore/include -Itest/plugin -Itest/plugin/Inputs/mini-torch"
export PLUGIN OUT CXX INC
one() {
  local mode=$1 src=$2 flags=
  case $mode in
    strict) flags="-fplugin-arg-spmd-check-strict" ;;
    global) flags="-fplugin-arg-spmd-check-global" ;;
    strict-global) flags="-fplugin-arg-spmd-check-strict -fplugin-arg-spmd-check-global" ;;
  esac
  local dst="$OUT/$mode/${src//\//_}.txt"
  mkdir -p "$OUT/$mode"
  # shellcheck disable=SC2086
  "$CXX" -std=c++17 -fsyntax-only -fno-color-diagnostics -ferror-limit=0 \
    -fplugin="$PLUGIN" $flags $INC -I"$(dirname "$src")" "$src" >"$dst" 2>&1
  echo "rc=$?" >>"$dst"
}
export -f one
for m in local strict global strict-global; do
  for f in test/plugin/*.cpp test/plugin/corpus*/*.cpp; do echo "$m $f"; done
done | xargs -P "$JOBS" -n 2 bash -c 'one "$0" "$1"'
find "$OUT" -name '*.txt' | wc -l
