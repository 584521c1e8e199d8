#!/usr/bin/env python3
"""Writes an ERA5-like benchmark store with TensorStore: 2 m temperature, float32,
(T, 721, 1440), one chunk per time step (1, 721, 1440) -- the WeatherBench2 / ARCO-ERA5 layout.

    python3 bench/make_era5_like.py --out /tmp/era5_zstd.zarr  --codec zstd
    python3 bench/make_era5_like.py --out /tmp/era5_blosc.zarr --codec blosc-lz4

--codec zstd       Zarr v3 (TensorStore `zarr3` driver): codecs [bytes little, zstd level 3];
                   dimension_names and attributes in zarr.json; root group zarr.json.
--codec blosc-lz4  Zarr v2 (TensorStore `zarr` driver), WeatherBench2 style: blosc lz4 clevel 5
                   byte shuffle; .zattrs with _ARRAY_DIMENSIONS; .zgroup and consolidated
                   .zmetadata (both written by this script: TensorStore writes arrays only).

Both stores also hold the coordinates time (int64 hours since 1979-01-01), latitude and
longitude (float64). The default T=520 makes the temperature array 2.16 GB decoded.

The values come from bench/era5_field.py (NumPy only): a smooth climate-like field with
travelling weather and a diurnal cycle, quantised per time step like GRIB 16-bit packing, so
that compression ratios land where real reanalysis data lands (zstd-3 ~1.7x, blosc-lz4 with
byte shuffle ~1.9x). Every step is a pure function of (seed, t).

--check-ratios N   does not write anything (and needs no TensorStore): generates N time steps
                   and prints the compression ratios libzstd level 3 and blosc-lz4 + shuffle
                   reach on them (through numcodecs, else the zstandard / blosc modules).
"""

import argparse
import json
import os
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import era5_field  # noqa: E402

T0 = time.time()


def log(msg):
    print(f"[make_era5_like {time.strftime('%H:%M:%S')} +{time.time() - T0:5.1f}s] {msg}", flush=True)


def dir_bytes(path, skip_metadata=True):
    total = 0
    n = 0
    for d, _, files in os.walk(path):
        for f in files:
            if skip_metadata and (f in ("zarr.json", ".zarray", ".zattrs", ".zgroup", ".zmetadata")):
                continue
            total += os.path.getsize(os.path.join(d, f))
            n += 1
    return total, n


# ---- --check-ratios --------------------------------------------------------------------------
def compressors():
    out = {}
    try:
        from numcodecs import Blosc, Zstd
        z = Zstd(level=3)
        b = Blosc(cname="lz4", clevel=5, shuffle=Blosc.SHUFFLE, blocksize=0)
        out["zstd-3"] = lambda a: len(z.encode(a.tobytes()))
        out["blosc-lz4-5-shuffle"] = lambda a: len(b.encode(a))
        return out
    except ImportError:
        pass
    try:
        import zstandard
        c = zstandard.ZstdCompressor(level=3)
        out["zstd-3"] = lambda a: len(c.compress(a.tobytes()))
    except ImportError:
        pass
    try:
        import blosc
        out["blosc-lz4-5-shuffle"] = lambda a: len(blosc.compress(a.tobytes(), typesize=4, clevel=5,
                                                                   shuffle=blosc.SHUFFLE, cname="lz4"))
    except ImportError:
        pass
    return out


def check_ratios(n, seed, threads):
    comps = compressors()
    if not comps:
        sys.exit("--check-ratios needs numcodecs, or the zstandard / blosc modules")
    gen = era5_field.Era5LikeTemperature(seed)
    steps = np.linspace(0, 1459, n).astype(int)
    raw = 0
    sizes = {k: 0 for k in comps}
    t0 = time.time()
    with ThreadPoolExecutor(threads) as ex:
        fields = list(ex.map(gen.step, steps))
    gen_s = time.time() - t0
    for t, a in zip(steps, fields):
        raw += a.nbytes
        line = []
        for k, f in comps.items():
            s = f(a)
            sizes[k] += s
            line.append(f"{k} {a.nbytes / s:.3f}x")
        log(f"t={t:4d} min {a.min():.2f} max {a.max():.2f} K: " + ", ".join(line))
    log(f"generated {n} steps in {gen_s:.2f} s on {threads} threads")
    result = {k: raw / v for k, v in sizes.items()}
    for k, r in result.items():
        log(f"RATIO {k}: {r:.3f}x over {n} steps")
    return result


# ---- writing ---------------------------------------------------------------------------------
def ts_context(ts, threads):
    return ts.Context({"data_copy_concurrency": {"limit": threads},
                       "file_io_concurrency": {"limit": threads}})


def coordinates(T):
    lat = np.linspace(90.0, -90.0, era5_field.NLAT)
    lon = np.arange(era5_field.NLON) * 0.25
    time_h = np.arange(T, dtype=np.int64) * (24 // era5_field.STEPS_PER_DAY)
    return {"time": time_h, "latitude": lat, "longitude": lon}


COORD_ATTRS = {
    "time": {"units": "hours since 1979-01-01", "calendar": "proleptic_gregorian",
             "long_name": "time", "standard_name": "time"},
    "latitude": {"units": "degrees_north", "long_name": "latitude", "standard_name": "latitude"},
    "longitude": {"units": "degrees_east", "long_name": "longitude", "standard_name": "longitude"},
}
VAR_ATTRS = {"units": "K", "long_name": "2 metre temperature (synthetic, ERA5-like)",
             "standard_name": "air_temperature"}


def open_v3(ts, ctx, path, shape, chunks, dtype_name, fill, codecs, dims, attrs):
    metadata = {"shape": list(shape), "data_type": dtype_name,
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(chunks)}},
                "chunk_key_encoding": {"name": "default"},
                "fill_value": fill, "codecs": codecs, "dimension_names": dims}
    spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": path.rstrip("/") + "/"}}
    try:
        arr = ts.open(dict(spec, metadata=dict(metadata, attributes=attrs)), create=True,
                      delete_existing=True, context=ctx).result()
        return arr, False
    except Exception as e:  # noqa: BLE001
        log(f"note: this TensorStore refused zarr3 'attributes' ({e}); writing them into zarr.json afterwards")
        arr = ts.open(dict(spec, metadata=metadata), create=True, delete_existing=True,
                      context=ctx).result()
        return arr, True


def open_v2(ts, ctx, path, shape, chunks, dtype_str, fill, compressor):
    metadata = {"shape": list(shape), "chunks": list(chunks), "dtype": dtype_str,
                "fill_value": fill, "order": "C", "compressor": compressor, "filters": None,
                "dimension_separator": "."}
    spec = {"driver": "zarr", "kvstore": {"driver": "file", "path": path.rstrip("/") + "/"},
            "metadata": metadata}
    return ts.open(spec, create=True, delete_existing=True, context=ctx).result()


def patch_json(path, key, value):
    with open(path) as f:
        meta = json.load(f)
    meta[key] = value
    with open(path, "w") as f:
        json.dump(meta, f, indent=2)


def write_store(args):
    try:
        import tensorstore as ts
    except ImportError:
        sys.exit("make_era5_like.py: TensorStore is not installed (only --check-ratios works without it)")
    out = os.path.abspath(args.out)
    if os.path.exists(out):
        marker = [m for m in ("zarr.json", ".zgroup") if os.path.exists(os.path.join(out, m))]
        if os.listdir(out) and not marker:
            sys.exit(f"{out} exists, is not empty and is not a Zarr store: refusing to replace it")
        shutil.rmtree(out)
    os.makedirs(out)
    T = args.timesteps
    name = args.name
    shape = (T, era5_field.NLAT, era5_field.NLON)
    chunks = (1, era5_field.NLAT, era5_field.NLON)
    decoded = int(np.prod(shape)) * 4
    log(f"TensorStore {getattr(ts, '__version__', '?')}: writing {out}/{name} {shape} float32 "
        f"({decoded / 1e9:.2f} GB decoded), codec {args.codec}, {args.threads} threads, batches of {args.batch}")
    ctx = ts_context(ts, args.threads)
    dims = ["time", "latitude", "longitude"]
    coords = coordinates(T)
    v3 = args.codec == "zstd"

    if v3:
        codecs = [{"name": "bytes", "configuration": {"endian": "little"}},
                  {"name": "zstd", "configuration": {"level": 3}}]
        arr, patch_attrs = open_v3(ts, ctx, os.path.join(out, name), shape, chunks, "float32", "NaN",
                                   codecs, dims, VAR_ATTRS)
    else:
        compressor = {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0}
        arr = open_v2(ts, ctx, os.path.join(out, name), shape, chunks, "<f4", "NaN", compressor)
        patch_attrs = False

    gen = era5_field.Era5LikeTemperature(args.seed)
    log("static fields ready")
    pending = []   # (future, batch array) kept alive until the write has copied its source
    t_gen = 0.0
    with ThreadPoolExecutor(args.threads) as ex:
        for t0 in range(0, T, args.batch):
            t1 = min(T, t0 + args.batch)
            g0 = time.time()
            batch = np.empty((t1 - t0,) + shape[1:], dtype=np.float32)

            def fill(t, batch=batch, t0=t0):
                batch[t - t0] = gen.step(t)
            list(ex.map(fill, range(t0, t1)))
            t_gen += time.time() - g0
            pending.append((arr[t0:t1].write(batch), batch))
            # at most two batches in flight: generation of the next overlaps the write
            while len(pending) > 2:
                pending.pop(0)[0].result()
            if (t0 // args.batch) % 8 == 0 or t1 == T:
                log(f"steps {t0}-{t1 - 1} of {T} queued (generation so far {t_gen:.1f} s)")
    for fut, _ in pending:
        fut.result()
    log(f"data written (generation {t_gen:.1f} s of it)")

    # coordinates
    for cname, values in coords.items():
        if v3:
            cc = [{"name": "bytes", "configuration": {"endian": "little"}},
                  {"name": "zstd", "configuration": {"level": 3}}]
            dt = "int64" if values.dtype.kind == "i" else "float64"
            carr, cpatch = open_v3(ts, ctx, os.path.join(out, cname), values.shape, values.shape, dt,
                                   0 if dt == "int64" else "NaN", cc, [cname], COORD_ATTRS[cname])
        else:
            comp = {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0}
            carr = open_v2(ts, ctx, os.path.join(out, cname), values.shape, values.shape,
                           values.dtype.str, None if values.dtype.kind == "i" else "NaN", comp)
            cpatch = False
        carr.write(values).result()
        if cpatch:
            patch_json(os.path.join(out, cname, "zarr.json"), "attributes", COORD_ATTRS[cname])
    if patch_attrs:
        patch_json(os.path.join(out, name, "zarr.json"), "attributes", VAR_ATTRS)

    # group metadata (TensorStore writes arrays only)
    root_attrs = {"title": "cubestream synthetic ERA5-like benchmark data",
                  "generator": "bench/make_era5_like.py", "seed": args.seed, "codec": args.codec}
    if v3:
        with open(os.path.join(out, "zarr.json"), "w") as f:
            json.dump({"zarr_format": 3, "node_type": "group", "attributes": root_attrs}, f, indent=2)
    else:
        with open(os.path.join(out, ".zgroup"), "w") as f:
            json.dump({"zarr_format": 2}, f)
        with open(os.path.join(out, ".zattrs"), "w") as f:
            json.dump(root_attrs, f, indent=2)
        consolidated = {".zgroup": {"zarr_format": 2}, ".zattrs": root_attrs}
        for vname, vdims, vattrs in [(name, dims, VAR_ATTRS)] + [(c, [c], COORD_ATTRS[c]) for c in coords]:
            zattrs = dict(vattrs, _ARRAY_DIMENSIONS=vdims)
            with open(os.path.join(out, vname, ".zattrs"), "w") as f:
                json.dump(zattrs, f, indent=2)
            with open(os.path.join(out, vname, ".zarray")) as f:
                consolidated[f"{vname}/.zarray"] = json.load(f)
            consolidated[f"{vname}/.zattrs"] = zattrs
        with open(os.path.join(out, ".zmetadata"), "w") as f:
            json.dump({"zarr_consolidated_format": 1, "metadata": consolidated}, f, indent=2)

    stored, nchunks = dir_bytes(os.path.join(out, name))
    elapsed = time.time() - T0
    if nchunks != T:
        log(f"WARNING: {nchunks} chunk files for {T} time steps")
    result = {"store": out, "array": name, "codec": args.codec, "zarr_format": 3 if v3 else 2,
              "shape": list(shape), "chunks": list(chunks), "dtype": "float32",
              "bytes_decoded": decoded, "bytes_stored": stored, "chunk_files": nchunks,
              "ratio": decoded / stored, "seconds": elapsed, "seed": args.seed}
    with open(os.path.join(os.path.dirname(out), os.path.basename(out) + ".info.json"), "w") as f:
        json.dump(result, f, indent=1)
    log(f"RATIO {args.codec}: {decoded / 1e9:.3f} GB decoded / {stored / 1e9:.3f} GB stored = "
        f"{decoded / stored:.3f}x ({nchunks} chunks); {elapsed:.1f} s total "
        f"({decoded / 1e9 / elapsed:.2f} GB/s)")
    return result


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", help="store directory to (re)create")
    p.add_argument("--timesteps", type=int, default=520, help="T (default 520: 2.16 GB decoded)")
    p.add_argument("--codec", choices=["zstd", "blosc-lz4"], default="zstd")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--name", default="2m_temperature", help="array name (default 2m_temperature)")
    p.add_argument("--threads", type=int, default=os.cpu_count() or 4)
    p.add_argument("--batch", type=int, default=32, help="time steps per write (default 32)")
    p.add_argument("--check-ratios", type=int, metavar="N", default=0,
                   help="only measure compression ratios on N generated steps (no TensorStore)")
    args = p.parse_args()
    if args.check_ratios:
        check_ratios(args.check_ratios, args.seed, args.threads)
        return
    if not args.out:
        p.error("--out is required (or --check-ratios N)")
    if args.timesteps < 1 or args.batch < 1:
        p.error("--timesteps and --batch must be >= 1")
    write_store(args)


if __name__ == "__main__":
    main()
