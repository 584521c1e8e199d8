#!/usr/bin/env bash
# The whole test suite on a fresh machine: install, build, generate the oracle fixtures
# (zarr-python for v2, zarrita for v3), then run the C++ tests (ctest), the Python tests
# (pytest) and a short run of every fuzz target under ASan/UBSan. Ends with one summary line.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
tests/fixtures/generate_all.sh
logs=$(mktemp -d)
echo "== C++ tests"
ctest --test-dir build --output-on-failure -j"$(nproc)" | tee "$logs/ctest.log"
echo "== Python tests"
PYTHONPATH="$PWD/build/python" /usr/bin/python3 -m pytest -q tests/python | tee "$logs/pytest.log"
echo "== fuzz targets (${FUZZ_SECONDS:-20}s each)"
scripts/run_fuzz.sh "${FUZZ_SECONDS:-20}" | tee "$logs/fuzz.log"
# Every step above stops the script on failure (set -e, pipefail), so reaching here means
# all passed; count what ran.
cpp=$(grep -oE 'tests failed out of [0-9]+' "$logs/ctest.log" | grep -oE '[0-9]+$')
py=$(grep -oE '[0-9]+ passed' "$logs/pytest.log" | tail -1 | grep -oE '^[0-9]+')
fz=$(grep -c ' clean for ' "$logs/fuzz.log")
echo "C++ tests: $cpp, Python tests: $py, fuzz targets: $fz"
echo "summary: $((cpp + py + fz)) passed, 0 failed"
