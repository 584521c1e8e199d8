#!/usr/bin/env bash
# Where the GPU zstd kernels spend their time (issue 4, docs/gpu_zstd.md): one build with line
# info (build-prof/, gpu_zstd_bench only), then
#   1. the bench (256 x 4 MiB, levels 3 and 5) under each environment of VARIANTS, one after the
#      other, so that knobs (CUBESTREAM_ZSTD_EXEC_WARPS, ..._SEQ_STEPS_PER_WARP) compare in one run;
#   2. Nsight Compute on KERNELS at level 3: speed of light, occupancy, warp states, scheduler,
#      memory workload and the source-level stall sampling, as text (details page, and the
#      SASS lines with the most stall samples per kernel) -> $OUT/ncu_<kernel>.txt
#
#   OUT=/empty/dir VARIANTS="default CUBESTREAM_ZSTD_EXEC_WARPS=16" KERNELS="execute_units sequences" \
#     bash bench/zstd_profile.sh
#
# BATCH picks the batch (gpu_zstd_bench's arguments; default 256 x 4 MiB): BATCH="--big 0 --small
# 1024" profiles the 64 KiB-1 MiB chunks. SASS=1 also brings back cuobjdump's SASS of the zstd
# kernels (zstd_sass.txt inside the archive).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=${OUT:?set OUT}
BUILD=build-prof
VARIANTS=${VARIANTS:-default}
KERNELS=${KERNELS:-execute_units sequences entropy}
BATCH=${BATCH:---big 256 --small 0}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/profile.log") 2>&1
log() { printf '[prof %s] %s\n' "$(date +%H:%M:%S)" "$*"; }
EXTRA=""
[ -d .devdeps/usr/include ] && EXTRA="-I$PWD/.devdeps/usr/include"
log "build"
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCUBESTREAM_CUDA=ON -DCMAKE_CXX_FLAGS="$EXTRA" \
  -DCMAKE_CUDA_FLAGS=-lineinfo -DCUBESTREAM_BUILD_PYTHON=OFF -DCUBESTREAM_BUILD_TESTS=OFF >"$OUT/build.log" 2>&1 &&
  ninja -C "$BUILD" gpu_zstd_bench >>"$OUT/build.log" 2>&1 ||
  { log "build failed"; grep -E "error|FAILED" "$OUT/build.log" | head -20; exit 1; }
for v in $VARIANTS; do
  e=""; [ "$v" != default ] && e=$v
  log "bench: ${v}"
  env $e "$BUILD/gpu_zstd_bench" $BATCH --repeat 5 --v1-repeat 0 --levels 3,5 --md "$OUT/bench_${v//[^A-Za-z0-9]/_}.md" \
    2>>"$OUT/bench.log" | grep -E "^\| era5" | cut -d"|" -f2,3,7,9,10
done
if [ "${SASS:-0}" = 1 ]; then
  obj=$(find "$BUILD" -name 'zstd_batch.cu.o' | head -1)
  [ -n "$obj" ] && cuobjdump -sass "$obj" >"$OUT/zstd_sass.txt" 2>&1
fi
command -v ncu >/dev/null || { log "no ncu"; exit 0; }
for k in $KERNELS; do
  log "ncu: zstd_${k}_kernel, level 3"
  rep="$OUT/ncu_$k"
  timeout 240 ncu --kernel-name "regex:zstd_${k}_kernel" --launch-count 1 --import-source no \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
    --section SchedulerStats --section MemoryWorkloadAnalysis --section SourceCounters -o "$rep" -f \
    "$BUILD/gpu_zstd_bench" $BATCH --repeat 1 --v1-repeat 0 --levels 3 >/dev/null 2>>"$OUT/ncu_err.log"
  [ -f "$rep.ncu-rep" ] || { log "no report for $k"; continue; }
  ncu --import "$rep.ncu-rep" --page details >"$rep.txt" 2>&1
  grep -E "Duration|Achieved Occupancy|Theoretical Occupancy|Registers Per|Issued Warp|No Eligible|Active Warps Per|Eligible Warps|Warp Cycles Per Issued|Memory Throughput|L1/TEX Hit|L2 Hit|Block Limit|Stall" "$rep.txt" | head -40
  # The SASS lines with the most stall samples, and the stall reason columns of each.
  ncu --import "$rep.ncu-rep" --page source --csv --print-source sass >"$rep.sass.csv" 2>/dev/null
  python3 bench/ncu_top_lines.py "$rep.sass.csv" | tee "$rep.top.txt"
done
# At most ~8 files come back from the machine: everything goes into one archive.
rm -f "$OUT"/*.ncu-rep
(cd "$OUT" && tar -czf profile.tgz --exclude=profile.tgz --exclude=profile.log . ; find . -type f ! -name profile.tgz ! -name profile.log -delete)
log "done"
