#!/usr/bin/env bash
# One GPU-machine session for the loader and the GPU decoders, over one build (build-gpu/):
#
#     OUT=/some/empty/dir PART=1 bash bench/gpu_session.sh   # build, tests, loader benchmark
#     OUT=/some/empty/dir PART=2 bash bench/gpu_session.sh   # memcheck, decoder benchmarks, pytest
#     OUT=/some/empty/dir PART=tests GTEST_FILTER='LoaderCuda*' bash bench/gpu_session.sh  # tests only
#
# The DLPack header is not installed there: carry .devdeps (../shared/offline-deps.sh .devdeps
# libdlpack-dev) and it is put on the include path. Logs and tables land flat in $OUT.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=${OUT:?set OUT}
PART=${PART:-1}
BUILD=build-gpu
STORE=/tmp/cs_era5_6var.zarr
mkdir -p "$OUT"
exec > >(tee -a "$OUT/session$PART.log") 2>&1
log() { printf '[gpu_session %s] %s\n' "$(date +%H:%M:%S)" "$*"; }
export PYTHONUNBUFFERED=1

# Both parts build first (a no-op when build-gpu/ is already there on a warm machine).
log "env"; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; nproc
EXTRA=""
[ -d .devdeps/usr/include ] && EXTRA="-I$PWD/.devdeps/usr/include"
log "configure + build"
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCUBESTREAM_CUDA=ON \
    -DCMAKE_CXX_FLAGS="$EXTRA" -Dpybind11_DIR="$(python3 -m pybind11 --cmakedir)" >"$OUT/build.log" 2>&1 &&
    ninja -C "$BUILD" -j16 cubestream_tests cubestream_cli _cubestream gpu_decode_bench gpu_zstd_bench >>"$OUT/build.log" 2>&1
rc=$?; log "build rc=$rc"; [ $rc -eq 0 ] || { grep -E "error|FAILED" "$OUT/build.log" | head -40; exit 1; }
if [ "$PART" = tests ]; then
  log "gtest ($GTEST_FILTER)"
  timeout 300 "$BUILD"/tests/cubestream_tests --gtest_filter="$GTEST_FILTER" >"$OUT/gtest.log" 2>&1
  log "gtest rc=$?"; grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran|Failure" "$OUT/gtest.log" | head -30
  log "pytest (codecs, loader)"
  CUBESTREAM_CLI=$PWD/$BUILD/cubestream PYTHONPATH=$PWD/$BUILD/python timeout 180 python3 -m pytest -q -rs \
    tests/python/test_codecs.py tests/python/test_loader.py >"$OUT/pytest.log" 2>&1; log "rc=$?"; tail -12 "$OUT/pytest.log"
elif [ "$PART" = 1 ]; then
  log "gtest: GPU suites, shared decoder logic, loader"
  timeout 240 "$BUILD"/tests/cubestream_tests \
    --gtest_filter="${GTEST_FILTER:-Gpu*:Zstd*:Lz4*:Blosc*:Loader*:Selection*:Sampler*}" >"$OUT/gtest.log" 2>&1
  log "gtest rc=$?"; grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran" "$OUT/gtest.log" | head -30
  log "loader benchmark"
  PYTHONPATH=$PWD/$BUILD/python timeout 420 python3 bench/loader_bench.py --store "$STORE" --make-store \
    --timesteps ${TIMESTEPS:-160} --epochs 2 --out "$OUT/loader_bench.json" 2>&1 | grep -v "^\[make_era5" | tail -40
  log "done part 1"
else
  log "memcheck: GPU batch suites"
  timeout 300 compute-sanitizer --tool memcheck --error-exitcode 9 "$BUILD"/tests/cubestream_tests \
    --gtest_filter='GpuBatch*:ZstdBatch*:LoaderCuda*' >"$OUT/memcheck.log" 2>&1
  log "memcheck rc=$?"; grep -E "ERROR SUMMARY|PASSED|FAILED" "$OUT/memcheck.log" | head
  log "decode bench (lz4, blosc)"
  timeout 150 "$BUILD"/gpu_decode_bench >"$OUT/gpu_decode_bench.md" 2>&1; log "rc=$?"; cat "$OUT/gpu_decode_bench.md" | tail -30
  log "zstd bench"
  timeout 150 "$BUILD"/gpu_zstd_bench --big 256 --small 1024 --repeat 5 --levels 1,3,5 \
    --md "$OUT/gpu_zstd_bench.md" 2>"$OUT/zstd_bench.log"; log "rc=$?"; cat "$OUT/gpu_zstd_bench.md" | tail -30
  log "pytest (codecs, loader)"
  CUBESTREAM_CLI=$PWD/$BUILD/cubestream PYTHONPATH=$PWD/$BUILD/python timeout 120 python3 -m pytest -q -rs tests/python/test_codecs.py tests/python/test_loader.py \
    >"$OUT/pytest.log" 2>&1; log "rc=$?"; tail -15 "$OUT/pytest.log"
  log "done part 2"
fi
