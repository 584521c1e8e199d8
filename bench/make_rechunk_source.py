#!/usr/bin/env python3
"""Writes the source store of bench/rechunk_bench.sh with zarr-python 2 (Debian's 2.13, no
TensorStore needed): an ERA5-like Zarr v2 dataset as WeatherBench2 stores it --
2m_temperature float32 (T, 721, 1440) in (10, 721, 1440) chunks, blosc lz4 clevel 5 with byte
shuffle, plus time / latitude / longitude coordinates, _ARRAY_DIMENSIONS and consolidated
metadata.

    python3 bench/make_rechunk_source.py --out /tmp/era5_src.zarr --timesteps 400

T=400 is 1.66 GB decoded. The values come from bench/era5_field.py (GRIB-quantised synthetic
2 m temperature that compresses like the real thing); each step depends only on (seed, t).
"""
import argparse
import os
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import numcodecs
import zarr

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import era5_field  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True)
    p.add_argument("--timesteps", type=int, default=400)
    p.add_argument("--chunk", type=int, default=10, help="time steps per chunk (default 10)")
    p.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    a = p.parse_args()
    t0 = time.time()
    if os.path.exists(a.out):
        shutil.rmtree(a.out)
    field = era5_field.Era5LikeTemperature(seed=0)
    ny, nx = 721, 1440
    root = zarr.open_group(a.out, mode="w")
    root.attrs.update({"title": "ERA5-like synthetic 2 m temperature (bench/era5_field.py)", "Conventions": "CF-1.6"})
    comp = numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE)
    t2m = root.create_dataset("2m_temperature", shape=(a.timesteps, ny, nx), chunks=(a.chunk, ny, nx), dtype="<f4",
                              compressor=comp, fill_value=np.nan)
    t2m.attrs.update({"_ARRAY_DIMENSIONS": ["time", "latitude", "longitude"], "units": "K", "long_name": "2 metre temperature"})
    tm = root.create_dataset("time", data=np.arange(a.timesteps, dtype="int64") * 6, chunks=(a.timesteps,), compressor=comp)
    tm.attrs.update({"_ARRAY_DIMENSIONS": ["time"], "units": "hours since 1979-01-01", "calendar": "proleptic_gregorian"})
    lat = root.create_dataset("latitude", data=np.linspace(90, -90, ny), chunks=(ny,), compressor=comp)
    lat.attrs.update({"_ARRAY_DIMENSIONS": ["latitude"], "units": "degrees_north"})
    lon = root.create_dataset("longitude", data=np.arange(nx) * 0.25, chunks=(nx,), compressor=comp)
    lon.attrs.update({"_ARRAY_DIMENSIONS": ["longitude"], "units": "degrees_east"})

    def write(c):
        lo, hi = c * a.chunk, min(a.timesteps, (c + 1) * a.chunk)
        t2m[lo:hi] = np.stack([field.step(t) for t in range(lo, hi)])

    with ThreadPoolExecutor(a.threads) as ex:
        list(ex.map(write, range((a.timesteps + a.chunk - 1) // a.chunk)))
    zarr.consolidate_metadata(a.out)
    print(f"make_rechunk_source: {a.out}: {a.timesteps} steps, {a.timesteps * ny * nx * 4 / 1e9:.2f} GB decoded, "
          f"{time.time() - t0:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
