#!/usr/bin/python3
"""Plots for docs/benchmarks.md from the files a GPU run leaves in $OUT.

    /usr/bin/python3 bench/plot_read.py BENCH_MD SWEEP_LOG OUT_DIR

BENCH_MD is read_bench's markdown table (bench.md), SWEEP_LOG the lines of
`cubestream bench read --threads N` runs ("sweep <store> threads=N: ... = X GB/s decoded").
Writes OUT_DIR/read_gbps.png (GB/s per tool and store) and OUT_DIR/thread_scaling.png.
"""
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def table_rows(path):
    rows = []
    for line in open(path):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 8 and cells[0].startswith("era5"):
            rows.append({"store": cells[0], "codec": cells[1], "tool": cells[3], "gbps": float(cells[5])})
    return rows


def sweep(path):
    out = {}
    for line in open(path):
        m = re.match(r"sweep (\S+) threads=(\d+): .*=\s+([\d.]+) GB/s decoded", line)
        if m:
            out.setdefault(m.group(1), []).append((int(m.group(2)), float(m.group(3))))
    return out


def main(bench_md, sweep_log, out_dir):
    rows = table_rows(bench_md)
    stores = sorted({r["store"] for r in rows})
    tools = ["cubestream (CLI, in-process x5)", "TensorStore into preallocated buffer", "TensorStore read() new array"]
    labels = ["cubestream", "TensorStore (preallocated)", "TensorStore read()"]
    fig, ax = plt.subplots(figsize=(7, 3.6))
    width = 0.25
    for i, (tool, label) in enumerate(zip(tools, labels)):
        vals = [next((r["gbps"] for r in rows if r["store"] == s and r["tool"] == tool), 0) for s in stores]
        bars = ax.bar([x + (i - 1) * width for x in range(len(stores))], vals, width, label=label)
        ax.bar_label(bars, fmt="%.1f", fontsize=8)
    ax.set_xticks(range(len(stores)))
    ax.set_xticklabels(["ERA5-like, Zarr v2 blosc-lz4+shuffle" if "blosc" in s else "ERA5-like, Zarr v3 zstd-3" for s in stores])
    ax.set_ylabel("GB/s decoded (page cache)")
    ax.set_title("Whole-array read, 2.16 GB float32, 16 threads, H100 host")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(f"{out_dir}/read_gbps.png", dpi=110)

    sw = sweep(sweep_log)
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    for store, pts in sorted(sw.items()):
        pts.sort()
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=store.replace("era5_", "cubestream, "))
    ax.set_xscale("log", base=2)
    ax.set_xticks([1, 2, 4, 8, 16])
    ax.set_xticklabels(["1", "2", "4", "8", "16"])
    ax.set_xlabel("threads")
    ax.set_ylabel("GB/s decoded")
    ax.set_title("cubestream read scaling (page cache)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(f"{out_dir}/thread_scaling.png", dpi=110)


if __name__ == "__main__":
    main(*sys.argv[1:4])
