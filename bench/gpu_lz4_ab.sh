#!/usr/bin/env bash
# The GPU-machine session for the numcodecs-LZ4 decoder (issue 4, version 3: the 64 KiB ring
# decoder): the previous tree ($BASE, built with this tree's bench/gpu_decode_bench.cpp so that
# both run the same cases) against this tree, in one run, most important results first:
#
#     OUT=/some/empty/dir BASE=/path/to/previous/tree bash bench/gpu_lz4_ab.sh
#
# 1. builds both (in parallel: build-base/ in $BASE, build-gpu/ here);
# 2. this tree's GPU decoder tests and the shared logic's host tests;
# 3. gpu_decode_bench of this tree, then of the base (medians of REPEAT, default 7; liblz4 on
#    all cores in the same process);
# 4. the GPU suites under compute-sanitizer memcheck;
# 5. Nsight Compute of lz4_ring_kernel on the era5-like and synth lz4 batches (NCU=0 skips).
# Everything lands flat in $OUT (8 files at most come back from the GPU machine).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=${OUT:?set OUT}
BASE=${BASE:?set BASE to the previous tree}
HERE=$PWD
mkdir -p "$OUT"
exec > >(tee -a "$OUT/session.log") 2>&1
log() { printf '[gpu_lz4_ab %s] %s\n' "$(date +%H:%M:%S)" "$*"; }
log "env"; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader; nproc
cp bench/gpu_decode_bench.cpp "$BASE/bench/gpu_decode_bench.cpp"
conf() { cmake -S "$1" -B "$1/$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCUBESTREAM_CUDA=ON -DCUBESTREAM_BUILD_PYTHON=OFF; }
log "build (both trees)"
( conf "$BASE" build-base && ninja -C "$BASE/build-base" -j6 gpu_decode_bench ) >"$OUT/build.log" 2>&1 &
pb=$!
( conf "$HERE" build-gpu && ninja -C "$HERE/build-gpu" -j10 cubestream_tests gpu_decode_bench ) >"$OUT/build_new.log" 2>&1
rn=$?; wait $pb; rb=$?
cat "$OUT/build_new.log" >>"$OUT/build.log"; rm -f "$OUT/build_new.log"
log "build rc: base=$rb new=$rn"; [ $rn -eq 0 ] || { grep -E "error|FAILED" "$OUT/build.log" | head -40; exit 1; }
log "gtest: the lz4 GPU suites first (a hang or failure here stops the session early)"
timeout 60 build-gpu/tests/cubestream_tests --gtest_filter='GpuBatch.Lz4*:GpuBatch.RingDecoder*' >"$OUT/gtest_lz4.log" 2>&1
rc=$?; log "gtest lz4 rc=$rc"; grep -E "^\[  (PASSED|FAILED) |Failure" "$OUT/gtest_lz4.log" | head -10
[ $rc -eq 0 ] || { tail -30 "$OUT/gtest_lz4.log"; exit 1; }
log "gtest (GPU decoder suites + shared logic)"
timeout 150 build-gpu/tests/cubestream_tests --gtest_filter='GpuBatch*:Lz4*:Blosc*' >"$OUT/gtest.log" 2>&1
log "gtest rc=$?"; grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran|Failure" "$OUT/gtest.log" | head -20
for side in new base; do
  bin=$([ $side = base ] && echo "$BASE/build-base/gpu_decode_bench" || echo build-gpu/gpu_decode_bench)
  [ -x "$bin" ] || { log "no $bin"; continue; }
  log "bench $side"
  CS_BENCH_REPEAT=${REPEAT:-7} timeout ${BENCH_TIMEOUT:-150} "$bin" >"$OUT/bench_$side.md" 2>&1; log "rc=$?"; cat "$OUT/bench_$side.md"
done
log "memcheck (GPU batch suites)"
timeout ${MEMCHECK_TIMEOUT:-150} compute-sanitizer --tool memcheck --error-exitcode 9 build-gpu/tests/cubestream_tests \
  --gtest_filter='GpuBatch*' >"$OUT/memcheck.log" 2>&1
log "memcheck rc=$?"; grep -E "ERROR SUMMARY|PASSED|FAILED" "$OUT/memcheck.log" | head -5
if [ "${NCU:-1}" = 1 ]; then
  log "ncu new (lz4_ring_kernel: era5-like, then synth)"
  for c in "era5_4MiB x256 / lz4" "synth_721x1440 x256 / lz4"; do
    CS_BENCH_REPEAT=5 CS_BENCH_CASE="$c" timeout 80 \
      ncu -k regex:'lz4_ring_kernel' --launch-count 1 \
      --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
      --section SchedulerStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
      build-gpu/gpu_decode_bench >>"$OUT/ncu_new.txt" 2>&1
    log "rc=$?"
  done
  grep -E "lz4_ring|Duration|Achieved Occupancy|Registers Per|Memory Throughput|DRAM Throughput|Issue Slots Busy|No Eligible|Warp Cycles Per Issued|Executed Ipc" "$OUT/ncu_new.txt" | head -40
fi
log "done"
