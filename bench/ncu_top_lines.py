#!/usr/bin/env python3
"""The SASS lines with the most warp stall samples in an Nsight Compute source page.

    ncu --import REPORT.ncu-rep --page source --csv --print-source sass > page.csv
    python3 bench/ncu_top_lines.py page.csv [N]

Prints each line's share of the kernel's stall samples and its two largest stall reasons
(the report must come from a build with -lineinfo and --section SourceCounters).
"""
import csv, sys
rows = list(csv.reader(open(sys.argv[1], errors="replace")))
head = next((i for i, r in enumerate(rows) if "Source" in r and any("Sampling" in c for c in r)), None)
if head is None:
    print("no sampling columns"); sys.exit(0)
h = rows[head]
src = h.index("Source")
samp = next(i for i, c in enumerate(h) if c.startswith("Warp Stall Sampling (All"))
stall_cols = [i for i, c in enumerate(h) if c.startswith("stall_") or "Stall" in c and "Sampling" not in c]
def num(x):
    try: return float(x.replace(",", ""))
    except ValueError: return 0.0
body = [r for r in rows[head + 1:] if len(r) > samp]
total = sum(num(r[samp]) for r in body) or 1.0
print(f"{len(body)} SASS lines, {total:.0f} stall samples")
for r in sorted(body, key=lambda r: -num(r[samp]))[:int(sys.argv[2]) if len(sys.argv) > 2 else 25]:
    top = sorted(((num(r[i]), h[i]) for i in stall_cols), reverse=True)[:2]
    print(f"{100 * num(r[samp]) / total:5.1f}%  {r[src][:70]:70s}  " + ", ".join(f"{n}={v:.0f}" for v, n in top if v))
