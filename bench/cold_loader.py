#!/usr/bin/env python3
"""Cold-cache loader throughput against the disk (issue 6: "cold cache: at least 95% of raw disk
bandwidth in compressed bytes"), in one run on the GPU machine:

    PYTHONPATH=build-gpu/python python3 bench/cold_loader.py --store /tmp/cs_train_era5.zarr --out OUT

Every measurement starts from an empty page cache (`sync; echo 3 > /proc/sys/vm/drop_caches`, so
it needs root) and reads the store's bytes off the disk once. Sides, alternated round by round:
  files            the raw baseline: every file of the store read whole by --threads threads (plain
                   buffered reads of 8 MiB; the kernel's readahead, as the loader gets), in
                   directory order (each variable's chunks one after another on the disk)
  files-shuffled   the same in a random order (the loader reads in sample order, shuffled)
  dd               `dd iflag=direct bs=4M` over one large file of the store's bytes on the same
                   file system (the usual "raw disk" figure; written once, before the rounds)
  cubestream-gpu   one loader-only epoch of cubestream.Loader(device="cuda", decode="auto"): batches
                   of 16 whole-field samples (six variables at t and t+1), as examples/train_unet.py;
                   the loader in its steady state: a warm epoch first, then the cache dropped,
                   the loader restarted (set_epoch) and the next epoch timed
  cubestream-cpu   the same with decode="cpu"
  cubestream-{gpu,cpu}-noreadahead  the same without the loader's readahead hints
                   (readahead_batches=0; the default, 1, asks the kernel for the next batch's
                   chunks when a batch's fetch starts)
Every side's figure is the bytes read from the disk under the store (/proc/diskstats: each
chunk once, however often the epoch uses it) over its wall time (for the loader: the timed
epoch, restart included); the loader's compressed bytes fetched (loader.stats()["bytes_fetched"]: units that two
samples share are fetched twice, the second time from the page cache) are listed beside. The
ratio is taken against the fastest raw baseline (medians over the rounds). Writes
cold_loader.json and cold_loader.md.
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))

import train_unet  # noqa: E402  (the variables, normalisation and loader settings of the benchmark)


def log(msg):
    print(f"[cold_loader {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def drop_caches(warm=False):
    if warm:
        return
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def store_files(store):
    out = []
    for d, _, files in os.walk(store):
        for f in files:
            if not f.startswith(".") and not f.endswith(".json"):
                p = os.path.join(d, f)
                out.append((p, os.path.getsize(p)))
    return sorted(out)


def block_device(path):
    """The /proc/diskstats name of the disk under `path` (its partition's parent where there is one)."""
    dev = os.stat(path).st_dev
    name = os.path.basename(os.path.realpath(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}"))
    return name


def disk_read_bytes(name):
    """Bytes read from block device `name` so far (/proc/diskstats: sectors read, 512 B each)."""
    with open("/proc/diskstats") as f:
        for line in f:
            p = line.split()
            if p[2] == name:
                return int(p[5]) * 512
    return None


def read_files(files, threads):
    """Every file read whole, in 8 MiB pieces, by `threads` threads; returns (bytes, seconds)."""
    lock = threading.Lock()
    nxt = [0]
    total = [0]

    def work():
        buf = bytearray(8 << 20)
        view = memoryview(buf)
        n = 0
        while True:
            with lock:
                i = nxt[0]
                nxt[0] += 1
            if i >= len(files):
                break
            with open(files[i][0], "rb", buffering=0) as f:
                while True:
                    k = f.readinto(view)
                    if not k:
                        break
                    n += k
        with lock:
            total[0] += n

    t0 = time.perf_counter()
    ts = [threading.Thread(target=work) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return total[0], time.perf_counter() - t0


def make_big_file(path, files, limit):
    """One file of up to `limit` bytes of the store's chunks, for dd (written once, then synced)."""
    if os.path.exists(path) and os.path.getsize(path) >= min(limit, sum(s for _, s in files)) * 0.99:
        return os.path.getsize(path)
    n = 0
    with open(path, "wb") as out:
        for p, s in files:
            if n >= limit:
                break
            with open(p, "rb") as f:
                out.write(f.read())
            n += s
        out.flush()
        os.fsync(out.fileno())
    return n


def dd_direct(path):
    t0 = time.perf_counter()
    subprocess.run(["dd", f"if={path}", "of=/dev/null", "bs=4M", "iflag=direct", "status=none"], check=True)
    return os.path.getsize(path), time.perf_counter() - t0


class OneDevice:
    """What train_unet.CubestreamSource needs of its process group: one process, one GPU."""
    rank, world, local_rank, local_world, distributed = 0, 1, 0, 1, False

    def __init__(self, device):
        self.device = device


def loader_epoch(a, decode, norm, disk, readahead):
    import torch
    cuda = a.device != "cpu"
    args = train_unet.parse_args(["--store", a.store, "--loader-only", "--threads", str(a.threads),
                                  "--readahead-batches", str(readahead),
                                  "--batch-size", str(a.batch_size), "--grid", a.grid, "--memory-limit-gb",
                                  str(a.memory_limit_gb), "--gpu-cache-gb", str(a.gpu_cache_gb)])
    # A loader in its steady state, as in a long training run over a store larger than memory:
    # one warm epoch first (threads, CUDA context, pinned staging sized), then the page cache
    # dropped and the loader restarted at epoch 1 (set_epoch drops what it prefetched), and
    # only that epoch timed. The disk counter covers the same span.
    src = train_unet.CubestreamSource(args, OneDevice(a.device), norm, decode)
    for _ in src.epoch(0):
        pass
    if cuda:
        torch.cuda.synchronize()
    drop_caches(a.warm)
    disk_start = disk_read_bytes(disk)
    t0 = time.perf_counter()
    src.loader.set_epoch(1)
    batches = 0
    for x, _ in src.epoch(1):
        batches += 1
    if cuda:
        torch.cuda.synchronize()
    wall = time.perf_counter() - t0
    # Read now: the producer runs on into the next epoch until the loader is gone.
    disk_end = disk_read_bytes(disk)
    st = src.stats()
    del src
    return {"bytes_fetched": st["bytes_fetched"], "seconds": wall, "disk_start": disk_start, "disk_end": disk_end, "batches": batches,
            "samples_per_s": batches * a.batch_size / wall, "units": st["units_fetched"],
            "decode_path": st.get("decode_path"), "host_decode_share": st.get("host_decode_share")}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--store", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 4)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--grid", default="640x1280")
    ap.add_argument("--memory-limit-gb", type=float, default=4.0)
    ap.add_argument("--gpu-cache-gb", type=float, default=1.0)
    ap.add_argument("--dd-gb", type=float, default=4.0, help="size of the large file dd reads")
    ap.add_argument("--sides", default="files,files-shuffled,dd,cubestream-gpu,cubestream-gpu-noreadahead,"
                                       "cubestream-cpu,cubestream-cpu-noreadahead")
    ap.add_argument("--device", default="cuda", help="cpu only for a smoke test of the script")
    ap.add_argument("--warm", action="store_true", help="do not drop the page cache (a smoke test: not cold figures)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    try:
        drop_caches(a.warm)
    except OSError as e:
        sys.exit(f"cannot drop the page cache ({e}): a cold-cache measurement needs root")
    files = store_files(a.store)
    store_bytes = sum(s for _, s in files)
    big = os.path.join(os.path.dirname(os.path.abspath(a.store)), ".cold_loader_dd.bin")
    sides = a.sides.split(",")
    if "dd" in sides:
        log(f"writing {big} for dd")
        make_big_file(big, files, int(a.dd_gb * 1e9))
    norm = train_unet.normalisation(a.store, train_unet.parse_args(["--store", a.store]).variables)
    fs = subprocess.run(["df", "-h", a.store], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    log(f"store {a.store}: {len(files)} files, {store_bytes / 1e9:.2f} GB; file system: {fs}")
    disk = block_device(a.store)
    log(f"disk under the store: {disk} (read so far: {disk_read_bytes(disk)} bytes)")
    shuffled = list(files)
    random.Random(0).shuffle(shuffled)
    rows = {s: [] for s in sides}
    for r in range(a.rounds):
        order = sides if r % 2 == 0 else list(reversed(sides))
        for side in order:
            if not side.startswith("cubestream"):
                drop_caches(a.warm)   # the loader sides drop it themselves, after their warm epoch
            d0 = disk_read_bytes(disk)
            if side in ("files", "files-shuffled"):
                n, sec = read_files(files if side == "files" else shuffled, a.threads)
                rec = {"bytes_fetched": n, "seconds": sec}
            elif side == "dd":
                n, sec = dd_direct(big)
                rec = {"bytes_fetched": n, "seconds": sec}
            else:
                rec = loader_epoch(a, "auto" if side.startswith("cubestream-gpu") else "cpu", norm, disk,
                                   0 if side.endswith("-noreadahead") else 1)
            d0 = rec.pop("disk_start", None) or d0
            d1 = rec.pop("disk_end", None) or disk_read_bytes(disk)
            # Without a disk counter (or with --warm) the bytes the reader asked for stand in.
            rec["bytes"] = d1 - d0 if d0 is not None and d1 is not None and not a.warm else rec["bytes_fetched"]
            rec["gb_per_s"] = rec["bytes"] / rec["seconds"] / 1e9
            rows[side].append(rec)
            log(f"round {r} {side}: {rec['bytes'] / 1e9:.2f} GB off the disk ({rec['bytes_fetched'] / 1e9:.2f} GB asked for) "
                f"in {rec['seconds']:.2f} s = {rec['gb_per_s']:.3f} GB/s"
                + (f", {rec['samples_per_s']:.1f} samples/s" if "samples_per_s" in rec else ""))
    med = {s: statistics.median(x["gb_per_s"] for x in rows[s]) for s in sides if rows[s]}
    raw = max([med[s] for s in ("files", "files-shuffled", "dd") if s in med] or [float("nan")])
    lines = ["| reader | GB/s off the disk (compressed bytes), median | each round | of raw disk bandwidth | GB asked for / off the disk |",
             "|---|---|---|---|---|"]
    for s in sides:
        if s not in med:
            continue
        each = ", ".join(f"{x['gb_per_s']:.3f}" for x in rows[s])
        asked = statistics.median(x["bytes_fetched"] for x in rows[s]) / 1e9
        off = statistics.median(x["bytes"] for x in rows[s]) / 1e9
        lines.append(f"| {s} | {med[s]:.3f} | {each} | {100 * med[s] / raw:.1f}% | {asked:.2f} / {off:.2f} |")
    md = (f"Store {a.store}: {len(files)} files, {store_bytes / 1e9:.2f} GB, on {disk}; {a.rounds} rounds, each side after "
          f"drop_caches; raw disk bandwidth = the fastest raw baseline ({raw:.3f} GB/s).\n\n" + "\n".join(lines) + "\n")
    print(md, flush=True)
    with open(os.path.join(a.out, "cold_loader.md"), "w") as f:
        f.write(md)
    with open(os.path.join(a.out, "cold_loader.json"), "w") as f:
        json.dump({"store": a.store, "files": len(files), "store_bytes": store_bytes, "filesystem": fs,
                   "rows": rows, "median_gb_per_s": med, "raw_gb_per_s": raw, "args": vars(a)}, f, indent=1)
    if os.path.exists(big):
        os.remove(big)


if __name__ == "__main__":
    main()
