#!/usr/bin/env python3
"""The lines with the most warp stall samples in an Nsight Compute source page: SASS lines, or
the lines of our CUDA source.

    ncu --import REPORT.ncu-rep --page source --csv --print-source sass > page.csv
    ncu --import REPORT.ncu-rep --page source --csv --print-source cuda,sass > page.csv
    python3 bench/ncu_top_lines.py page.csv [N] [--bands LINES]

Prints each line's share of the kernel's stall samples and of its executed instructions (where
the page has that column: the executed counts say which part of a kernel issues the most), and
its two largest stall reasons (the report must come from a build with -lineinfo and --section
SourceCounters). A cuda,sass page (the report also made with --import-source yes) gives each
source line (file:line) the sums of the SASS lines compiled from it, so a kernel's time reads
per line of our code: a warp waiting at a barrier shows on the line after it (session 29 read one
LZ4 walk this way: docs/gpu_decoders.md, "One buffer alone"). --bands LINES (SASS pages) also
prints both shares for each run of LINES consecutive SASS lines (address order) that holds at
least 0.5 % of either: a kernel's loops and phases show up as bands (docs/gpu_decoders.md,
version 14, reads the blosc unit kernel this way).
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
per_source = h[0] == "Line No"  # a cuda,sass page: source-line rows, each followed by its SASS rows
src = h.index("Source")
inst = next((i for i, c in enumerate(h) if c.startswith("Instructions Executed")), None)
samp = next(i for i, c in enumerate(h) if c.startswith("Warp Stall Sampling (All"))
stall_cols = [i for i, c in enumerate(h) if c.startswith("stall_") or "Stall" in c and "Sampling" not in c]
def num(x):
    try: return float(x.replace(",", ""))
    except ValueError: return 0.0
# (label, row) for every line counted
body, path = [], "?"
for r in rows[head + 1:] if not per_source else rows:
    if per_source:
        if len(r) == 2 and r[0] == "File Path":
            path = r[1].rsplit("/", 1)[-1]
        if len(r) <= samp or r[0] in ("", "Line No"):
            continue  # a file's header, or a SASS row under its source line
        body.append((f"{path}:{r[0]:5s} {r[1].strip()}", r))
    elif len(r) > samp:
        body.append((r[src].strip(), r))
total = sum(num(r[samp]) for _, r in body) or 1.0
itotal = (sum(num(r[inst]) for _, r in body) or 1.0) if inst is not None else None
kind = "source lines" if per_source else "SASS lines"
print(f"{len(body)} {kind}, {total:.0f} stall samples" + (f", {itotal:.0f} instructions executed" if itotal else ""))
for label, r in sorted(body, key=lambda x: -num(x[1][samp]))[:int(args[1]) if len(args) > 1 else 25]:
    top = sorted(((num(r[i]), h[i]) for i in stall_cols), reverse=True)[:2]
    ishare = f"{100 * num(r[inst]) / itotal:5.1f}% inst  " if itotal else ""
    print(f"{100 * num(r[samp]) / total:5.1f}%  {ishare}{label[:70]:70s}  " + ", ".join(f"{n}={v:.0f}" for v, n in top if v))
if bands and itotal and not per_source:
    print(f"bands of {bands} SASS lines (instructions executed, stall samples):")
    for a in range(0, len(body), bands):
        part = body[a:a + bands]
        v = sum(num(r[inst]) for _, r in part) / itotal
        w = sum(num(r[samp]) for _, r in part) / total
        if v >= 0.005 or w >= 0.005:
            print(f"  lines {a:5d}-{a + len(part) - 1:5d}: {100 * v:5.1f}% inst  {100 * w:5.1f}% stalls   first: {part[0][0][:50]}")
