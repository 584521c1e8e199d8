#!/usr/bin/env python3
"""The U-Net training benchmark (issue 6), every loader in one run on one GPU:

    PYTHONPATH=build-gpu/python python3 bench/train_bench.py --store /tmp/cs_train.zarr --make-store \\
        --timesteps 480 --cli build-gpu/cubestream --out results/

For each loader of examples/train_unet.py (same model, store, samples, normalisation, seed):
  train        the U-Net (ResNet-18 encoder, batch 16, 640x1280, AdamW, bf16 autocast) trained on its
               batches: samples/s, GB/s, the fraction of step time spent waiting for data
  loader-only  the same loop without the model: what the loader delivers on its own
and the synthetic ceiling (random batches already on the GPU: the model alone). cubestream's
loader.stats() per epoch gives the per-stage breakdown; its Perfetto trace of the last training
epoch gives the stage timeline. Figures are medians over the measured epochs (after a warm-up
epoch), all in this process, one loader after the other.

GB/s counts the float32 values the samples hold (inputs t and targets t+1: 2 x 6 x 640 x 1280 x
4 B = 39.3 MB a sample), the same for every loader whatever dtype it hands over; every sample
needs whole 721x1440 chunks decoded (1.27x that), and the stage table shows the bytes each
cubestream loader actually read and decoded.

The store: with --cli, `cubestream synth` (six ERA5-like surface variables, Zarr v2 as
WeatherBench2 stores them: blosc-lz4 + shuffle, one 721x1440 time step per chunk); without it,
bench/loader_bench.py's make_store (one 2 m temperature field under six names); then
`cubestream stats` for the normalisation (--cli). An existing complete store is
reused (a warm machine keeps /tmp).

Writes to --out: train_bench.json (everything), train_bench.md (the tables), train_*.log lines
on stdout, traces (trace_<loader>.json) and the PNG plots (bench/plot_train.py).
--budget-s bounds the whole run: each run gets a share of what is left (--max-seconds of
train_unet.run: it stops after the epoch that passes it), and a run with no time left is skipped
and listed as such.
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "examples"))

import train_unet  # noqa: E402

T0 = time.time()

# (loader, mode, weight): the order is the order of importance, should the budget run out;
# the baseline runs take longer (its epochs are slower), so they get a larger share.
RUNS = [("synthetic", "train", 1), ("cubestream-gpu", "train", 1), ("cubestream-cpu", "train", 1),
        ("tensorstore", "train", 2), ("cubestream-gpu", "loader-only", 1), ("cubestream-cpu", "loader-only", 1),
        ("tensorstore", "loader-only", 2), ("cubestream-gpu", "profile", 1),
        ("synthetic", "profile", 1)]
LABEL = {"synthetic": "synthetic (no loading: the ceiling)",
         "cubestream-gpu": "cubestream, GPU decode (`device=\"cuda\"`, `decode=\"auto\"`)",
         "cubestream-cpu": "cubestream, CPU decode (`device=\"cuda\"`, `decode=\"cpu\"`)",
         "tensorstore": "TensorStore + torch DataLoader (workers, pin_memory)"}


def log(msg):
    print(f"[train_bench {time.strftime('%H:%M:%S')} +{time.time() - T0:5.1f}s] {msg}", flush=True)


def store_complete(path, timesteps):
    import loader_bench
    marker = os.path.join(path, ".train_bench_complete")
    if not os.path.exists(marker):
        return False
    with open(marker) as f:
        doc = json.load(f)
    return doc.get("timesteps") == timesteps and doc.get("variables") == loader_bench.VARS


def ensure_store(a):
    import loader_bench
    if a.make_store and not store_complete(a.store, a.timesteps):
        log(f"writing the store {a.store} ({a.timesteps} time steps, six variables)")
        if a.cli:
            # Six distinct ERA5-like surface fields in WeatherBench2's v2 layout (one time step
            # per chunk, blosc lz4 + byte shuffle).
            subprocess.run([a.cli, "synth", a.store, "--variables", ",".join(loader_bench.VARS), "--times",
                            str(a.timesteps), "--format", "2", "--overwrite", "--no-progress"], check=True)
            generator = "cubestream synth"
        else:
            loader_bench.make_store(a.store, a.timesteps)
            generator = "bench/loader_bench.py make_store"
        with open(os.path.join(a.store, ".train_bench_complete"), "w") as f:
            json.dump({"timesteps": a.timesteps, "variables": loader_bench.VARS, "generator": generator}, f)
        log("store written")
    elif a.make_store:
        log(f"reusing the complete store {a.store}")
    stats = os.path.join(a.store, "cubestream_stats.json")
    if not os.path.exists(stats):
        if not a.cli:
            log("no --cli: train_unet.py estimates mean/std from a few time steps")
        else:
            log(f"{a.cli} stats {a.store}")
            subprocess.run([a.cli, "stats", a.store, "--threads", str(os.cpu_count() or 4)], check=True)
    info = {}
    info_path = a.store.rstrip("/") + ".info.json"
    if os.path.exists(info_path):
        with open(info_path) as f:
            info = json.load(f)
    return info


def store_bytes(path):
    total = 0
    for d, _, files in os.walk(path):
        for f in files:
            if not f.startswith("."):
                total += os.path.getsize(os.path.join(d, f))
    return total


def environment():
    import torch
    env = {"date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()), "python": platform.python_version(),
           "torch": torch.__version__, "cpus": os.cpu_count(), "host": platform.node()}
    if torch.cuda.is_available():
        env["gpu"] = torch.cuda.get_device_name(0)
        env["gpus"] = torch.cuda.device_count()
    try:
        from importlib.metadata import version
        env["tensorstore"] = version("tensorstore")
    except Exception:  # noqa: BLE001
        env["tensorstore"] = None
    try:
        with open("/proc/meminfo") as f:
            env["mem_gb"] = round(int(f.readline().split()[1]) / 1e6, 1)
    except OSError:
        pass
    return env


def run_one(a, loader, mode, max_seconds):
    argv = ["--store", a.store, "--loader", loader, "--grid", a.grid, "--batch-size", str(a.batch_size),
            "--epochs", str(a.epochs), "--warmup-epochs", str(a.warmup_epochs), "--seed", str(a.seed),
            "--max-seconds", f"{max_seconds:.0f}", "--workers", str(a.workers), "--threads", str(a.threads),
            "--prefetch", str(a.prefetch), "--memory-limit-gb", str(a.memory_limit_gb),
            "--gpu-cache-gb", str(a.gpu_cache_gb), "--device", a.device]
    if mode == "loader-only":
        argv.append("--loader-only")
    if mode == "profile":
        # Not a measurement: one warm-up epoch and one epoch with 6 steps under torch.profiler,
        # to see what the loader's GPU work costs the training stream.
        argv[argv.index("--epochs") + 1] = "1"
        argv += ["--profile-steps", "6"]
    if mode == "train" and loader.startswith("cubestream"):
        argv += ["--trace", os.path.join(a.out, f"trace_{loader}.json")]
    result = train_unet.run(train_unet.parse_args(argv))
    result["mode"] = mode
    return result


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def stage_row(r):
    """Medians over the measured epochs of the loader's stats (thread-seconds per stage)."""
    eps = [e for e in r["epochs"] if e["measured"] and e.get("loader_stats")]
    if not eps:
        return None
    st = [e["loader_stats"] for e in eps]
    walls = [e["wall_s"] for e in eps]
    return {"wall_s": med(walls),
            "fetch_s": med([s["busy_s"]["fetch"] for s in st]), "decode_s": med([s["busy_s"]["decode"] for s in st]),
            "assemble_s": med([s["busy_s"]["assemble"] for s in st]),
            "transfer_s": med([s["busy_s"]["transfer"] for s in st]),
            "consumer_wait_s": med([s["consumer_wait_s"] for s in st]),
            "read_gb_s": med([s["bytes_fetched"] / w / 1e9 for s, w in zip(st, walls)]),
            "decoded_gb_s": med([s["bytes_decoded"] / w / 1e9 for s, w in zip(st, walls)]),
            "units": med([s["units_fetched"] for s in st]), "cache_hits": med([s["cache_hits"] for s in st]),
            "gpu_units": med([s["units_gpu_decoded"] for s in st]), "decode_path": st[-1]["decode_path"]}


def tables(results):
    def get(loader, mode):
        r = results.get(f"{loader}/{mode}")
        return r if r and "error" not in r and "skipped" not in r else None

    ceiling = get("synthetic", "train")
    base = get("tensorstore", "loader-only")
    base_train = get("tensorstore", "train")
    lines = ["| loader | train samples/s | % of synthetic ceiling | data wait, % of step time | train GB/s | "
             "loader-only samples/s | loader-only GB/s | loader-only vs TensorStore | train vs TensorStore |",
             "|---|---|---|---|---|---|---|---|---|"]
    for loader in ["synthetic", "cubestream-gpu", "cubestream-cpu", "tensorstore"]:
        t, lo = get(loader, "train"), get(loader, "loader-only")
        cells = [LABEL[loader]]
        if t:
            pct = f"{100 * t['samples_per_s'] / ceiling['samples_per_s']:.1f}%" if ceiling else "-"
            vs = f"{t['samples_per_s'] / base_train['samples_per_s']:.2f}x" if base_train else "-"
            cells += [f"{t['samples_per_s']:.1f}", pct, f"{100 * t['wait_fraction']:.2f}%", f"{t['gb_per_s']:.2f}"]
        else:
            vs = "-"
            cells += [why(results, loader, "train")] + ["-"] * 3
        if loader == "synthetic":
            cells += ["(no loader)", "", "", vs]
        elif lo:
            cells += [f"{lo['samples_per_s']:.1f}", f"{lo['gb_per_s']:.2f}",
                      f"{lo['samples_per_s'] / base['samples_per_s']:.2f}x" if base else "-", vs]
        else:
            cells += [why(results, loader, "loader-only"), "-", "-", vs]
        lines.append("| " + " | ".join(cells) + " |")
    main = "\n".join(lines)

    lines = ["| loader | mode | epoch wall s | fetch s | decode s | assemble s | transfer s | consumer wait s | "
             "read GB/s (compressed) | decoded GB/s | units decoded | cache hits | on GPU | decode path |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for loader in ["cubestream-gpu", "cubestream-cpu"]:
        for mode in ["train", "loader-only"]:
            r = get(loader, mode)
            s = stage_row(r) if r else None
            if not s:
                continue
            lines.append(f"| {loader} | {mode} | {s['wall_s']:.2f} | {s['fetch_s']:.2f} | {s['decode_s']:.2f} | "
                         f"{s['assemble_s']:.2f} | {s['transfer_s']:.2f} | {s['consumer_wait_s']:.2f} | "
                         f"{s['read_gb_s']:.2f} | {s['decoded_gb_s']:.2f} | {s['units']:.0f} | {s['cache_hits']:.0f} | "
                         f"{s['gpu_units']:.0f} | {s['decode_path']} |")
    stages = "\n".join(lines)

    lines = ["| loader | mode | measured epochs | samples/s per epoch | median step ms | median wait ms | loss (last epoch) |",
             "|---|---|---|---|---|---|---|"]
    for key, r in results.items():
        if "/" not in key or "epochs" not in r or r["mode"] == "profile":
            continue
        m = [e for e in r["epochs"] if e["measured"]]
        lines.append(f"| {r['loader']} | {r['mode']} | {len(m)} | "
                     + ", ".join(f"{e['samples_per_s']:.1f}" for e in m)
                     + f" | {med([e['step_ms_median'] for e in m]):.1f} | {med([e['step_wait_ms_median'] for e in m]):.2f} | "
                     + (f"{m[-1]['loss']:.4f}" if m and r["mode"] == "train" else "-") + " |")
    epochs = "\n".join(lines)
    return main, stages, epochs


def profile_table(r):
    """GPU time per stream and CUDA API time per step of a profiled training run."""
    if not r or "profile" not in r:
        return ""
    p = r["profile"]
    lines = [f"GPU work per step while {r['loader']} feeds the training (torch.profiler over {p['steps']} steps, "
             f"GPU span {p['gpu_span_ms'] / p['steps']:.1f} ms a step):", "",
             "| stream | busy ms per step | launches | largest items (ms over the steps) |", "|---|---|---|---|"]
    for sid, st in p["streams"].items():
        top = "; ".join(f"{k} {v:.1f}" for k, v in list(st["top"].items())[:4]).replace("|", "/")
        lines.append(f"| {sid} | {st['busy_ms_per_step']:.2f} | {st['launches']} | {top} |")
    lines += ["", "| CUDA API call | ms over the steps | calls |", "|---|---|---|"]
    for k, v in p["cuda_api_ms"].items():
        lines.append(f"| {k} | {v['ms']:.1f} | {v['calls']} |")
    return "\n".join(lines)


def why(results, loader, mode):
    r = results.get(f"{loader}/{mode}") or {}
    if "skipped" in r:
        return "skipped (budget)"
    if "error" in r:
        return "failed: " + r["error"].splitlines()[-1][:80].replace("|", "/")
    return "not run"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--store", default="/tmp/cs_train_era5.zarr")
    ap.add_argument("--make-store", action="store_true", help="write the store unless a complete one is there")
    ap.add_argument("--timesteps", type=int, default=480)
    ap.add_argument("--cli", default=os.environ.get("CUBESTREAM_CLI", ""), help="the cubestream command (for stats)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--grid", default="640x1280")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--warmup-epochs", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--prefetch", type=int, default=3)
    ap.add_argument("--memory-limit-gb", type=float, default=4.0)
    ap.add_argument("--gpu-cache-gb", type=float, default=1.0)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--budget-s", type=float, default=420, help="wall seconds for everything, store included")
    ap.add_argument("--only", default="", help="comma list of loader/mode keys to run (default: all)")
    ap.add_argument("--commit", default="", help="recorded in the results")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    info = ensure_store(a)
    # info is make_era5_like.py's record of the one array it wrote (the others are copies of it).
    results = {"env": environment(), "store": {"path": a.store, "timesteps": a.timesteps,
                                               "bytes_stored": store_bytes(a.store), "first_array": info},
               "config": {k: v for k, v in vars(a).items()}, "commit": a.commit}
    log(f"environment: {results['env']}")
    runs = [r for r in RUNS if not a.only or f"{r[0]}/{r[1]}" in a.only.split(",")]
    for i, (loader, mode, weight) in enumerate(runs):
        key = f"{loader}/{mode}"
        left = a.budget_s - (time.time() - T0)
        share = left * weight / sum(w for _, _, w in runs[i:])
        if left < 20:
            log(f"{key}: skipped, {left:.0f} s of the budget left")
            results[key] = {"loader": loader, "mode": mode, "skipped": f"{left:.0f} s of the budget left"}
            continue
        log(f"{key}: up to ~{share:.0f} s")
        try:
            results[key] = run_one(a, loader, mode, max(10.0, share * 0.8))
        except Exception:  # noqa: BLE001  (record it, go on with the other loaders)
            results[key] = {"loader": loader, "mode": mode, "error": traceback.format_exc()}
            log(f"{key} FAILED:\n{results[key]['error']}")
        with open(os.path.join(a.out, "train_bench.json"), "w") as f:   # partial results survive a timeout
            json.dump(results, f, indent=1)
    main_t, stages_t, epochs_t = tables(results)
    prof_t = "\n\n".join(profile_table(results.get(f"{x}/profile")) for x in ("cubestream-gpu", "synthetic"))
    env = results["env"]
    md = (f"# U-Net training benchmark\n\n{env['date_utc']} UTC, {env.get('gpu', 'no GPU')}, {env['cpus']} CPUs, "
          f"torch {env['torch']}, TensorStore {env['tensorstore']}, commit {a.commit or '?'}\n\n"
          f"Store: {a.store}, {a.timesteps} time steps x 6 variables, {results['store']['bytes_stored'] / 1e9:.2f} GB "
          f"stored; grid {a.grid}, batch {a.batch_size}; medians of up to {a.epochs} epochs after {a.warmup_epochs} "
          f"warm-up epoch(s).\n\n{main_t}\n\nPer-stage breakdown (cubestream `loader.stats()`, thread-seconds per "
          f"epoch, medians):\n\n{stages_t}\n\nEvery measured epoch:\n\n{epochs_t}\n\n{prof_t}\n")
    with open(os.path.join(a.out, "train_bench.md"), "w") as f:
        f.write(md)
    results["tables"] = {"main": main_t, "stages": stages_t, "epochs": epochs_t}
    with open(os.path.join(a.out, "train_bench.json"), "w") as f:
        json.dump(results, f, indent=1)
    print(md, flush=True)
    try:
        import plot_train
        for p in plot_train.plot_all(os.path.join(a.out, "train_bench.json"), a.out):
            log(f"plot {p}")
    except Exception:  # noqa: BLE001  (no matplotlib: the tables still stand)
        log("plots FAILED:\n" + traceback.format_exc())
    log("done")


if __name__ == "__main__":
    main()
