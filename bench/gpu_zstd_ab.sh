#!/usr/bin/env bash
# GPU Zstandard decoder, previous version vs this tree in one session on the GPU machine
# (16 cores, CUDA, cmake, ninja, zstd headers). Each other version is a copy of src/ include/
# bench/ cmake/ CMakeLists.txt at its commit (see VARIANTS below), made with
#   mkdir -p build-old/tree && git archive <commit> src include bench cmake CMakeLists.txt | tar -x -C build-old/tree
#
#     OUT=/some/dir bash bench/gpu_zstd_ab.sh
#
# Steps (each capped, logged; a failing step does not stop the later ones), in order of need:
#   build     this tree (tests + bench) into build-gpu-zstd/, each variant's bench into
#             build-NAME/b, side by side                                 -> $OUT/build.log
#   tests     ZstdLogic*, ZstdBatch*, ZstdCodec*                          -> $OUT/gpu_tests.log
#   bench     this tree, then each variant, same batches and levels, libzstd on all cores in each
#                                                                         -> $OUT/bench_new.md, bench_NAME.md
#   ncu       duration of each zstd kernel of one decode, big batch, each level -> $OUT/ncu.log
#   memcheck  the GPU batch tests under compute-sanitizer                 -> $OUT/memcheck.log
#   racecheck compute-sanitizer racecheck over ZstdBatch.MixedBatchMatchesLibzstdAndHostStatuses
#             (shared-memory hazards; the units queue's volatile protocol is reported by
#             design, docs/gpu_zstd.md)                                   -> $OUT/racecheck.log
#   sass      cuobjdump's SASS of this tree's zstd kernels (to count each loop's instructions
#             on a machine without the CUDA disassemblers)                -> $OUT/zstd_sass.txt.gz
# Knobs: BIG=256 SMALL=1024 REPEAT=5 LEVELS=1,3,5 VARIANTS="old=build-old/tree" STEPS="build tests bench ncu memcheck"
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=${OUT:-$PWD/.bench/gpu_zstd_ab}
# Other versions to build and bench beside this tree: NAME=SOURCE_TREE pairs, each built in
# build-NAME/b (the default: the previous version, main, copied to build-old/tree).
VARIANTS=${VARIANTS:-old=build-old/tree}
BUILD=build-gpu-zstd
BIG=${BIG:-256}; SMALL=${SMALL:-1024}; REPEAT=${REPEAT:-5}; LEVELS=${LEVELS:-1,3,5}
STEPS=${STEPS:-"build tests bench ncu memcheck"}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/run.log") 2>&1
START=$(date +%s)
log() { printf '[zstd_ab %s +%4ss] %s\n' "$(date +%H:%M:%S)" "$(($(date +%s) - START))" "$*"; }
step() {  # step NAME CAP_SECONDS command...
  local name=$1 cap=$2; shift 2
  case " $STEPS " in *" $name "*) ;; *) log "=== $name: not asked"; return 0;; esac
  local t0=$(date +%s) rc=0
  log "=== $name (cap ${cap}s)"
  # timeout runs programs, not shell functions: the functions and settings go through bash -c.
  timeout -k 10 "$cap" bash -c "$*" || rc=$?
  log "=== $name: rc=$rc in $(($(date +%s) - t0))s"
  return 0
}
build() {
  nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap,clocks.max.sm --format=csv || true
  local n=1 v
  for v in $VARIANTS; do n=$((n + 1)); done
  local j=$(( $(nproc) / n )); [ "$j" -ge 1 ] || j=1
  ( cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCUBESTREAM_CUDA=ON -DCUBESTREAM_BUILD_PYTHON=OFF \
      >"$OUT/build.log" 2>&1 && ninja -C "$BUILD" -j"$j" cubestream_tests gpu_zstd_bench >>"$OUT/build.log" 2>&1 ) &
  local pids=($!) names=(new)
  for v in $VARIANTS; do
    local name=${v%%=*} tree=${v#*=}
    ( cmake -S "$tree" -B "build-$name/b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCUBESTREAM_CUDA=ON \
        -DCUBESTREAM_BUILD_PYTHON=OFF -DCUBESTREAM_BUILD_TESTS=OFF >"/tmp/build_$name.log" 2>&1 &&
      ninja -C "build-$name/b" -j"$j" gpu_zstd_bench >>"/tmp/build_$name.log" 2>&1 ) &
    pids+=($!); names+=("$name")
  done
  local rc=0 k
  for k in "${!pids[@]}"; do
    wait "${pids[$k]}" || { rc=1; echo "build ${names[$k]} failed"; }
  done
  grep -E 'error|FAILED' "$OUT/build.log" | head -30
  for v in $VARIANTS; do
    local name=${v%%=*}
    { echo "---- $name"; grep -E 'error|FAILED' "/tmp/build_$name.log" | head -20; tail -2 "/tmp/build_$name.log"; } >>"$OUT/build.log"
  done
  tail -8 "$OUT/build.log"
  return $rc
}
tests() {
  "$BUILD"/tests/cubestream_tests --gtest_filter='ZstdLogic*:ZstdBatch*:ZstdCodec*' >"$OUT/gpu_tests.log" 2>&1
  local rc=$?
  grep -E '^\[ZstdBatch\]|PASSED|FAILED|SKIPPED' "$OUT/gpu_tests.log" | head -30
  return $rc
}
bench() {
  "$BUILD"/gpu_zstd_bench --big "$BIG" --small "$SMALL" --repeat "$REPEAT" --v1-repeat 0 --levels "$LEVELS" \
    --md "$OUT/bench_new.md" 2>&1 | tail -20
  local v
  for v in $VARIANTS; do
    local name=${v%%=*}
    [ -x "build-$name/b/gpu_zstd_bench" ] || { echo "no $name bench"; continue; }
    "build-$name/b/gpu_zstd_bench" --big "$BIG" --small "$SMALL" --repeat "$REPEAT" --v1-repeat 0 \
      --levels "$LEVELS" --md "$OUT/bench_$name.md" 2>&1 | tail -20
  done
}
ncu_step() {
  command -v ncu >/dev/null || { log "no ncu"; return 0; }
  local l
  for l in ${LEVELS//,/ }; do
    echo "---- level $l, $BIG x 4 MiB, first decode (the verified one)"
    ncu --kernel-name regex:'zstd_' --launch-count 5 --metrics gpu__time_duration.sum,sm__warps_active.avg.pct_of_peak_sustained_active,sm__throughput.avg.pct_of_peak_sustained_elapsed \
      "$BUILD"/gpu_zstd_bench --big "$BIG" --small 0 --repeat 1 --v1-repeat 0 --levels "$l" 2>&1 |
      grep -E 'zstd_[a-z_]+kernel|gpu__time|warps_active|sm__throughput' | sed -E 's/\(.*//'
  done >"$OUT/ncu.log"
  cat "$OUT/ncu.log"
}
memcheck() {
  compute-sanitizer --tool memcheck --leak-check full --error-exitcode 3 \
    "$BUILD"/tests/cubestream_tests --gtest_filter='ZstdBatch*' >"$OUT/memcheck.log" 2>&1
  local rc=$?
  grep -E 'ERROR SUMMARY|PASSED|FAILED|Invalid' "$OUT/memcheck.log" | head -20
  return $rc
}
racecheck() {
  compute-sanitizer --tool racecheck --error-exitcode 3 \
    "$BUILD"/tests/cubestream_tests --gtest_filter='ZstdBatch.MixedBatchMatchesLibzstdAndHostStatuses' >"$OUT/racecheck.log" 2>&1
  local rc=$?
  grep -E 'RACECHECK SUMMARY|Race reported|PASSED|FAILED' "$OUT/racecheck.log" | sed -E 's/\(const void.*\)\+/+/' | sort | uniq -c | head -20
  return $rc
}
sass() {
  command -v cuobjdump >/dev/null || { log "no cuobjdump"; return 0; }
  local obj
  obj=$(find "$BUILD" -name 'zstd_batch.cu.o' | head -1)
  [ -n "$obj" ] || { log "no zstd_batch.cu.o"; return 1; }
  cuobjdump -sass "$obj" | gzip -9 >"$OUT/zstd_sass.txt.gz"
  zcat "$OUT/zstd_sass.txt.gz" | grep -cE '^\s+/\*[0-9a-f]{4}\*/' | sed 's/^/SASS instructions: /'
}
export OUT VARIANTS BUILD BIG SMALL REPEAT LEVELS
export -f log build tests bench ncu_step memcheck racecheck sass
export START
step build 330 build
step tests 150 tests
step bench 300 bench
step ncu 200 ncu_step
step memcheck 240 memcheck
step racecheck 200 racecheck
step sass 60 sass
log "done in $(($(date +%s) - START))s"
ls -la "$OUT"
