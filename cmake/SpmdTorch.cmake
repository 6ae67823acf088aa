# SpmdTorch.cmake - finds libtorch for the runtime.
#
# The default is the libtorch inside the torch wheel of the project's virtual
# environment (<source>/.venv or $SPMD_VENV at the first configure, made by
# scripts/install-deps.sh): its CMake
# package lies at torch.utils.cmake_prefix_path. Set Torch_DIR (or
# CMAKE_PREFIX_PATH) to use another libtorch, or SPMD_PYTHON to take torch
# from another Python (e.g. a CUDA build in .venv-cuda).
#
# Sets: Torch_FOUND, TORCH_LIBRARIES, TORCH_INSTALL_PREFIX (find_package),
# SPMD_TORCH_VERSION ("2.13.0"), SPMD_TORCH_BIN_DIR (the Python environment's
# bin/, where torchrun lives; empty when libtorch does not come from Python).

include_guard(GLOBAL)

if(DEFINED ENV{SPMD_VENV})
  set(_spmd_venv "$ENV{SPMD_VENV}")
else()
  set(_spmd_venv "${PROJECT_SOURCE_DIR}/.venv")
endif()
set(SPMD_PYTHON "${_spmd_venv}/bin/python" CACHE FILEPATH
    "Python whose torch package provides libtorch (ignored when Torch_DIR is set)")

set(SPMD_TORCH_BIN_DIR "")
if(NOT Torch_DIR)
  if(NOT EXISTS "${SPMD_PYTHON}")
    message(FATAL_ERROR "libtorch: ${SPMD_PYTHON} does not exist. Run "
      "scripts/install-deps.sh (it creates ${PROJECT_SOURCE_DIR}/.venv with "
      "torch), or pass -DSPMD_PYTHON=<python with torch> or "
      "-DTorch_DIR=<libtorch>/share/cmake/Torch.")
  endif()
  execute_process(
    COMMAND "${SPMD_PYTHON}" -c
            "import torch.utils; print(torch.utils.cmake_prefix_path)"
    OUTPUT_VARIABLE _spmd_torch_prefix ERROR_VARIABLE _spmd_torch_err
    RESULT_VARIABLE _spmd_torch_rc OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT _spmd_torch_rc EQUAL 0)
    message(FATAL_ERROR "libtorch: '${SPMD_PYTHON}' cannot import torch "
      "(${_spmd_torch_err}). Run scripts/install-deps.sh, or pass "
      "-DTorch_DIR=<libtorch>/share/cmake/Torch.")
  endif()
  set(Torch_DIR "${_spmd_torch_prefix}/Torch" CACHE PATH "libtorch's CMake package" FORCE)
  set(SPMD_TORCH_DIR_OF_PYTHON "${Torch_DIR}" CACHE INTERNAL "Torch_DIR found through SPMD_PYTHON")
endif()
# torchrun lives beside the Python whose torch provides libtorch.
if(Torch_DIR STREQUAL "${SPMD_TORCH_DIR_OF_PYTHON}")
  get_filename_component(SPMD_TORCH_BIN_DIR "${SPMD_PYTHON}" DIRECTORY)
endif()

# TorchConfig.cmake looks for its Caffe2 package and for libtorch.so and
# libc10.so with the system paths first, where another libtorch may lie
# (Debian's libtorch-dev 1.13 in /usr/lib/x86_64-linux-gnu); point them at
# the ones beside it.
get_filename_component(_spmd_torch_root "${Torch_DIR}/../../.." ABSOLUTE)
set(Caffe2_DIR "${_spmd_torch_root}/share/cmake/Caffe2" CACHE PATH
    "libtorch's Caffe2 CMake package (beside Torch_DIR)" FORCE)
find_library(TORCH_LIBRARY torch PATHS "${_spmd_torch_root}/lib" NO_DEFAULT_PATH)
find_library(c10_LIBRARY c10 PATHS "${_spmd_torch_root}/lib" NO_DEFAULT_PATH)
find_package(Torch REQUIRED)

set(SPMD_TORCH_VERSION "${Torch_VERSION}")
string(REGEX MATCH "^[0-9]+" _major "${Torch_VERSION}")
if(_major LESS 2)
  message(FATAL_ERROR "spmd-check needs libtorch 2.x; ${TORCH_INSTALL_PREFIX} "
    "is ${SPMD_TORCH_VERSION}. Run scripts/install-deps.sh for torch 2.13.")
endif()
message(STATUS "libtorch ${SPMD_TORCH_VERSION} at ${TORCH_INSTALL_PREFIX}")
