#!/usr/bin/env python3
"""Whole-array read throughput from the page cache: cubestream vs TensorStore, same run.

    python3 bench/read_bench.py --store /tmp/era5_zstd.zarr --array 2m_temperature \
        --threads 16 --repeat 5 --out /tmp/cs_bench [--cli build/cubestream]

What it does, in order:
  1. reads every file of the array once (Python, one thread) so the page cache holds it, and
     reports that read's speed;
  2. one untimed warm-up read with each tool;
  3. `--repeat` rounds, interleaved so that a noisy machine hurts every tool alike (the order
     rotates from round to round):
       cubestream:            `CLI bench read STORE --array PATH --threads N --repeat 1 --json
                              --no-baseline` (the flag is dropped if the CLI refuses it), a
                              fresh process per round; the CLI's own timing of the read
                              ("seconds") is used: process start, metadata parsing and the
                              CLI's internal warm-up read are not counted. The CLI reads into
                              one buffer that its warm-up read has already touched;
       TensorStore read():    `ts.open(...)` once (zarr3 or zarr driver; context
                              data_copy_concurrency = file_io_concurrency = N; cache_pool of
                              0 bytes: no chunk cache), then `arr.read().result()`: a new NumPy
                              array per read (its pages are faulted in during the read);
       TensorStore prealloc:  `ts.array(buf).write(arr).result()` into one NumPy buffer
                              allocated and touched beforehand -- the same buffer treatment as
                              the CLI, so this is the like-for-like comparison (skipped, and
                              said so, if this TensorStore cannot write into `buf` in place);
  4. one more CLI call with `--repeat R` for its in-process numbers and its single-thread codec
     speed (codec_single_thread).
GB/s are of *decoded* bytes (1 GB = 1e9 bytes), medians over the rounds; "vs TS" compares
with TensorStore prealloc where it ran, else with read().

Writes OUTDIR/<label>.json (everything) and OUTDIR/<label>.md (markdown table rows);
bench/summarize.py merges several of them. Exits 0 whenever at least one tool was measured;
what failed is in the JSON ("errors").
"""

import argparse
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import time

T0 = time.time()


def log(msg):
    print(f"[read_bench {time.strftime('%H:%M:%S')} +{time.time() - T0:6.1f}s] {msg}", flush=True)


def detect_format(array_dir):
    if os.path.exists(os.path.join(array_dir, "zarr.json")):
        return 3
    if os.path.exists(os.path.join(array_dir, ".zarray")):
        return 2
    return None


def array_files(array_dir):
    meta = {"zarr.json", ".zarray", ".zattrs", ".zgroup", ".zmetadata"}
    out = []
    for d, _, files in os.walk(array_dir):
        for f in files:
            if f not in meta:
                out.append(os.path.join(d, f))
    return out


def warm_page_cache(files):
    total = 0
    t = time.perf_counter()
    buf = bytearray(16 << 20)
    view = memoryview(buf)
    for path in files:
        with open(path, "rb", buffering=0) as f:
            while True:
                n = f.readinto(view)
                if not n:
                    break
                total += n
    dt = time.perf_counter() - t
    return total, dt


def parse_cli_json(text):
    """The CLI prints one JSON object; tolerate log lines around it."""
    text = text.strip()
    try:
        obj = json.loads(text)
        if isinstance(obj, dict):
            return obj
    except ValueError:
        pass
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{") and line.endswith("}"):
            try:
                return json.loads(line)
            except ValueError:
                continue
    a, b = text.find("{"), text.rfind("}")
    if a >= 0 and b > a:
        return json.loads(text[a:b + 1])
    raise ValueError("no JSON object in the CLI's output")


def num(x, default=None):
    try:
        return float(x)
    except (TypeError, ValueError):
        return default


class Cubestream:
    def __init__(self, cli, store, array, threads, timeout, decode="auto"):
        self.cli, self.store, self.array, self.threads, self.timeout = cli, store, array, threads, timeout
        self.decode = decode
        self.last = None

    no_baseline_ok = True   # cleared when the CLI refuses --no-baseline

    def cmd(self, repeat, baseline=True):
        c = [self.cli, "bench", "read", self.store, "--array", self.array,
             "--threads", str(self.threads), "--repeat", str(repeat), "--json"]
        if self.decode != "auto":
            c += ["--decode", self.decode]
        if not baseline and self.no_baseline_ok:
            c.append("--no-baseline")
        return c

    def run(self, repeat, baseline=True):
        cmd = self.cmd(repeat, baseline)
        t = time.perf_counter()
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=self.timeout)
        wall = time.perf_counter() - t
        if p.returncode != 0 and "--no-baseline" in cmd and "no-baseline" in (p.stderr + p.stdout):
            log("the CLI refuses --no-baseline: running without it")
            self.no_baseline_ok = False
            return self.run(repeat, baseline)
        if p.returncode != 0:
            raise RuntimeError(f"`{shlex.join(cmd)}` exited {p.returncode}: "
                               f"{(p.stderr or p.stdout).strip()[-2000:]}")
        obj = parse_cli_json(p.stdout)
        secs = obj.get("seconds")
        if not isinstance(secs, list) or not secs or any(num(s) is None for s in secs):
            raise RuntimeError(f"CLI JSON has no usable 'seconds' list: {json.dumps(obj)[:500]}")
        obj["seconds"] = [float(s) for s in secs]
        obj["_process_wall_s"] = wall
        if p.stderr.strip():
            obj["_stderr_tail"] = p.stderr.strip()[-500:]
        self.last = obj
        return obj


class TensorStoreReader:
    def __init__(self, store, array, threads, zarr_format):
        import numpy as np  # noqa: F401 - TensorStore returns NumPy arrays
        import tensorstore as ts
        self.ts = ts
        self.version = getattr(ts, "__version__", None)
        path = os.path.join(store, array) if array else store
        self.context_json = {"data_copy_concurrency": {"limit": threads},
                             "file_io_concurrency": {"limit": threads},
                             "cache_pool": {"total_bytes_limit": 0}}
        self.spec = {"driver": "zarr3" if zarr_format == 3 else "zarr",
                     "kvstore": {"driver": "file", "path": path.rstrip("/") + "/"}}
        self.arr = ts.open(self.spec, read=True, context=ts.Context(self.context_json)).result()
        # str() of a TensorStore dtype reads 'dtype("float32")'; NumPy needs the numpy_dtype.
        self.dtype = getattr(self.arr.dtype, "numpy_dtype", None) or str(self.arr.dtype)
        self.shape = list(self.arr.shape)

    def read(self):
        t = time.perf_counter()
        a = self.arr.read().result()
        dt = time.perf_counter() - t
        return a.nbytes, dt

    def setup_prealloc(self):
        """A NumPy buffer, touched once, and a TensorStore view that writes into it in place.
        Returns a description of how the view was made; raises if it cannot be made."""
        import numpy as np
        ts = self.ts
        self.buf = np.empty(self.shape, dtype=np.dtype(self.dtype))
        self.buf.fill(0)
        ctx = ts.Context(self.context_json)
        how = None
        for kwargs in ({"copy": False, "write": True, "context": ctx}, {"context": ctx}, {}):
            try:
                self.target = ts.array(self.buf, **kwargs)
                how = "ts.array(buf, " + ", ".join(f"{k}=..." for k in kwargs) + ")"
                break
            except TypeError:
                continue
        if how is None:
            raise RuntimeError("ts.array(buf) is not available")
        # check: the copy must land in `buf` (not in a private copy) and match read()
        self.target.write(self.arr).result()
        probe = self.arr[0].read().result()
        if not np.array_equal(self.buf[0], probe, equal_nan=True):
            raise RuntimeError(f"{how} does not write into the NumPy buffer in place")
        return how

    def read_prealloc(self):
        t = time.perf_counter()
        self.target.write(self.arr).result()
        dt = time.perf_counter() - t
        return self.buf.nbytes, dt


def median(xs):
    return statistics.median(xs) if xs else None


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--store", required=True)
    p.add_argument("--array", default="", help="array path inside the store ('' for the root)")
    p.add_argument("--threads", type=int, default=16)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--out", required=True, help="directory for <label>.json and <label>.md")
    p.add_argument("--cli", default="build/cubestream", help="the cubestream program (default build/cubestream)")
    p.add_argument("--label", default=None, help="name of this measurement (default: the store's name)")
    p.add_argument("--timeout", type=int, default=180, help="seconds allowed per CLI call")
    p.add_argument("--skip-cubestream", action="store_true")
    p.add_argument("--skip-tensorstore", action="store_true")
    p.add_argument("--decode", default="auto",
                   help="comma list of the CLI's --decode modes to measure, each its own tool in the same "
                        "interleaved rounds (e.g. cpu,gpu); the first is the 'cubestream' of the summary")
    args = p.parse_args()
    modes = [m for m in args.decode.split(",") if m]

    store = os.path.abspath(args.store)
    array_dir = os.path.join(store, args.array) if args.array else store
    label = args.label or os.path.basename(store.rstrip("/")).replace(".zarr", "")
    os.makedirs(args.out, exist_ok=True)
    fmt = detect_format(array_dir)
    if fmt is None:
        sys.exit(f"no zarr.json or .zarray in {array_dir}")
    meta_file = os.path.join(array_dir, "zarr.json" if fmt == 3 else ".zarray")
    with open(meta_file) as f:
        meta = json.load(f)
    codec_desc = meta.get("codecs") if fmt == 3 else {"compressor": meta.get("compressor"),
                                                       "filters": meta.get("filters")}
    info_file = store.rstrip("/") + ".info.json"
    info = json.load(open(info_file)) if os.path.exists(info_file) else None

    errors = []
    result = {"label": label, "store": store, "array": args.array, "zarr_format": fmt,
              "codecs": codec_desc, "threads": args.threads, "repeat": args.repeat,
              "generator_info": info, "host": platform.node(), "cpu_count": os.cpu_count(),
              "started": time.strftime("%Y-%m-%dT%H:%M:%S")}

    files = array_files(array_dir)
    stored, warm_s = warm_page_cache(files)
    result["bytes_stored"] = stored
    result["chunk_files"] = len(files)
    result["page_cache_read_gbps_1thread_python"] = stored / warm_s / 1e9
    log(f"{label}: {len(files)} chunk files, {stored / 1e9:.3f} GB stored; page-cache warm read "
        f"{stored / warm_s / 1e9:.2f} GB/s (1 thread)")

    ours = {}
    if not args.skip_cubestream:
        cli = os.path.abspath(args.cli)
        if not os.access(cli, os.X_OK):
            errors.append(f"cubestream: {cli} is not an executable file")
        else:
            ours = {m: Cubestream(cli, store, args.array, args.threads, args.timeout, m) for m in modes}
            result["cubestream_cmds"] = {m: shlex.join(o.cmd(1, baseline=False)) for m, o in ours.items()}
            result["cubestream_cmd"] = result["cubestream_cmds"][modes[0]]
    theirs = None
    if not args.skip_tensorstore:
        try:
            theirs = TensorStoreReader(store, args.array, args.threads, fmt)
            result["tensorstore_version"] = theirs.version
            result["tensorstore_spec"] = theirs.spec
            result["tensorstore_context"] = theirs.context_json
        except Exception as e:  # noqa: BLE001
            errors.append(f"tensorstore open: {type(e).__name__}: {e}")

    # warm-up, untimed
    for m in list(ours):
        try:
            w = ours[m].run(1, baseline=False)
            log(f"cubestream decode={m} warm-up: {w['seconds'][0]:.3f} s, bytes_decoded {w.get('bytes_decoded')}, "
                f"chunks on the GPU {w.get('chunks_decoded_on_gpu')}")
        except Exception as e:  # noqa: BLE001
            errors.append(f"cubestream decode={m} warm-up: {e}")
            log(f"cubestream decode={m} FAILED: {e}")
            del ours[m]
    if theirs:
        try:
            nb, dt = theirs.read()
            result["bytes_decoded_tensorstore"] = nb
            log(f"TensorStore warm-up: {dt:.3f} s, {nb} bytes")
        except Exception as e:  # noqa: BLE001
            errors.append(f"tensorstore warm-up: {type(e).__name__}: {e}")
            log(f"TensorStore FAILED: {e}")
            theirs = None

    prealloc = None
    if theirs:
        try:
            t = time.perf_counter()
            how = theirs.setup_prealloc()
            result["tensorstore_prealloc_how"] = how
            prealloc = theirs
            log(f"TensorStore prealloc warm-up ({how}): {time.perf_counter() - t:.3f} s incl. setup and check")
        except Exception as e:  # noqa: BLE001
            errors.append(f"tensorstore prealloc (skipped): {type(e).__name__}: {e}")
            log(f"TensorStore prealloc skipped: {e}")

    ours_s = {m: [] for m in ours}
    ours_wall = {m: [] for m in ours}
    theirs_s, pre_s = [], []
    ours_bytes = None
    tools = [("ours:" + m, o) for m, o in ours.items()] + [("theirs", theirs), ("prealloc", prealloc)]
    for r in range(args.repeat):
        k = r % len(tools)
        order = tools[k:] + tools[:k]
        for who, tool in order:
            if tool is None:
                continue
            try:
                if who.startswith("ours:"):
                    m = who[5:]
                    o = tool.run(1, baseline=False)
                    ours_s[m].append(o["seconds"][0])
                    ours_wall[m].append(o["_process_wall_s"])
                    ours_bytes = int(num(o.get("bytes_decoded"), 0)) or ours_bytes
                    log(f"round {r + 1}/{args.repeat} cubestream decode={m}  {o['seconds'][0]:.3f} s "
                        f"(process {o['_process_wall_s']:.3f} s)")
                elif who == "theirs":
                    nb, dt = tool.read()
                    theirs_s.append(dt)
                    log(f"round {r + 1}/{args.repeat} TensorStore read()     {dt:.3f} s")
                else:
                    nb, dt = tool.read_prealloc()
                    pre_s.append(dt)
                    log(f"round {r + 1}/{args.repeat} TensorStore prealloc   {dt:.3f} s")
            except Exception as e:  # noqa: BLE001
                errors.append(f"{who} round {r + 1}: {type(e).__name__}: {e}")
                log(f"{who} round {r + 1} FAILED: {e}")

    # expected decoded size: from the metadata, cross-checked with both tools
    shape = meta.get("shape", [])
    n = 1
    for s in shape:
        n *= int(s)
    itemsize = None
    if fmt == 2:
        try:
            itemsize = int(str(meta.get("dtype", "<f4"))[2:])
        except ValueError:
            itemsize = 8  # datetime64 / timedelta64 ("<M8[ns]")
    else:
        sizes = {"bool": 1, "int8": 1, "uint8": 1, "int16": 2, "uint16": 2, "float16": 2,
                 "int32": 4, "uint32": 4, "float32": 4, "int64": 8, "uint64": 8, "float64": 8,
                 "complex64": 8, "complex128": 16}
        itemsize = sizes.get(meta.get("data_type"), 4)
    decoded = n * itemsize
    result["bytes_decoded"] = decoded
    result["compression_ratio"] = decoded / stored if stored else None
    if ours_bytes and ours_bytes != decoded:
        errors.append(f"cubestream reports bytes_decoded {ours_bytes}, metadata says {decoded}")
    tsb = result.get("bytes_decoded_tensorstore")
    if tsb and tsb != decoded:
        errors.append(f"TensorStore read {tsb} bytes, metadata says {decoded}")

    def summary(secs):
        if not secs:
            return None
        med = median(secs)
        return {"seconds": secs, "median_s": med, "min_s": min(secs), "max_s": max(secs),
                "gbps_median": decoded / med / 1e9, "gbps_best": decoded / min(secs) / 1e9}

    by_decode = {}
    for m in ours:
        by_decode[m] = {"process": summary(ours_s[m])}
        if by_decode[m]["process"]:
            by_decode[m]["process"]["process_wall_s"] = ours_wall[m]
    result["cubestream_by_decode"] = by_decode
    result["cubestream"] = by_decode[modes[0]]["process"] if modes[0] in by_decode else None
    result["tensorstore"] = summary(theirs_s)
    result["tensorstore_prealloc"] = summary(pre_s)
    if prealloc is not None:
        del prealloc.buf, prealloc.target

    for m, tool in ours.items():
        try:
            o = tool.run(args.repeat, baseline=(m == modes[0]))
            secs = o["seconds"]
            by_decode[m]["in_process"] = {
                "seconds": secs, "median_s": median(secs), "min_s": min(secs), "max_s": max(secs),
                "gbps_median": decoded / median(secs) / 1e9,
                "gbps_median_cli": num(o.get("gbps_median")),
                "codec_single_thread": o.get("codec_single_thread"),
                "bytes_stored_cli": o.get("bytes_stored"),
                "chunks_decoded_on_gpu": o.get("chunks_decoded_on_gpu"),
                "raw": {k: v for k, v in o.items() if k not in ("seconds",)},
            }
            if m == modes[0]:
                result["cubestream_in_process"] = by_decode[m]["in_process"]
            log(f"cubestream decode={m} in-process x{args.repeat}: median {median(secs):.3f} s; CLI says "
                f"{o.get('gbps_median')} GB/s; chunks on the GPU {o.get('chunks_decoded_on_gpu')}; "
                f"codec single thread {o.get('codec_single_thread')}")
        except Exception as e:  # noqa: BLE001
            errors.append(f"cubestream decode={m} --repeat {args.repeat}: {e}")

    c, t, tp = result["cubestream"], result["tensorstore"], result["tensorstore_prealloc"]
    ref = tp or t
    result["speedup_vs_tensorstore"] = (c["gbps_median"] / ref["gbps_median"]) if c and ref else None
    result["speedup_vs_tensorstore_basis"] = ("tensorstore_prealloc" if tp else "tensorstore") if ref else None
    result["speedup_vs_tensorstore_read"] = (c["gbps_median"] / t["gbps_median"]) if c and t else None
    result["errors"] = errors
    result["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S")

    with open(os.path.join(args.out, f"{label}.json"), "w") as f:
        json.dump(result, f, indent=1)
    with open(os.path.join(args.out, f"{label}.md"), "w") as f:
        f.write("\n".join(markdown_rows(result)) + "\n")
    for line in markdown_rows(result):
        log(line)
    for e in errors:
        log(f"ERROR {e}")
    if not any(b.get("process") for b in by_decode.values()) and not t and not tp:
        sys.exit(1)


def codec_name(r):
    if r["zarr_format"] == 3:
        names = []
        for c in r["codecs"] or []:
            cfg = c.get("configuration") or {}
            if c["name"] == "bytes":
                continue
            if c["name"] == "zstd":
                names.append(f"zstd-{cfg.get('level', '?')}")
            elif c["name"] == "blosc":
                names.append(f"blosc-{cfg.get('cname')}-{cfg.get('clevel')}-{cfg.get('shuffle')}")
            else:
                names.append(c["name"])
        return "v3 " + "+".join(names or ["raw"])
    comp = (r["codecs"] or {}).get("compressor") or {}
    if comp.get("id") == "blosc":
        sh = {0: "noshuffle", 1: "shuffle", 2: "bitshuffle", -1: "autoshuffle"}.get(comp.get("shuffle"), "?")
        return f"v2 blosc-{comp.get('cname')}-{comp.get('clevel')}-{sh}"
    return f"v2 {comp.get('id', 'raw')}"


def markdown_rows(r):
    """| store | codec | ratio | tool | threads | GB/s median | GB/s range | vs TS |"""
    rows = []
    ratio = f"{r['compression_ratio']:.2f}x" if r.get("compression_ratio") else "?"
    tsr, tsp = r.get("tensorstore"), r.get("tensorstore_prealloc")
    ref = tsp or tsr
    ver = r.get("tensorstore_version") or ""

    def row(tool, s, vs):
        rng = f"{r['bytes_decoded'] / s['max_s'] / 1e9:.2f}-{r['bytes_decoded'] / s['min_s'] / 1e9:.2f}" \
            if s.get("max_s") else ""
        rows.append(f"| {r['label']} | {codec_name(r)} | {ratio} | {tool} | {r['threads']} | "
                    f"{s['gbps_median']:.2f} | {rng} | {vs} |")

    def vs(s):
        return f"{s['gbps_median'] / ref['gbps_median']:.2f}x" if ref else "n/a"

    by_decode = r.get("cubestream_by_decode")
    if by_decode is None:  # results of the script before --decode
        by_decode = {"auto": {"process": r.get("cubestream"), "in_process": r.get("cubestream_in_process")}}
    for m, b in by_decode.items():
        name = "cubestream" if m == "auto" else f"cubestream, {m} decode"
        if b.get("process"):
            row(f"{name} (CLI, process per round)", b["process"], vs(b["process"]))
        if b.get("in_process"):
            row(f"{name} (CLI, in-process x{r['repeat']})", b["in_process"], vs(b["in_process"]))
    if tsp:
        row(f"TensorStore {ver} into preallocated buffer".replace("  ", " "), tsp, vs(tsp))
    if tsr:
        row(f"TensorStore {ver} read() new array".replace("  ", " "), tsr, vs(tsr))
    if not rows:
        rows.append(f"| {r['label']} | {codec_name(r)} | {ratio} | (no tool measured) | {r['threads']} | | | |")
    return rows


if __name__ == "__main__":
    main()
