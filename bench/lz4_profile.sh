#!/usr/bin/env bash
# Where the numcodecs LZ4 segmented path spends its time (issue 4, docs/gpu_decoders.md): one
# build with line info (build-prof/, gpu_decode_bench only), then Nsight Compute on each kernel of
# KERNELS for each bench case of CASES (CS_BENCH_CASE texts, separated by ';') under each setting of VARIANTS:
# speed of light, occupancy, warp states, scheduler, memory workload and the source-level stall
# sampling, as text (the details page's main lines, and bench/ncu_top_lines.py's SASS lines and
# CUDA source lines with the most stall samples, the latter from the source the report imports)
# -> $OUT/profile.log, everything else in $OUT/profile.tgz.
#
#   OUT=/empty/dir CASES="era5_4MiB x256 / lz4" VARIANTS="default CUBESTREAM_LZ4_WALK=serial" \
#     KERNELS="lz4_table_walk_kernel lz4_segment_kernel" bash bench/lz4_profile.sh
#
# CLOCK=base profiles at the base clock (ncu's default, steadier); unset, the GPU keeps its own
# clocks (--clock-control none), so that durations compare with the bench's.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=${OUT:?set OUT}
BUILD=${BUILD:-build-prof}
CASES=${CASES:-era5_4MiB x256 / lz4}
VARIANTS=${VARIANTS:-default}
KERNELS=${KERNELS:-lz4_table_walk_kernel lz4_segment_kernel}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/profile.log") 2>&1
log() { printf '[lz4prof %s] %s\n' "$(date +%H:%M:%S)" "$*"; }
log "build"
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCUBESTREAM_CUDA=ON -DCMAKE_CUDA_FLAGS=-lineinfo \
  -DCUBESTREAM_BUILD_PYTHON=OFF -DCUBESTREAM_BUILD_TESTS=OFF >"$OUT/build.log" 2>&1 &&
  ninja -C "$BUILD" gpu_decode_bench >>"$OUT/build.log" 2>&1 ||
  { log "build failed"; grep -E "error|FAILED" "$OUT/build.log" | head -20; exit 1; }
command -v ncu >/dev/null || { log "no ncu"; exit 1; }
IFS=';' read -r -a cases <<<"$CASES"  # cases are separated by ';'
for case_text in "${cases[@]}"; do
  for v in $VARIANTS; do
    e=""; [ "$v" != default ] && e=$v
    for k in $KERNELS; do
      tag=$(echo "${case_text}_${v}_${k}" | tr -c 'A-Za-z0-9_\n' '_')
      rep="$OUT/$tag"
      log "ncu: $k, case '$case_text', $v"
      env $e CS_BENCH_REPEAT=1 CS_BENCH_CASE="$case_text" timeout 240 ncu --kernel-name "regex:$k" --launch-count 1 \
        --import-source yes --clock-control "${CLOCK:-none}" --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
        --section SchedulerStats --section MemoryWorkloadAnalysis --section SourceCounters -o "$rep" -f \
        "$BUILD/gpu_decode_bench" >/dev/null 2>>"$OUT/ncu_err.log"
      [ -f "$rep.ncu-rep" ] || { log "no report"; continue; }
      ncu --import "$rep.ncu-rep" --page details >"$rep.txt" 2>&1
      grep -E "Duration|Achieved Occupancy|Registers Per|Issued Warp|No Eligible|Active Warps Per|Eligible Warps|Warp Cycles Per Issued|Memory Throughput|DRAM Throughput|L1/TEX Hit|L2 Hit|Issue Slots Busy" "$rep.txt" | head -20
      ncu --import "$rep.ncu-rep" --page source --csv --print-source sass >"$rep.sass.csv" 2>/dev/null
      python3 bench/ncu_top_lines.py "$rep.sass.csv" 20 --bands 100 | tee "$rep.top.txt"
      ncu --import "$rep.ncu-rep" --page source --csv --print-source cuda,sass >"$rep.cuda.csv" 2>/dev/null
      python3 bench/ncu_top_lines.py "$rep.cuda.csv" 25 | tee "$rep.lines.txt"
    done
  done
done
# At most ~8 files come back from the machine: everything goes into one archive.
rm -f "$OUT"/*.ncu-rep
(cd "$OUT" && tar -czf profile.tgz --exclude=profile.tgz --exclude=profile.log . ; find . -type f ! -name profile.tgz ! -name profile.log -delete)
log "done"
