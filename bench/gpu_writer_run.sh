#!/usr/bin/env bash
# The writer-side run on the GPU machine (16 cores, TensorStore; no zarr-python or dask there):
#   1. build the `cubestream` command and the Python module (build-gpu/);
#   2. `cubestream synth` throughput on 16 cores: a full ERA5-like Zarr v3 store (11 variables,
#      13 levels, 0.25 degree, zstd, sharded) of SYNTH_SIZE (default 16G), then deleted;
#   3. bench/rechunk_bench.sh with THREADS=16 on a SIZE (default 10G) source that it makes with
#      `cubestream synth` (cubestream rechunk rows beside a TensorStore copy, same run);
#   4. the README's main job on the GPU (scripts/run_demo.sh with SKIP_SETUP=1): synth, stats,
#      U-Net steps with GPU decode beside the synthetic ceiling;
#   5. with CHECK_TS=1, bench/check_written_with_tensorstore.py (TensorStore reads what rechunk
#      writes, bit for bit).
# Logs land in $OUT.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=${OUT:?set OUT}
BUILD=build-gpu
WORK=/tmp/cs_writer_run
mkdir -p "$OUT" "$WORK"
exec > >(tee -a "$OUT/writer_run.log") 2>&1
log() { printf '[gpu_writer %s] %s\n' "$(date +%H:%M:%S)" "$*"; }
EXTRA=""
[ -d .devdeps/usr/include ] && EXTRA="-I$PWD/.devdeps/usr/include"
log "build"
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCUBESTREAM_CUDA=ON -DCMAKE_CXX_FLAGS="$EXTRA" \
  -Dpybind11_DIR="$(python3 -m pybind11 --cmakedir)" >"$OUT/writer_build.log" 2>&1 &&
  ninja -C "$BUILD" -j16 cubestream_cli _cubestream >>"$OUT/writer_build.log" 2>&1 ||
  { log "build failed"; grep -E "error|FAILED" "$OUT/writer_build.log" | head -30; exit 1; }
log "built"; nproc; df -h /tmp | tail -1

log "synth throughput: ${SYNTH_SIZE:-16G}, every variable, Zarr v3 zstd sharded, 16 threads"
rm -rf "$WORK/era5_full.zarr"
/usr/bin/time -v "$BUILD/cubestream" synth "$WORK/era5_full.zarr" --format 3 --size "${SYNTH_SIZE:-16G}" --threads 16 \
  --no-progress >"$OUT/synth_full.out.log" 2>"$OUT/synth_full.time.log"
log "rc=$? peak RSS $(awk -F': ' '/Maximum resident set size/ {printf "%.0f MB", $2 / 1024}' "$OUT/synth_full.time.log")"
cat "$OUT/synth_full.out.log"
rm -rf "$WORK/era5_full.zarr"

log "rechunk benchmark (SIZE=${SIZE:-10G}, 16 threads)"
rm -rf "$WORK/bench"
CLI=$PWD/$BUILD/cubestream PY=python3 THREADS=16 SIZE=${SIZE:-10G} timeout 420 bash bench/rechunk_bench.sh "" "$WORK/bench" |
  tee "$OUT/rechunk_bench.md"
log "rc=${PIPESTATUS[0]}"
rm -rf "$WORK/bench"

log "main job on the GPU"
SKIP_SETUP=1 BUILD_DIR=$BUILD PY=python3 DEMO_DIR=$WORK/demo timeout 240 bash scripts/run_demo.sh 2>&1 | tail -25
log "rc=${PIPESTATUS[0]}"

if [ "${CHECK_TS:-0}" = 1 ]; then
  log "TensorStore check"
  timeout 240 python3 bench/check_written_with_tensorstore.py --cli "$BUILD/cubestream" --work "$WORK/ts_check"
  log "rc=$?"
fi
log "done"
