#!/usr/bin/env python3
"""PNG plots of bench/train_bench.py's results (matplotlib; Debian `python3-matplotlib`):

    python3 bench/plot_train.py RESULTS/train_bench.json OUTDIR

train_throughput.png       samples/s per loader, training and loader-only, the synthetic ceiling
train_timeline_<loader>.png  a few training steps of each cubestream loader: the training loop's
                           data wait and compute, and under it every loader thread's stages from
                           its Perfetto trace (the last training epoch), on one time axis

The trace's timestamps count from the loader's construction on CLOCK_MONOTONIC, the clock of
Python's perf_counter_ns on Linux; the offset between the two is found by lining up the trace's
"consumer wait" events with the next() calls the training loop timed (one each, in order).
"""
import json
import os
import statistics
import sys

COLORS = {"data wait": "#d62728", "compute": "#2ca02c", "fetch": "#1f77b4", "decode": "#ff7f0e",
          "assemble": "#9467bd", "plan": "#8c564b", "batch": "#c7c7c7", "consumer wait": "#e377c2",
          "transfer (enqueue)": "#17becf", "gpu fetch+decode+assemble (enqueue)": "#bcbd22",
          # the GPU decode path's steps since batches are in flight (traces after 2026-11-21)
          "gpu fetch": "#1f77b4", "gpu launch (enqueue)": "#bcbd22", "gpu finish (wait + enqueue)": "#dbdb8d"}
SHORT = {"cubestream-gpu": "cubestream GPU decode", "cubestream-cpu": "cubestream CPU decode",
         "tensorstore": "TensorStore + DataLoader", "synthetic": "synthetic (ceiling)"}


def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def ok(r):
    return isinstance(r, dict) and "epochs" in r and "error" not in r


def plot_throughput(res, path):
    plt = _plt()
    loaders = ["cubestream-gpu", "cubestream-cpu", "tensorstore"]
    train = [res.get(f"{x}/train") for x in loaders]
    only = [res.get(f"{x}/loader-only") for x in loaders]
    fig, ax = plt.subplots(figsize=(8, 3.6))
    ys = range(len(loaders))
    h = 0.38
    tv = [r["samples_per_s"] if ok(r) else 0 for r in train]
    lv = [r["samples_per_s"] if ok(r) else 0 for r in only]
    ax.barh([y - h / 2 for y in ys], tv, h, label="training the U-Net", color="#2ca02c")
    ax.barh([y + h / 2 for y in ys], lv, h, label="loader only (no model)", color="#1f77b4")
    for y, v in zip(ys, tv):
        if v:
            ax.text(v, y - h / 2, f" {v:.0f}", va="center", fontsize=8)
    for y, v in zip(ys, lv):
        if v:
            ax.text(v, y + h / 2, f" {v:.0f}", va="center", fontsize=8)
    syn = res.get("synthetic/train")
    if ok(syn):
        ax.axvline(syn["samples_per_s"], color="k", ls="--", lw=1)
        ax.text(syn["samples_per_s"], len(loaders) - 0.45, f" synthetic ceiling {syn['samples_per_s']:.0f}",
                fontsize=8, va="bottom")
    ax.set_yticks(list(ys))
    ax.set_yticklabels([SHORT[x] for x in loaders])
    ax.invert_yaxis()
    bps = next((r["bytes_per_sample"] for r in train + only if ok(r)), None)
    ax.set_xlabel("samples/s" + (f"  (1 sample = {bps / 1e6:.1f} MB of float32)" if bps else ""))
    ax.set_xlim(0, max(tv + lv + [syn["samples_per_s"] if ok(syn) else 0]) * 1.25 or 1)
    env = res.get("env", {})
    ax.set_title(f"U-Net (ResNet-18) next-step training, {res['config']['grid']}, batch {res['config']['batch_size']}"
                 f" - {env.get('gpu', '')}", fontsize=9)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return path


def _trace_offset(events, epoch):
    """ns to add to trace timestamps to get perf_counter_ns."""
    waits = sorted(e["ts"] for e in events if e.get("name") == "consumer wait" and e.get("ph") == "X")
    calls = [s[0] for s in epoch["steps_ns"]] + [epoch["final_next_ns"]]
    n = min(len(waits), len(calls))
    if n == 0:
        raise ValueError("no consumer wait events to line the trace up with")
    # The trace holds the last epoch's next() calls; if a count differs, pair from the end
    # (the last call, the one that ended the epoch, is in both).
    diffs = [c - w * 1e3 for c, w in zip(calls[-n:], waits[-n:])]
    return statistics.median(diffs), max(diffs) - min(diffs), len(waits), len(calls)


def plot_timeline(result, trace_path, path, n_steps=4):
    plt = _plt()
    with open(trace_path) as f:
        events = json.load(f)["traceEvents"]
    epoch = [e for e in result["epochs"] if "final_next_ns" in e][-1]
    offset, spread, nw, nc = _trace_offset(events, epoch)
    steps = epoch["steps_ns"]
    k = max(0, len(steps) // 2 - n_steps // 2)       # steps from the middle of the epoch
    win = steps[k:k + n_steps]
    t_lo, t_hi = win[0][0], win[-1][2]
    pad = (t_hi - t_lo) * 0.02
    t_lo, t_hi = t_lo - pad, t_hi + pad

    def ms(t):
        return (t - win[0][0]) / 1e6

    rows = {}
    for e in events:
        if e.get("ph") != "X":
            continue
        s = e["ts"] * 1e3 + offset
        d = e["dur"] * 1e3
        if s + d < t_lo or s > t_hi:
            continue
        rows.setdefault(e["tid"], []).append((e["name"], s, d))
    tids = sorted(rows, key=lambda t: (-len(rows[t]), t))
    labels = ["training loop"] + [f"loader thread {t}" for t in tids]
    fig, ax = plt.subplots(figsize=(11, 1.2 + 0.28 * len(labels)))
    seen = set()

    def bar(y, name, s, d):
        c = COLORS.get(name, "#7f7f7f")
        ax.broken_barh([(ms(s), max(d / 1e6, 0.05))], (y - 0.4, 0.8), color=c,
                       label=name if name not in seen else None)
        seen.add(name)

    for t0, t1, t2 in win:
        bar(0, "data wait", t0, t1 - t0)
        bar(0, "compute", t1, t2 - t1)
    for i, tid in enumerate(tids, start=1):
        # Longest first: a stage nested in a longer one (the GPU enqueue inside "batch") stays visible.
        for name, s, d in sorted(rows[tid], key=lambda r: -r[2]):
            bar(i, name, s, d)
    ax.set_yticks(range(len(labels)))
    ax.set_yticklabels(labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(ms(t_lo), ms(t_hi))
    ax.set_xlabel("ms")
    wait_pct = 100 * sum(t1 - t0 for t0, t1, _ in win) / max(1, win[-1][2] - win[0][0])
    ax.set_title(f"{SHORT.get(result['loader'], result['loader'])}: steps {k}-{k + len(win) - 1} of the last "
                 f"training epoch (data wait {wait_pct:.1f}% of these steps; trace aligned to +-{spread / 1e3:.0f} us)",
                 fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return path


def plot_all(results_json, outdir):
    with open(results_json) as f:
        res = json.load(f)
    os.makedirs(outdir, exist_ok=True)
    out = [plot_throughput(res, os.path.join(outdir, "train_throughput.png"))]
    for loader in ["cubestream-gpu", "cubestream-cpu"]:
        r = res.get(f"{loader}/train")
        if not ok(r) or "trace" not in r:
            continue
        trace = r["trace"]
        if not os.path.exists(trace):   # results copied elsewhere: the trace lies beside the JSON
            trace = os.path.join(os.path.dirname(os.path.abspath(results_json)), os.path.basename(trace))
        out.append(plot_timeline(r, trace, os.path.join(outdir, f"train_timeline_{loader}.png")))
    return out


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    for p in plot_all(sys.argv[1], sys.argv[2]):
        print(p)
