#!/usr/bin/python3
"""GPU Zstandard decode speed per decoder version on the H100 (issue 4), from the raw bench
tables that docs/benchmarks.md and docs/gpu_zstd.md quote (docs/data/h100_zstd_*.md, each the
output of `gpu_zstd_bench --md`): kernel GB/s of the 256 x 4 MiB and 1024 x 64 KiB-1 MiB
batches at levels 1, 3 and 5, beside libzstd on 16 threads measured in the same run.

    /usr/bin/python3 bench/plot_zstd_versions.py --out docs/img/gpu_zstd_versions.png
"""
import pathlib
import re

from plot_setup import plot_args

# (label, raw table) in order; each file is one call's bench of that version's defaults.
VERSIONS = [
    ("v3.3", "h100_zstd_seqfast1.md"),
    ("v3.4", "h100_zstd_seqtables_b_r1.md"),
    ("v3.5", "h100_zstd_v35_a_r1.md"),
    ("v3.6", "h100_zstd_v36_s8_main.md"),
    ("v3.7", "h100_zstd_v37_final.md"),
    ("v3.8", "h100_zstd_v38_call6_bench_new.md"),
    ("v3.9", "h100_zstd_v39_call9_bench_new.md"),
]
BATCHES = [("era5 4MiB x256", "256 x 4 MiB"), ("era5 64KiB-1MiB x1024", "1024 x 64 KiB-1 MiB")]
LEVELS = [1, 3, 5]


def read_table(path):
    """{(batch, level): (kernel GB/s, libzstd GB/s)} from one bench table."""
    rows = {}
    for line in path.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 8 or not re.fullmatch(r"-?\d+", cells[1] or "x"):
            continue
        try:
            rows[(cells[0], int(cells[1]))] = (float(cells[5]), float(cells[7]))
        except ValueError:
            continue
    return rows


def main():
    a, plt = plot_args(__doc__)

    tables = [(label, read_table(pathlib.Path(a.data) / name)) for label, name in VERSIONS]
    fig, axes = plt.subplots(1, len(BATCHES), figsize=(11, 4), sharey=True)
    width = 0.8 / len(LEVELS)
    for ax, (key, title) in zip(axes, BATCHES):
        for li, level in enumerate(LEVELS):
            xs = [vi + (li - 1) * width for vi in range(len(tables))]
            ys = [t.get((key, level), (0.0, 0.0))[0] for _, t in tables]
            bars = ax.bar(xs, ys, width, label=f"level {level}")
            for x, y in zip(xs, ys):
                if y:
                    ax.text(x, y + 1, f"{y:.0f}", ha="center", fontsize=7)
            cpu = tables[-1][1].get((key, level), (0.0, 0.0))[1]
            if cpu:
                ax.axhline(cpu * 5, color=bars.patches[0].get_facecolor(), ls=":", lw=1)
        ax.axhline(50, color="black", ls="--", lw=1)
        ax.set_xticks(range(len(tables)), [label for label, _ in tables])
        ax.set_title(title)
        ax.set_xlabel("decoder version")
    axes[0].set_ylabel("kernel GB/s (decoded)")
    axes[0].legend(loc="upper left", fontsize=8)
    fig.suptitle("GPU Zstandard on one H100: dashed = 50 GB/s goal, dotted = 5x libzstd on 16 cores (latest run)",
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(a.out, dpi=110)
    print(a.out)


if __name__ == "__main__":
    main()
