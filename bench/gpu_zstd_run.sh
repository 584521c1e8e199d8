#!/usr/bin/env bash
# GPU Zstandard decoder session for the H100 machine (16 cores, CUDA 13, cmake, ninja, zstd
# headers; no blosc). Run from anywhere with $OUT set to an empty folder:
#
#     OUT=/some/dir bash bench/gpu_zstd_run.sh
#
# Steps (each capped in time, each logged; a failing step does not stop the later ones):
#   1. configure + build (Release, CUDA on, no Python) into build-gpu-zstd/: the test program
#      and bench/gpu_zstd_bench.cu                                   -> $OUT/build.log
#   2. the zstd tests, host logic and GPU batch (ZstdLogic*, ZstdBatch*, ZstdCodec*)
#                                                                    -> $OUT/gpu_tests.log
#   3. the GPU batch tests under compute-sanitizer --tool memcheck   -> $OUT/memcheck.log
#   4. the benchmark: 256 x 4 MiB ERA5-like chunks and 2048 chunks of 64 KiB-1 MiB, levels
#      1, 3, 5, GPU kernel (version 1 and 2) / end-to-end vs libzstd on all cores
#                                                                    -> $OUT/gpu_zstd_bench.md, bench.log
#   5. Nsight Compute on the entropy, sequences and execute kernels  -> $OUT/ncu.log
# Knobs: BIG=256 SMALL=2048 REPEAT=5 LEVELS=1,3,5 SKIP_MEMCHECK=0 SKIP_NCU=0
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=${OUT:-$PWD/.bench/gpu_zstd}
BUILD=build-gpu-zstd
BIG=${BIG:-256}; SMALL=${SMALL:-2048}; REPEAT=${REPEAT:-5}; LEVELS=${LEVELS:-1,3,5}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/run.log") 2>&1
START=$(date +%s)
log() { printf '[gpu_zstd %s +%4ss] %s\n' "$(date +%H:%M:%S)" "$(($(date +%s) - START))" "$*"; }
SUMMARY=()
step() {  # step NAME CAP_SECONDS command...
  local name=$1 cap=$2; shift 2
  local t0=$(date +%s) rc=0
  log "=== $name (cap ${cap}s)"
  # timeout runs programs, not shell functions: the functions and settings go through bash -c.
  timeout -k 10 "$cap" bash -c "$*" || rc=$?
  local st=ok; [ "$rc" -eq 0 ] || st="FAIL(rc=$rc)"; [ "$rc" -eq 124 ] && st=TIMEOUT
  log "=== $name: $st in $(($(date +%s) - t0))s"
  SUMMARY+=("$(printf '%-28s %-14s %4ss' "$name" "$st" "$(($(date +%s) - t0))")")
  return 0
}

build() {
  nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap --format=csv || true
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCUBESTREAM_CUDA=ON -DCUBESTREAM_BUILD_PYTHON=OFF \
    >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; return 1; }
  ninja -C "$BUILD" -j"$(nproc)" cubestream_tests gpu_zstd_bench >>"$OUT/build.log" 2>&1 ||
    { grep -E 'error|FAILED' "$OUT/build.log" | head -40; return 1; }
  tail -1 "$OUT/build.log"
}
tests() {
  "$BUILD"/tests/cubestream_tests --gtest_filter='ZstdLogic*:ZstdBatch*:ZstdCodec*' >"$OUT/gpu_tests.log" 2>&1
  local rc=$?
  grep -E '^\[ZstdBatch\]|^\[ZstdLogic\]|PASSED|FAILED|SKIPPED' "$OUT/gpu_tests.log" | head -30
  return $rc
}
memcheck() {
  [ "${SKIP_MEMCHECK:-0}" = 1 ] && { log "skipped"; return 0; }
  compute-sanitizer --tool memcheck --leak-check full --error-exitcode 3 \
    "$BUILD"/tests/cubestream_tests --gtest_filter='ZstdBatch*' >"$OUT/memcheck.log" 2>&1
  local rc=$?
  grep -E 'ERROR SUMMARY|PASSED|FAILED|Invalid' "$OUT/memcheck.log" | head -20
  return $rc
}
bench() {
  "$BUILD"/gpu_zstd_bench --big "$BIG" --small "$SMALL" --repeat "$REPEAT" --levels "$LEVELS" \
    --md "$OUT/gpu_zstd_bench.md" 2>"$OUT/bench.log"
}
ncu_step() {
  [ "${SKIP_NCU:-0}" = 1 ] && { log "skipped"; return 0; }
  command -v ncu >/dev/null || { log "no ncu"; return 0; }
  # the entropy, sequences and execute kernels, one launch each (the correctness run)
  ncu --kernel-name regex:'zstd_(entropy|sequences|execute)' --launch-count 3 --section SpeedOfLight --section Occupancy \
    --section LaunchStats --section MemoryWorkloadAnalysis --section WarpStateStats \
    "$BUILD"/gpu_zstd_bench --big 256 --small 0 --repeat 1 --v1-repeat 0 --levels 3 >"$OUT/ncu.log" 2>&1
  local rc=$?
  grep -E 'Duration|Achieved Occupancy|Theoretical Occupancy|Memory Throughput|DRAM Throughput|Compute \(SM\)|Registers Per|Block Limit' "$OUT/ncu.log" | head -20
  return $rc
}

export OUT BUILD BIG SMALL REPEAT LEVELS START
export -f log build tests memcheck bench ncu_step
step "build" 300 build
step "zstd tests (host + GPU)" 240 tests
step "memcheck (ZstdBatch*)" 300 memcheck
step "benchmark" 400 bench
step "ncu (one launch)" 240 ncu_step
log "================ summary ($(($(date +%s) - START))s) ================"
printf '%s\n' "${SUMMARY[@]}"
[ -f "$OUT/gpu_zstd_bench.md" ] && cat "$OUT/gpu_zstd_bench.md"
ls -la "$OUT"
