#!/usr/bin/env bash
# Where one numcodecs-LZ4 table walk spends its cycles, by phase (issue 4, docs/gpu_decoders.md):
# a copy of the tree with bench/lz4_walk_clocks.patch applied (clock64() around the table walk's
# phases in codec/logic/lz4_segments.hpp; every 16th walk of a buffer over 1 MiB prints its
# counters), gpu_decode_bench built from it, each case of CASES (CS_BENCH_CASE texts separated by
# ';') run once, and per case the medians over the printed walks: each phase's share of the walk,
# cycles a window and cycles a token of the chain -> $OUT/clocks.txt.
#
#   OUT=/empty/dir CASES="era5_4MiB x1 / lz4;era5_4MiB x256 / lz4" bash bench/lz4_walk_clocks.sh
#
# The phases: stage (taking the next table: the window's refill and its table fill, barriers
# included; with the window ahead, the default since session 32, the wait for it, also shown
# alone as join, and posting the next one), chain (warp 0 alone), tok (the token pass), marks
# (warp 0 alone), serial (the sequences the table declines). Extra CUDA flags for the build:
# CUDA_FLAGS (e.g. -DCS_LZ4_TABLE_AHEAD=0 for the walk without the window ahead). With -DCS_LZ4_TABLE_PIPELINE=1 the patch's second file counts the
# pipelined walk (lz4_table_pipeline.hpp) in the same line: stage is taking a table (its stage,
# the job's window) without the wait, join every wait for the team's job (chain by chain, not
# only at a table), tok the posts and the token passes run at once, marks the answers taken.
# The patch's third file counts the helpers' side (HLP lines): the first helper thread's cycles
# by job kind and part (block refills and fills, the block's token passes, the window ahead's
# copy and fill, the pipeline's pass, copy and fill, and the waits between jobs at barriers 2
# and 1), printed per case as shares of the helpers' time, jobs a buffer and cycles a job.
# Its WTK lines split warp 0's own token pass (warp_tokens, the default walk's pass while the
# helpers fill the window ahead) into part 1 (each lane's sequences read and summed), the scan,
# part 2 (placed and checked) and the first failing token's reduction, cycles a call, and count
# lane 0's cycles in the walk's segment marks that warp 0 pushes itself (the slot written, the
# segment before it pushed: the queue's atomic and its release store), and those it notes in
# the MarkRing for a helper thread to push (count, and the helper's cycles).
# The counters cost a few cycles a phase; compare shares and cycles, not the bench's times. The
# patch is against the walk as of session 34: if it no longer applies, refresh it with the walk.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=${OUT:?set OUT}
CASES=${CASES:-era5_4MiB x1 / lz4;era5_4MiB x256 / lz4;synth_721x1440 x256 / lz4}
TREE=${TREE:-/tmp/cs_walk_clocks}
mkdir -p "$OUT"
log() { printf '[walk_clocks %s] %s\n' "$(date +%H:%M:%S)" "$*"; }
log build
. bench/patched_bench_build.sh
patched_bench_build "$TREE" "$PWD/bench/lz4_walk_clocks.patch" "$OUT/clocks_build.log" || exit 1
IFS=';' read -r -a cases <<<"$CASES"
for c in "${cases[@]}"; do
  log "case '$c'"
  echo "## $c" >>"$OUT/clocks.txt"
  CS_BENCH_CODEC=lz4 CS_BENCH_REPEAT=1 CS_BENCH_ERA5_COUNTS=${CS_BENCH_ERA5_COUNTS:-1} CS_BENCH_CASE="$c" timeout 120 \
    "$TREE/build/gpu_decode_bench" 2>&1 | grep -E '^(CLK|HLP|WTK)' >"$OUT/clk.tmp"
  /usr/bin/python3 - "$OUT/clk.tmp" <<'PY' | tee -a "$OUT/clocks.txt"
import re, statistics, sys
rows = []
for line in open(sys.argv[1]):
    n = [int(x) for x in re.findall(r"-?\d+", line)]
    # in, total, stage, tables, restages, ahead taken, join, chain, calls, tokens, tok, marks,
    # serial, serial steps
    if len(n) == 14:
        rows.append(n)
if not rows:
    print("no walks printed")
    sys.exit(0)
med = lambda f: statistics.median(f(r) for r in rows)
print(f"walks {len(rows)}; cycles a walk {med(lambda r: r[1]):.0f}; tables {med(lambda r: r[3]):.0f} "
      f"({med(lambda r: r[5]):.0f} from the window ahead); cycles a table {med(lambda r: r[1] / r[3]):.0f}; "
      f"chain cycles a token {med(lambda r: r[7] / max(r[9], 1)):.1f}")
for name, k in (("stage", 2), ("(join)", 6), ("chain", 7), ("tok", 10), ("marks", 11), ("serial", 12)):
    print(f"  {name:6s} {100 * med(lambda r: r[k] / r[1]):5.1f} % of the walk, {med(lambda r: r[k] / r[3]):7.0f} cycles a table")
# the helpers' side (HLP lines: the first helper thread's cycles and job counts by part)
parts = ("stage", "fill", "tokens", "ahead copy", "ahead fill", "pipe pass", "pipe copy", "pipe fill", "wait", "split")
hlp = []
for line in open(sys.argv[1]):
    if line.startswith("HLP"):
        n = [int(x) for x in re.findall(r"-?\d+", line)]
        if len(n) == 1 + 2 * len(parts):
            hlp.append(n)
if hlp:
    print(f"helpers: buffers {len(hlp)}; their time by part (share of all their cycles, jobs a buffer, cycles a job):")
    total = lambda r: sum(r[1 + 2 * i] for i in range(len(parts)))
    for i, name in enumerate(parts):
        c, n = 1 + 2 * i, 2 + 2 * i
        if statistics.median(r[n] for r in hlp) == 0:
            continue
        share = statistics.median(r[c] / total(r) for r in hlp)
        per = statistics.median(r[c] / max(r[n], 1) for r in hlp)
        print(f"  {name:10s} {100 * share:5.1f} %, {statistics.median(r[n] for r in hlp):6.0f} jobs, {per:7.0f} cycles a job")
# warp 0's own token pass by part and the marks' pushes (WTK lines: size, calls, cycles of part 1,
# scan, part 2, reduction, then the marks warp 0 pushed and their cycles, the marks it noted in
# the ring, those the helper thread pushed and its cycles)
wtk = []
for line in open(sys.argv[1]):
    if line.startswith("WTK"):
        n = [int(x) for x in re.findall(r"-?\d+", line)]
        if len(n) == 11:
            wtk.append(n)
if wtk:
    med = lambda f: statistics.median(f(r) for r in wtk)
    if med(lambda r: r[1]) != 0:
        per = lambda k: med(lambda r: r[k] / max(r[1], 1))
        print(f"warp 0's token pass: buffers {len(wtk)}, {med(lambda r: r[1]):.0f} calls a buffer; "
              f"cycles a call: part 1 {per(2):.0f}, scan {per(3):.0f}, part 2 {per(4):.0f}, first failing {per(5):.0f}")
    print(f"marks pushed by warp 0: {med(lambda r: r[6]):.0f} a buffer, {med(lambda r: r[7] / max(r[6], 1)):.0f} "
          f"cycles each (slot written, the one before pushed), {med(lambda r: r[7]):.0f} cycles a buffer")
    print(f"marks noted in the ring: {med(lambda r: r[8]):.0f} a buffer; pushed by the helper thread "
          f"{med(lambda r: r[9]):.0f}, {med(lambda r: r[10] / max(r[9], 1)):.0f} cycles each")
PY
done
rm -f "$OUT/clk.tmp"
log done
