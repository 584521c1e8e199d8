#!/usr/bin/python3
"""GPU numcodecs LZ4 decode speed per form of the decoder on the H100 (issue 4), from the raw
call logs that docs/benchmarks.md and docs/gpu_decoders.md quote (docs/data/h100_s15_lz4_calls.md,
docs/data/h100_s16_lz4_calls.md): kernel GB/s of the three lz4 batches of gpu_decode_bench, each
form the median of its rounds' medians, with the 100 GB/s goal and 5x liblz4 on 16 cores (the
CPU figure of the last form's rounds, measured in the same run).

    /usr/bin/python3 bench/plot_lz4_paths.py --out docs/img/gpu_lz4_paths.png
"""
import pathlib
import re
import statistics

from plot_setup import plot_args

# (label, raw log, call section, bench side) in order: each a side of one call's A/B run.
FORMS = [
    ("ring kernel\n(s13)", "h100_s15_lz4_calls.md", "Call 5", "ring"),
    ("segments,\nserial walk\n(s14)", "h100_s15_lz4_calls.md", "Call 5", "serial"),
    ("table walk\n(s15)", "h100_s16_lz4_calls.md", "Call 1", "base"),
    ("+ long\nsequences\n(s16)", "h100_s16_lz4_calls.md", "Call 1", "table"),
    ("+ walk and\nsegments in\none kernel\n(s16)", "h100_s16_lz4_calls.md", "Call 1", "new"),
    ("reviewed:\nwalkers turn\nto segments\n(s16)", "h100_s16_lz4_calls.md", "Call 3", "new"),
]
BATCHES = [("era5_4MiB x256", "era5-like 4 MiB x256"), ("mixed_64KiB-1MiB x1024", "mixed 64 KiB-1 MiB x1024"),
           ("synth_721x1440 x256", "synth fields x256")]


def read_side(path, call, side):
    """{batch: ([kernel GB/s per round], [CPU GB/s per round])} of one side in one call's section."""
    rows, section, current = {}, None, None
    for line in path.read_text().splitlines():
        if line.startswith("## "):
            section = line[3:].strip()
            continue
        m = re.search(r"bench (\w+)( \(round \d\))?$", line)
        if m:
            current = m.group(1)
            continue
        if section != call or current != side or not line.startswith("| "):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 11 and cells[1] == "lz4":
            kernel, cpu = rows.setdefault(cells[0], ([], []))
            kernel.append(float(cells[6]))
            cpu.append(float(cells[10]))
    return rows


def main():
    a, plt = plot_args(__doc__)

    sides = [read_side(pathlib.Path(a.data) / name, call, side) for _, name, call, side in FORMS]
    for (label, name, call, side), rows in zip(FORMS, sides):
        if not rows:
            raise SystemExit(f"no rows for side '{side}' of {call} in {name}")
    fig, axes = plt.subplots(1, len(BATCHES), figsize=(14, 4.8), sharey=True)
    for ax, (key, title) in zip(axes, BATCHES):
        ys = [statistics.median(rows[key][0]) for rows in sides]
        ax.bar(range(len(ys)), ys, color=["#999999"] * (len(ys) - 1) + ["#1f77b4"])
        for x, y in enumerate(ys):
            ax.text(x, y + 1.5, f"{y:.0f}", ha="center", fontsize=8)
        ax.axhline(100, color="black", ls="--", lw=1)
        ax.axhline(5 * statistics.median(sides[-1][key][1]), color="#d62728", ls=":", lw=1)
        ax.set_xticks(range(len(ys)), [label for label, _, _, _ in FORMS], fontsize=6.5)
        ax.set_title(title, fontsize=10)
    axes[0].set_ylabel("kernel GB/s (decoded)")
    fig.suptitle("GPU numcodecs LZ4 on one H100: dashed = 100 GB/s goal, dotted = 5x liblz4 on 16 cores "
                 "(same run as the last bar)", fontsize=9)
    fig.tight_layout()
    fig.savefig(a.out, dpi=110)
    print(a.out)


if __name__ == "__main__":
    main()
