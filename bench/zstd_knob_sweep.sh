#!/usr/bin/env bash
# The GPU Zstandard decoder's launch knobs on one batch shape (GPU machine): builds
# gpu_zstd_bench, then runs it once per setting in CONFIGS (space-separated; each setting is
# comma-separated VAR=VALUE environment words, "default" for none), writing one line of kernel
# GB/s per setting and level to $OUT/sweep.md and every run's table to $OUT/<setting>.md.
#
#   OUT=/empty/dir BATCH="--big 0 --small 1024" LEVELS=3,5 \
#     CONFIGS="default CUBESTREAM_ZSTD_SEQ_STEPS_PER_WARP=8 CUBESTREAM_ZSTD_EXEC_WARPS=16" \
#     bash bench/zstd_knob_sweep.sh
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=${OUT:?set OUT}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/sweep.log") 2>&1
BUILD=${BUILD:-build-sweep}  # an existing Release build with CUDA (e.g. build-gpu) is reused as it is
{ [ -f "$BUILD/build.ninja" ] || cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCUBESTREAM_CUDA=ON -DCUBESTREAM_BUILD_PYTHON=OFF \
  -DCUBESTREAM_BUILD_TESTS=OFF >"$OUT/build.log" 2>&1; } && ninja -C "$BUILD" gpu_zstd_bench >>"$OUT/build.log" 2>&1 ||
  { grep -E "error|FAILED" "$OUT/build.log" | head -20; exit 1; }
printf 'Rows: the setting, then gpu_zstd_bench'"'"'s own row (batch, level, ratio, kernel GB/s, ...).\n\n' >"$OUT/sweep.md"
for cfg in ${CONFIGS:-default}; do
  envs=()
  [ "$cfg" != default ] && IFS=, read -r -a envs <<<"$cfg"
  name=$(printf '%s' "$cfg" | sed 's/CUBESTREAM_ZSTD_//g' | tr -c 'A-Za-z0-9' '_')
  echo "== $cfg"
  env "${envs[@]}" timeout 200 "$BUILD/gpu_zstd_bench" ${BATCH:---big 0 --small 1024} --repeat "${REPEAT:-5}" \
    --v1-repeat 0 --levels "${LEVELS:-3,5}" --md "$OUT/$name.md" 2>&1 | grep -E "level [0-9]+:"
  grep -E "^\| era5" "$OUT/$name.md" | sed "s/^/| $cfg /" >>"$OUT/sweep.md"
done
cat "$OUT/sweep.md"
