#!/usr/bin/env bash
# cuda-compile-check.sh - compiles and links the runtime with its NCCL backend
# (-DSPMD_WITH_CUDA=ON) against the CUDA build of torch 2.14.1. No GPU is
# needed and nothing is run: this keeps the NCCL path compiling on machines
# without one (scripts/gpu-check.sh runs it where a GPU is).
#
#   scripts/cuda-compile-check.sh
#
# The torch wheel lives in its own virtual environment (.venv-cuda, about
# 5.5 GB with the nvidia-* packages it pulls in; $SPMD_CUDA_VENV overrides),
# created on first use and reused after. The CUDA toolkit that torch's CMake
# package asks for (nvcc, CUDA headers) is the machine's /usr/local/cuda
# ($CUDA_HOME overrides), with libnvrtc from the nvidia wheels when the
# toolkit lacks it; NCCL's header comes from the nvidia-nccl wheel.
# Builds into build-cuda/ ($SPMD_CUDA_BUILD_DIR) at -O0 without debug info:
# the library, the GPU collective test and the launch smoke test, so the link
# of executables against libtorch_cuda is checked too.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=${SPMD_CUDA_VENV:-$ROOT/.venv-cuda}
BUILD=${SPMD_CUDA_BUILD_DIR:-$ROOT/build-cuda}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
TORCH_REQUIREMENT="torch==2.14.1"
start=$(date +%s)

if [ ! -x "$CUDA_HOME/bin/nvcc" ]; then
  echo "cuda-compile-check: no CUDA toolkit at $CUDA_HOME (nvcc missing);" \
       "set CUDA_HOME to a CUDA 13 toolkit" >&2
  exit 2
fi

stamp=$VENV/.spmd-requirements.txt
if [ -x "$VENV/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$TORCH_REQUIREMENT" ]; then
  echo "cuda-compile-check: $TORCH_REQUIREMENT present in $VENV"
else
  echo "cuda-compile-check: installing $TORCH_REQUIREMENT (CUDA build) into $VENV"
  [ -x "$VENV/bin/python" ] || "${PYTHON:-python3}" -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet "$TORCH_REQUIREMENT"
  echo "$TORCH_REQUIREMENT" > "$stamp"
fi
venv_s=$(( $(date +%s) - start ))

# The machine's toolkit may hold only the compiler and the runtime; libnvrtc,
# which torch's CMake package asks for, is then the nvidia wheel's.
nvrtc_args=()
if ! ls "$CUDA_HOME"/lib64/libnvrtc.so* >/dev/null 2>&1; then
  nvrtc=$(ls "$VENV"/lib/python3*/site-packages/nvidia/cu*/lib/libnvrtc.so.* 2>/dev/null | grep -v builtins | head -n1)
  [ -n "$nvrtc" ] && nvrtc_args=(-DCUDA_nvrtc_LIBRARY="$nvrtc" -DCUDA_NVRTC_LIB="$nvrtc")
fi

# CMAKE_BUILD_TYPE=CompileCheck has no flags of its own: -O0, no -g.
mkdir -p "$BUILD"
PATH="$CUDA_HOME/bin:$PATH" cmake -S "$ROOT" -B "$BUILD" -G Ninja \
  -DCMAKE_BUILD_TYPE=CompileCheck \
  -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 \
  -DSPMD_PYTHON="$VENV/bin/python" \
  -DSPMD_WITH_CUDA=ON -DCUDAToolkit_ROOT="$CUDA_HOME" \
  -DCUDA_TOOLKIT_ROOT_DIR="$CUDA_HOME" \
  -DSPMD_BUILD_PLUGIN=OFF -DSPMD_BUILD_EXAMPLES=OFF -DSPMD_BUILD_BENCH=OFF \
  "${nvrtc_args[@]}" > "$BUILD/configure.log" 2>&1 || {
  cat "$BUILD/configure.log" >&2
  echo "cuda-compile-check: FAIL (configure)" >&2
  exit 1
}
configure_s=$(( $(date +%s) - start - venv_s ))

targets=(spmd_runtime spmd_launch_smoke spmd_gpu_collectives_check)
cmake --build "$BUILD" --target "${targets[@]}" -j "${JOBS:-2}"
build_s=$(( $(date +%s) - start - venv_s - configure_s ))

# The NCCL backend really is in the library.
# (grep -c reads all of nm's output: grep -q would close the pipe early and
# pipefail would turn nm's SIGPIPE into a failure.)
if ! nm -DC "$BUILD/lib/libspmd_runtime.so" | grep -c "c10d::ProcessGroupNCCL" >/dev/null; then
  echo "cuda-compile-check: FAIL (libspmd_runtime.so does not reference ProcessGroupNCCL)" >&2
  exit 1
fi
echo "cuda-compile-check: PASS - NCCL backend compiles and links against" \
     "$("$VENV/bin/python" -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda)' 2>/dev/null)" \
     "(venv ${venv_s}s, configure ${configure_s}s, build ${build_s}s)"
