#!/usr/bin/env python3
"""The CUDA source lines with the most warp stall samples in an Nsight Compute source page.

    ncu ... --import-source yes --section SourceCounters -o REPORT APP     (a -lineinfo build)
    ncu --import REPORT.ncu-rep --page source --csv --print-source cuda,sass > page.csv
    python3 bench/ncu_cuda_lines.py page.csv [N]

In that page each source line (file, line number, text) carries the sums of the SASS lines
compiled from it, so a kernel's time can be read per line of our code: a helper warp waiting at
a barrier shows on the line after the barrier, a dependent chain on its load. Prints each line's
share of the kernel's stall samples and of its executed instructions, and its two largest stall
reasons. (Session 29 read one LZ4 walk this way: docs/gpu_decoders.md, "One buffer alone".)
"""
import csv, sys

args = sys.argv[1:]
if not args:
    print(__doc__); sys.exit(2)
rows = list(csv.reader(open(args[0], errors="replace")))
n_top = int(args[1]) if len(args) > 1 else 30
path, head, lines = "?", None, []
def num(x):
    try: return float(x.replace(",", ""))
    except ValueError: return 0.0
for r in rows:
    if len(r) == 2 and r[0] == "File Path":
        path = r[1].rsplit("/", 1)[-1]
        continue
    if r and r[0] == "Line No":
        head = r
        continue
    if head is None or len(r) < len(head) or r[0] == "":
        continue  # a SASS row under its source line, or a row before the first header
    lines.append((path, r))
if head is None:
    print("no source page with line numbers (a -lineinfo build and --import-source yes?)"); sys.exit(0)
samp = next(i for i, c in enumerate(head) if c.startswith("Warp Stall Sampling (All"))
inst = next((i for i, c in enumerate(head) if c.startswith("Instructions Executed")), None)
stall_cols = [i for i, c in enumerate(head) if c.startswith("stall_") and "Not Issued" not in c]
total = sum(num(r[samp]) for _, r in lines) or 1.0
itotal = (sum(num(r[inst]) for _, r in lines) or 1.0) if inst is not None else None
print(f"{len(lines)} source lines, {total:.0f} stall samples" + (f", {itotal:.0f} instructions executed" if itotal else ""))
for p, r in sorted(lines, key=lambda x: -num(x[1][samp]))[:n_top]:
    top = sorted(((num(r[i]), head[i]) for i in stall_cols), reverse=True)[:2]
    ishare = f"{100 * num(r[inst]) / itotal:5.1f}% inst  " if itotal else ""
    where = f"{p}:{r[0]}"
    print(f"{100 * num(r[samp]) / total:5.1f}%  {ishare}{where:28s} {r[1].strip()[:60]:60s}  " +
          ", ".join(f"{n}={v:.0f}" for v, n in top if v))
