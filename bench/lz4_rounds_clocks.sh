#!/usr/bin/env bash
# Where the lz4 rounds path spends a buffer's time (issue 4, docs/gpu_decoders.md, "Rounds of
# readiness"): a build with -DCS_LZ4_ROUNDS_CLOCKS=1 (build-rclk/, gpu_decode_bench only), whose
# kernel prints the phases' cycles of every 16th buffer (split walk's first walk, its later
# rounds, bitmap and emit walks, the rounds and their count), run with CUBESTREAM_LZ4_PATH=rounds
# on each bench case of CASES (CS_BENCH_CASE texts, ';'-separated), with each emit of WALKS
# (default "walk records": the emit walk, and CUBESTREAM_LZ4_ROUNDS_WALK=records) ->
# $OUT/clocks_<n>.log, and per case and emit the medians of each phase -> $OUT/clocks.md.
#
#   OUT=/empty/dir CASES="synth_721x1440 x256 / lz4;era5_4MiB x256 / lz4" bash bench/lz4_rounds_clocks.sh
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=${OUT:?set OUT}
CASES=${CASES:-synth_721x1440 x256 / lz4;era5_4MiB x256 / lz4;mixed_64KiB-1MiB x1024 / lz4}
mkdir -p "$OUT"
cmake -S . -B build-rclk -G Ninja -DCMAKE_BUILD_TYPE=Release -DCUBESTREAM_CUDA=ON -DCUBESTREAM_BUILD_PYTHON=OFF \
  -DCUBESTREAM_BUILD_TESTS=OFF "-DCMAKE_CUDA_FLAGS=-DCS_LZ4_ROUNDS_CLOCKS=1" >"$OUT/clocks_build.log" 2>&1 &&
  ninja -C build-rclk gpu_decode_bench >>"$OUT/clocks_build.log" 2>&1 || { echo "clocks build failed"; exit 1; }
IFS=';' read -r -a cases <<<"$CASES"
k=0
for c in "${cases[@]}"; do
  for walk in ${WALKS:-walk records}; do
    k=$((k + 1))
    echo "## $c, emit: $walk" >"$OUT/clocks_$k.log"
    CUBESTREAM_LZ4_PATH=rounds CUBESTREAM_LZ4_ROUNDS_WALK=$walk CS_BENCH_CODEC=lz4 CS_BENCH_REPEAT=1 CS_BENCH_CASE="$c" \
      timeout 120 build-rclk/gpu_decode_bench >>"$OUT/clocks_$k.log" 2>&1
  done
done
/usr/bin/python3 - "$OUT"/clocks_*.log <<'PY' | tee "$OUT/clocks.md"
import re, statistics, sys
pat = re.compile(r"rounds clocks: buffer \d+ in (\d+) out (\d+) regions (\d+) \| walk (\d+) \| fix (\d+) \((\d+) rounds\) "
                 r"\| emit (\d+) \| rounds (\d+) \((\d+)\) \| total (\d+)")
print("| case | buffers | regions | walk kcyc | fix kcyc (rounds) | emit kcyc | rounds kcyc (rounds) | total kcyc |")
print("|---|---|---|---|---|---|---|---|")
for path in sys.argv[1:]:
    lines = open(path).read().splitlines()
    name = lines[0][3:] if lines and lines[0].startswith("## ") else path
    rows = [tuple(int(x) for x in m.groups()) for m in map(pat.search, lines) if m]
    if not rows:
        print(f"| {name} | 0 | | | | | | |")
        continue
    med = lambda j: statistics.median(r[j] for r in rows)
    print(f"| {name} | {len(rows)} | {med(2):.0f} | {med(3)/1e3:.0f} | {med(4)/1e3:.0f} ({med(5):.0f}) | "
          f"{med(6)/1e3:.0f} | {med(7)/1e3:.0f} ({med(8):.0f}) | {med(9)/1e3:.0f} |")
PY
