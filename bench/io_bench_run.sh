#!/usr/bin/env bash
# The local I/O session on the GPU machine: build, the store/engine/device-read tests, `cubestream
# info`, and bench/io_bench.cpp. Run from the repository root with $OUT set:
#
#     OUT=/some/empty/dir DEVDEPS=/path/to/.devdeps bash bench/io_bench_run.sh
#
# DEVDEPS holds Debian's liburing-dev (the GPU machine has no liburing headers):
#     shared/offline-deps.sh .devdeps liburing-dev
# Without it the build still works and the engine runs its pread pool only.
# $OUT receives: io_run.log (everything), build.log, tests.log, sysfs.txt, info.txt, io_bench.md.
# Knobs: SHARDS=16 CHUNKS=64 REPEAT=5 THREADS=16 DATA=/tmp/cs_io_bench JOBS=16
#        CUDA=AUTO (OFF skips the CUDA sources: a much shorter build, no device part (c))
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=${OUT:?set OUT to an empty folder}
DEVDEPS=${DEVDEPS:-}
SHARDS=${SHARDS:-16}
CHUNKS=${CHUNKS:-64}
REPEAT=${REPEAT:-5}
THREADS=${THREADS:-16}
DATA=${DATA:-/tmp/cs_io_bench}
JOBS=${JOBS:-16}
CUDA=${CUDA:-AUTO}
BUILD=build-io
mkdir -p "$OUT"
exec > >(tee -a "$OUT/io_run.log") 2>&1
START=$(date +%s)
log() { printf '[io_run +%4ss] %s\n' "$(($(date +%s) - START))" "$*"; }

log "machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GB; $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo 'no nvidia-smi')"
log "data file system: $(df -T "$(dirname "$DATA")" | tail -1)"
args=(-S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCUBESTREAM_BUILD_PYTHON=OFF "-DCUBESTREAM_CUDA=$CUDA")
[ -n "$DEVDEPS" ] && args+=("-DCMAKE_PREFIX_PATH=$DEVDEPS/usr")
log "cmake ${args[*]}"
if ! cmake "${args[@]}" >"$OUT/build.log" 2>&1 || ! ninja -C "$BUILD" -j"$JOBS" cubestream_tests cubestream_cli io_bench >>"$OUT/build.log" 2>&1; then
  tail -60 "$OUT/build.log"
  log "build failed"
  exit 1
fi
grep -E "io_uring read engine|liburing|CUDA on" "$OUT/build.log" || true
log "built"

# What every block device says about itself (the facts the O_DIRECT depth and piece size are
# chosen from: src/store/file/device_tuning.hpp).
for d in /sys/block/*; do
  q=$d/queue
  printf '%s: max_sectors_kb=%s max_hw_sectors_kb=%s nr_requests=%s rotational=%s hw_queues=%s driver=%s\n' \
    "${d##*/}" "$(cat $q/max_sectors_kb 2>/dev/null)" "$(cat $q/max_hw_sectors_kb 2>/dev/null)" \
    "$(cat $q/nr_requests 2>/dev/null)" "$(cat $q/rotational 2>/dev/null)" "$(ls -d $d/mq/*/ 2>/dev/null | wc -l)" \
    "$(basename "$(readlink -e $d/device/driver 2>/dev/null || readlink -e $d/device/device/driver 2>/dev/null)")"
done >"$OUT/sysfs.txt" 2>&1
cat "$OUT/sysfs.txt"
mkdir -p "$DATA"
{
  echo "## cubestream info $DATA"; "$BUILD/cubestream" info "$DATA"
  echo; echo "## CUBESTREAM_IO_DIRECT=1"; CUBESTREAM_IO_DIRECT=1 "$BUILD/cubestream" info "$DATA" | grep -E "^io |^block|^o_direct"
  echo; echo "## CUBESTREAM_IO_ENGINE=pread CUBESTREAM_GDS=on"; CUBESTREAM_IO_ENGINE=pread CUBESTREAM_GDS=on "$BUILD/cubestream" info | tail -4
} >"$OUT/info.txt" 2>&1
cat "$OUT/info.txt"

log "tests"
timeout -k 5 120 "$BUILD/tests/cubestream_tests" --gtest_filter='*StoreConformance*:Engine*:IoSettings*:DeviceRead*:*ThreadPool*' >"$OUT/tests.log" 2>&1
rc=$?
tail -5 "$OUT/tests.log"; grep -E "FAILED|SKIPPED" "$OUT/tests.log" | head -20
log "tests rc=$rc"

log "io_bench"
timeout -k 5 420 "$BUILD/io_bench" --dir "$DATA" --shards "$SHARDS" --chunks "$CHUNKS" --repeat "$REPEAT" \
  --threads "$THREADS" --out "$OUT/io_bench.md"
log "io_bench rc=$?"
rm -rf "$DATA"
log "done"
