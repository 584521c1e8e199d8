#!/usr/bin/env bash
# The whole test suite on a fresh machine: install, build, generate the oracle fixtures
# (zarr-python for v2, zarrita for v3), then run the C++ tests (ctest), the Python tests
# (pytest) and a short run of every fuzz target under ASan/UBSan.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
tests/fixtures/generate_all.sh
echo "== C++ tests"
ctest --test-dir build --output-on-failure -j"$(nproc)"
echo "== Python tests"
PYTHONPATH="$PWD/build/python" /usr/bin/python3 -m pytest -q tests/python
echo "== fuzz targets (${FUZZ_SECONDS:-20}s each)"
scripts/run_fuzz.sh "${FUZZ_SECONDS:-20}"
