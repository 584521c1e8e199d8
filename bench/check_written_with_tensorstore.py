#!/usr/bin/env python3
"""Checks stores written by `cubestream rechunk` with TensorStore (an implementation that is
not ours), bit for bit against the source, on the GPU machine where TensorStore is installed.

    python3 bench/check_written_with_tensorstore.py [--cli build/cubestream] [--work /tmp/cs_ts_check]

Makes a small Zarr v2 source with zarr-python, or TensorStore where zarr-python is missing (float32 with NaNs, int16, float64, uint8; edge
chunks on every axis), rechunks it with cubestream into Zarr v3 in several layouts (plain
zstd, blosc-lz4 + shuffle, gzip + crc32c, sharded with the index at the end and at the start,
sharded with blosc-zstd + bitshuffle inside), opens every array with TensorStore's zarr3
driver and compares the bytes with what zarr-python reads from the source. Exits non-zero and
names the layout and array on the first difference.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import tensorstore as ts

try:
    import zarr
except ImportError:  # the GPU machine: the source is written with TensorStore instead
    zarr = None

LAYOUTS = {
    "zstd": ["--codec", "zstd:3"],
    "blosc-lz4-shuffle": ["--codec", "blosc-lz4", "--shuffle"],
    "gzip-crc32c": ["--codec", "gzip:5", "--checksum"],
    "sharded-end": ["--codec", "zstd:3", "--shards", "time=8,y=-1"],
    "sharded-start": ["--codec", "zstd:1", "--shards", "time=4", "--index-location", "start"],
    "sharded-blosc-bitshuffle": ["--codec", "blosc-zstd", "--bitshuffle", "--shards", "time=-1", "--memory", "256K"],
}


def _write_v2_with_tensorstore(path, arrays):
    """The same source without zarr-python (the GPU machine has none): TensorStore writes the
    arrays (default blosc-lz4 compressor, as zarr-python would), the group files by hand."""
    os.makedirs(path, exist_ok=True)
    meta = {".zgroup": {"zarr_format": 2}}
    for name, (data, chunks, dims) in arrays.items():
        fill = "NaN" if data.dtype.kind == "f" else 0
        arr = ts.open({"driver": "zarr", "kvstore": {"driver": "file", "path": os.path.join(path, name)},
                       "metadata": {"shape": list(data.shape), "chunks": list(chunks), "dtype": data.dtype.str,
                                    "fill_value": fill, "order": "C", "filters": None,
                                    "compressor": {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1,
                                                   "blocksize": 0}}},
                      create=True, delete_existing=True).result()
        arr.write(data).result()
        with open(os.path.join(path, name, ".zattrs"), "w") as f:
            json.dump({"_ARRAY_DIMENSIONS": dims}, f)
        with open(os.path.join(path, name, ".zarray")) as f:
            meta[name + "/.zarray"] = json.load(f)
        meta[name + "/.zattrs"] = {"_ARRAY_DIMENSIONS": dims}
    with open(os.path.join(path, ".zgroup"), "w") as f:
        json.dump({"zarr_format": 2}, f)
    with open(os.path.join(path, ".zmetadata"), "w") as f:
        json.dump({"zarr_consolidated_format": 1, "metadata": meta}, f)


def make_source(path):
    rng = np.random.default_rng(7)
    a = (250 + 30 * rng.standard_normal((21, 33, 50))).astype("f4")
    a[3, :4, :4] = np.nan
    arrays = {
        "t": (a, (5, 16, 50), ["time", "y", "x"]),
        "i": (rng.integers(-3000, 3000, (21, 33, 50)).astype("i2"), (3, 33, 7), ["time", "y", "x"]),
        "d": (rng.standard_normal((21, 33)).astype("f8"), (10, 10), ["time", "y"]),
        "m": (rng.integers(0, 2, (21, 33, 50)).astype("u1"), (21, 33, 50), ["time", "y", "x"]),
    }
    if zarr is None:
        _write_v2_with_tensorstore(path, arrays)
    else:
        g = zarr.open_group(path, mode="w")
        for name, (data, chunks, dims) in arrays.items():
            z = g.create_dataset(name, data=data, chunks=chunks)
            z.attrs["_ARRAY_DIMENSIONS"] = dims
        zarr.consolidate_metadata(path)
    return {k: v[0] for k, v in arrays.items()}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    here = os.path.dirname(os.path.abspath(__file__))
    p.add_argument("--cli", default=os.path.join(here, "..", "build", "cubestream"))
    p.add_argument("--work", default="/tmp/cs_ts_check")
    a = p.parse_args()
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    src = os.path.join(a.work, "src.zarr")
    want = make_source(src)
    failures = 0
    for name, opts in LAYOUTS.items():
        dst = os.path.join(a.work, name + ".zarr")
        subprocess.run([a.cli, "rechunk", src, dst, "--chunks", "time=1", *opts, "--no-progress"], check=True)
        for arr, data in want.items():
            got = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": os.path.join(dst, arr)}}).result().read().result()
            ok = got.shape == data.shape and np.ascontiguousarray(got).tobytes() == data.tobytes()
            print(f"{'ok  ' if ok else 'FAIL'} {name:26s} {arr}")
            failures += not ok
    print(f"{failures} failures")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
