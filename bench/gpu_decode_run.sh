#!/usr/bin/env bash
# The GPU decoders' session on the GPU machine (H100, 16 cores, CUDA 13, cmake, ninja, Python
# with CuPy/torch; no libblosc, no numcodecs: neither is needed). Run from the repository root:
#
#     OUT=/some/empty/dir bash bench/gpu_decode_run.sh
#
# Steps (each logged; a failed step is reported and the run goes on where it can):
#   1. environment (GPU, driver, nvcc, compute-sanitizer, CPU)
#   2. configure + build (Release, CUDA on) in build-gpu-decode/: cubestream_tests,
#      gpu_decode_bench and the Python module
#   3. the GPU test suite and the shared-logic host tests: gtest filter $GTEST_FILTER
#   4. the GPU suite again under compute-sanitizer --tool memcheck (out-of-bounds and
#      misaligned accesses, and errors of every CUDA call) with $MEMCHECK_FILTER
#   5. the Python codec tests (GPU goldens through CuPy or torch)
#   6. the benchmark (bench/gpu_decode_bench.cpp): markdown table in $OUT/gpu_decode_bench.md
#
# $OUT receives: run.log (this script's output), build.log, gtest.log, memcheck.log,
# pytest.log, gpu_decode_bench.md. Exit status: 0 when every step passed.
#
# The device tool runs one command for at most 10 minutes and keeps build outputs between calls,
# so the steps can be split over two calls:
#     OUT=... STEPS="env build test" bash bench/gpu_decode_run.sh
#     OUT=... STEPS="memcheck pytest bench" bash bench/gpu_decode_run.sh
#
# Knobs (environment): STEPS="env build test memcheck pytest bench" GTEST_FILTER='GpuBatch*:Lz4Block*:BloscGpuLogic*:BloscTestEncoder*'
#   MEMCHECK_FILTER='GpuBatch*' MEMCHECK_TIMEOUT_S=420 CS_BENCH_REPEAT=7 CS_BENCH_THREADS=$(nproc)
#   PYTHON=python3 BUILD=build-gpu-decode REQUIRE_GPU=1 (skipped GPU tests fail the test step)
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO=$PWD
OUT=${OUT:-$REPO/.bench/gpu_decode}
BUILD=${BUILD:-build-gpu-decode}
PYTHON=${PYTHON:-python3}
GTEST_FILTER=${GTEST_FILTER:-'GpuBatch*:Lz4Block*:BloscGpuLogic*:BloscTestEncoder*'}
MEMCHECK_FILTER=${MEMCHECK_FILTER:-'GpuBatch*'}
MEMCHECK_TIMEOUT_S=${MEMCHECK_TIMEOUT_S:-420}
REQUIRE_GPU=${REQUIRE_GPU:-1}
export CS_BENCH_REPEAT=${CS_BENCH_REPEAT:-7}
export CS_BENCH_THREADS=${CS_BENCH_THREADS:-$(nproc)}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/run.log") 2>&1

START=$(date +%s)
FAILED=()
log() { printf '[gpu_decode_run %s +%4ss] %s\n' "$(date +%H:%M:%S)" "$(($(date +%s) - START))" "$*"; }
step() {  # step NAME FUNCTION
  local t0 rc=0
  t0=$(date +%s)
  log "=== $1"
  "$2" || rc=$?
  if [ "$rc" -eq 0 ]; then log "=== $1: ok ($(($(date +%s) - t0))s)"; else log "=== $1: FAILED rc=$rc ($(($(date +%s) - t0))s)"; FAILED+=("$1"); fi
}

SANITIZER=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)

s_env() {
  nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap,clocks.max.sm --format=csv || true
  "$NVCC" --version | tail -2 || true
  [ -x "$SANITIZER" ] && "$SANITIZER" --version | head -2 || log "compute-sanitizer not found at $SANITIZER"
  echo "cpus: $(nproc)"; lscpu | grep -E 'Model name|Socket' || true
  cmake --version | head -1; ninja --version
  "$PYTHON" -c "import sys; print('python', sys.version.split()[0])" || true
  for m in numpy cupy torch pybind11 numcodecs; do
    "$PYTHON" -c "import $m; print('$m', getattr($m, '__version__', '?'))" 2>/dev/null || echo "$m: missing"
  done
  git rev-parse --short HEAD 2>/dev/null || true
}

s_build() {
  local args=(-S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCUBESTREAM_CUDA=ON "-DPython3_EXECUTABLE=$(command -v "$PYTHON")")
  local pbdir
  pbdir=$("$PYTHON" -m pybind11 --cmakedir 2>/dev/null || true)
  [ -n "$pbdir" ] && args+=("-Dpybind11_DIR=$pbdir")
  log "cmake ${args[*]}"
  cmake "${args[@]}" >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; return 1; }
  grep -E 'cubestream:|blosc|pybind11' "$OUT/build.log" || true
  ninja -C "$BUILD" -j"$(nproc)" cubestream_tests gpu_decode_bench >>"$OUT/build.log" 2>&1 ||
    { grep -E 'error|FAILED' "$OUT/build.log" | head -30; return 1; }
  # the Python module is optional (pybind11 may be missing): its failure is reported, not fatal
  ninja -C "$BUILD" -j"$(nproc)" _cubestream >>"$OUT/build.log" 2>&1 || log "Python module not built (see build.log)"
  return 0
}

s_gtest() {
  "$BUILD/tests/cubestream_tests" --gtest_filter="$GTEST_FILTER" >"$OUT/gtest.log" 2>&1
  local rc=$?
  grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT/gtest.log" | head -40
  if [ "$REQUIRE_GPU" = 1 ] && grep -qE '^\[  SKIPPED \] GpuBatch' "$OUT/gtest.log"; then
    log "GPU tests were SKIPPED (no CUDA device visible?): counted as a failure (REQUIRE_GPU=1)"
    return 1
  fi
  return $rc
}

s_memcheck() {
  [ -x "$SANITIZER" ] || { log "no compute-sanitizer"; return 1; }
  timeout -k 10 "$MEMCHECK_TIMEOUT_S" "$SANITIZER" --tool memcheck --error-exitcode 99 --leak-check no \
    "$BUILD/tests/cubestream_tests" --gtest_filter="$MEMCHECK_FILTER" >"$OUT/memcheck.log" 2>&1
  local rc=$?
  grep -E 'ERROR SUMMARY|^\[  (PASSED|FAILED) ' "$OUT/memcheck.log" | head -20
  [ "$rc" -eq 124 ] && log "memcheck stopped after ${MEMCHECK_TIMEOUT_S}s (MEMCHECK_FILTER narrows it)"
  return $rc
}

s_pytest() {
  [ -d "$BUILD/python/cubestream" ] || { log "no Python module"; return 1; }
  PYTHONPATH="$REPO/$BUILD/python" "$PYTHON" -m pytest -q tests/python/test_codecs.py -rs >"$OUT/pytest.log" 2>&1
  local rc=$?
  tail -15 "$OUT/pytest.log"
  return $rc
}

s_bench() {
  "$BUILD/gpu_decode_bench" >"$OUT/gpu_decode_bench.md" 2>&1
  local rc=$?
  cat "$OUT/gpu_decode_bench.md"
  return $rc
}

STEPS=${STEPS:-env build test memcheck pytest bench}
want() { case " $STEPS " in *" $1 "*) return 0;; *) return 1;; esac; }
want env && step "environment" s_env
want build && step "configure + build" s_build
if [ -x "$BUILD/tests/cubestream_tests" ]; then
  want test && step "GPU + shared-logic tests" s_gtest
  want memcheck && step "GPU tests under compute-sanitizer memcheck" s_memcheck
  want pytest && step "Python codec tests" s_pytest
elif want test || want memcheck || want pytest; then
  log "no $BUILD/tests/cubestream_tests: run the build step first"; FAILED+=("tests (no build)")
fi
if want bench; then
  if [ -x "$BUILD/gpu_decode_bench" ]; then step "benchmark" s_bench; else log "no $BUILD/gpu_decode_bench"; FAILED+=("bench (no build)"); fi
fi

log "done in $(($(date +%s) - START))s; failed steps: ${FAILED[*]:-none}"
ls -la "$OUT"
[ "${#FAILED[@]}" -eq 0 ]
