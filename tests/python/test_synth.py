"""`cubestream synth`: the stores it writes open in implementations that are not ours
(zarr-python 2 and xarray for the WeatherBench2-style v2 store; TensorStore, where installed, for
the sharded v3 one) with the layout, coordinates and attributes of ERA5 in WeatherBench2, and the
same seed always writes the same bytes."""
import hashlib
import os
import re
import subprocess

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLI = os.environ.get("CUBESTREAM_CLI", os.path.join(ROOT, "build", "cubestream"))

SMALL = ["--grid", "19x36", "--times", "6", "--levels", "500,850", "--no-progress", "--threads", "2"]


def synth(*args, check=True):
    return subprocess.run([CLI, "synth", *args], capture_output=True, text=True, check=check)


def digest(path):
    h = hashlib.sha256()
    for d, dirs, files in sorted(os.walk(path)):
        dirs.sort()
        for f in sorted(files):
            p = os.path.join(d, f)
            h.update(os.path.relpath(p, path).encode())
            with open(p, "rb") as fh:
                h.update(fh.read())
    return h.hexdigest()


def test_v2_store_is_weatherbench2_shaped_for_xarray_and_zarr_python(tmp_path):
    xr = pytest.importorskip("xarray")
    zarr = pytest.importorskip("zarr")
    out = str(tmp_path / "era5.zarr")
    res = synth(out, *SMALL)
    # The compression report: one line per variable with its ratio, and the total.
    assert re.search(r"^2m_temperature .* \d+\.\d\dx$", res.stdout, re.M)
    assert re.search(r"ratio \d+\.\d\dx", res.stdout)

    ds = xr.open_zarr(out, consolidated=True)
    assert set(ds.data_vars) == {"2m_temperature", "10m_u_component_of_wind", "10m_v_component_of_wind",
                                 "mean_sea_level_pressure", "total_column_water_vapour", "surface_pressure",
                                 "geopotential", "temperature", "u_component_of_wind", "v_component_of_wind",
                                 "specific_humidity"}
    assert ds["temperature"].dims == ("time", "level", "latitude", "longitude")
    assert ds["2m_temperature"].dims == ("time", "latitude", "longitude")
    assert ds["temperature"].shape == (6, 2, 19, 36)
    assert ds["temperature"].attrs["units"] == "K"
    assert ds["specific_humidity"].attrs["standard_name"] == "specific_humidity"
    # CF time decoding: 6-hourly from 1979-01-01.
    assert str(ds["time"].values[0])[:19] == "1979-01-01T00:00:00"
    assert (np.diff(ds["time"].values) == np.timedelta64(6, "h")).all()
    assert ds["latitude"].values[0] == 90 and ds["latitude"].values[-1] == -90
    assert list(ds["level"].values) == [500, 850]
    # Magnitudes of the atmosphere, read by xarray.
    t2m = ds["2m_temperature"].values
    assert 190 < t2m.min() and t2m.max() < 340
    z = ds["geopotential"].values
    assert z[:, 0].mean() > z[:, 1].mean()  # 500 hPa lies above 850 hPa

    # zarr-python sees WeatherBench2's chunking and codec: one time step with every level, blosc lz4 + shuffle.
    g = zarr.open_consolidated(out)
    a = g["temperature"]
    assert a.chunks == (1, 2, 19, 36)
    assert a.compressor.codec_id == "blosc" and a.compressor.cname == "lz4" and a.compressor.shuffle == 1
    assert np.isnan(a.fill_value)

    # cubestream reads what zarr-python reads.
    import cubestream
    np.testing.assert_array_equal(cubestream.open_array(os.path.join(out, "temperature")).read(), a[...])


def test_same_seed_same_bytes_and_parts_resume(tmp_path):
    one, two, other = (str(tmp_path / n) for n in ("one.zarr", "two.zarr", "other.zarr"))
    synth(one, *SMALL, "--seed", "5", "--format", "3")
    # Written in two parts by two processes, then checked by --resume: the same store.
    synth(two, *SMALL, "--seed", "5", "--format", "3", "--part", "1/2")
    synth(two, *SMALL, "--seed", "5", "--format", "3", "--part", "0/2")
    assert digest(one) == digest(two)
    synth(other, *SMALL, "--seed", "6", "--format", "3")
    assert digest(one) != digest(other)
    # A lost shard is rewritten, identically, by --resume.
    shard = os.path.join(two, "temperature", "c", "0", "1", "0", "0")
    assert os.path.exists(shard)
    os.remove(shard)
    res = synth(two, *SMALL, "--seed", "5", "--format", "3", "--resume")
    assert res.returncode == 0
    assert digest(one) == digest(two)


def test_size_picks_time_steps_and_errors_are_clear(tmp_path):
    out = str(tmp_path / "sized.zarr")
    # One step of 2m_temperature on 19x36 is 2736 bytes: 10000 bytes hold 3 steps.
    synth(out, "--grid", "19x36", "--variables", "2m_temperature", "--size", "10000", "--no-progress")
    import cubestream
    assert cubestream.open_array(os.path.join(out, "2m_temperature")).read().shape == (3, 19, 36)
    # Existing target: refused without --overwrite.
    res = synth(out, "--grid", "19x36", "--variables", "2m_temperature", "--times", "2", check=False)
    assert res.returncode == 1 and "exists" in res.stderr
    res = synth(str(tmp_path / "x.zarr"), "--variables", "vorticity", check=False)
    assert res.returncode == 1 and "vorticity" in res.stderr and "2m_temperature" in res.stderr
    res = synth(str(tmp_path / "y.zarr"), "--grid", "0.3", check=False)
    assert res.returncode == 1 and "grid" in res.stderr
    res = synth(str(tmp_path / "z.zarr"), "--times", "2", "--size", "1G", check=False)
    assert res.returncode == 2


def test_v3_sharded_store_reads_in_tensorstore(tmp_path):
    ts = pytest.importorskip("tensorstore")
    out = str(tmp_path / "era5_v3.zarr")
    synth(out, *SMALL, "--format", "3", "--shards", "time=4")
    import cubestream
    want = cubestream.open_array(os.path.join(out, "u_component_of_wind")).read()
    t = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": os.path.join(out, "u_component_of_wind")}}).result()
    np.testing.assert_array_equal(t.read().result(), want)
