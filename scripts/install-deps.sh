#!/usr/bin/env bash
# Installs every dependency of spmd-check: Debian packages, then the Python
# packages of scripts/requirements.txt (torch: libtorch and torchrun) in the
# project's virtual environment <repo>/.venv ($SPMD_VENV overrides the path;
# the system Python is never changed).
# Idempotent: when everything is present it only runs `dpkg-query`, compares
# requirements.txt with the copy the last install left in the environment,
# and exits; `apt-get update` runs only when a package is missing, pip only
# when the requirements changed or the environment is missing.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=${SPMD_VENV:-$ROOT/.venv}
REQUIREMENTS=$ROOT/scripts/requirements.txt

PACKAGES=(
  # build tools
  cmake ninja-build make g++ git
  # Clang/LLVM 19: the plugin, spmd-check and spmd-clangd are built against these
  clang-19 libclang-19-dev llvm-19-dev clangd-19 libclang-rt-19-dev
  # runtime: c10d's ProcessGroupGloo.hpp includes gloo headers, which the
  # torch wheel does not ship (libtorch itself comes from the venv below)
  libgloo-dev
  # the virtual environment that holds torch (and torchrun)
  python3 python3-venv
  # tests and benchmarks
  googletest libgtest-dev libgmock-dev libbenchmark-dev
  # the conformance test's driver reads JSON (test/conformance)
  nlohmann-json3-dev
  # formatting
  clang-format
  # a real LSP client for the editor test (tools.spmd_clangd.neovim)
  neovim
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -ne 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The Python environment. The stamp is the requirements file it was made
# from; pip's own configuration (find-links, constraints) applies as usual.
stamp=$VENV/.spmd-requirements.txt
if [ -x "$VENV/bin/python" ] && cmp -s "$REQUIREMENTS" "$stamp"; then
  exit 0
fi
echo "install-deps: installing scripts/requirements.txt into $VENV"
if [ ! -x "$VENV/bin/python" ]; then
  "${PYTHON:-python3}" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet -r "$REQUIREMENTS"
cp "$REQUIREMENTS" "$stamp"
