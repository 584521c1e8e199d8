#!/usr/bin/env python3
"""The SASS lines with the most warp stall samples in an Nsight Compute source page.

    ncu --import REPORT.ncu-rep --page source --csv --print-source sass > page.csv
    python3 bench/ncu_top_lines.py page.csv [N] [--bands LINES]

Prints each line's share of the kernel's stall samples and of its executed instructions (where
the page has that column: the executed counts say which part of a kernel issues the most), and
its two largest stall reasons (the report must come from a build with -lineinfo and --section
SourceCounters). --bands LINES also prints both shares for each run of LINES consecutive SASS
lines (address order) that holds at least 0.5 % of either: a kernel's loops and phases show up
as bands (docs/gpu_decoders.md, version 14, reads the blosc unit kernel this way).
"""
import csv, sys
args = [a for a in sys.argv[1:]]
bands = None
if "--bands" in args:
    i = args.index("--bands")
    bands = int(args[i + 1])
    del args[i:i + 2]
rows = list(csv.reader(open(args[0], errors="replace")))
head = next((i for i, r in enumerate(rows) if "Source" in r and any("Sampling" in c for c in r)), None)
if head is None:
    print("no sampling columns"); sys.exit(0)
h = rows[head]
src = h.index("Source")
inst = next((i for i, c in enumerate(h) if c.startswith("Instructions Executed")), None)
samp = next(i for i, c in enumerate(h) if c.startswith("Warp Stall Sampling (All"))
stall_cols = [i for i, c in enumerate(h) if c.startswith("stall_") or "Stall" in c and "Sampling" not in c]
def num(x):
    try: return float(x.replace(",", ""))
    except ValueError: return 0.0
body = [r for r in rows[head + 1:] if len(r) > samp]
total = sum(num(r[samp]) for r in body) or 1.0
itotal = (sum(num(r[inst]) for r in body) or 1.0) if inst is not None else None
print(f"{len(body)} SASS lines, {total:.0f} stall samples" + (f", {itotal:.0f} instructions executed" if itotal else ""))
for r in sorted(body, key=lambda r: -num(r[samp]))[:int(args[1]) if len(args) > 1 else 25]:
    top = sorted(((num(r[i]), h[i]) for i in stall_cols), reverse=True)[:2]
    ishare = f"{100 * num(r[inst]) / itotal:5.1f}% inst  " if itotal else ""
    print(f"{100 * num(r[samp]) / total:5.1f}%  {ishare}{r[src].strip()[:70]:70s}  " + ", ".join(f"{n}={v:.0f}" for v, n in top if v))
if bands and itotal:
    print(f"bands of {bands} SASS lines (instructions executed, stall samples):")
    for a in range(0, len(body), bands):
        part = body[a:a + bands]
        v = sum(num(r[inst]) for r in part) / itotal
        w = sum(num(r[samp]) for r in part) / total
        if v >= 0.005 or w >= 0.005:
            print(f"  lines {a:5d}-{a + len(part) - 1:5d}: {100 * v:5.1f}% inst  {100 * w:5.1f}% stalls   first: {part[0][src].strip()[:50]}")
