#!/usr/bin/env bash
# Before/after of the GPU-decode loader in one GPU-machine session:
#
#     OUT=/empty/dir BASE=/path/to/baseline/tree TIMESTEPS=480 bash bench/ab_session.sh
#
# builds the baseline tree's Python module and this tree's module and test program (both into
# their own build-gpu/, at once, while the benchmark store is written), runs this tree's GPU
# and pipeline tests, then alternates loader-only runs of the two builds (bench/loader_ab.py,
# ROUNDS times each, GPU decode), and prints the per-epoch rows and a median table; PROFILE=1
# adds a profiled epoch of each build (GPU time per batch of each kernel and copy), MEMCHECK=1
# compute-sanitizer over this tree's LoaderCuda tests. The DLPack
# header comes from .devdeps (see bench/gpu_session.sh). Logs land flat in $OUT.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=${OUT:?set OUT}
BASE=${BASE:?set BASE to the baseline source tree}
ROUNDS=${ROUNDS:-2}
STORE=${STORE:-/tmp/cs_era5_6var.zarr}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/ab_session.log") 2>&1
log() { printf '[ab_session %s] %s\n' "$(date +%H:%M:%S)" "$*"; }
export PYTHONUNBUFFERED=1
HERE=$PWD
EXTRA=""
[ -d .devdeps/usr/include ] && EXTRA="-I$HERE/.devdeps/usr/include"
PYB=$(python3 -m pybind11 --cmakedir)

log "env"; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; nproc
configure() {  # $1: tree
  cmake -S "$1" -B "$1/build-gpu" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCUBESTREAM_CUDA=ON \
    -DCMAKE_CXX_FLAGS="$EXTRA" -Dpybind11_DIR="$PYB"
}
log "build baseline and this tree, write the store"
(configure "$BASE" && ninja -C "$BASE/build-gpu" -j8 _cubestream) >"$OUT/build_base.log" 2>&1 &
pb=$!
(configure "$HERE" && ninja -C "$HERE/build-gpu" -j8 cubestream_tests _cubestream cubestream_cli) >"$OUT/build_new.log" 2>&1 &
pn=$!
python3 bench/loader_bench.py --help >/dev/null  # fail early on import errors
python3 -c "import sys; sys.path.insert(0, 'bench'); import loader_bench; loader_bench.make_store('$STORE', ${TIMESTEPS:-480})" \
  >"$OUT/store.log" 2>&1 &
ps=$!
wait $pb; rb=$?; wait $pn; rn=$?; wait $ps; rs=$?
log "build base rc=$rb, build new rc=$rn, store rc=$rs"
for f in build_base build_new; do grep -E "error|FAILED" "$OUT/$f.log" | head -20; done
[ $rb -eq 0 ] && [ $rn -eq 0 ] && [ $rs -eq 0 ] || { tail -20 "$OUT/store.log"; exit 1; }

log "gtest (this tree)"
timeout 180 build-gpu/tests/cubestream_tests \
  --gtest_filter="${GTEST_FILTER:-LoaderCuda*:FlightQueue*:StagingArena*:StagingSlots*:GpuBatch*:Loader.*}" \
  >"$OUT/gtest.log" 2>&1
log "gtest rc=$?"; grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran|Failure" "$OUT/gtest.log" | head -30

log "pytest test_loader.py (this tree)"
CUBESTREAM_CLI=$HERE/build-gpu/cubestream PYTHONPATH=$HERE/build-gpu/python timeout 120 python3 -m pytest -q -rs tests/python/test_loader.py >"$OUT/pytest.log" 2>&1
log "pytest rc=$?"; tail -4 "$OUT/pytest.log"

for r in $(seq 1 "$ROUNDS"); do
  for side in before after; do
    tree=$BASE; [ $side = after ] && tree=$HERE
    log "round $r: $side"
    PYTHONPATH=$tree/build-gpu/python timeout 150 python3 bench/loader_ab.py --store "$STORE" --label $side \
      --out "$OUT/ab_${side}_$r.json" 2>&1 | grep -v "^\[make_era5"
  done
done

python3 - "$OUT" <<'EOF'
import glob, json, statistics, sys
rows = [r for f in sorted(glob.glob(sys.argv[1] + "/ab_*.json")) for r in json.load(open(f)) if not r["warmup"]]
print("| build | epochs | batches/s | delivered GB/s | decoded GB/s | fetch s | decode s | consumer wait s | memory peak GB |")
print("|---|---|---|---|---|---|---|---|---|")
for side in ("before", "after"):
    rs = [r for r in rows if r["label"] == side]
    if not rs:
        continue
    med = lambda f: statistics.median(f(r) for r in rs)
    print(f"| {side} | {len(rs)} | {med(lambda r: r['batches_per_s']):.2f} | {med(lambda r: r['delivered_gbs']):.2f} | "
          f"{med(lambda r: r['decoded_gbs']):.2f} | {med(lambda r: r['stats']['busy_s']['fetch']):.2f} | "
          f"{med(lambda r: r['stats']['busy_s']['decode']):.2f} | {med(lambda r: r['stats']['consumer_wait_s']):.2f} | "
          f"{med(lambda r: r['stats']['memory_peak']) / 1e9:.2f} |")
EOF
if [ "${PROFILE:-0}" = 1 ]; then
  for side in before after; do
    tree=$BASE; [ $side = after ] && tree=$HERE
    log "profile: $side"
    PYTHONPATH=$tree/build-gpu/python timeout 150 python3 bench/loader_ab.py --store "$STORE" --label $side --epochs 1 \
      --trace --profile --out "$OUT/profile_${side}.json" 2>&1 | grep -v "^\[make_era5\|^{" | tail -30
  done
fi
if [ "${MEMCHECK:-0}" = 1 ]; then
  log "memcheck: LoaderCuda (this tree)"
  timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 build-gpu/tests/cubestream_tests \
    --gtest_filter='LoaderCuda*' >"$OUT/memcheck.log" 2>&1
  log "memcheck rc=$?"; grep -E "ERROR SUMMARY|PASSED|FAILED" "$OUT/memcheck.log" | head
fi
log "done"
