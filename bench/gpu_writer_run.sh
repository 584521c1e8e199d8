#!/usr/bin/env bash
# The writer's checks on the GPU machine (16 cores, TensorStore; no zarr-python there):
#   1. build the `cubestream` command (build-gpu/);
#   2. bench/check_written_with_tensorstore.py: stores written by `cubestream rechunk` read by
#      TensorStore, bit for bit;
#   3. the rechunk benchmark on 16 cores: an ERA5-like source (bench/make_era5_like.py, one time
#      step per chunk) is first rechunked by cubestream itself into (10, 721, 1440) blosc-lz4 +
#      shuffle Zarr v2 chunks (make_rechunk_source.py needs zarr-python), then
#      bench/rechunk_bench.sh runs on it (cubestream, TensorStore; dask where installed).
# Logs land in $OUT.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=${OUT:?set OUT}
BUILD=build-gpu
WORK=/tmp/cs_writer_run
mkdir -p "$OUT" "$WORK"
exec > >(tee -a "$OUT/writer_run.log") 2>&1
log() { printf '[gpu_writer %s] %s\n' "$(date +%H:%M:%S)" "$*"; }
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCUBESTREAM_CUDA=ON -DCUBESTREAM_BUILD_PYTHON=OFF \
  >"$OUT/writer_build.log" 2>&1 && ninja -C "$BUILD" -j16 cubestream_cli >>"$OUT/writer_build.log" 2>&1 ||
  { log "build failed"; tail -30 "$OUT/writer_build.log"; exit 1; }
log "TensorStore check"
timeout 240 python3 bench/check_written_with_tensorstore.py --cli "$BUILD/cubestream" --work "$WORK/ts_check"
log "rc=$?"
log "rechunk benchmark source (T=${T:-400})"
python3 bench/make_era5_like.py --out "$WORK/steps.zarr" --codec blosc-lz4 --timesteps "${T:-400}" >/dev/null 2>&1 &&
  "$BUILD/cubestream" rechunk "$WORK/steps.zarr" "$WORK/era5_src.zarr" --chunks time=10 --codec blosc-lz4 --shuffle \
    --format 2 --no-progress --threads 16
log "rc=$? ; $(du -sh "$WORK/era5_src.zarr" | cut -f1) stored"
CLI=$PWD/$BUILD/cubestream PY=python3 THREADS=16 timeout 400 bash bench/rechunk_bench.sh "$WORK/era5_src.zarr" "$WORK/bench" |
  tee "$OUT/rechunk_bench.md"
log "done"
