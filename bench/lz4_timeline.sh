#!/usr/bin/env bash
# When each buffer of a numcodecs-LZ4 batch finishes, and why (issue 4, docs/gpu_decoders.md,
# session 34 item 5): a copy of the tree with bench/lz4_timeline.patch applied (%globaltimer
# stamps printed by the fused kernel: its start; each buffer's walk start and end; each buffer's
# last segment done; and for every 64th buffer each segment's push, its take by a worker, the end
# of its parse and its flag done), gpu_decode_bench built from it, each case of CASES
# (CS_BENCH_CASE texts separated by ';') run once (six launches of the kernel: the bench's
# check, then five timed), and per launch of the kernel:
#   span      kernel start to the last segment done, ms
#   walk end  when the walks end (median / 90 % / max over buffers), ms from the kernel's start
#   walk      how long a walk takes (median / max), ms; and the latest walk start (buffers that
#             wait for a walker block)
#   lag       a buffer's last segment done after its walk's end (median / 90 % / max), ms
#   last      the buffer that ends last: its walk's end and its lag
# then, for the sampled buffers of the case's last launch, the chain: the walk's pace (a push
# every .. us), the chain's pace (a segment done every .. us), and per segment (medians, us) the
# take (push to take), the parse (take to the wait: the parse, the literals and the own pass or
# the ready pass), the wait (to the segment before done) and its own copy (after both), and the
# final lag -> $OUT/timeline.txt; each case's raw
# stamps in $OUT/tl_<n>.txt.gz and the bench's own output in $OUT/bench_<n>.txt (n from 1).
#
#   OUT=/empty/dir CASES="era5_4MiB x256 / lz4;mixed_64KiB-1MiB x1024 / lz4;era5_4MiB x1 / lz4" \
#     bash bench/lz4_timeline.sh
#
# Extra CUDA flags for the build: CUDA_FLAGS. The printf calls cost the kernel some time (a
# few % in the batch): compare the parts with each other, not the span with the bench's times.
# The patch is against the segmented path (cuda/decode/lz4_segments.cu and its private headers)
# as of session 38: if it no longer applies, refresh it.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=${OUT:?set OUT}
CASES=${CASES:-era5_4MiB x256 / lz4;mixed_64KiB-1MiB x1024 / lz4;era5_4MiB x1 / lz4}
TREE=${TREE:-/tmp/cs_lz4_timeline}
mkdir -p "$OUT"
log() { printf '[timeline %s] %s\n' "$(date +%H:%M:%S)" "$*"; }
log build
. bench/patched_bench_build.sh
patched_bench_build "$TREE" "$PWD/bench/lz4_timeline.patch" "$OUT/timeline_build.log" || exit 1
patched_bench_cases "$TREE" '^TL[LWSPK] ' tl bench/lz4_timeline.py "$OUT/timeline.txt"
log done
