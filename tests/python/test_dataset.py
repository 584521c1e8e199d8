"""Datasets through Python: dims, coordinates, CF decoding and CF time, against xarray."""
import numpy as np
import pandas as pd
import pytest
import xarray as xr

import cubestream


@pytest.fixture()
def cf_store(tmp_path):
    rng = np.random.default_rng(3)
    t = pd.date_range("1990-01-01", periods=8, freq="6h")
    temp = 250 + 40 * rng.random((8, 5, 6))
    temp[2, 1, 1] = np.nan
    ds = xr.Dataset(
        {"t2m": (("time", "lat", "lon"), temp.astype("float32")),
         "sp": (("time", "lat", "lon"), (90000 + 2000 * rng.random((8, 5, 6))))},
        coords={"time": t, "lat": np.linspace(-60, 60, 5), "lon": np.linspace(0, 300, 6)},
        attrs={"title": "cf test"},
    )
    enc = {"t2m": {"dtype": "int16", "scale_factor": 0.01, "add_offset": 270.0, "_FillValue": -32767},
           "sp": {"dtype": "float32"},
           "time": {"units": "hours since 1990-01-01", "calendar": "standard"}}
    path = str(tmp_path / "cf.zarr")
    ds.to_zarr(path, encoding=enc, consolidated=True, mode="w")
    return path


def test_dataset_matches_xarray(cf_store):
    ref = xr.open_zarr(cf_store)
    ds = cubestream.open_dataset(cf_store)
    assert ds.attrs["title"] == "cf test"
    assert ds.dims == {"time": 8, "lat": 5, "lon": 6}
    assert set(ds.coordinate_names()) >= {"time", "lat", "lon"}
    assert set(ds.data_variable_names()) == {"t2m", "sp"}
    assert ds.variable_dims("t2m") == ["time", "lat", "lon"]
    got = ds.read_decoded("t2m")
    want = ref["t2m"].values.astype("float64")
    assert np.isnan(got[2, 1, 1]) and np.isnan(want[2, 1, 1])
    np.testing.assert_allclose(got, want, rtol=1e-6, equal_nan=True)
    np.testing.assert_allclose(ds.read_decoded("sp", [1, 0, 0], [3, 5, 6]), ref["sp"].values[1:4].astype("float64"), rtol=1e-6)
    times = ds.decode_time("time")
    assert times.dtype == np.dtype("datetime64[ns]")
    np.testing.assert_array_equal(times, ref["time"].values)


def test_dataset_errors(cf_store):
    ds = cubestream.open_dataset(cf_store)
    with pytest.raises(cubestream.CubestreamError) as ei:
        ds.read_decoded("nope")
    assert ei.value.code == "not_found"
