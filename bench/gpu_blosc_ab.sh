#!/usr/bin/env bash
# The GPU-machine session for the LZ4/blosc decoder work (issue 4): the previous decoder (the
# checkout at $BASE, built with this tree's bench/gpu_decode_bench.cpp so that both run the
# same cases) against this tree, in one run:
#
#     OUT=/some/empty/dir BASE=/path/to/previous/tree bash bench/gpu_blosc_ab.sh
#
# More trees to bench beside it: EXTRA="name=/path/to/tree ..." (each built like BASE, in
# build-NAME/, benched after BASE, written to bench_NAME.md). BASE=none benches no previous tree.
# Runtime switches of this tree: ENV_SIDES="name:VAR=VALUE[,VAR=VALUE...] ..." benches this tree's
# build again with those set (bench_NAME.md) and runs the GPU decoder tests with them too (a
# gpu_decode_bench setting such as CS_BENCH_CODEC=lz4 applies to every side); ROUNDS=2 benches
# every side twice, interleaved (new, name, new, name), so that drift of a shared GPU shows.
#
# 1. builds both (in parallel: build-base/ in $BASE, build-gpu/ here);
# 2. this tree's GPU decoder tests and the shared logic's host tests, then the GPU suites
#    under compute-sanitizer memcheck;
# 3. gpu_decode_bench of both builds (before, after; medians of CS_BENCH_REPEAT);
# 4. Nsight Compute (ncu) of the blosc unit and unshuffle kernels of both builds on the synth
#    fields written as the Zarr writer writes them (NCU=0 skips it, NCU_SIDES="new" profiles
#    only this tree; NCU_CASE="batch / codec" another case, NCU_KERNELS a regex of other
#    kernels, NCU_LAUNCHES how many launches).
# Everything lands flat in $OUT (8 files at most come back from the GPU machine).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=${OUT:?set OUT}
BASE=${BASE:?set BASE to the previous tree, or none}
HERE=$PWD
mkdir -p "$OUT"
exec > >(tee -a "$OUT/session.log") 2>&1
log() { printf '[gpu_blosc_ab %s] %s\n' "$(date +%H:%M:%S)" "$*"; }
log "env"; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader; nproc
EXTRA=${EXTRA:-}
ENV_SIDES=${ENV_SIDES:-}
trees=$(for e in $EXTRA; do echo "${e#*=}"; done); [ "$BASE" != none ] && trees="$BASE $trees"
for t in $trees; do cp bench/gpu_decode_bench.cpp "$t/bench/gpu_decode_bench.cpp"; done
conf() { cmake -S "$1" -B "$1/$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCUBESTREAM_CUDA=ON -DCUBESTREAM_BUILD_PYTHON=OFF -DCUBESTREAM_BUILD_TESTS=OFF; }
log "build (all trees)"
if [ "$BASE" != none ]; then
  ( conf "$BASE" build-base && ninja -C "$BASE/build-base" -j8 gpu_decode_bench ) >"$OUT/build.log" 2>&1 &
else
  true &
fi
pb=$!
pe=()
for e in $EXTRA; do
  ( conf "${e#*=}" "build-${e%%=*}" && ninja -C "${e#*=}/build-${e%%=*}" -j8 gpu_decode_bench ) >"$OUT/build_${e%%=*}.log" 2>&1 &
  pe+=($!)
done
( cmake -S "$HERE" -B "$HERE/build-gpu" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCUBESTREAM_CUDA=ON -DCUBESTREAM_BUILD_PYTHON=OFF &&
  ninja -C "$HERE/build-gpu" -j12 cubestream_tests gpu_decode_bench ) >"$OUT/build_new.log" 2>&1
rn=$?; wait $pb; rb=$?
for p in "${pe[@]}"; do wait "$p" || rb=1; done
cat "$OUT"/build_*.log >>"$OUT/build.log"; rm -f "$OUT"/build_*.log
log "build rc: base(+extra)=$rb new=$rn"; [ $rb -eq 0 ] && [ $rn -eq 0 ] || { grep -E "error|FAILED" "$OUT/build.log" | head -40; exit 1; }
grep -E "registers|smem" "$OUT/build.log" | head -4
log "gtest (GPU decoder suites + shared logic)"
timeout 240 build-gpu/tests/cubestream_tests --gtest_filter='GpuBatch*:Lz4*:Blosc*' >"$OUT/gtest.log" 2>&1
log "gtest rc=$?"; grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran|Failure" "$OUT/gtest.log" | head -20
for es in $ENV_SIDES; do
  log "gtest with ${es#*:}"
  IFS=, read -r -a envs <<<"${es#*:}"
  env "${envs[@]}" timeout 240 build-gpu/tests/cubestream_tests --gtest_filter='GpuBatch*' >"$OUT/gtest_${es%%:*}.log" 2>&1
  log "gtest ${es%%:*} rc=$?"; grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran|Failure" "$OUT/gtest_${es%%:*}.log" | head -20
done
log "memcheck (GPU batch suites)"
timeout 240 compute-sanitizer --tool memcheck --error-exitcode 9 build-gpu/tests/cubestream_tests \
  --gtest_filter='GpuBatch*' >"$OUT/memcheck.log" 2>&1
log "memcheck rc=$?"; grep -E "ERROR SUMMARY|PASSED|FAILED" "$OUT/memcheck.log" | head -5
bench_bin() {  # bench_bin SIDE: base, new or an EXTRA name
  case $1 in
    base) echo "$BASE/build-base/gpu_decode_bench" ;;
    new) echo build-gpu/gpu_decode_bench ;;
    *) for es in $ENV_SIDES; do [ "${es%%:*}" = "$1" ] && echo build-gpu/gpu_decode_bench; done
       for e in $EXTRA; do [ "${e%%=*}" = "$1" ] && echo "${e#*=}/build-$1/gpu_decode_bench"; done ;;
  esac
}
side_env() {  # side_env SIDE: the VAR=VALUE an ENV_SIDES side runs with (CS_BENCH_SIDE=SIDE for others)
  local es
  for es in $ENV_SIDES; do [ "${es%%:*}" = "$1" ] && { echo "${es#*:}"; return; }; done
  echo "CS_BENCH_SIDE=$1"
}
sides="$( [ "$BASE" != none ] && echo base) $(for e in $EXTRA; do echo "${e%%=*}"; done) new $(for es in $ENV_SIDES; do echo "${es%%:*}"; done)"
for round in $(seq 1 "${ROUNDS:-1}"); do
  for side in $sides; do
    bin=$(bench_bin $side)
    md="$OUT/bench_$side.md"; [ "$round" -gt 1 ] && md="$OUT/bench_${side}_r$round.md"
    log "bench $side (round $round)"
    IFS=, read -r -a envs <<<"$(side_env $side)"
    env "${envs[@]}" CS_BENCH_REPEAT=${REPEAT:-7} timeout 200 "$bin" >"$md" 2>&1; log "rc=$?"; cat "$md"
  done
done
if [ "${NCU:-1}" = 1 ]; then
  for side in ${NCU_SIDES:-base new}; do
    bin=$(bench_bin $side)
    log "ncu $side"
    CS_BENCH_REPEAT=5 CS_BENCH_CASE="${NCU_CASE:-synth_721x1440 x256 / blosc-lz4+shuffle (writer)}" timeout 150 \
      ncu -k regex:"${NCU_KERNELS:-blosc_unit_kernel|blosc_unshuffle_kernel}" --launch-count "${NCU_LAUNCHES:-2}" \
      --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
      --section SchedulerStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
      "$bin" >"$OUT/ncu_$side.txt" 2>&1
    log "rc=$?"; grep -E "blosc_|Duration|Achieved Occupancy|Registers Per|Memory Throughput|DRAM Throughput|Issue Slots Busy|No Eligible|Warp Cycles Per Issued" "$OUT/ncu_$side.txt" | head -40
  done
fi
log "done"
