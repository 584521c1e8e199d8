#!/usr/bin/env bash
# One session on a one-GPU machine for the GPU path (issues 4 and 6), as named steps over one
# build (build-gpu/), so that a session can be split over several calls of a warm machine:
#
#     OUT=/empty/dir STEPS="build loader-tests train cold" bash bench/one_gpu_session.sh
#     OUT=/empty/dir STEPS="build gpu-tests memcheck zstd lz4" bash bench/one_gpu_session.sh
#
# Steps (each capped and logged; a failed step does not stop the later ones):
#   build         cmake + ninja: BUILD_TARGETS (default: the CLI, the Python module, the tests,
#                 both decoder benches)
#   loader-tests  LOADER_FILTER (default LoaderCuda* and HostDecode*: the GPU path's bits against
#                 the host path's)
#   gpu-tests     every GPU suite (Gpu*, Zstd*, Lz4*, Blosc*, LoaderCuda*, HostDecode*,
#                 DeviceRead*), then the Python codec and loader tests on the GPU
#   zstd-tests    the GPU Zstandard decoder's suites alone (ZstdBatch*, LargestFirst*, GpuBatch*)
#   memcheck      compute-sanitizer memcheck over MEMCHECK_FILTER
#   racecheck     compute-sanitizer racecheck, then synccheck (200 s each), over SANITIZE_FILTER (the
#                 zstd suites that run every pass, the traced sequence reader included)
#   pytest-loader tests/python/test_loader.py on the GPU
#   zstd          gpu_zstd_bench (256 x 4 MiB and 1024 x 64 KiB-1 MiB, levels 1,3,5) under two
#                 environments, ZSTD_ENV_A (default: none) and ZSTD_ENV_B (default: v3.3's
#                 sequence reader, CUBESTREAM_ZSTD_SEQ_READER=bits), alternated ZSTD_ROUNDS times:
#                 A/B -> zstd_{a,b}_rN.md
#   zstd-ncu      ncu: time, occupancy and instruction counts of each zstd kernel at levels 3 and 5
#                 (ZSTD_NCU_BATCH, default 256 x 4 MiB), each environment -> ncu_{a,b}.log
#   lz4           gpu_decode_bench's LZ4 and blosc cases (LZ4_CASES)
#   train         bench/train_bench.py (TRAIN_ONLY runs, TIMES steps, TRAIN_EPOCHS, TRAIN_BUDGET_S)
#   cold          bench/cold_loader.py on the train store (needs root for drop_caches)
#   read-tests    GPU reads into host memory (GpuRead*, ReadBackend*), then GpuReadCuda.* under
#                 compute-sanitizer memcheck
#   read-stores   the ERA5-like stores of the read benchmark (bench/make_era5_like.py, TensorStore):
#                 READ_STORES (default "zstd blosc-lz4"), READ_TIMES steps (520: 2.16 GB decoded)
#   read-bench    bench/read_bench.py on each of them: cubestream with READ_DECODES (auto,cpu,gpu)
#                 beside TensorStore, READ_REPEAT interleaved rounds -> read_<codec>.md/.json
#   read-sweep    GPU read waves: `cubestream bench read --decode gpu` on the zstd store for each
#                 CUBESTREAM_GPU_READ_WAVE_MB x CUBESTREAM_GPU_READ_SLOTS of READ_SWEEP
#                 ("MB:slots ..."), READ_SWEEP_ROUNDS alternated rounds -> read_sweep.log
# Everything lands flat in $OUT (at most ~8 files come back from the machine: the logs are
# packed into $OUT/logs.tar.gz at the end; session.log and the tables stay beside it).
# COMMIT names the tree in the results (the machine's copy has no .git).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=${OUT:?set OUT}
STEPS=${STEPS:-"build loader-tests train cold"}
BUILD=build-gpu
STORE=${STORE:-/tmp/cs_train_era5.zarr}
TIMES=${TIMES:-480}
TRAIN_ONLY=${TRAIN_ONLY:-synthetic/train,cubestream-gpu/train,cubestream-cpu/train,cubestream-gpu/loader-only,cubestream-cpu/loader-only,tensorstore/loader-only}
TRAIN_BUDGET_S=${TRAIN_BUDGET_S:-330}
MEMCHECK_FILTER=${MEMCHECK_FILTER:-LoaderCuda*:GpuBatch.Lz4*}
SANITIZE_FILTER=${SANITIZE_FILTER:-ZstdBatch.MixedBatch*:ZstdBatch.EverySequenceReader*}
LOADER_FILTER=${LOADER_FILTER:-LoaderCuda*:HostDecode*}
LZ4_CASES=${LZ4_CASES:-}
ZSTD_ENV_A=${ZSTD_ENV_A:-}
ZSTD_ENV_B=${ZSTD_ENV_B:-CUBESTREAM_ZSTD_SEQ_READER=bits}
BUILD_TARGETS=${BUILD_TARGETS:-cubestream_cli _cubestream cubestream_tests gpu_decode_bench gpu_zstd_bench}
READ_DIR=${READ_DIR:-/tmp/cs_read_stores}
READ_STORES=${READ_STORES:-"zstd blosc-lz4"}
READ_TIMES=${READ_TIMES:-520}
READ_DECODES=${READ_DECODES:-auto,cpu,gpu}
READ_REPEAT=${READ_REPEAT:-5}
READ_SWEEP=${READ_SWEEP:-"64:8 64:6 64:4 128:6"}
READ_SWEEP_ROUNDS=${READ_SWEEP_ROUNDS:-2}
COMMIT=${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
mkdir -p "$OUT/logs"
exec > >(tee -a "$OUT/session.log") 2>&1
START=$(date +%s)
log() { printf '[one_gpu %s +%4ss] %s\n' "$(date +%H:%M:%S)" "$(($(date +%s) - START))" "$*"; }
export PYTHONUNBUFFERED=1
step() {  # step NAME CAP_SECONDS command...
  local name=$1 cap=$2; shift 2
  case " $STEPS " in *" $name "*) ;; *) return 0;; esac
  local t0=$(date +%s) rc=0
  log "=== $name (cap ${cap}s)"
  timeout -k 10 "$cap" bash -c "$*" || rc=$?
  log "=== $name: rc=$rc in $(($(date +%s) - t0))s"
}
EXTRA=""
[ -d .devdeps/usr/include ] && EXTRA="-I$PWD/.devdeps/usr/include"
export BUILD OUT EXTRA STORE TIMES COMMIT READ_DIR
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader; nproc
log "commit $COMMIT, steps: $STEPS"

step build 420 '
  cmake -S . -B $BUILD -G Ninja -DCMAKE_BUILD_TYPE=Release -DCUBESTREAM_CUDA=ON -DCMAKE_CXX_FLAGS="$EXTRA" \
    -Dpybind11_DIR="$(python3 -m pybind11 --cmakedir)" >$OUT/logs/build.log 2>&1 &&
  ninja -C $BUILD '"$BUILD_TARGETS"' >>$OUT/logs/build.log 2>&1
  rc=$?; grep -E "error|FAILED" $OUT/logs/build.log | head -30; exit $rc'

step loader-tests 240 '
  $BUILD/tests/cubestream_tests --gtest_filter="'"$LOADER_FILTER"'" >$OUT/logs/loader_tests.log 2>&1; rc=$?
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran|Failure" $OUT/logs/loader_tests.log | head -20; exit $rc'

step gpu-tests 300 '
  $BUILD/tests/cubestream_tests --gtest_filter="Gpu*:Zstd*:Lz4*:Blosc*:LoaderCuda*:HostDecode*:DeviceRead*" \
    >$OUT/logs/gpu_tests.log 2>&1; rc=$?
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran|Failure" $OUT/logs/gpu_tests.log | head -30
  CUBESTREAM_CLI=$PWD/$BUILD/cubestream PYTHONPATH=$PWD/$BUILD/python python3 -m pytest -q -rs \
    tests/python/test_codecs.py tests/python/test_loader.py >$OUT/logs/pytest.log 2>&1 || rc=$?
  tail -6 $OUT/logs/pytest.log; exit $rc'

step zstd-tests 240 '
  $BUILD/tests/cubestream_tests --gtest_filter="ZstdBatch*:LargestFirst*:GpuBatch*" >$OUT/logs/zstd_tests.log 2>&1; rc=$?
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran|Failure" $OUT/logs/zstd_tests.log | head -20; exit $rc'

step memcheck 300 '
  compute-sanitizer --tool memcheck --error-exitcode 9 $BUILD/tests/cubestream_tests \
    --gtest_filter="'"$MEMCHECK_FILTER"'" >$OUT/logs/memcheck.log 2>&1; rc=$?
  grep -E "ERROR SUMMARY|PASSED|FAILED" $OUT/logs/memcheck.log | head; exit $rc'

step racecheck 420 '
  for tool in racecheck synccheck; do
    timeout -k 5 200 compute-sanitizer --tool $tool --error-exitcode 9 $BUILD/tests/cubestream_tests \
      --gtest_filter="'"$SANITIZE_FILTER"'" >$OUT/logs/$tool.log 2>&1 || rc=$?
    echo "$tool: $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/logs/$tool.log | tail -1)"
    grep -E "^\[  (PASSED|FAILED) " $OUT/logs/$tool.log | head -5
  done; exit ${rc:-0}'

step pytest-loader 180 '
  CUBESTREAM_CLI=$PWD/$BUILD/cubestream PYTHONPATH=$PWD/$BUILD/python python3 -m pytest -q -rs tests/python/test_loader.py \
    >$OUT/logs/pytest_loader.log 2>&1; rc=$?; tail -4 $OUT/logs/pytest_loader.log; exit $rc'

step zstd 300 '
  for round in $(seq 1 '"${ZSTD_ROUNDS:-2}"'); do
    for side in a b; do
      if [ $side = a ]; then e="'"$ZSTD_ENV_A"'"; else e="'"$ZSTD_ENV_B"'"; fi
      env $e $BUILD/gpu_zstd_bench --big 256 --small 1024 --repeat 5 --levels 1,3,5 \
        --md $OUT/zstd_${side}_r$round.md 2>>$OUT/logs/zstd_bench.log || echo "zstd bench $side ($e) rc=$?"
      echo "zstd side $side: $e"; grep -E "^\| era5" $OUT/zstd_${side}_r$round.md | cut -d"|" -f2,3,7,9,10
    done
  done'

step zstd-ncu 300 '
  command -v ncu >/dev/null || { echo "no ncu"; exit 0; }
  for side in a b; do
    if [ $side = a ]; then e="'"$ZSTD_ENV_A"'"; else e="'"$ZSTD_ENV_B"'"; fi
    for l in 3 5; do
      echo "---- side $side ($e), level $l, '"${ZSTD_NCU_BATCH:---big 256 --small 0}"'"
      env $e ncu --kernel-name regex:zstd_ --launch-count '"${ZSTD_NCU_LAUNCHES:-5}"' --metrics gpu__time_duration.sum,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,smsp__inst_executed.sum,smsp__thread_inst_executed_per_inst_executed.ratio \
        $BUILD/gpu_zstd_bench '"${ZSTD_NCU_BATCH:---big 256 --small 0}"' --repeat 1 --v1-repeat 0 --levels $l 2>&1 |
        grep -E "zstd_[a-z_]+kernel|gpu__time|warps_active|registers|inst_executed" | sed -E "s/\(.*//"
    done >$OUT/ncu_$side.log
    grep -E "kernel|gpu__time" $OUT/ncu_$side.log
  done'

step lz4 200 '
  CS_BENCH_CASE="'"$LZ4_CASES"'" $BUILD/gpu_decode_bench >$OUT/gpu_decode_bench.md 2>$OUT/logs/gpu_decode_bench.log
  rc=$?; tail -25 $OUT/gpu_decode_bench.md; exit $rc'

step train 420 '
  CUBESTREAM_CLI=$PWD/$BUILD/cubestream PYTHONPATH=$PWD/$BUILD/python python3 bench/train_bench.py --store $STORE \
    --make-store --timesteps $TIMES --epochs '"${TRAIN_EPOCHS:-2}"' --cli $BUILD/cubestream --out $OUT/train --budget-s '"$TRAIN_BUDGET_S"' \
    --commit "$COMMIT" --only '"$TRAIN_ONLY"' >$OUT/logs/train_bench.log 2>&1; rc=$?
  grep -vE "^\[(synthetic|cubestream|tensorstore)" $OUT/logs/train_bench.log | tail -60
  cp $OUT/train/train_bench.md $OUT/train/train_bench.json $OUT/ 2>/dev/null; exit $rc'

step cold 300 '
  PYTHONPATH=$PWD/$BUILD/python python3 bench/cold_loader.py --store $STORE --out $OUT --rounds '"${COLD_ROUNDS:-3}"' '

step read-tests 300 '
  $BUILD/tests/cubestream_tests --gtest_filter="GpuRead*:ReadBackend*" >$OUT/logs/read_tests.log 2>&1; rc=$?
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran|Failure" $OUT/logs/read_tests.log | head -20
  compute-sanitizer --tool memcheck --error-exitcode 9 $BUILD/tests/cubestream_tests \
    --gtest_filter="GpuReadCuda.*" >$OUT/logs/read_memcheck.log 2>&1 || rc=$?
  grep -E "ERROR SUMMARY|PASSED|FAILED" $OUT/logs/read_memcheck.log | head
  if [ -d $BUILD/python/cubestream ]; then
    PYTHONPATH=$PWD/$BUILD/python python3 -m pytest -q -rs tests/python/test_reader.py -k decode \
      >$OUT/logs/read_pytest.log 2>&1 || rc=$?; tail -3 $OUT/logs/read_pytest.log
  fi; exit $rc'

step read-stores 300 '
  mkdir -p $READ_DIR
  for c in '"$READ_STORES"'; do
    [ -d $READ_DIR/era5_$c.zarr ] && { echo "have $READ_DIR/era5_$c.zarr"; continue; }
    python3 bench/make_era5_like.py --out $READ_DIR/era5_$c.zarr --codec $c --timesteps '"$READ_TIMES"' \
      --threads $(nproc) 2>&1 | tail -3
  done'

step read-bench 420 '
  for c in '"$READ_STORES"'; do
    python3 bench/read_bench.py --store $READ_DIR/era5_$c.zarr --array 2m_temperature --threads $(nproc) \
      --repeat '"$READ_REPEAT"' --decode '"$READ_DECODES"' --out $OUT/logs/read --label era5_$c --cli $BUILD/cubestream \
      >$OUT/logs/read_bench_$c.log 2>&1 || echo "read_bench $c rc=$?"
    cp $OUT/logs/read/era5_$c.md $OUT/read_$c.md 2>/dev/null; cp $OUT/logs/read/era5_$c.json $OUT/read_$c.json 2>/dev/null
    cat $OUT/read_$c.md 2>/dev/null; grep ERROR $OUT/logs/read_bench_$c.log | head -5
  done'

step read-sweep 200 '
  for r in $(seq 1 '"$READ_SWEEP_ROUNDS"'); do
    for ws in '"$READ_SWEEP"'; do
      w=${ws%%:*}; sl=${ws##*:}
      g=$(CUBESTREAM_GPU_READ_WAVE_MB=$w CUBESTREAM_GPU_READ_SLOTS=$sl $BUILD/cubestream bench read $READ_DIR/era5_zstd.zarr \
        --array 2m_temperature --threads $(nproc) --decode gpu --repeat 5 --no-baseline --json |
        python3 -c "import json,sys; j=json.load(sys.stdin); st=j.get(\"gpu_staging_bytes\", {}); print(round(j[\"gbps_median\"],2), \"GB/s,\", j[\"chunks_decoded_on_gpu\"], \"chunks on the GPU, staging MiB pinned/device\", st.get(\"pinned_host\",0)>>20, st.get(\"device\",0)>>20)")
      echo "round $r wave ${w} MiB slots $sl: $g"
    done
    c=$($BUILD/cubestream bench read $READ_DIR/era5_zstd.zarr --array 2m_temperature --threads $(nproc) --decode cpu \
      --repeat 5 --no-baseline --json | python3 -c "import json,sys; print(round(json.load(sys.stdin)[\"gbps_median\"],2))")
    echo "round $r cpu decode: $c GB/s"
  done | tee $OUT/read_sweep.log'

# Few files come back: pack the logs (and the train run's plots) into one archive.
tar -czf "$OUT/logs.tar.gz" -C "$OUT" logs $( [ -d "$OUT/train" ] && echo train ) 2>/dev/null && rm -rf "$OUT/logs" "$OUT/train"
log "done"
