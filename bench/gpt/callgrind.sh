#!/usr/bin/env bash
# Instructions of the training steps on rank 0 of the 4-rank GPT run (dp=2 x
# tp=2, Gloo), counted by callgrind: the typed program (examples/gpt,
# gpt::Trainer::train_step) with the consistency check off and on, and the
# hand-written raw c10d one (bench/gpt/raw_c10d.cpp, Model::step). Ranks 1-3
# run natively; rank 0 runs under valgrind with collection only inside the
# step function. Wall time says nothing here; the instruction counts are the
# machine-independent measure of the typed layer's CPU overhead.
#
#   bench/gpt/callgrind.sh [--build build] [--steps 6] [--out DIR] [raw|off|on ...]
#
# Writes DIR/callgrind.<variant>.out and prints the total of each; annotate
# with callgrind_annotate --inclusive=yes DIR/callgrind.<variant>.out.
# valgrind 3.19 does not read clang's DWARF 5: the binaries and
# libspmd_runtime.so are copied and stripped of debug info first (symbols
# stay).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=$ROOT/build
STEPS=6
OUT=$(mktemp -d)
variants=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build) BUILD=$(cd "$2" && pwd); shift 2 ;;
    --steps) STEPS="$2"; shift 2 ;;
    --out) OUT="$2"; mkdir -p "$OUT"; shift 2 ;;
    raw|off|on) variants+=("$1"); shift ;;
    *) echo "callgrind.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[ ${#variants[@]} -gt 0 ] || variants=(raw off on)
mkdir -p "$OUT/lib"
for b in gpt_train gpt_raw_c10d; do
  cp "$BUILD/bin/$b" "$OUT/$b"
  strip --strip-debug "$OUT/$b"
done
cp "$BUILD/lib/libspmd_runtime.so" "$OUT/lib/"
strip --strip-debug "$OUT/lib/libspmd_runtime.so"
# The binaries' RUNPATH yields to LD_LIBRARY_PATH: the stripped copy is used.
export LD_LIBRARY_PATH="$OUT/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3

run_variant() {
  local v=$1 prog toggle check=1
  case "$v" in
    raw) prog=("$OUT/gpt_raw_c10d" --tp 2 --steps "$STEPS")
         toggle='*Model::step*' ;;
    off|on) prog=("$OUT/gpt_train" --tp 2 --steps "$STEPS" --no-reference --quiet)
            toggle='gpt::Trainer::train_step*'
            [ "$v" = off ] && check=0 ;;
  esac
  local port
  port=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  local pids=()
  for r in 0 1 2 3; do
    local pre=()
    [ "$r" = 0 ] && pre=(valgrind --tool=callgrind --toggle-collect="$toggle"
                         --callgrind-out-file="$OUT/callgrind.$v.out")
    RANK=$r WORLD_SIZE=4 LOCAL_RANK=$r LOCAL_WORLD_SIZE=4 MASTER_ADDR=127.0.0.1 \
      MASTER_PORT=$port OMP_NUM_THREADS=1 SPMD_TIMEOUT_MS=900000 \
      SPMD_CHECK_COLLECTIVES=$check \
      "${pre[@]}" "${prog[@]}" >"$OUT/$v.$r.log" 2>&1 &
    pids+=($!)
  done
  local rc=0
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  if [ $rc -ne 0 ]; then
    echo "callgrind.sh: $v failed; logs in $OUT" >&2
    tail -5 "$OUT/$v.0.log" >&2
    return 1
  fi
  local total
  total=$(callgrind_annotate "$OUT/callgrind.$v.out" 2>/dev/null |
          awk '/PROGRAM TOTALS/ && !n++ {print $1}')
  printf '%-4s %s instructions (rank 0, %s steps, the first included)\n' \
    "$v" "$total" "$STEPS"
}
for v in "${variants[@]}"; do run_variant "$v"; done
echo "profiles in $OUT"
