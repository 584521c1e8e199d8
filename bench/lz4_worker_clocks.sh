#!/usr/bin/env bash
# Where the numcodecs-LZ4 segment workers spend their cycles, by phase (issue 4,
# docs/gpu_decoders.md, session 35 item 7): a copy of the tree with bench/lz4_worker_clocks.patch
# applied (clock64() laps in segment_worker, cuda/decode/lz4_segment_worker.cuh; each worker warp
# prints its sums once it leaves: a WKC line), gpu_decode_bench built from it, each case of CASES
# (CS_BENCH_CASE texts separated by ';') run once (six launches: the bench's check, then five
# timed), and per case, over every warp of every launch: each phase's share of the workers'
# cycles, cycles a segment by phase, and the spread of the warps' parse cycles a segment ->
# $OUT/worker_clocks.txt (the WKC lines of each case in $OUT/wkc_<n>.txt.gz, the bench's own output
# in $OUT/bench_<n>.txt).
#
#   OUT=/empty/dir CASES="era5_4MiB x256 / lz4;mixed_64KiB-1MiB x1024 / lz4;era5_4MiB x1 / lz4" \
#     bash bench/lz4_worker_clocks.sh
#
# The phases: idle (waiting for a queue entry, next_segment; in the fused kernel a walker
# block's warps count from their turn to segments), parse (the runs: parse_runs, its two passes
# and the lanes' scan; a segment without runs: its serial parse with its literals), lits (a
# segment with runs: its literals, 32 sequences at a time), ready (the pass before the wait: the
# own pass, or the bits' ready pass where it is on; the dependency levels' computation; the
# steps between), wait (the chain's wait for the segment before), match (its chained matches by
# levels or in groups), flag (the fence and the flag; since session 38, before in match). The
# summary also gives the chained records and their passes a segment, and the cycles a pass. Extra CUDA flags for the build: CUDA_FLAGS (e.g.
# -DCS_LZ4_RUNS=0 for the serial parse). The laps cost a few cycles a phase: compare phases,
# not the bench's times. The patch is against the workers as of session 38: if it no longer
# applies, refresh it with them.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=${OUT:?set OUT}
CASES=${CASES:-era5_4MiB x256 / lz4;mixed_64KiB-1MiB x1024 / lz4;era5_4MiB x1 / lz4}
TREE=${TREE:-/tmp/cs_worker_clocks}
mkdir -p "$OUT"
log() { printf '[worker_clocks %s] %s\n' "$(date +%H:%M:%S)" "$*"; }
log build
. bench/patched_bench_build.sh
patched_bench_build "$TREE" "$PWD/bench/lz4_worker_clocks.patch" "$OUT/worker_clocks_build.log" || exit 1
patched_bench_cases "$TREE" '^WKC ' wkc bench/lz4_worker_clocks.py "$OUT/worker_clocks.txt"
log done
