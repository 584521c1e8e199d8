#!/usr/bin/env bash
# Rechunk benchmark: an ERA5-like Zarr v2 store in (10, 721, 1440) blosc-lz4 + shuffle chunks
# (WeatherBench2's codec; written by `cubestream synth`) into (1, 721, 1440) zstd chunks in
# shards of 64 time steps (Zarr v3), with `cubestream rechunk`, beside xarray + dask (to_zarr,
# Zarr v2: Debian's zarr-python 2.13 writes no v3) and TensorStore (where importable: a zarr ->
# zarr3 copy of the same data, same target layout), each under /usr/bin/time -v for the peak
# memory.
#
#   bench/rechunk_bench.sh [SOURCE_STORE] [WORK_DIR]
#
# SOURCE_STORE defaults to WORK_DIR/era5_src.zarr, generated when missing: 2m_temperature of
# SIZE decoded bytes (default 10G = 10 GiB, 2587 time steps; K/M/G suffixes), its time taken.
# Environment: CLI (default build/cubestream), PY (default /usr/bin/python3), THREADS (default
# nproc), MEMORY (cubestream --memory, default 2G), SKIP_DASK=1, SKIP_TENSORSTORE=1,
# KEEP=1 (keep each target; by default it is deleted after its row, to bound the disk used).
# Prints one Markdown table row per tool on stdout, then each cubestream row's plan (workers,
# items); logs in WORK_DIR (a failed row prints its log's tail).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=${2:-/tmp/cubestream_rechunk_bench}
src=${1:-$work/era5_src.zarr}
cli=${CLI:-$here/../build/cubestream}
py=${PY:-/usr/bin/python3}
threads=${THREADS:-$(nproc)}
memory=${MEMORY:-2G}
mkdir -p "$work"
if [ ! -d "$src" ]; then
  echo "generating the source: cubestream synth, ${SIZE:-10G} of 2m_temperature in (10, 721, 1440) blosc-lz4 + shuffle chunks"
  /usr/bin/time -v "$cli" synth "$src" --variables 2m_temperature --size "${SIZE:-10G}" --chunks time=10 --format 2 \
    --threads "$threads" --no-progress > "$work/synth.out.log" 2> "$work/synth.time.log"
  tail -3 "$work/synth.out.log"
  echo "synth peak RSS: $(awk -F': ' '/Maximum resident set size/ {printf "%.0f MB", $2 / 1024}' "$work/synth.time.log")"
  echo
fi

# Decoded bytes of the benchmarked array, from its .zarray (no zarr-python needed).
decoded=$("$py" -c "import json,sys,math; z=json.load(open(sys.argv[1] + '/2m_temperature/.zarray')); print(math.prod(z['shape']) * int(z['dtype'][2:]))" "$src")
src_stored=$(du -sb "$src" | cut -f1)

# run NAME OUT_DIR COMMAND...: times COMMAND, prints "| name | s | GB/s | peak RSS | stored |".
run() {
  local name=$1 out=$2
  shift 2
  rm -rf "$out"
  sync
  local log="$work/$name.time.log"
  /usr/bin/time -v "$@" > "$work/$name.out.log" 2> "$log" || {
    echo "| $name | failed (see $log) | | | |"
    failed+=("$log")
    rm -rf "$out"
    return
  }
  local wall rss
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$log" | awk -F: '{ if (NF==3) print $1*3600+$2*60+$3; else print $1*60+$2 }')
  rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$log")
  local stored
  stored=$(du -sb "$out" | cut -f1)
  awk -v n="$name" -v w="$wall" -v r="$rss" -v d="$decoded" -v s="$stored" -v t="$threads" 'BEGIN {
    printf "| %s | %d | %.1f | %.2f | %.0f MB | %.2f GB (%.2fx) |\n", n, t, w, d / w / 1e9, r / 1024, s / 1e9, d / s }'
  [ "${KEEP:-0}" = 1 ] || rm -rf "$out"
}
failed=()

echo "source: $src, $(awk -v d="$decoded" -v s="$src_stored" 'BEGIN{printf "%.2f GB decoded, %.2f GB stored", d/1e9, s/1e9}'), $threads threads, $(nproc) cores"
echo
echo "| tool | threads | wall s | GB/s (decoded) | peak RSS | stored (ratio) |"
echo "|---|---|---|---|---|---|"
run "cubestream rechunk --memory $memory" "$work/out_cubestream.zarr" \
  "$cli" rechunk "$src" "$work/out_cubestream.zarr" --chunks time=1 --shards time=64 --codec zstd:3 \
  --threads "$threads" --memory "$memory" --no-progress
run "cubestream rechunk --memory 512M" "$work/out_cubestream_512m.zarr" \
  "$cli" rechunk "$src" "$work/out_cubestream_512m.zarr" --chunks time=1 --shards time=64 --codec zstd:3 \
  --threads "$threads" --memory 512M --no-progress
# With a byte shuffle before zstd (a blosc container with cname zstd: what `advise` suggests).
run "cubestream rechunk --shuffle --memory $memory" "$work/out_cubestream_shuffle.zarr" \
  "$cli" rechunk "$src" "$work/out_cubestream_shuffle.zarr" --chunks time=1 --shards time=64 --codec zstd:3 --shuffle \
  --threads "$threads" --memory "$memory" --no-progress
# The same chunks without shards, and in Zarr v2, as xarray writes them (for the dask row).
run "cubestream rechunk (v2, no shards)" "$work/out_cubestream_v2.zarr" \
  "$cli" rechunk "$src" "$work/out_cubestream_v2.zarr" --chunks time=1 --codec zstd:3 --format 2 \
  --threads "$threads" --memory "$memory" --no-progress

if [ "${SKIP_DASK:-0}" != 1 ] && "$py" -c "import dask, xarray" 2>/dev/null; then
  run "xarray + dask to_zarr (v2, no shards)" "$work/out_dask.zarr" "$py" - "$src" "$work/out_dask.zarr" "$threads" <<'PY'
import sys, dask, numcodecs, xarray as xr
src, dst, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
dask.config.set(scheduler="threads", num_workers=threads)
ds = xr.open_zarr(src).chunk({"time": 1})
for v in ds.variables.values():
    v.encoding.clear()
enc = {"2m_temperature": {"compressor": numcodecs.Zstd(level=3), "chunks": (1, 721, 1440)}}
ds.to_zarr(dst, mode="w", encoding=enc, consolidated=True)
PY
fi

if [ "${SKIP_TENSORSTORE:-0}" != 1 ] && "$py" -c "import tensorstore" 2>/dev/null; then
  run "tensorstore copy (v3, sharded)" "$work/out_tensorstore.zarr" "$py" - "$src" "$work/out_tensorstore.zarr" <<'PY'
import sys, tensorstore as ts
src, dst = sys.argv[1], sys.argv[2]
a = ts.open({"driver": "zarr", "kvstore": {"driver": "file", "path": src + "/2m_temperature"}}).result()
codecs = [{"name": "sharding_indexed", "configuration": {"chunk_shape": [1, 721, 1440],
          "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "zstd", "configuration": {"level": 3}}],
          "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]}}]
b = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": dst + "/2m_temperature"},
             "metadata": {"shape": list(a.shape), "data_type": "float32", "chunk_grid": {"name": "regular",
             "configuration": {"chunk_shape": [64, 721, 1440]}}, "codecs": codecs}}, create=True).result()
step, n = 64, a.shape[0]
for t in range(0, n, step):  # one shard at a time; TensorStore does not clip slices at the edge
    b[t:min(t + step, n)].write(a[t:min(t + step, n)]).result()
PY
fi

echo
for f in "$work"/cubestream*.time.log; do
  [ -f "$f" ] || continue
  out=${f%.time.log}.out.log
  echo "plan of $(basename "${f%.time.log}"): $(grep -h "worker" "$out" "$f" 2>/dev/null | head -3 | tr '\n' ' ')"
done
for f in "${failed[@]}"; do
  echo
  echo "--- tail of $f"
  tail -25 "$f"
done
