#!/usr/bin/env bash
# The whole test suite on a fresh machine: install, build, generate the oracle fixtures
# (zarr-python for v2, zarrita for v3), then run the C++ tests (ctest; again from a build
# without CUDA), the Python tests (pytest) and a short run of every fuzz target under
# ASan/UBSan. Ends with one summary line.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
tests/fixtures/generate_all.sh
logs=$(mktemp -d)
echo "== C++ tests"
ctest --test-dir build --output-on-failure -j"$(nproc)" | tee "$logs/ctest.log"
# The same C++ tests from a build without CUDA (what a machine without nvcc builds; this one and
# CI have nvcc, so only this step sees a CUDA header reached from a CPU-only build's tests)
echo "== C++ tests, CPU-only build (CUBESTREAM_CUDA=OFF)"
BUILD_DIR=build-cpu CUBESTREAM_CUDA=OFF scripts/build.sh -DCUBESTREAM_BUILD_PYTHON=OFF
ctest --test-dir build-cpu --output-on-failure -j"$(nproc)" | tee "$logs/ctest_cpu.log"
echo "== Python tests"
PYTHONPATH="$PWD/build/python" /usr/bin/python3 -m pytest -q tests/python | tee "$logs/pytest.log"
echo "== fuzz targets (${FUZZ_SECONDS:-20}s each)"
scripts/run_fuzz.sh "${FUZZ_SECONDS:-20}" | tee "$logs/fuzz.log"
# Every step above stops the script on failure (set -e, pipefail), so reaching here means
# all passed; count what ran.
cpp=$(grep -oE 'tests failed out of [0-9]+' "$logs/ctest.log" | grep -oE '[0-9]+$')
cpu=$(grep -oE 'tests failed out of [0-9]+' "$logs/ctest_cpu.log" | grep -oE '[0-9]+$')
py=$(grep -oE '[0-9]+ passed' "$logs/pytest.log" | tail -1 | grep -oE '^[0-9]+')
fz=$(grep -c ' clean for ' "$logs/fuzz.log")
echo "C++ tests: $cpp, C++ tests of the CPU-only build: $cpu, Python tests: $py, fuzz targets: $fz"
echo "summary: $((cpp + cpu + py + fz)) passed, 0 failed"
