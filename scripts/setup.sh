#!/usr/bin/env bash
# Installs what cubestream needs to build and test on Debian 12 / Ubuntu 22.04+, from the
# distribution's packages only (`--train` adds PyTorch for the main job). Packages already present are not reinstalled; apt is only
# touched when something is missing. Safe to run again.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  libzstd-dev liblz4-dev zlib1g-dev nlohmann-json3-dev
  pybind11-dev python3-dev python3-numpy python3-pytest
  libgtest-dev
  # DLPack's header: batches leave as DLPack tensors
  libdlpack-dev
  # object stores: libcurl (HTTP transport) and OpenSSL's libcrypto (SigV4 signing)
  libcurl4-openssl-dev libssl-dev
  # io_uring for the local read engine (optional at build time: without it, a pread pool)
  liburing-dev
  # the HTTP store tests serve a store directory with a real nginx on loopback
  nginx
  # test oracles and fixture writers
  libblosc-dev python3-zarr python3-numcodecs python3-xarray python3-netcdf4
  # `cubestream convert` reads netCDF-4/HDF5 files through libnetcdf; python3-dask is the
  # xarray + dask baseline of bench/rechunk_bench.sh
  libnetcdf-dev python3-dask
  # real climate fields (CMIP5) for the demo store and tests
  libncarg-data
  # libFuzzer targets
  clang libclang-rt-dev
)
# The main job (scripts/run_demo.sh --train) trains a small U-Net: PyTorch from the
# distribution (CPU build; where a GPU and a CUDA build of torch exist, that one is used).
[ "${1:-}" = "--train" ] && packages+=(python3-torch)
# zarrita (the Zarr v3 writer used as a test oracle) comes from npm and needs Node.js.
command -v node >/dev/null 2>&1 || packages+=(nodejs)
command -v npm >/dev/null 2>&1 || packages+=(npm)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "setup: all packages present"
fi
