#!/usr/bin/env python3
"""Next-step prediction on an ERA5-like datacube: a U-Net with a ResNet-18 encoder, fed by a
choice of loaders, with the time the model waited for data measured on every step.

    python3 examples/train_unet.py --store /tmp/era5_6var.zarr --loader cubestream-gpu
    torchrun --nproc_per_node 4 examples/train_unet.py --store ... --loader cubestream-gpu   # DDP

The task (the 2025 NCAR/NVIDIA hackathon's benchmark shape): six surface variables at time t in,
the same six at t+1 out, batches of 16, AdamW, bf16 autocast, one fixed seed. The grid is the
0.25-degree ERA5 one; `--grid 640x1280` (default) trains on the 640x1280 patch at the grid's
corner, which every loader cuts the same way (cubestream: patch={"latitude": 640, "longitude":
1280}), `--grid 721x1440` on the whole field (the model pads to a multiple of 32 inside).

Loaders (`--loader`), all reading the same store, samples and normalisation:
  cubestream-gpu  cubestream.Loader(device="cuda", decode="auto"): compressed chunks go to the GPU,
                  are decoded and assembled there (normalised, bf16) on the loader's streams
  cubestream-cpu  cubestream.Loader(device="cuda", decode="cpu"): decoded and assembled by host
                  threads, the finished bf16 batch copied from pinned memory
  tensorstore     the usual stack: TensorStore reads in a torch Dataset, DataLoader(num_workers,
                  pin_memory=True), .cuda(non_blocking=True), normalised and cast on the GPU
  synthetic       random batches already on the GPU: no loading at all, the ceiling

Each step is timed in two parts: `wait` (from asking for the batch until it is on the GPU,
ready for the model: next(), the copy, and for the baseline the normalisation) and `compute`
(forward, backward, optimiser step). Both end in a synchronisation of the training stream only:
that costs a few tens of microseconds a step (the next step's kernels are launched after it), and
it makes the wait exactly the time the GPU sat idle for data. The cubestream-gpu loader works on
its own streams, which are not synchronised, so its GPU work still overlaps the model's.

Normalisation: mean and std per variable from STORE/cubestream_stats.json (`cubestream stats
STORE` writes it); where missing, estimated here from a few time steps.

DDP: under torchrun (RANK, WORLD_SIZE, LOCAL_RANK set) every rank trains on its own GPU with
DistributedDataParallel; cubestream loaders get rank/world_size (equal, disjoint shares of each
epoch's permutation), the baseline a DistributedSampler, the synthetic source just its own
batches. Throughput is summed over ranks; time is the slowest rank's.

`--loader-only` iterates the loader the same way without the model (loader-only throughput).
`--json PATH` writes every epoch's figures, the loader's stats() and the step times;
`--trace PATH` writes the cubestream loader's Perfetto trace (ui.perfetto.dev).
`run()` and `parse_args()` are what bench/train_bench.py calls, in one process for all loaders.
"""
import argparse
import bisect
import gc
import json
import math
import os
import statistics
import sys
import time

VARIABLES = ["2m_temperature", "10m_u_component_of_wind", "10m_v_component_of_wind", "mean_sea_level_pressure",
             "total_column_water_vapour", "surface_pressure"]
LOADERS = ["cubestream-gpu", "cubestream-cpu", "tensorstore", "synthetic"]


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--store", required=True, help="Zarr store (e.g. from bench/loader_bench.py --make-store)")
    p.add_argument("--loader", choices=LOADERS, default="cubestream-gpu")
    p.add_argument("--variables", default=",".join(VARIABLES), help="comma-separated (default: the six)")
    p.add_argument("--grid", default="640x1280",
                   help="HxW: 640x1280 (the corner patch, default) or 721x1440 (the whole field); any patch size works")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--epochs", type=int, default=3, help="measured epochs (after the warm-up)")
    p.add_argument("--warmup-epochs", type=int, default=1,
                   help="epochs run first and not measured (cuDNN autotuning, page cache, worker start)")
    p.add_argument("--max-seconds", type=float, default=0,
                   help="stop after the epoch that passes this wall time (0: no limit); at least one measured epoch runs")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--weight-decay", type=float, default=1e-2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--loader-only", action="store_true", help="iterate the loader without the model")
    # cubestream
    p.add_argument("--threads", type=int, default=0, help="cubestream threads (0: cores / local GPUs)")
    p.add_argument("--ddp-grads", choices=["fp32", "bf16"], default="fp32",
                   help="DDP gradient all-reduce precision: bf16 halves the bytes exchanged between GPUs "
                        "(a DDP communication hook; the optimiser still steps in fp32)")
    p.add_argument("--prefetch", type=int, default=3)
    p.add_argument("--shuffle", choices=["sample", "chunk"], default="sample")
    p.add_argument("--memory-limit-gb", type=float, default=4.0,
                   help="cubestream host memory limit; the decoded-chunk cache gets what the batch buffers leave. "
                        "4 GB holds a small part of the store, so epochs decode again, as at ERA5 scale")
    p.add_argument("--gpu-cache-gb", type=float, default=1.0, help="cubestream GPU decoded-chunk cache (decode on GPU)")
    p.add_argument("--readahead-batches", type=int, default=1,
                   help="cubestream: batches ahead whose chunks the loader asks the kernel to read into the page cache "
                        "(cold data; 0: off)")
    p.add_argument("--host-decode-share", default="auto",
                   help="cubestream-gpu: share of the GPU's chunks the host threads decode instead "
                        "(auto: adapted per batch to the idle host time; or a number in [0, 1])")
    p.add_argument("--gpu-pacing", choices=["off", "step"], default="off",
                   help="cubestream-gpu: step holds each batch's GPU work until the training step that precedes its "
                        "use starts (the same point of every rank's step under DDP); off enqueues it once fetched")
    # baseline
    p.add_argument("--workers", type=int, default=8,
                   help="DataLoader workers for the TensorStore baseline (8 beat 16 on the 16-core H100 machine)")
    p.add_argument("--device", default="cuda", help="cuda (default); cpu only for smoke tests without a GPU")
    p.add_argument("--no-channels-last", action="store_true", help="keep NCHW (channels-last is faster for bf16 convs)")
    p.add_argument("--train-stream", choices=["auto", "high", "default"], default="auto",
                   help="high: train on a stream of higher priority than the loader's, so that the GPU hands the "
                        "model's kernels free SMs before the loader's pending blocks; default: the device's default "
                        "stream; auto (default): high on one GPU, default with several ranks (on four H200s, high with "
                        "NCCL's streams high too measured the same as default: docs/benchmarks.md, session 24). "
                        "Every loader gets the same setting")
    p.add_argument("--nccl-stream", choices=["auto", "high", "default"], default="auto",
                   help="priority of NCCL's streams under DDP: high or default; auto (default): high where the "
                        "model trains on the high-priority stream (see --train-stream)")
    p.add_argument("--json", default="", help="write the results here")
    p.add_argument("--trace", default="", help="write the cubestream loader's Perfetto trace here")
    p.add_argument("--profile-steps", type=int, default=0,
                   help="record N steps of the last epoch with torch.profiler (CUPTI sees every stream of the process, "
                        "the loader's too) and summarise GPU time per stream and CUDA API time; that epoch's figures are "
                        "then perturbed")
    p.add_argument("--quiet", action="store_true")
    a = p.parse_args(argv)
    a.variables = [v for v in a.variables.split(",") if v]
    a.height, a.width = (int(x) for x in a.grid.split("x"))
    return a


# ---------------------------------------------------------------------------------------------
# The model: U-Net with a ResNet-18 encoder (written out: torchvision is not needed). The decoder
# follows segmentation_models_pytorch's Unet(resnet18): channels 256, 128, 64, 32, 16, nearest
# upsampling, skip concatenation, two conv-BN-ReLU per block.
# ---------------------------------------------------------------------------------------------
def build_model(channels, seed):
    import torch
    from torch import nn
    import torch.nn.functional as F

    def conv_bn(cin, cout, k, stride=1):
        return nn.Sequential(nn.Conv2d(cin, cout, k, stride, k // 2, bias=False), nn.BatchNorm2d(cout))

    class BasicBlock(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.a = conv_bn(cin, cout, 3, stride)
            self.b = conv_bn(cout, cout, 3)
            self.skip = conv_bn(cin, cout, 1, stride) if (stride != 1 or cin != cout) else nn.Identity()

        def forward(self, x):
            return F.relu(self.b(F.relu(self.a(x))) + self.skip(x))

    def layer(cin, cout, stride):
        return nn.Sequential(BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1))

    class Up(nn.Module):
        def __init__(self, cin, cskip, cout):
            super().__init__()
            self.c1 = nn.Sequential(conv_bn(cin + cskip, cout, 3), nn.ReLU(inplace=True))
            self.c2 = nn.Sequential(conv_bn(cout, cout, 3), nn.ReLU(inplace=True))

        def forward(self, x, skip=None):
            x = F.interpolate(x, scale_factor=2.0, mode="nearest")
            if skip is not None:
                x = torch.cat([x, skip], dim=1)
            return self.c2(self.c1(x))

    class UNetResNet18(nn.Module):
        """[B, C, H, W] -> [B, C, H, W]: the state at t+1 as t plus a learnt increment."""

        def __init__(self, c):
            super().__init__()
            self.stem = nn.Sequential(conv_bn(c, 64, 7, 2), nn.ReLU(inplace=True))    # H/2
            self.pool = nn.MaxPool2d(3, 2, 1)                                          # H/4
            self.l1, self.l2 = layer(64, 64, 1), layer(64, 128, 2)                     # H/4, H/8
            self.l3, self.l4 = layer(128, 256, 2), layer(256, 512, 2)                  # H/16, H/32
            self.d4, self.d3 = Up(512, 256, 256), Up(256, 128, 128)
            self.d2, self.d1 = Up(128, 64, 64), Up(64, 64, 32)
            self.d0 = Up(32, 0, 16)
            self.head = nn.Conv2d(16, c, 3, padding=1)
            # Zero increment at the start: the untrained model is persistence (y = x), a sane
            # forecast to improve on, and the first steps' loss is that of persistence.
            nn.init.zeros_(self.head.weight)
            nn.init.zeros_(self.head.bias)

        def forward(self, x):
            h, w = x.shape[-2:]
            ph, pw = (-h) % 32, (-w) % 32   # five halvings: pad 721 to 736 inside, crop after
            z = x
            if pw:
                z = F.pad(z, (0, pw, 0, 0), mode="circular")     # longitude wraps around
            if ph:
                z = F.pad(z, (0, 0, 0, ph), mode="replicate")    # latitude does not
            s1 = self.stem(z)
            s2 = self.l1(self.pool(s1))
            s3 = self.l2(s2)
            s4 = self.l3(s3)
            y = self.d4(self.l4(s4), s4)
            y = self.d1(self.d2(self.d3(y, s3), s2), s1)
            y = self.head(self.d0(y))[..., :h, :w]
            return x + y

    torch.manual_seed(seed)   # same initial weights for every loader
    return UNetResNet18(channels)


# ---------------------------------------------------------------------------------------------
# Distributed setup
# ---------------------------------------------------------------------------------------------
class Dist:
    def __init__(self, device, nccl_high_priority=False):
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        self.local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        self.local_world = int(os.environ.get("LOCAL_WORLD_SIZE", str(self.world)))
        self.device = device
        # Under torchrun (which sets RANK and WORLD_SIZE) the process group and DDP are used even
        # on one GPU, so `torchrun --nproc_per_node 1` exercises the distributed path.
        self.distributed = "RANK" in os.environ and "WORLD_SIZE" in os.environ
        if device == "cuda":
            import torch
            torch.cuda.set_device(self.local_rank)
            self.device = f"cuda:{self.local_rank}"
        self.nccl_high_priority = False
        if self.distributed:
            import torch.distributed as dist
            options = {}
            if device == "cuda" and nccl_high_priority:
                # NCCL's collectives run on streams of their own, created at the default priority
                # unless asked; with the model on a high-priority stream, DDP's gradient
                # all-reduce would then yield to the backward pass and finish last.
                nccl_options = dist.ProcessGroupNCCL.Options()
                nccl_options.is_high_priority_stream = True
                options["pg_options"] = nccl_options
                self.nccl_high_priority = True
            dist.init_process_group("nccl" if device == "cuda" else "gloo", **options)

    def sum(self, values):
        """Element-wise sums over ranks of a list of floats."""
        if not self.distributed:
            return list(values)
        import torch
        import torch.distributed as dist
        t = torch.tensor(values, dtype=torch.float64, device=self.device)
        dist.all_reduce(t)
        return t.tolist()

    def gather(self, values):
        """Every rank's list of floats (equal lengths), in rank order: a sum over one-hot slots."""
        if not self.distributed:
            return [list(values)]
        n = len(values)
        slots = [0.0] * (n * self.world)
        slots[self.rank * n:(self.rank + 1) * n] = values
        flat = self.sum(slots)
        return [flat[r * n:(r + 1) * n] for r in range(self.world)]

    def max(self, values):
        if not self.distributed:
            return list(values)
        import torch
        import torch.distributed as dist
        t = torch.tensor(values, dtype=torch.float64, device=self.device)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return t.tolist()


# ---------------------------------------------------------------------------------------------
# Data: every source yields (x, y), [B, C, H, W] bf16 tensors on the device, normalised
# ---------------------------------------------------------------------------------------------
def normalisation(store, variables):
    """{variable: (mean, std)}: from cubestream_stats.json if there, else from 8 time steps."""
    path = os.path.join(store, "cubestream_stats.json")
    if os.path.exists(path):
        with open(path) as f:
            doc = json.load(f)
        out = {}
        for v in variables:
            m = doc.get("variables", {}).get(v) or doc.get("channels", {}).get(v)
            if m is None:
                break
            out[v] = (float(m["mean"]), float(m["std"]) if m["std"] > 0 else 1.0)
        else:
            return out
    import numpy as np
    import cubestream
    ds = cubestream.open_dataset(store)
    nt = ds.dims["time"]
    out = {}
    for v in variables:
        vals = [ds.read_decoded(v, [int(t), 0, 0], [1] + [ds.dims[d] for d in ds.variable_dims(v)[1:]])
                for t in np.linspace(0, nt - 1, min(8, nt)).astype(int)]
        a = np.concatenate([x.ravel() for x in vals])
        a = a[np.isfinite(a)]
        out[v] = (float(a.mean()), float(a.std()) if a.std() > 0 else 1.0)
    print(f"note: no cubestream_stats.json in {store}; mean/std estimated from {len(vals)} time steps "
          f"(`cubestream stats {store}` computes them over everything)", file=sys.stderr)
    return out


class CubestreamSource:
    def __init__(self, a, dist, norm, decode):
        import cubestream
        # A patch of the whole field's size is the whole field: one sample per time step either way.
        patch = {"latitude": a.height, "longitude": a.width}
        threads = a.threads or max(1, (os.cpu_count() or 4) // dist.local_world)
        self.threads = threads
        self.loader = cubestream.Loader(
            a.store, a.variables, patch=patch, window={"inputs": [0], "targets": [1]}, batch_size=a.batch_size,
            shuffle=a.shuffle, seed=a.seed, drop_last=True, normalisation=norm, dtype="bfloat16",
            device=dist.device, decode=decode if dist.device != "cpu" else "auto", threads=threads,
            prefetch=a.prefetch, memory_limit=int(a.memory_limit_gb * (1 << 30)),
            gpu_cache_bytes=int(a.gpu_cache_gb * (1 << 30)), rank=dist.rank, world_size=dist.world,
            host_decode_share=None if a.host_decode_share == "auto" else float(a.host_decode_share),
            readahead_batches=a.readahead_batches, gpu_pacing=a.gpu_pacing,
            trace=bool(a.trace))
        assert tuple(self.loader.input_shape[2:]) == (len(a.variables), a.height, a.width), self.loader.input_shape

    def __len__(self):
        return len(self.loader)

    def epoch(self, e):
        # The producer runs on into the next epoch by itself; set_epoch would drop what it has
        # prefetched, so it is called only where the loader is not already at epoch e.
        if self.loader.epoch != e:
            self.loader.set_epoch(e)
        self.loader.reset_stats()   # per-epoch stats; also restarts the trace (it keeps the last epoch)
        for b in self.loader:
            yield b["inputs"][:, 0], b["targets"][:, 0]

    def stats(self):
        return self.loader.stats()

    def write_trace(self, path):
        self.loader.write_trace(path)


class TsDataset:
    """Sample t: the variables at t and t+1 on the grid's corner patch, read with TensorStore
    (what a user of the usual stack writes; opened lazily, once per worker)."""

    def __init__(self, store, variables, n_time, height, width):
        self.store, self.variables, self.n = store, variables, n_time - 1
        self.h, self.w = height, width
        self.arrays = None

    def __len__(self):
        return self.n

    def __getitem__(self, t):
        import numpy as np
        if self.arrays is None:
            import tensorstore as ts
            self.arrays = [ts.open({"driver": "zarr", "kvstore": {"driver": "file", "path": os.path.join(self.store, v)}},
                                   read=True).result() for v in self.variables]
        futs = [a[t:t + 2, :self.h, :self.w].read() for a in self.arrays]
        x = np.stack([f.result() for f in futs], axis=1)   # [2, C, h, w] float32
        return x[0], x[1]


class TensorStoreSource:
    def __init__(self, a, dist, norm):
        import torch
        import torch.utils.data as tud
        import cubestream
        nt = cubestream.open_dataset(a.store).dims["time"]
        self.ds = TsDataset(a.store, a.variables, nt, a.height, a.width)
        # DistributedSampler also for one process: the same shuffle code path on 1 and N GPUs.
        self.sampler = tud.DistributedSampler(self.ds, num_replicas=dist.world, rank=dist.rank, shuffle=True,
                                              seed=a.seed, drop_last=True)
        self.dl = tud.DataLoader(self.ds, batch_size=a.batch_size, sampler=self.sampler, num_workers=a.workers,
                                 pin_memory=dist.device != "cpu", drop_last=True, persistent_workers=a.workers > 0,
                                 prefetch_factor=2 if a.workers else None)
        dev = dist.device
        self.mean = torch.tensor([norm[v][0] for v in a.variables], dtype=torch.float32, device=dev).view(1, -1, 1, 1)
        self.std = torch.tensor([norm[v][1] for v in a.variables], dtype=torch.float32, device=dev).view(1, -1, 1, 1)
        self.dev = dev

    def __len__(self):
        return len(self.dl)

    def epoch(self, e):
        import torch
        self.sampler.set_epoch(e)
        for x, y in self.dl:
            # Pinned -> GPU without blocking the host, then normalised and cast there (cheap
            # on the GPU; the cubestream loaders do the same work in their assembly).
            x = x.to(self.dev, non_blocking=True)
            y = y.to(self.dev, non_blocking=True)
            yield ((x - self.mean) / self.std).to(torch.bfloat16), ((y - self.mean) / self.std).to(torch.bfloat16)

    def stats(self):
        return None

    def close(self):
        # Stop the persistent workers now, not at garbage collection.
        it = getattr(self.dl, "_iterator", None)
        if it is not None:
            it._shutdown_workers()
        self.dl = None


class SyntheticSource:
    """Random batches already on the device, as many per epoch as the real loaders give."""

    def __init__(self, a, dist):
        import torch
        import cubestream
        nt = cubestream.open_dataset(a.store).dims["time"]
        self.n = ((nt - 1) // dist.world) // a.batch_size
        g = torch.Generator(device="cpu").manual_seed(a.seed + 1000 * dist.rank)
        shape = (a.batch_size, len(a.variables), a.height, a.width)
        # Four distinct batches cycled: no loading cost at all, and not one cached tensor.
        self.batches = [(torch.randn(shape, generator=g).to(dist.device, torch.bfloat16),
                         torch.randn(shape, generator=g).to(dist.device, torch.bfloat16)) for _ in range(4)]

    def __len__(self):
        return self.n

    def epoch(self, e):
        for i in range(self.n):
            yield self.batches[i % len(self.batches)]

    def stats(self):
        return None


def make_source(a, dist, norm):
    if a.loader == "cubestream-gpu":
        return CubestreamSource(a, dist, norm, "auto")
    if a.loader == "cubestream-cpu":
        return CubestreamSource(a, dist, norm, "cpu")
    if a.loader == "tensorstore":
        return TensorStoreSource(a, dist, norm)
    return SyntheticSource(a, dist)


# ---------------------------------------------------------------------------------------------
# The loop
# ---------------------------------------------------------------------------------------------
def start_profiler():
    import torch
    from torch.profiler import ProfilerActivity, profile
    cuda = torch.cuda.is_available()
    prof = profile(activities=[ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else []))
    prof.__enter__()
    if cuda:
        torch.cuda.synchronize()
    return prof


def stop_profiler(prof, steps):
    """GPU busy time per stream (kernels, copies, memsets) and CUDA API time, per step, from the
    profiler's Chrome trace: the model runs on the training stream, the loader on its own."""
    import tempfile
    import torch
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    prof.__exit__(None, None, None)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "prof.json")
        prof.export_chrome_trace(path)
        with open(path) as f:
            doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc   # some versions write a bare list
    streams, api = {}, {}
    lo, hi = None, None
    for ev in events:
        cat, dur = ev.get("cat", ""), float(ev.get("dur", 0) or 0)
        if cat in ("kernel", "gpu_memcpy", "gpu_memset"):
            st = streams.setdefault(str(ev.get("args", {}).get("stream")), {"busy_ms": 0.0, "launches": 0, "top": {}})
            st["busy_ms"] += dur / 1e3
            st["launches"] += 1
            key = f"{cat}: {ev.get('name', '')[:90]}"
            st["top"][key] = st["top"].get(key, 0.0) + dur / 1e3
            lo = ev["ts"] if lo is None else min(lo, ev["ts"])
            hi = ev["ts"] + dur if hi is None else max(hi, ev["ts"] + dur)
        elif cat in ("cuda_runtime", "cuda_driver"):
            a = api.setdefault(ev.get("name", ""), [0.0, 0])
            a[0] += dur / 1e3
            a[1] += 1
    for st in streams.values():
        st["busy_ms_per_step"] = st["busy_ms"] / steps
        st["top"] = dict(sorted(st["top"].items(), key=lambda kv: -kv[1])[:8])
    top_api = sorted(api.items(), key=lambda kv: -kv[1][0])[:15]
    return {"steps": steps, "gpu_span_ms": ((hi - lo) / 1e3) if lo is not None else 0.0,
            "streams": dict(sorted(streams.items(), key=lambda kv: -kv[1]["busy_ms"])),
            "cuda_api_ms": {k: {"ms": v[0], "calls": v[1]} for k, v in top_api},
            "training_stream_gaps": training_stream_gaps(events, steps)}


def training_stream_gaps(events, steps, min_gap_us=5.0):
    """Where the training stream sat idle between its kernels, from the profiler's Chrome trace.

    The training stream is the one with the most kernel time. A gap before a kernel is *late
    launch* when the call that launched it (matched by the trace's correlation id) returned
    after the stream had gone idle: the launching thread was still busy, and what it and the
    other threads were doing over the gap is summed by event name (`late_*`). Otherwise the
    kernel was queued in time and waited on the GPU side (an event the stream waits for, or
    SMs that other streams' kernels held)."""
    gpu = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and e.get("ph") == "X"]
    if not gpu:
        return {}
    per_stream = {}
    for e in gpu:
        per_stream.setdefault(str(e.get("args", {}).get("stream")), []).append(e)
    train = max(per_stream, key=lambda k: sum(float(e.get("dur", 0)) for e in per_stream[k] if e["cat"] == "kernel"))
    run = sorted(per_stream[train], key=lambda e: float(e["ts"]))
    api_cats = ("cuda_runtime", "cuda_driver")
    launch = {e["args"]["correlation"]: e for e in events
              if e.get("cat") in api_cats and "correlation" in e.get("args", {})}
    host = [e for e in events if e.get("ph") == "X" and e.get("cat") in api_cats + ("cpu_op", "user_annotation")]
    host.sort(key=lambda e: float(e["ts"]))
    starts = [float(e["ts"]) for e in host]

    def overlapping(t0, t1):
        # host events overlapping [t0, t1]; events last < 1 s, so look back that far
        for i in range(bisect.bisect_left(starts, t0 - 1e6), bisect.bisect_right(starts, t1)):
            e = host[i]
            a, b = float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0))
            if b > t0 and a < t1:
                yield e, min(b, t1) - max(a, t0)

    total = late = gpu_side = untraced = 0.0
    late_own, late_other = {}, {}
    biggest = []
    idle_from = float(run[0]["ts"]) + float(run[0].get("dur", 0))
    for k in run[1:]:
        t = float(k["ts"])
        gap = t - idle_from
        if gap > min_gap_us:
            total += gap
            call = launch.get(k.get("args", {}).get("correlation"))
            returned = float(call["ts"]) + float(call.get("dur", 0)) if call else None
            is_late = returned is not None and returned > idle_from + 1.0
            if is_late:
                late += gap
                tid = call.get("tid")
                covered = []
                for e, ov in overlapping(idle_from, t):
                    bucket = late_own if e.get("tid") == tid else late_other
                    name = f"{e['cat']}: {str(e.get('name', ''))[:70]}"
                    bucket[name] = bucket.get(name, 0.0) + ov
                    if e.get("tid") == tid:
                        a = max(float(e["ts"]), idle_from)
                        covered.append((a, a + ov))
                # Time in no traced event of the launching thread: Python between ops, waits
                # the trace does not show (locks), or the thread off its core.
                covered.sort()
                union, reach = 0.0, idle_from
                for a, b in covered:
                    if b > reach:
                        union += b - max(a, reach)
                        reach = b
                untraced += gap - union
            else:
                gpu_side += gap
            biggest.append((gap, is_late, str(k.get("name", ""))[:60], str(call.get("name", "")) if call else ""))
        idle_from = max(idle_from, t + float(k.get("dur", 0)))
    biggest.sort(reverse=True)

    def per_step(d):
        return {n: round(v / 1e3 / steps, 3) for n, v in sorted(d.items(), key=lambda kv: -kv[1])[:10]}

    return {"stream": train, "gap_ms_per_step": total / 1e3 / steps,
            "late_launch_ms_per_step": late / 1e3 / steps, "gpu_side_ms_per_step": gpu_side / 1e3 / steps,
            "late_untraced_ms_per_step": untraced / 1e3 / steps,
            "late_launching_thread_ms_per_step": per_step(late_own),
            "late_other_threads_ms_per_step": per_step(late_other),
            "biggest_us": [{"gap_us": round(g, 1), "late_launch": l, "kernel": kn, "launch_call": c}
                           for g, l, kn, c in biggest[:12]]}


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def run(a):
    """Warm-up and measured epochs for one loader; returns the results (rank 0 writes --json).

    With `--train-stream high` (and `auto` on one GPU) everything of the run (model, optimiser,
    the loader's hand-over) happens on a stream of higher priority than the loader's, which
    have the lowest (CUDA's default): when the loader's kernels have blocks waiting for SMs (the
    batch assembly launches one block per patch piece), the GPU's block scheduler still gives
    SMs that free up to the model's next kernel first. Blocks already running are not
    preempted."""
    import torch

    world = int(os.environ.get("WORLD_SIZE", "1"))
    high = a.train_stream == "high" or (a.train_stream == "auto" and world == 1)
    dist = Dist(a.device, nccl_high_priority=a.nccl_stream == "high" or (a.nccl_stream == "auto" and high))
    cuda = dist.device != "cpu"
    if not (cuda and high):
        return train(a, dist, cuda, None)
    # -1 is "high" on every PyTorch version; newer ones map it into the device's range.
    stream = torch.cuda.Stream(priority=-1)
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        result = train(a, dist, cuda, getattr(stream, "priority", -1))
    torch.cuda.current_stream().wait_stream(stream)
    return result


def train(a, dist, cuda, stream_priority):
    """run()'s body, on the current stream."""
    import torch
    import torch.nn.functional as F

    if cuda:
        # cuDNN picks the fastest convolution algorithms in the first steps (the warm-up epoch);
        # all batches have one shape (drop_last), so it tunes once.
        torch.backends.cudnn.benchmark = True
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    channels = len(a.variables)
    norm = normalisation(a.store, a.variables) if a.loader != "synthetic" else None
    source = make_source(a, dist, norm)
    fmt = torch.channels_last if (cuda and not a.no_channels_last) else torch.contiguous_format

    model = opt = None
    if not a.loader_only:
        model = build_model(channels, a.seed).to(dist.device, memory_format=fmt)
        if dist.distributed:
            model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[dist.local_rank] if cuda else None)
            if a.ddp_grads == "bf16":
                if not cuda:
                    raise SystemExit("--ddp-grads bf16 needs CUDA (PyTorch's bf16 hook runs over NCCL only)")
                # Gradients are cast to bf16 for the all-reduce and back: half the traffic over
                # the GPU links (or host memory, where the GPUs have no peer path).
                from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
                model.register_comm_hook(None, default_hooks.bf16_compress_hook)
        opt = torch.optim.AdamW(model.parameters(), lr=a.lr, weight_decay=a.weight_decay)
    amp_device = "cuda" if cuda else "cpu"

    def sync():
        if cuda:
            torch.cuda.current_stream().synchronize()   # this stream only: the loader's run on

    per_sample_bytes = 2 * channels * a.height * a.width * 4   # float32 values in t and t+1
    epochs = []
    profile = None
    t_run = time.perf_counter()
    total_epochs = a.warmup_epochs + a.epochs
    for e in range(total_epochs):
        measured = e >= a.warmup_epochs
        steps = []        # (t0, t1, t2) perf_counter_ns: asked for data, data ready, step done
        loss_sum = torch.zeros((), device=dist.device)
        n_batches = samples = 0
        it = source.epoch(e)
        prof = None
        profile_from = 3 if (a.profile_steps and e == total_epochs - 1) else -1
        t_epoch = time.perf_counter_ns()
        while True:
            if n_batches == profile_from:
                prof = start_profiler()
            if prof is not None and n_batches == profile_from + a.profile_steps:
                profile = stop_profiler(prof, a.profile_steps)
                prof = None
            t0 = time.perf_counter_ns()
            try:
                x, y = next(it)
            except StopIteration:
                break
            sync()
            t1 = time.perf_counter_ns()
            if model is not None:
                if fmt is torch.channels_last:
                    x = x.contiguous(memory_format=fmt)   # the model's layout choice: counted as compute
                with torch.autocast(amp_device, dtype=torch.bfloat16):
                    pred = model(x)
                loss = F.mse_loss(pred.float(), y.float())
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                loss_sum += loss.detach()
                sync()
            t2 = time.perf_counter_ns()
            steps.append((t0, t1, t2))
            n_batches += 1
            samples += x.shape[0]
        t_end = time.perf_counter_ns()
        if prof is not None:   # the epoch ended inside the profiled steps
            profile = stop_profiler(prof, max(1, n_batches - profile_from))
        wall = (t_end - t_epoch) / 1e9
        wait = sum(s[1] - s[0] for s in steps) / 1e9 + (t_end - (steps[-1][2] if steps else t_epoch)) / 1e9
        compute = sum(s[2] - s[1] for s in steps) / 1e9
        # Over ranks: samples add up; the epoch takes as long as the slowest rank.
        samples_all, = dist.sum([samples])
        wall_all, = dist.max([wall])
        loss_mean = (loss_sum.item() / max(1, n_batches)) if model is not None else float("nan")
        rec = {"epoch": e, "measured": measured, "batches": n_batches, "samples": int(samples_all), "wall_s": wall_all,
               "samples_per_s": samples_all / wall_all if wall_all > 0 else 0.0,
               "gb_per_s": samples_all * per_sample_bytes / wall_all / 1e9 if wall_all > 0 else 0.0,
               "wait_s": wait, "compute_s": compute, "wait_fraction": wait / wall if wall > 0 else 0.0,
               "step_wait_ms_median": median([(s[1] - s[0]) / 1e6 for s in steps]),
               "step_ms_median": median([(s[2] - s[0]) / 1e6 for s in steps]),
               # Where an epoch's wait comes from: a few long stalls or a little every step.
               "step_wait_ms_max": max([(s[1] - s[0]) / 1e6 for s in steps], default=0.0),
               "steps_waiting_over_10ms": sum(1 for s in steps if s[1] - s[0] > 10_000_000),
               "step_ms_max": max([(s[2] - s[0]) / 1e6 for s in steps], default=0.0),
               "loss": loss_mean, "loader_stats": source.stats()}
        # Each rank's own waits and, for cubestream's GPU path, its host decode share: under DDP
        # a stall of one rank stalls all, and rank 0's figures alone do not say whose it was.
        ls = rec["loader_stats"] or {}
        keys = ("wait_s", "step_wait_ms_max", "steps_waiting_over_10ms", "step_ms_max")
        lkeys = ("host_decode_share", "batches_built_on_host", "host_share_trials", "host_share_trials_kept")
        per_rank = dist.gather([float(rec[k]) for k in keys] + [float(ls.get(k, -1)) for k in lkeys])
        rec["ranks"] = [dict(zip(keys + lkeys, v)) for v in per_rank]
        # Every step's times (perf_counter_ns = CLOCK_MONOTONIC, the clock of the loader's trace):
        # where in an epoch a stall happened. For the last epoch also the next() that ended it:
        # bench/plot_train.py lines the trace's "consumer wait" events up with these to draw
        # steps and loader stages together.
        rec["steps_ns"] = steps
        if e == total_epochs - 1 or (a.max_seconds and time.perf_counter() - t_run > a.max_seconds):
            rec["final_next_ns"] = t0
        epochs.append(rec)
        if dist.rank == 0 and not a.quiet:
            print(f"[{a.loader}{' loader-only' if a.loader_only else ''}] epoch {e}{'' if measured else ' (warm-up)'}: "
                  f"{n_batches} batches, {rec['samples_per_s']:.1f} samples/s, {rec['gb_per_s']:.2f} GB/s, "
                  f"waited {100 * rec['wait_fraction']:.1f}% of {wall:.2f} s, step {rec['step_ms_median']:.1f} ms"
                  + ("" if model is None else f", loss {loss_mean:.4f}"), flush=True)
        if measured and a.max_seconds and time.perf_counter() - t_run > a.max_seconds:
            if dist.rank == 0 and e + 1 < total_epochs:
                print(f"[{a.loader}] stopping after epoch {e}: --max-seconds {a.max_seconds:g} passed", flush=True)
            break

    m = [r for r in epochs if r["measured"]]
    result = {"loader": a.loader, "mode": "loader-only" if a.loader_only else "train", "grid": a.grid,
              "batch_size": a.batch_size, "world_size": dist.world, "ddp_grads": a.ddp_grads,
              "train_stream_priority": stream_priority, "nccl_high_priority": dist.nccl_high_priority,
              "threads": getattr(source, "threads", None), "variables": a.variables,
              "device": torch.cuda.get_device_name(dist.local_rank) if cuda else "cpu",
              "bytes_per_sample": per_sample_bytes, "batches_per_epoch": len(source),
              "measured_epochs": len(m),
              "samples_per_s": median([r["samples_per_s"] for r in m]),
              "gb_per_s": median([r["gb_per_s"] for r in m]),
              "wait_fraction": median([r["wait_fraction"] for r in m]),
              "epochs": epochs}
    if profile is not None:
        result["profile"] = profile
    if isinstance(source, CubestreamSource) and a.trace:
        source.write_trace(a.trace)
        result["trace"] = a.trace
    if dist.rank == 0 and a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=1)
    if dist.rank == 0 and not a.quiet:
        print(f"[{result['loader']} {result['mode']}] median of {len(m)} epochs: {result['samples_per_s']:.1f} "
              f"samples/s, {result['gb_per_s']:.2f} GB/s, data wait {100 * result['wait_fraction']:.2f}% of step time",
              flush=True)
        if m:
            print(where_time_went(m[-1]), flush=True)
    # Free the GPU and the loader threads / workers before the caller runs the next loader.
    if hasattr(source, "close"):
        source.close()
    del source, model, opt
    gc.collect()
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
    if dist.distributed:
        import torch.distributed as tdist
        tdist.destroy_process_group()
    return result


def where_time_went(epoch):
    """A few lines on one epoch: the training loop's wait and compute, and for cubestream the
    loader's busy seconds per stage (summed over its threads) and its bytes and cache hits."""
    lines = [f"where time went (last measured epoch, {epoch['wall_s']:.2f} s wall): "
             f"waiting for data {epoch['wait_s']:.2f} s, compute {epoch['compute_s']:.2f} s"]
    st = epoch.get("loader_stats") or {}
    busy = st.get("busy_s")
    if busy:
        stages = ", ".join(f"{k} {v:.2f} s" for k, v in busy.items())
        share = ""
        if st.get("decode_path", "cpu").startswith("gpu"):
            share = (f"; {st.get('units_host_decoded', 0)} of the GPU's chunks decoded by host threads "
                     f"(share now {st.get('host_decode_share', 0):.2f}), "
                     f"{st.get('batches_built_on_host', 0)} batches built whole on the host")
        lines.append(f"  loader ({st.get('decode_path', '?')} decode), busy thread-seconds: {stages}{share}")
        lines.append(f"  loader bytes: {st.get('bytes_fetched', 0) / 1e6:.1f} MB read (compressed), "
                     f"{st.get('bytes_decoded', 0) / 1e6:.1f} MB decoded, {st.get('bytes_delivered', 0) / 1e6:.1f} MB delivered; "
                     f"{st.get('units_fetched', 0)} chunks read, {st.get('cache_hits', 0)} decoded-chunk cache hits; "
                     f"peak memory {st.get('memory_peak', 0) / 1e6:.0f} MB")
    return "\n".join(lines)


def main(argv=None):
    a = parse_args(argv)
    if math.isnan(run(a)["samples_per_s"]):
        sys.exit("no measured epoch")


if __name__ == "__main__":
    main()
