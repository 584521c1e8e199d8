#!/usr/bin/env bash
# The main job on a fresh machine: install, build, then inspect the demo store (real CMIP5
# fields in Zarr v2, blosc-lz4) and read it with the read benchmark.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
store=data/demo/cmip5_2005.zarr
echo
echo "== cubestream inspect $store"
build/cubestream inspect "$store"
echo
echo "== cubestream bench read $store --repeat 20"
build/cubestream bench read "$store" --repeat 20
