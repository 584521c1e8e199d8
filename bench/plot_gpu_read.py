#!/usr/bin/python3
"""Plots of the GPU read (ReadOptions::decode) for docs/benchmarks.md.

    /usr/bin/python3 bench/plot_gpu_read.py OUT_DIR SWEEP_LOG BENCH_MD [BENCH_MD ...]

BENCH_MD: read_bench.py markdown tables (one store each, tools with "cpu decode" / "gpu
decode" / plain cubestream rows); SWEEP_LOG: one_gpu_session.sh read-sweep output, calls
headed "## call N" ("round R wave W MiB slots S: X GB/s, ..." and "round R cpu decode: X GB/s").
Writes OUT_DIR/gpu_read_tools.png (GB/s per tool and store, in-process medians) and
OUT_DIR/gpu_read_waves.png (GB/s against the decoded bytes in flight, (slots - 1) x wave).
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plot_read import plt, table_rows  # noqa: E402  (matplotlib on Agg; read_bench's table rows)


def sweep(path):
    points, cpu, call = [], [], None
    for line in open(path):
        m = re.match(r"## call (\d+)", line)
        if m:
            call = int(m.group(1))
            continue
        m = re.match(r"round \d+ wave (\d+) MiB slots (\d+): ([\d.]+) GB/s", line)
        if m:
            points.append((call, int(m.group(1)), int(m.group(2)), float(m.group(3))))
            continue
        m = re.match(r"round \d+ cpu decode: ([\d.]+) GB/s", line)
        if m:
            cpu.append((call, float(m.group(1))))
    return points, cpu


def short(tool):
    if tool.startswith("TensorStore"):
        return "TensorStore\n" + ("prealloc" if "preallocated" in tool else "read()")
    if "cpu decode" in tool:
        return "cubestream\nhost decode"
    if "gpu decode" in tool:
        return "cubestream\nGPU decode"
    return "cubestream\ndefault (auto)"


def main(out_dir, sweep_log, tables):
    fig, axes = plt.subplots(1, len(tables), figsize=(5.2 * len(tables), 4), squeeze=False)
    for ax, path in zip(axes[0], tables):
        rows = [r for r in table_rows(path) if "process per round" not in r["tool"]]
        ax.bar(range(len(rows)), [r["gbps"] for r in rows],
               color=["#1f77b4" if r["tool"].startswith("cubestream") else "#999999" for r in rows])
        ax.set_xticks(range(len(rows)), [short(r["tool"]) for r in rows], fontsize=8)
        for i, r in enumerate(rows):
            ax.text(i, r["gbps"], f"{r['gbps']:.1f}", ha="center", va="bottom", fontsize=8)
        ax.set_title(f"{rows[0]['store']} ({rows[0]['codec']})" if rows else path, fontsize=10)
        ax.set_ylabel("GB/s decoded, whole-array read, 16 threads")
    fig.suptitle("Whole-array reads into host memory, H200 machine (16 cores), same-run medians", fontsize=10)
    fig.tight_layout()
    fig.savefig(f"{out_dir}/gpu_read_tools.png", dpi=110)

    points, cpu = sweep(sweep_log)
    fig, ax = plt.subplots(figsize=(6.5, 4))
    calls = sorted({p[0] for p in points})
    machine = {c: ("machine A (calls 2-3)" if c <= 3 else "machine B (calls 5-6)") for c in calls}
    for label, marker in (("machine A (calls 2-3)", "o"), ("machine B (calls 5-6)", "s")):
        xs = [(p[2] - 1) * p[1] for p in points if machine[p[0]] == label]
        ys = [p[3] for p in points if machine[p[0]] == label]
        if xs:
            ax.scatter(xs, ys, marker=marker, label=f"GPU decode, {label}")
        cs = [c[1] for c in cpu if (c[0] <= 3) == label.startswith("machine A")]
        if cs:
            ax.axhline(sum(cs) / len(cs), ls="--", lw=1, color="grey" if marker == "o" else "black",
                       label=f"host decode, {label}")
    for p in points:
        ax.annotate(f"{p[1]}x{p[2]}", ((p[2] - 1) * p[1], p[3]), fontsize=6, xytext=(3, 2), textcoords="offset points")
    ax.set_xlabel("decoded MiB in flight: (slots - 1) x wave MiB  (labels: wave MiB x slots)")
    ax.set_ylabel("GB/s decoded (era5 zstd-3, 2.16 GB)")
    ax.legend(fontsize=7)
    ax.set_title("GPU read waves: zstd chunks of 4.15 MB, 16 threads", fontsize=10)
    fig.tight_layout()
    fig.savefig(f"{out_dir}/gpu_read_waves.png", dpi=110)


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
