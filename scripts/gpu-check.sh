#!/usr/bin/env bash
# gpu-check.sh - the NCCL backend on a machine with one GPU and its own
# PyTorch (CUDA build), offline. Builds the runtime against that torch
# (-DSPMD_WITH_CUDA=ON), runs the GPU collective check (NCCL at world size 1,
# CUDA tensors, each collective's forward and backward against the CPU) and
# the example (tp_transformer_block, one rank) on the GPU against the same
# run on the CPU, and prints a short table. Meant to finish in well under 8
# minutes.
#
#   scripts/gpu-check.sh --prepare   # here (with the deps): copies the gloo
#                                    # headers into .gpu-check/ to carry along
#   scripts/gpu-check.sh             # there: build, run, table
#
# There: python3 must import a CUDA torch; cmake, ninja and a C++20 compiler
# (clang++-19 or g++; CXX overrides) must be present; no GoogleTest is needed.
# The gloo headers come from .gpu-check/include (made by --prepare), else the
# system's. Two NCCL ranks cannot share one GPU, so multi-rank NCCL is not
# checked here (docs/runtime.md).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CARRY=$ROOT/.gpu-check
BUILD=${SPMD_GPU_BUILD_DIR:-$ROOT/build-gpu}
PY=${PYTHON:-python3}

if [ "${1:-}" = "--prepare" ]; then
  mkdir -p "$CARRY/include"
  cp -r /usr/include/gloo "$CARRY/include/"
  echo "gpu-check: gloo headers copied to $CARRY/include; carry .gpu-check"
  exit 0
fi

start=$(date +%s)
rows=()
row() { rows+=("$(printf '%-40s %-6s %s' "$1" "$2" "$3")"); }
finish() {
  echo
  echo "== gpu-check ($(( $(date +%s) - start )) s)"
  printf '%s\n' "${rows[@]}"
  exit "$1"
}

torch_info=$("$PY" -c 'import torch; print(torch.__version__, torch.version.cuda, torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else "-")' 2>&1)
if [ $? -ne 0 ]; then
  row "torch (python3)" FAIL "$torch_info"
  finish 1
fi
read -r torch_version cuda_version cuda_ok gpu_name <<<"$torch_info"
row "torch" ok "$torch_version (CUDA $cuda_version) on $gpu_name"
if [ "$cuda_ok" != "True" ]; then
  row "CUDA device" FAIL "torch.cuda.is_available() is False"
  finish 1
fi

CXX=${CXX:-$(command -v clang++-19 || command -v g++ || command -v c++)}
CC=${CC:-$(command -v clang-19 || command -v gcc || command -v cc)}
gloo_args=()
[ -d "$CARRY/include/gloo" ] && gloo_args=(-DSPMD_GLOO_INCLUDE_DIR="$CARRY/include")
t0=$(date +%s)
mkdir -p "$BUILD"
if ! cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
     -DCMAKE_CXX_COMPILER="$CXX" -DCMAKE_C_COMPILER="$CC" \
     -DSPMD_PYTHON="$(command -v "$PY")" -DSPMD_WITH_CUDA=ON \
     -DSPMD_BUILD_PLUGIN=OFF -DSPMD_BUILD_TESTS=OFF \
     -DSPMD_BUILD_EXAMPLES=ON -DSPMD_BUILD_BENCH=OFF "${gloo_args[@]}" \
     > "$BUILD/configure.log" 2>&1; then
  tail -30 "$BUILD/configure.log"
  row "configure (SPMD_WITH_CUDA=ON)" FAIL "see $BUILD/configure.log"
  finish 1
fi
if ! cmake --build "$BUILD" --target spmd_gpu_collectives_check tp_transformer_block -j "$(nproc)" \
     > "$BUILD/build.log" 2>&1; then
  grep -E "error|Error" "$BUILD/build.log" | head -30
  row "build runtime + GPU check" FAIL "see $BUILD/build.log"
  finish 1
fi
row "build runtime, GPU check, example ($(basename "$CXX"))" ok "$(( $(date +%s) - t0 )) s"

t0=$(date +%s)
out=$(timeout 300 "$BUILD/bin/spmd_gpu_collectives_check" 2>&1)
rc=$?
echo "$out"
summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed' <<<"$out" | tail -1)
if [ $rc -eq 0 ]; then
  row "NCCL world size 1, CUDA vs CPU" ok "$summary ($(( $(date +%s) - t0 )) s)"
else
  row "NCCL world size 1, CUDA vs CPU" FAIL "exit $rc; ${summary:-no summary}"
fi

# The example on one rank: CPU (Gloo) and GPU (NCCL, CUDA tensors) runs of the
# same seed; the per-step losses must agree.
example() {  # backend device
  local port
  port=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
    SPMD_BACKEND=$1 SPMD_TIMEOUT_MS=60000 timeout 120 \
    "$BUILD/bin/tp_transformer_block" --tp 1 --steps 10 --device "$2"
}
t0=$(date +%s)
cpu_out=$(example gloo cpu 2>&1); cpu_rc=$?
gpu_out=$(example nccl cuda 2>&1); gpu_rc=$?
echo "$gpu_out"
losses() { awk '/^ +[0-9]+ +[0-9.]+ +[0-9.]+$/ {print $1, $2}' <<<"$1"; }
worst=$(paste -d' ' <(losses "$cpu_out") <(losses "$gpu_out") |
        awk 'NF == 4 && $1 == $3 {d = $2 - $4; if (d < 0) d = -d; if (d > m) m = d; n++}
             END {if (n == 10) printf "%.2e", m; else print "missing"}')
if [ $cpu_rc -ne 0 ] || [ $gpu_rc -ne 0 ]; then
  row "example, 1 GPU vs CPU" FAIL "exit cpu=$cpu_rc gpu=$gpu_rc"
  rc=1
elif [ "$worst" = missing ] || awk -v w="$worst" 'BEGIN {exit !(w > 1e-4)}'; then
  row "example, 1 GPU vs CPU" FAIL "10-step losses differ by $worst (> 1e-4)"
  rc=1
else
  row "example, 1 GPU vs CPU" ok "10-step losses agree (max diff $worst; $(( $(date +%s) - t0 )) s)"
fi
row "NCCL with 2+ ranks" "-" "not checked: two NCCL ranks cannot share one GPU"
[ $rc -eq 0 ] && finish 0
finish 1
