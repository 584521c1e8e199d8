#!/usr/bin/env python3
"""Loader-only throughput of one cubestream build, for before/after comparisons in one GPU run.

    PYTHONPATH=build-a/python python3 bench/loader_ab.py --store S --label before --out a.json
    PYTHONPATH=build-b/python python3 bench/loader_ab.py --store S --label after  --out b.json

Each process imports the cubestream module its PYTHONPATH names, so two builds can be run one
after the other (alternated by the caller) on the same store and page cache. The loader is
bench/loader_bench.py's (six variables, batches of 16 full fields, inputs t, targets t+1,
sample shuffle, host memory limit 4 GiB, GPU cache 1 GiB), without a model. Every epoch after
a warm-up one prints one JSON line: batches/s, GB/s of batch bytes delivered, GB/s decoded
(bytes_decoded over the epoch's wall time) and the loader's per-stage times.

--profile: one more epoch under torch.profiler (CUPTI sees the loader's streams): the GPU
time per batch of each kernel and copy, and, with --trace, the median host time of each of the
loader's trace events (fetch, launch, finish, consumer wait) per batch.
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from loader_bench import VARS  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--store", required=True)
    ap.add_argument("--label", required=True)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--decode", default="gpu")
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--prefetch", type=int, default=3)
    ap.add_argument("--out", required=True)
    ap.add_argument("--trace", action="store_true")
    ap.add_argument("--profile", action="store_true")
    a = ap.parse_args()
    import torch
    import cubestream
    ld = cubestream.Loader(a.store, VARS, window={"inputs": [0], "targets": [1]}, batch_size=16, shuffle="sample",
                           drop_last=True, device="cuda", threads=a.threads, prefetch=a.prefetch,
                           memory_limit=4 << 30, gpu_cache_bytes=1 << 30, decode=a.decode, trace=a.trace)
    rows = []
    for e in range(a.epochs + 1):
        ld.set_epoch(e)
        ld.reset_stats()
        t0 = time.perf_counter()
        nbytes = nb = 0
        for b in ld:
            x, y = b["inputs"], b["targets"]
            nbytes += x.numel() * x.element_size() + y.numel() * y.element_size()
            nb += 1
        torch.cuda.synchronize()
        dt = time.perf_counter() - t0
        st = ld.stats()
        row = {"label": a.label, "decode": a.decode, "epoch": e, "warmup": e == 0, "wall_s": dt,
               "batches_per_s": nb / dt, "delivered_gbs": nbytes / dt / 1e9,
               "decoded_gbs": st["bytes_decoded"] / dt / 1e9, "stats": st}
        rows.append(row)
        print(json.dumps({k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items() if k != "stats"}),
              flush=True)
    if a.profile:
        profile(ld, a.epochs + 1)
    with open(a.out, "w") as f:
        json.dump(rows, f, indent=1)


def profile(ld, epoch):
    import statistics
    import torch
    from torch.profiler import ProfilerActivity, profile as prof_ctx
    ld.set_epoch(epoch)
    ld.reset_stats()
    nb = 0
    with prof_ctx(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
        t0 = time.perf_counter()
        for _ in ld:
            nb += 1
        torch.cuda.synchronize()
        dt = time.perf_counter() - t0
    print(f"profiled epoch: {nb} batches in {dt:.3f} s ({1e3 * dt / nb:.1f} ms a batch)")
    # GPU time per batch of every kernel / copy, largest first.
    gpu = {}
    for ev in p.events():
        if ev.device_type == torch.autograd.DeviceType.CUDA:
            gpu.setdefault(ev.name, [0.0, 0])
            gpu[ev.name][0] += ev.device_time_total if hasattr(ev, "device_time_total") else ev.cuda_time_total
            gpu[ev.name][1] += 1
    print("| GPU activity | ms per batch | calls per batch |")
    print("|---|---|---|")
    for name, (us, n) in sorted(gpu.items(), key=lambda kv: -kv[1][0])[:12]:
        print(f"| {name[:70]} | {us / 1e3 / nb:.2f} | {n / nb:.1f} |")
    raw = ld._core.trace_json()
    tr = (json.loads(raw) if isinstance(raw, str) else raw).get("traceEvents", [])
    by = {}
    for e in tr:
        if e.get("ph") == "X":
            by.setdefault(e["name"], []).append(e["dur"] / 1e3)
    if by:
        print("| host trace event | median ms | total ms per batch |")
        print("|---|---|---|")
        for name, ds in sorted(by.items()):
            print(f"| {name} | {statistics.median(ds):.2f} | {sum(ds) / nb:.2f} |")


if __name__ == "__main__":
    main()
