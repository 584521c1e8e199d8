#!/usr/bin/env bash
# The one command for a GPU-machine session (Ubuntu 24.04, 16 cores, H100, CUDA 13, Python 3.12
# with TensorStore; no internet). Run from the repository root with $OUT set:
#
#     OUT=/some/empty/dir bash bench/gpu_run.sh
#
# Steps (each timed and logged; a failed step is reported and the run goes on where it can):
#    1. environment report (GPU, CPU, tool versions)
#    2. TensorStore sharded fixtures -> $WORK/tensorstore, packed as $OUT/tensorstore.tar.gz
#       (unpack with: tar -xzf tensorstore.tar.gz -C tests/data/)
#    3. cmake configure (Release, CUDA on, pybind11 from pip) + ninja build in build-gpu/
#    4. pip install . --no-build-isolation --no-deps --target /tmp/cs_pip, in the background
#       (low priority) while steps 5-7 run; waited for (bounded) before the benchmark
#    5. ctest, excluding tests that need fixtures this machine cannot generate ($CTEST_EXCLUDE)
#    6. smoke check of the new fixtures with build-gpu/cubestream and the Python module
#    7. two ERA5-like stores (2.16 GB decoded each) under $WORK: Zarr v3 zstd-3 and Zarr v2
#       blosc-lz4 + shuffle
#    8. python3 -c "import cubestream" from /tmp/cs_pip
#    9. read benchmark, cubestream vs TensorStore, page cache, $THREADS threads, $REPEAT rounds
#   10. $OUT/bench.md + $OUT/bench.json
#
# $OUT receives at most 7 files, flat: gpu_run.log (this script's output), build.log, ctest.log,
# pip.log, tensorstore.tar.gz, bench.md, bench.json. Everything else stays in $WORK.
# The whole run is kept under 9 minutes: steps that no longer fit are skipped and reported.
#
# Knobs (environment): THREADS=16 REPEAT=5 TIMESTEPS=520 CTEST_EXCLUDE=Conformance
#   WORK=/tmp/cs_gpu_run PYTHON=python3 BUDGET_S=525 RESERVE_S=170 SKIP_PIP=0
# (RESERVE_S: seconds kept for the stores + benchmark when the build/tests run long)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO=$PWD
OUT=${OUT:-$REPO/.bench/out}
WORK=${WORK:-/tmp/cs_gpu_run}
THREADS=${THREADS:-16}
REPEAT=${REPEAT:-5}
TIMESTEPS=${TIMESTEPS:-520}
CTEST_EXCLUDE=${CTEST_EXCLUDE:-Conformance}
PYTHON=${PYTHON:-python3}
BUDGET_S=${BUDGET_S:-525}
SKIP_PIP=${SKIP_PIP:-0}
BUILD=build-gpu
CLI=$REPO/$BUILD/cubestream
PIP_TARGET=/tmp/cs_pip
ARRAY=2m_temperature

START=$(date +%s)
DEADLINE=$((START + BUDGET_S))
case "$WORK" in /tmp/?*|/var/tmp/?*|"$REPO"/.bench/?*) ;; *) echo "WORK=$WORK: use a folder under /tmp" >&2; exit 2;; esac
mkdir -p "$OUT"
rm -rf "$WORK"
mkdir -p "$WORK/results"
exec > >(tee -a "$OUT/gpu_run.log") 2>&1

log() { printf '[gpu_run %s +%4ss] %s\n' "$(date +%H:%M:%S)" "$(($(date +%s) - START))" "$*"; }
left() { echo $((DEADLINE - $(date +%s))); }
SUMMARY=()
record() { SUMMARY+=("$(printf '%-26s %-22s %4ss' "$1" "$2" "$3")"); }

# step NAME NEED_S FUNCTION: runs FUNCTION if at least NEED_S seconds of the budget are left;
# records ok / FAIL / SKIPPED. Never aborts the script.
step() {
  local name=$1 need=$2 fn=$3 t0 rc=0 status
  if [ "$(left)" -lt "$need" ]; then
    log "=== $name: SKIPPED (needs ~${need}s, $(left)s left in the budget)"
    record "$name" "SKIPPED(no time)" 0
    return 0
  fi
  t0=$(date +%s)
  log "=== $name: start"
  "$fn" || rc=$?
  if [ "$rc" -eq 0 ]; then status=ok; elif [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then status="TIMEOUT"; else status="FAIL(rc=$rc)"; fi
  log "=== $name: $status in $(($(date +%s) - t0))s"
  record "$name" "$status" "$(($(date +%s) - t0))"
  return 0
}
# Seconds to give a step: its own cap, or less if the budget is shorter. capr also keeps
# RESERVE_S seconds for the ERA5 stores and the benchmark, which come last.
RESERVE_S=${RESERVE_S:-170}
cap() { local c=$1 l; l=$(($(left) - 10)); [ "$l" -lt "$c" ] && c=$l; [ "$c" -lt 5 ] && c=5; echo "$c"; }
capr() { local c=$1 l; l=$(($(left) - RESERVE_S)); [ "$l" -lt "$c" ] && c=$l; [ "$c" -lt 5 ] && c=5; echo "$c"; }

# ---- 1. environment -----------------------------------------------------------------------
s_env() {
  log "repo $REPO, OUT $OUT, WORK $WORK, THREADS $THREADS, REPEAT $REPEAT, TIMESTEPS $TIMESTEPS"
  nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap --format=csv || true
  echo "cpus: $(nproc)"; lscpu | grep -E 'Model name|Socket|Thread|NUMA node\(s\)' || true
  free -g || true; df -h /tmp "$REPO" || true
  cmake --version | head -1 || true; ninja --version || true
  (nvcc --version || /usr/local/cuda/bin/nvcc --version) 2>/dev/null | tail -2 || true
  "$PYTHON" - <<'EOF' || true
import sys, importlib
print("python", sys.version.split()[0])
for m in ("numpy", "tensorstore", "pybind11", "scikit_build_core", "torch"):
    try:
        print(f"{m:18s}", getattr(importlib.import_module(m), "__version__", "?"))
    except Exception as e:
        print(f"{m:18s} MISSING ({type(e).__name__})")
EOF
  [ -f pyproject.toml ] && log "pyproject.toml present" || log "pyproject.toml ABSENT"
  git rev-parse --short HEAD 2>/dev/null && git status --short 2>/dev/null | head -20 || log "(no git metadata in this copy)"
}

# ---- 2. TensorStore fixtures -----------------------------------------------------------------
s_fixtures() {
  local rc=0
  timeout -k 5 "$(cap 120)" "$PYTHON" tests/fixtures/tensorstore/make_sharded.py "$WORK/tensorstore" || rc=$?
  if [ -f "$WORK/tensorstore/manifest.json" ]; then
    tar -C "$WORK" -czf "$OUT/tensorstore.tar.gz" tensorstore
    log "packed $(tar -tzf "$OUT/tensorstore.tar.gz" | wc -l) entries, $(du -h "$OUT/tensorstore.tar.gz" | cut -f1) -> $OUT/tensorstore.tar.gz"
  fi
  return $rc
}

# ---- 3. build ----------------------------------------------------------------------------------
BUILD_OK=0
s_build() {
  local pbdir
  pbdir=$("$PYTHON" -m pybind11 --cmakedir 2>/dev/null || true)
  local args=(-S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCUBESTREAM_CUDA=ON)
  if [ -n "$pbdir" ]; then args+=("-Dpybind11_DIR=$pbdir"); else log "no pybind11 cmake dir: Python module not built"; fi
  local rc=0
  log "cmake ${args[*]}"
  timeout -k 5 "$(cap 150)" cmake "${args[@]}" >"$OUT/build.log" 2>&1 || rc=$?
  if [ "$rc" -ne 0 ]; then tail -40 "$OUT/build.log"; return "$rc"; fi
  grep -E 'cubestream:|pybind11|not found|blosc' "$OUT/build.log" | head -20 || true
  log "ninja -C $BUILD"
  timeout -k 5 "$(cap 330)" ninja -C "$BUILD" >>"$OUT/build.log" 2>&1 || rc=$?
  if [ "$rc" -ne 0 ]; then
    grep -E 'error|FAILED' "$OUT/build.log" | head -40; tail -20 "$OUT/build.log"; return "$rc"
  fi
  tail -2 "$OUT/build.log"
  [ -x "$CLI" ] || { log "build finished but $CLI is missing"; return 1; }
  BUILD_OK=1
  ls -la "$CLI" "$BUILD"/python/cubestream 2>/dev/null || true
}

# ---- 4. pip install (background) -----------------------------------------------------------
PIP_PID=""
pip_start() {
  if [ "$SKIP_PIP" = 1 ]; then log "pip check skipped (SKIP_PIP=1)"; record "pip install (bg)" "SKIPPED" 0; return 0; fi
  if [ ! -f pyproject.toml ]; then
    log "pip check: no pyproject.toml in the repo"; echo "no pyproject.toml" >"$OUT/pip.log"
    record "pip install (bg)" "FAIL(no pyproject)" 0; return 0
  fi
  rm -rf "$PIP_TARGET"
  log "starting in background: pip install . --no-build-isolation --no-deps --target $PIP_TARGET"
  # own process group (setsid) so that it can be stopped with everything it started
  PIP_T0=$(date +%s)
  PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 CMAKE_BUILD_PARALLEL_LEVEL=$THREADS \
    setsid nice -n 15 "$PYTHON" -m pip install . --no-build-isolation --no-deps --target "$PIP_TARGET" -v \
    >"$OUT/pip.log" 2>&1 &
  PIP_PID=$!
}
pip_wait() {  # pip_wait MAX_S
  [ -n "$PIP_PID" ] || return 0
  local max=$1 waited=0 rc=0
  while kill -0 "$PIP_PID" 2>/dev/null && [ "$waited" -lt "$max" ]; do sleep 2; waited=$((waited + 2)); done
  if kill -0 "$PIP_PID" 2>/dev/null; then
    log "pip install still running after $(($(date +%s) - PIP_T0))s: stopping it (process group $PIP_PID)"
    kill -- "-$PIP_PID" 2>/dev/null || true; sleep 1; kill -9 -- "-$PIP_PID" 2>/dev/null || true
    wait "$PIP_PID" 2>/dev/null || true
    record "pip install (bg)" "TIMEOUT" "$(($(date +%s) - PIP_T0))"
    PIP_PID=""; return 1
  fi
  wait "$PIP_PID" || rc=$?
  local st=ok; [ "$rc" -eq 0 ] || st="FAIL(rc=$rc)"
  log "pip install: $st after $(($(date +%s) - PIP_T0))s"; tail -5 "$OUT/pip.log"
  record "pip install (bg)" "$st" "$(($(date +%s) - PIP_T0))"
  PIP_PID=""; return "$rc"
}

# ---- 5. ctest ----------------------------------------------------------------------------------
s_ctest() {
  [ "$BUILD_OK" = 1 ] || { log "no build"; return 1; }
  log "excluded by -E '$CTEST_EXCLUDE': $(ctest --test-dir "$BUILD" -N -R "$CTEST_EXCLUDE" 2>/dev/null | tail -1)"
  local rc=0
  timeout -k 5 "$(capr 150)" ctest --test-dir "$BUILD" --output-on-failure -j "$THREADS" --timeout 120 \
    -E "$CTEST_EXCLUDE" >"$OUT/ctest.log" 2>&1 || rc=$?
  grep -E 'tests passed|tests failed|\*\*\*Failed|\*\*\*Timeout|Not Run|Total Test time' "$OUT/ctest.log" | head -40 || true
  return $rc
}

# ---- 6. fixture smoke check ------------------------------------------------------------------
s_check() {
  [ -f "$WORK/tensorstore/manifest.json" ] || { log "no fixtures"; return 1; }
  PYTHONPATH="$REPO/$BUILD/python${PYTHONPATH:+:$PYTHONPATH}" timeout -k 5 "$(capr 90)" \
    "$PYTHON" tests/fixtures/tensorstore/check_with_cubestream.py "$WORK/tensorstore" --cli "$CLI"
}

# ---- 7. ERA5-like stores -----------------------------------------------------------------------
s_era5_zstd() {
  timeout -k 5 "$(cap 180)" "$PYTHON" bench/make_era5_like.py --out "$WORK/era5_zstd.zarr" --codec zstd \
    --timesteps "$TIMESTEPS" --threads "$THREADS"
}
s_era5_blosc() {
  timeout -k 5 "$(cap 180)" "$PYTHON" bench/make_era5_like.py --out "$WORK/era5_blosc.zarr" --codec blosc-lz4 \
    --timesteps "$TIMESTEPS" --threads "$THREADS"
}

# ---- 8. import from the pip target ---------------------------------------------------------
s_import() {
  [ -d "$PIP_TARGET" ] || { log "no $PIP_TARGET"; return 1; }
  (cd "$PIP_TARGET" && "$PYTHON" -c "import cubestream, sys; print('imported', cubestream.__file__); print('api:', ', '.join(n for n in dir(cubestream) if not n.startswith('_')))") &&
  (cd /tmp && PYTHONPATH="$PIP_TARGET" "$PYTHON" -c "import cubestream; print('also from /tmp with PYTHONPATH:', cubestream.__file__)")
}

# ---- 9. benchmark ------------------------------------------------------------------------------
bench_one() {  # bench_one LABEL STORE
  [ -d "$2" ] || { log "no store $2"; return 1; }
  timeout -k 5 "$(cap 200)" "$PYTHON" bench/read_bench.py --store "$2" --array "$ARRAY" --threads "$THREADS" \
    --repeat "$REPEAT" --out "$WORK/results" --label "$1" --cli "$CLI"
}
s_bench_zstd() { bench_one era5_v3_zstd "$WORK/era5_zstd.zarr"; }
s_bench_blosc() { bench_one era5_v2_blosc_lz4 "$WORK/era5_blosc.zarr"; }

s_summary() {
  "$PYTHON" bench/summarize.py --results "$WORK/results" --md "$OUT/bench.md" --json "$OUT/bench.json" \
    --title "cubestream whole-array read benchmark (bench/gpu_run.sh)" \
    --note "threads=$THREADS repeat=$REPEAT timesteps=$TIMESTEPS; stores written just before by bench/make_era5_like.py (page cache warm)"
}

# ---- run ---------------------------------------------------------------------------------------
log "cubestream gpu_run: budget ${BUDGET_S}s"
step "environment" 5 s_env
step "tensorstore fixtures" 30 s_fixtures
step "configure + build" 60 s_build
pip_start
step "ctest -E $CTEST_EXCLUDE" $((RESERVE_S + 40)) s_ctest
step "fixture smoke check" $((RESERVE_S + 15)) s_check
step "era5 zstd store" 60 s_era5_zstd
step "era5 blosc store" 60 s_era5_blosc
# the benchmark wants a quiet machine: let pip finish, but keep ~100 s for the benchmark
if [ -n "$PIP_PID" ]; then
  maxwait=$(($(left) - 110)); [ "$maxwait" -lt 0 ] && maxwait=0
  log "waiting up to ${maxwait}s for the background pip install"
  pip_wait "$maxwait" || true
fi
step "import from $PIP_TARGET" 10 s_import
step "bench v3 zstd" 35 s_bench_zstd
step "bench v2 blosc-lz4" 35 s_bench_blosc
step "summary" 3 s_summary

for f in "$OUT"/build.log "$OUT"/ctest.log "$OUT"/pip.log; do   # device limit: 16 MB a file
  if [ -f "$f" ] && [ "$(stat -c %s "$f")" -gt 15000000 ]; then
    tail -c 15000000 "$f" >"$f.tmp" && mv "$f.tmp" "$f"; log "truncated $f to its last 15 MB"
  fi
done
log "================ summary ($(($(date +%s) - START))s of ${BUDGET_S}s) ================"
printf '%s\n' "${SUMMARY[@]}"
[ -f "$OUT/bench.md" ] && grep -E '^\|' "$OUT/bench.md" || true
log "files in $OUT:"; ls -la "$OUT"
sleep 1   # let tee flush
