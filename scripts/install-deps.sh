#!/usr/bin/env bash
# Installs every system dependency of spmd-check from Debian packages.
# Idempotent: when everything is present it only runs `dpkg-query` and exits;
# `apt-get update` runs only when a package is missing.
set -euo pipefail

PACKAGES=(
  # build tools
  cmake ninja-build make g++ git
  # Clang/LLVM 19: the plugin, spmd-check and spmd-clangd are built against these
  clang-19 libclang-19-dev llvm-19-dev clangd-19 libclang-rt-19-dev
  # runtime: libtorch + c10d (Gloo headers are needed by ProcessGroupGloo.hpp)
  libtorch-dev libgloo-dev
  # torchrun (the launcher users already know) for multi-process runs
  python3-torch
  # tests and benchmarks
  googletest libgtest-dev libgmock-dev libbenchmark-dev
  # the conformance test's driver reads JSON (test/conformance)
  nlohmann-json3-dev
  # formatting
  clang-format
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
