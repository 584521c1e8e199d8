#!/usr/bin/python3
"""Build the demo store from real climate model output shipped by Debian's libncarg-data.

The fields are CMIP5 MPI-ESM-LR historical monthly means for 2005 (near-surface air
temperature `tas` and wind components `uas`, `vas`, 12 x 96 x 192 on a 1.875 degree grid).
They are written with xarray + zarr-python 2 as a consolidated Zarr v2 store with blosc-lz4 +
shuffle, the way WeatherBench2-style stores are laid out, so that `cubestream inspect` and
`cubestream bench read` have something real to show on a fresh machine.

Usage: /usr/bin/python3 scripts/make_demo_store.py OUT_DIR
"""
import os
import shutil
import sys

import numcodecs
import xarray as xr

SRC = "/usr/share/ncarg/data/nug"
FIELDS = ["tas", "uas", "vas"]


def main(out):
    parts = [xr.open_dataset(os.path.join(SRC, f"{v}_rectilinear_grid_2D.nc"), decode_times=True)[[v]] for v in FIELDS]
    ds = xr.merge(parts, compat="override", combine_attrs="drop_conflicts")
    ds.attrs["source"] = "CMIP5 MPI-ESM-LR historical r1i1p1 monthly means for 2005, via Debian libncarg-data"
    compressor = numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE)
    encoding = {v: {"compressor": compressor, "chunks": (1, 96, 192)} for v in FIELDS}
    if os.path.exists(out):
        shutil.rmtree(out)
    ds.to_zarr(out, encoding=encoding, consolidated=True, mode="w")
    print(f"wrote {out}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "data/demo/cmip5_2005.zarr")
