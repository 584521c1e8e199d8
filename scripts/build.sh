#!/usr/bin/env bash
# Configures and builds cubestream (library, CLI, tests, Python module) into build/.
# CUDA sources compile when nvcc is found (CUBESTREAM_CUDA=AUTO); set CUBESTREAM_CUDA=OFF
# to skip them. Extra CMake arguments can be passed through.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-Release} \
  -DCUBESTREAM_CUDA=${CUBESTREAM_CUDA:-AUTO} -DPython3_EXECUTABLE=/usr/bin/python3 "$@" >/dev/null
ninja -C "$BUILD_DIR" -j"$jobs"
