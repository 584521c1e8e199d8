#!/usr/bin/env bash
# Compile-time variants of the numcodecs LZ4 path against each other on the GPU machine, in one
# call (issue 4, docs/gpu_decoders.md): each variant of VARIANTS ("name=CUDA flags;...", the
# first is the reference) is built in build-ab-<name>/ one after another with all cores (four
# builds side by side ran past the 10-minute limit in session 30), the GPU LZ4 tests run on the
# variants named in TESTS_FOR (default: every variant but the first), then ROUNDS interleaved
# rounds of gpu_decode_bench (which checks every chunk's bytes against the original) per variant,
# and the medians of the kernel times per case and variant.
#
#   OUT=/empty/dir VARIANTS="main=;off=-DCS_LZ4_TABLE_AHEAD=0" bash bench/lz4_variants_ab.sh
#
# A variant "name=@other VAR=value ..." builds nothing: it runs variant other's build with those
# environment settings (a runtime switch, e.g. "ready=@main CUBESTREAM_LZ4_MATCHES=ready").
#
# -> $OUT/session.log, build.log, gtest_<name>.log, bench.md (every run's table), summary.md.
# Knobs: ROUNDS (2), REPEAT (5, CS_BENCH_REPEAT), CS_BENCH_ERA5_COUNTS (1), CS_BENCH_CODEC (lz4),
# GTEST ('GpuBatch.Lz4*:Lz4*'), BENCH_TIMEOUT (90 s a run), TEST_TIMEOUT (120 s).
# SANITIZE="synccheck racecheck ..." (default none): after the benchmarks, each compute-sanitizer
# tool over SAN_GTEST (default 'GpuBatch.Lz4*') on every tested variant, SAN_TIMEOUT seconds a
# run (default 60; racecheck is ~100x slower than the tests: give it a narrow filter, e.g.
# SAN_GTEST='GpuBatch.Lz4Damaged*') -> $OUT/san_<tool>_<name>.log, a summary line each.
# Sanitizer runs want -lineinfo in the variant's flags, so that reports name source lines.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=${OUT:?set OUT}
VARIANTS=${VARIANTS:?set VARIANTS, e.g. main=;off=-DCS_LZ4_TABLE_AHEAD=0}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/session.log") 2>&1
log() { printf '[lz4_ab %s] %s\n' "$(date +%H:%M:%S)" "$*"; }
IFS=';' read -r -a specs <<<"$VARIANTS"
names=()
declare -A flags dir envs
for spec in "${specs[@]}"; do
  name=${spec%%=*}
  names+=("$name")
  flags[$name]=${spec#*=}
  dir[$name]=build-ab-$name
  envs[$name]=
  if [[ ${flags[$name]} == @* ]]; then
    read -r ref rest <<<"${flags[$name]#@}"
    dir[$name]=build-ab-$ref
    envs[$name]=$rest
  fi
done
TESTS_FOR=${TESTS_FOR:-${names[*]:1}}
extra=()
[ -d .devdeps/usr/include ] && extra=(-DCMAKE_CXX_FLAGS=-I$PWD/.devdeps/usr/include)
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
for name in "${names[@]}"; do
  [[ ${flags[$name]} == @* ]] && continue
  targets=gpu_decode_bench
  tests=OFF
  [[ " $TESTS_FOR " == *" $name "* ]] && { targets="gpu_decode_bench cubestream_tests"; tests=ON; }
  log "build $name (CUDA flags '${flags[$name]}', tests $tests)"
  cmake -S . -B "build-ab-$name" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCUBESTREAM_CUDA=ON -DCUBESTREAM_BUILD_PYTHON=OFF \
    -DCUBESTREAM_BUILD_TESTS=$tests "-DCMAKE_CUDA_FLAGS=${flags[$name]}" "${extra[@]}" >>"$OUT/build.log" 2>&1 &&
    ninja -C "build-ab-$name" $targets >>"$OUT/build.log" 2>&1 ||
    { log "build $name failed"; grep -E "error" "$OUT/build.log" | head -20; exit 1; }
done
log "built"
for name in $TESTS_FOR; do
  log "tests $name"
  timeout "${TEST_TIMEOUT:-120}" env ${envs[$name]} "${dir[$name]}/tests/cubestream_tests" --gtest_filter="${GTEST:-GpuBatch.Lz4*:Lz4*}" \
    >"$OUT/gtest_$name.log" 2>&1
  rc=$?
  log "tests $name rc=$rc"
  grep -E "^\[  (PASSED|FAILED) |Failure" "$OUT/gtest_$name.log" | head -10
  [ $rc -eq 0 ] || { log "stopping: $name fails its tests (or hangs: rc 124)"; exit 1; }
done
for round in $(seq 1 "${ROUNDS:-2}"); do
  for name in "${names[@]}"; do
    log "bench $name round $round"
    echo "## $name round $round" >>"$OUT/bench.md"
    CS_BENCH_CODEC=${CS_BENCH_CODEC:-lz4} CS_BENCH_REPEAT=${REPEAT:-5} CS_BENCH_ERA5_COUNTS=${CS_BENCH_ERA5_COUNTS:-1} \
      timeout "${BENCH_TIMEOUT:-90}" env ${envs[$name]} "${dir[$name]}/gpu_decode_bench" >"$OUT/run.tmp" 2>&1
    log "rc=$?"
    grep -E '^\| [a-z0-9_]+' "$OUT/run.tmp" | grep -v '^| batch' | tee -a "$OUT/bench.md" | cut -d'|' -f2,3,7,8
  done
done
rm -f "$OUT/run.tmp"
/usr/bin/python3 - "$OUT/bench.md" <<'PY' | tee "$OUT/summary.md"
import collections, statistics, sys
runs = collections.defaultdict(list)  # (case, variant) -> kernel ms
variants, cases = [], []
name = None
for line in open(sys.argv[1]):
    if line.startswith("## "):
        name = line.split()[1]
        if name not in variants:
            variants.append(name)
        continue
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if len(cells) < 7:
        continue
    case = f"{cells[0]} / {cells[1]}"
    if case not in cases:
        cases.append(case)
    try:
        runs[(case, name)].append(float(cells[5]))
    except ValueError:
        pass
print("| case | " + " | ".join(f"{v} kernel ms" for v in variants) + " | " +
      " | ".join(f"{v} / {variants[0]}" for v in variants[1:]) + " |")
print("|---" * (1 + 2 * len(variants) - 1) + "|")
for case in cases:
    med = [statistics.median(runs[(case, v)]) if runs[(case, v)] else float("nan") for v in variants]
    print(f"| {case} | " + " | ".join(f"{m:.3f}" for m in med) + " | " +
          " | ".join(f"{m / med[0]:.3f}" for m in med[1:]) + " |")
PY
for tool in ${SANITIZE:-}; do
  for name in $TESTS_FOR; do
    log "$tool $name"
    timeout "${SAN_TIMEOUT:-60}" env ${envs[$name]} compute-sanitizer --tool "$tool" --print-limit 20 --error-exitcode 9 \
      "${dir[$name]}/tests/cubestream_tests" --gtest_filter="${SAN_GTEST:-GpuBatch.Lz4*}" >"$OUT/san_${tool}_$name.log" 2>&1
    rc=$?
    log "$tool $name rc=$rc (0: clean, 9: reports, 124: past SAN_TIMEOUT)"
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY|^\[  (PASSED|FAILED) " "$OUT/san_${tool}_$name.log" | head -4
  done
done
log done
