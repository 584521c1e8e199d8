#!/usr/bin/env python3
"""Loader benchmark (issue 3): batches of 16 full-field samples, inputs t and targets t+1, six
float32 variables of 721x1440 (chunks of one time step), delivered to the GPU; warm page cache.

    python3 bench/loader_bench.py --store /tmp/era5_6var.zarr --epochs 2 --out results.json

Loaders, in the same run and on the same store:
  cubestream       cubestream.Loader(device="cuda"): C++ pipeline, pinned staging, stream-ordered copy
  ts-dataloader-N  TensorStore reads in a torch Dataset, DataLoader(num_workers=N, pin_memory=True),
                   batch.cuda(non_blocking=True): the usual stack (N = 8 and 16)
  per-sample       the same TensorStore reads, one sample after another in the main process (the
                   xarray/xbatcher-style per-sample reader; zarr-python is not on the GPU machine)
Each reports batches/s and GB/s delivered to the GPU (inputs + targets bytes), median over the
epochs after a warm-up epoch. Then a real training step (a small conv net, bf16 autocast) runs on
every cubestream batch and the time the training loop waited for data per batch is reported.

cubestream keeps decoded chunks in a bounded cache (host: what --memory-limit leaves after the
batch buffers; GPU decode: --gpu-cache). The defaults (4 GiB, 1 GiB) hold a small fraction of
the store, as at ERA5 scale, so every epoch decodes nearly every chunk again.

--make-store writes the store first: bench/make_era5_like.py's 2m_temperature (Zarr v2, blosc-lz4
+ byte shuffle, WeatherBench2 layout), then five more variables as copies of its chunks under
other names (same bytes: same decode cost), with consolidated metadata.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np

VARS = ["2m_temperature", "10m_u_component_of_wind", "10m_v_component_of_wind", "mean_sea_level_pressure",
        "total_column_water_vapour", "surface_pressure"]


def make_store(path, timesteps):
    here = os.path.dirname(os.path.abspath(__file__))
    subprocess.run([sys.executable, os.path.join(here, "make_era5_like.py"), "--out", path, "--codec", "blosc-lz4",
                    "--timesteps", str(timesteps)], check=True)
    src = os.path.join(path, VARS[0])
    for v in VARS[1:]:
        shutil.copytree(src, os.path.join(path, v))
    meta = {"zarr_consolidated_format": 1, "metadata": {}}
    for root, _, files in os.walk(path):
        for f in files:
            if f in (".zarray", ".zattrs", ".zgroup"):
                key = os.path.relpath(os.path.join(root, f), path)
                with open(os.path.join(root, f)) as fh:
                    meta["metadata"][key] = json.load(fh)
    with open(os.path.join(path, ".zmetadata"), "w") as fh:
        json.dump(meta, fh)


class TsDataset:
    """One sample: the six variables at t (inputs) and t+1 (targets), read with TensorStore."""

    def __init__(self, path, n_time):
        self.path, self.n = path, n_time - 1
        self.arrays = None

    def __len__(self):
        return self.n

    def _open(self):
        import tensorstore as ts
        self.arrays = [ts.open({"driver": "zarr", "kvstore": {"driver": "file", "path": os.path.join(self.path, v)}},
                               read=True).result() for v in VARS]

    def __getitem__(self, t):
        if self.arrays is None:
            self._open()
        futs = [a[t:t + 2].read() for a in self.arrays]
        x = np.stack([f.result() for f in futs], axis=1)  # [2, 6, lat, lon]
        return x[0:1], x[1:2]


def run_torch_loader(path, n_time, workers, epochs, batch):
    import torch
    ds = TsDataset(path, n_time)
    g = torch.Generator().manual_seed(0)
    dl = torch.utils.data.DataLoader(ds, batch_size=batch, shuffle=True, num_workers=workers, pin_memory=True,
                                     persistent_workers=workers > 0, prefetch_factor=2 if workers else None,
                                     generator=g, drop_last=True)
    rates = []
    for e in range(epochs + 1):
        t0 = time.perf_counter()
        nbytes = 0
        nb = 0
        for x, y in dl:
            x = x.cuda(non_blocking=True)
            y = y.cuda(non_blocking=True)
            nbytes += x.numel() * 4 + y.numel() * 4
            nb += 1
        torch.cuda.synchronize()
        dt = time.perf_counter() - t0
        if e > 0:
            rates.append((nb / dt, nbytes / dt / 1e9))
    return rates


def run_cubestream(path, epochs, batch, threads, prefetch, train=False, decode="cpu", memory_limit=4 << 30,
                   gpu_cache=1 << 30):
    import torch
    import cubestream
    ld = cubestream.Loader(path, VARS, window={"inputs": [0], "targets": [1]}, batch_size=batch, shuffle="sample",
                           drop_last=True, device="cuda", threads=threads, prefetch=prefetch,
                           memory_limit=memory_limit, gpu_cache_bytes=gpu_cache, trace=train, decode=decode)
    model = None
    if train:
        c = len(VARS)
        model = torch.nn.Sequential(torch.nn.Conv2d(c, 64, 3, padding=1), torch.nn.GELU(),
                                    torch.nn.Conv2d(64, 64, 3, padding=1), torch.nn.GELU(),
                                    torch.nn.Conv2d(64, c, 3, padding=1)).cuda()
        opt = torch.optim.AdamW(model.parameters(), 1e-4)
    rates, waits = [], []
    for e in range(epochs + 1):
        ld.set_epoch(e)
        ld.reset_stats()
        t0 = time.perf_counter()
        nbytes = nb = 0
        for b in ld:
            x, y = b["inputs"], b["targets"]
            nbytes += x.numel() * 4 + y.numel() * 4
            nb += 1
            if model is not None:
                with torch.autocast("cuda", dtype=torch.bfloat16):
                    loss = (model(x[:, 0]) - y[:, 0]).float().pow(2).mean()
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
        torch.cuda.synchronize()
        dt = time.perf_counter() - t0
        st = ld.stats()
        if e > 0:
            rates.append((nb / dt, nbytes / dt / 1e9))
            waits.append(st["consumer_wait_s"] / max(1, st["batches"]))
    return rates, waits, ld.stats()


def check_equal(path, decode):
    """The CUDA loader's batches equal the CPU loader's, bit for bit."""
    import torch
    import cubestream
    kw = dict(window={"inputs": [0], "targets": [1]}, batch_size=4, shuffle="sample", seed=3)
    gpu = cubestream.Loader(path, VARS[:2], device="cuda", decode=decode, **kw)
    cpu = cubestream.Loader(path, VARS[:2], device="cpu", **kw)
    for i, (a, b) in enumerate(zip(gpu, cpu)):
        if not torch.equal(a["inputs"].cpu(), b["inputs"]) or not torch.equal(a["targets"].cpu(), b["targets"]):
            return False
        if i == 3:
            break
    return True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--store", required=True)
    ap.add_argument("--make-store", action="store_true")
    ap.add_argument("--timesteps", type=int, default=160)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--prefetch", type=int, default=3)
    ap.add_argument("--skip", default="")
    ap.add_argument("--out", default="loader_bench.json")
    a = ap.parse_args()
    if a.make_store:
        make_store(a.store, a.timesteps)
    import torch
    results = {"machine": torch.cuda.get_device_name(0), "cores": os.cpu_count(), "store": a.store,
               "variables": len(VARS), "batch": a.batch, "date": time.strftime("%Y-%m-%d")}
    for decode in ("cpu", "gpu"):
        results[f"cuda_equals_cpu_decode_{decode}"] = check_equal(a.store, decode)
        print(f"cuda batches (decode={decode}) equal cpu batches:", results[f"cuda_equals_cpu_decode_{decode}"], flush=True)
    skip = set(a.skip.split(","))
    r, w, st = run_cubestream(a.store, a.epochs, a.batch, a.threads, a.prefetch)
    results["cubestream"] = {"rates": r, "stats": st}
    print("cubestream", r, flush=True)
    r, w, st = run_cubestream(a.store, a.epochs, a.batch, a.threads, a.prefetch, decode="gpu")
    results["cubestream-gpu-decode"] = {"rates": r, "stats": st}
    print("cubestream-gpu-decode", r, st.get("decode_path"), st.get("units_gpu_decoded"), flush=True)
    for n in (8, 16):
        if f"ts{n}" in skip:
            continue
        r = run_torch_loader(a.store, a.timesteps, n, a.epochs, a.batch)
        results[f"ts-dataloader-{n}"] = {"rates": r}
        print(f"ts-dataloader-{n}", r, flush=True)
    if "per" not in skip:
        r = run_torch_loader(a.store, a.timesteps, 0, 1, a.batch)
        results["per-sample"] = {"rates": r}
        print("per-sample", r, flush=True)
    for decode in ("cpu", "gpu"):
        r, w, st = run_cubestream(a.store, a.epochs, a.batch, a.threads, a.prefetch, train=True, decode=decode)
        results[f"cubestream-{decode}-decode+train"] = {"rates": r, "wait_per_batch_s": w, "stats": st}
        print(f"cubestream-{decode}-decode+train", r, "wait/batch", w, flush=True)
    rows = []
    base = statistics.median(x[1] for x in results["ts-dataloader-16"]["rates"]) if "ts-dataloader-16" in results else None
    for k in ("cubestream", "cubestream-gpu-decode", "ts-dataloader-8", "ts-dataloader-16", "per-sample",
              "cubestream-cpu-decode+train", "cubestream-gpu-decode+train"):
        if k not in results:
            continue
        bps = statistics.median(x[0] for x in results[k]["rates"])
        gbs = statistics.median(x[1] for x in results[k]["rates"])
        rows.append(f"| {k} | {bps:.2f} | {gbs:.2f} | {gbs / base:.2f}x |" if base else f"| {k} | {bps:.2f} | {gbs:.2f} | |")
    table = "| loader | batches/s | GB/s to GPU | vs ts-dataloader-16 |\n|---|---|---|---|\n" + "\n".join(rows)
    results["table"] = table
    print(table)
    with open(a.out, "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
