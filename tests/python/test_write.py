"""Stores written by `cubestream rechunk` and `cubestream convert`, read by implementations
that are not ours: zarr-python 2.13 and xarray (Zarr v2), zarrita 0.7.5 from npm (Zarr v3,
plain and sharded), compared bit for bit with the data they were made from; netCDF files
written by xarray and netCDF4-python; the command's fault handling; and `advise`."""
import json
import os
import shutil
import subprocess

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLI = os.path.join(ROOT, "build", "cubestream")
NODE_DIR = os.path.join(ROOT, "tests", "fixtures", "node")

xr = pytest.importorskip("xarray")
zarr = pytest.importorskip("zarr")


def run(*args, check=True):
    p = subprocess.run([CLI, *map(str, args)], capture_output=True, text=True)
    if check and p.returncode != 0:
        raise AssertionError(f"cubestream {' '.join(map(str, args))} failed ({p.returncode}):\n{p.stderr}")
    return p


def era5_like(nt=12, ny=19, nx=36):
    rng = np.random.default_rng(0)
    t2m = (280 + 10 * rng.standard_normal((nt, ny, nx))).astype("float32")
    t2m[0, 0, :5] = np.nan
    z = rng.integers(-30000, 30000, size=(nt, 2, ny, nx)).astype("int16")
    ds = xr.Dataset(
        {
            "t2m": (("time", "latitude", "longitude"), t2m, {"units": "K", "long_name": "2 metre temperature"}),
            "z": (("time", "level", "latitude", "longitude"), z, {"units": "m**2 s**-2"}),
        },
        coords={
            "time": ("time", np.arange(nt) * 6.0, {"units": "hours since 2000-01-01", "calendar": "standard"}),
            "level": ("level", np.array([500, 850], dtype="int32"), {"units": "hPa"}),
            "latitude": ("latitude", np.linspace(90, -90, ny).astype("float32"), {"units": "degrees_north"}),
            "longitude": ("longitude", np.linspace(0, 350, nx).astype("float32"), {"units": "degrees_east"}),
        },
        attrs={"title": "ERA5-like test data", "Conventions": "CF-1.6"},
    )
    ds["z"].encoding = {"scale_factor": 0.5, "add_offset": 100.0, "_FillValue": -32767, "dtype": "int16"}
    return ds


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    d = tmp_path_factory.mktemp("src")
    ds = era5_like()
    path = str(d / "src.zarr")
    ds.to_zarr(path, mode="w", encoding={"t2m": {"chunks": (5, 19, 36)}}, consolidated=True)
    return path


def raw_source(path):
    g = zarr.open_consolidated(path, mode="r")
    return {k: g[k][...] for k in g.array_keys()}


def same_bits(a, b):
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    return a.shape == b.shape and a.dtype.itemsize == b.dtype.itemsize and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("codec", [["--codec", "blosc-lz4", "--shuffle"], ["--codec", "zstd:5"], ["--codec", "zstd", "--shuffle"],
                                   ["--codec", "gzip:4"], ["--codec", "zlib"], ["--codec", "lz4"], ["--codec", "none"]])
def test_v2_target_reads_in_zarr_python_and_xarray(source, tmp_path, codec):
    dst = str(tmp_path / "v2.zarr")
    run("rechunk", source, dst, "--format", "2", "--chunks", "time=1,level=1", *codec, "--threads", "2")
    want, got = raw_source(source), zarr.open_consolidated(dst, mode="r")
    for k, v in want.items():
        assert same_bits(got[k][...], v), k
    assert got["t2m"].chunks == (1, 19, 36)
    a, b = xr.open_zarr(source), xr.open_zarr(dst)
    xr.testing.assert_identical(a.load(), b.load())
    assert b["z"].encoding["scale_factor"] == 0.5 and b["z"].encoding["_FillValue"] == -32767


def zarrita_read(store, path, tmp_path):
    if not os.path.isdir(os.path.join(NODE_DIR, "node_modules", "zarrita")):
        pytest.skip("zarrita is not installed (cd tests/fixtures/node && npm ci)")
    out = tmp_path / (path.replace("/", "_") + ".bin")
    p = subprocess.run(["node", os.path.join(NODE_DIR, "read_written.mjs"), store, path, str(out)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout), out.read_bytes()


@pytest.mark.parametrize("opts", [["--codec", "zstd:3"], ["--codec", "blosc-lz4", "--shuffle"], ["--codec", "gzip"],
                                  ["--codec", "zstd:3", "--shards", "time=4,level=2"],
                                  ["--codec", "blosc-zstd", "--bitshuffle", "--checksum", "--shards", "time=-1"]])
def test_v3_target_reads_in_zarrita(source, tmp_path, opts):
    dst = str(tmp_path / "v3.zarr")
    run("rechunk", source, dst, "--chunks", "time=1,level=1", *opts, "--memory", "256K")
    want = raw_source(source)
    for k, v in want.items():
        meta, data = zarrita_read(dst, k, tmp_path)
        assert data == np.ascontiguousarray(v).tobytes(), k
        assert meta["shape"] == list(v.shape)
    meta, _ = zarrita_read(dst, "t2m", tmp_path)
    assert meta["dimension_names"] == ["time", "latitude", "longitude"]
    assert meta["attributes"]["units"] == "K"
    if "--shards" in opts:
        assert meta["codecs"] == ["sharding_indexed"]
    # CF: the v2 fill_value of z became xarray's v3 _FillValue attribute
    zmeta, _ = zarrita_read(dst, "z", tmp_path)
    assert zmeta["attributes"]["_FillValue"] == -32767
    assert zmeta["attributes"]["scale_factor"] == 0.5


def test_target_exists_resume_and_parts(source, tmp_path):
    dst = str(tmp_path / "t.zarr")
    run("rechunk", source, dst, "--chunks", "time=1", "--format", "2")
    p = run("rechunk", source, dst, "--chunks", "time=1", "--format", "2", check=False)
    assert p.returncode == 1 and "--overwrite" in p.stderr and "--resume" in p.stderr
    # a resumed run over a complete target writes nothing and verifies every chunk
    p = run("rechunk", source, dst, "--chunks", "time=1", "--format", "2", "--resume")
    assert " 0 chunks written" in p.stdout
    # remove some chunks and a part of another: resume writes exactly those again
    os.remove(os.path.join(dst, "t2m", "3", "0", "0"))
    with open(os.path.join(dst, "t2m", "4", "0", "0"), "r+b") as f:
        f.truncate(10)
    p = run("rechunk", source, dst, "--chunks", "time=1", "--format", "2", "--resume")
    assert "2 chunks written" in p.stdout and "1 rewritten" in p.stdout
    assert same_bits(zarr.open_consolidated(dst)["t2m"][...], raw_source(source)["t2m"])
    # two disjoint parts make the same store
    parts = str(tmp_path / "parts.zarr")
    for i in (1, 0):
        run("rechunk", source, parts, "--chunks", "time=1", "--format", "2", "--part", f"{i}/2")
    for k, v in raw_source(source).items():
        assert same_bits(zarr.open_consolidated(parts)[k][...], v), k


request_cleanup = []


@pytest.fixture(autouse=True, scope="module")
def _cleanup():
    yield
    for d in request_cleanup:
        shutil.rmtree(d, ignore_errors=True)


def as_unprivileged():
    """Root ignores directory permissions: run the command as nobody (setpriv, util-linux)."""
    if os.geteuid() != 0:
        return []
    if not shutil.which("setpriv"):
        pytest.skip("running as root without setpriv: cannot test permissions")
    return ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


def test_permission_denied_names_the_key_and_resume_finishes(source):
    import pathlib
    import tempfile
    base = pathlib.Path(tempfile.mkdtemp(prefix="cubestream_perm_"))  # outside root's 0700 pytest dirs
    request_cleanup.append(base)
    src = base / "src.zarr"
    shutil.copytree(source, src)
    dst = base / "ro.zarr"
    run("rechunk", src, dst, "--chunks", "time=1", "--format", "2", "--array", "t2m")
    shutil.rmtree(dst / "t2m" / "7")
    # everything writable for the unprivileged user, except the array's directory
    for d in [base, *(p for p in base.rglob("*") if p.is_dir())]:
        d.chmod(0o777)
    for f in (p for p in base.rglob("*") if p.is_file()):
        f.chmod(0o666)
    (dst / "t2m").chmod(0o555)
    try:
        args = [*as_unprivileged(), CLI, "rechunk", str(src), str(dst), "--chunks", "time=1", "--format", "2", "--array", "t2m", "--resume"]
        p = subprocess.run(args, capture_output=True, text=True)
    finally:
        (dst / "t2m").chmod(0o755)
    assert p.returncode == 1
    assert "t2m/7" in p.stderr and "permission" in p.stderr.lower()
    run("rechunk", source, dst, "--chunks", "time=1", "--format", "2", "--array", "t2m", "--resume")
    assert same_bits(zarr.open(str(dst / "t2m"), mode="r")[...], raw_source(source)["t2m"])


def test_disk_full_names_the_key_and_the_target_resumes_elsewhere(tmp_path):
    """A 1 MB tmpfs fills up mid-run (needs a mount: root or a user namespace)."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1M", "tmpfs", str(mnt)], capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here (FailingStore in rechunk_test.cpp covers the logic)")
    try:
        src = str(tmp_path / "big.zarr")
        g = zarr.open_group(src, mode="w")
        data = np.random.default_rng(3).standard_normal((40, 100, 100)).astype("f4")  # 1.6 MB, incompressible
        a = g.create_dataset("v", data=data, chunks=(10, 100, 100))
        a.attrs["_ARRAY_DIMENSIONS"] = ["time", "y", "x"]
        zarr.consolidate_metadata(src)
        dst = mnt / "out.zarr"
        p = run("rechunk", src, dst, "--chunks", "time=1", "--codec", "none", "--threads", "2", check=False)
        assert p.returncode == 1
        assert "No space left on device" in p.stderr and "v/c/" in p.stderr and "--resume" in p.stderr
        assert not [f for f in dst.rglob(".*tmp-*")]  # no temporaries left behind
        moved = tmp_path / "moved.zarr"
        shutil.copytree(dst, moved)
    finally:
        subprocess.run(["umount", str(mnt)])
    p = run("rechunk", src, moved, "--chunks", "time=1", "--codec", "none", "--resume")
    assert "already there (verified)" in p.stdout
    meta, raw = zarrita_read(str(moved), "v", tmp_path)
    assert raw == data.tobytes()


def test_corrupt_source_chunk_is_named(source, tmp_path):
    src = tmp_path / "bad.zarr"
    shutil.copytree(source, src)
    chunk = src / "t2m" / "1.0.0"
    b = chunk.read_bytes()
    chunk.write_bytes(b[: len(b) // 2])  # truncated: the blosc header promises more
    p = run("rechunk", src, tmp_path / "out.zarr", "--chunks", "time=1", check=False)
    assert p.returncode == 1 and "t2m/1.0.0" in p.stderr


def test_progress_bar_reports_bytes_rate_and_eta(source, tmp_path):
    p = run("rechunk", source, tmp_path / "p.zarr", "--progress")
    assert "%" in p.stderr and "/s" in p.stderr and "done in" in p.stderr


netCDF4 = pytest.importorskip("netCDF4")


def test_convert_netcdf_files_along_time(tmp_path):
    ds = era5_like(nt=10)
    files = []
    for i, sl in enumerate([slice(0, 4), slice(4, 7), slice(7, 10)]):
        f = str(tmp_path / f"part{i}.nc")
        part = ds.isel(time=sl)
        part.to_netcdf(f, unlimited_dims=["time"], encoding={"z": ds["z"].encoding})
        files.append(f)
    want = xr.open_mfdataset(files, combine="by_coords").load()
    for fmt in ("2", "3"):
        dst = str(tmp_path / f"conv{fmt}.zarr")
        p = run("convert", *files, dst, "--format", fmt, "--codec", "zstd", "--shuffle")
        assert "3 files" in p.stdout
        if fmt == "2":
            got = xr.open_zarr(dst).load()
            xr.testing.assert_identical(want, got)
            assert got["z"].encoding["scale_factor"] == 0.5
            assert zarr.open_consolidated(dst)["t2m"].chunks == (1, 19, 36)
        else:
            # the stored values, bit for bit, as netCDF4-python reads them without decoding
            raw = {}
            for f in files:
                with netCDF4.Dataset(f) as nc:
                    nc.set_auto_maskandscale(False)
                    for k in ("t2m", "z", "time"):
                        raw.setdefault(k, []).append(nc[k][...])
            for k, parts in raw.items():
                meta, data = zarrita_read(dst, k, tmp_path)
                assert data == np.ascontiguousarray(np.concatenate(parts)).tobytes(), k
            assert meta["attributes"]["units"] == "hours since 2000-01-01"


def test_convert_keeps_cf_attributes_of_netcdf4_python_files(tmp_path):
    f = str(tmp_path / "cf.nc")
    with netCDF4.Dataset(f, "w", format="NETCDF4") as nc:
        nc.createDimension("time", None)
        nc.createDimension("x", 5)
        t = nc.createVariable("time", "f8", ("time",))
        t.units = "days since 1990-01-01"
        t.calendar = "noleap"
        v = nc.createVariable("sst", "i2", ("time", "x"), fill_value=-999)
        v.scale_factor = 0.01
        v.add_offset = 273.15
        v.units = "K"
        v.coordinates = "time"
        t[:] = [0, 1, 2]
        v.set_auto_maskandscale(False)
        v[:] = np.array([[1, 2, -999, 4, 5], [6, 7, 8, 9, 10], [11, -999, 13, 14, 15]], dtype="i2")
        nc.history = "made by test_write.py"
    dst = str(tmp_path / "cf.zarr")
    run("convert", f, dst, "--format", "2")
    want = xr.open_dataset(f, use_cftime=True).load()
    got = xr.open_zarr(dst, use_cftime=True).load()
    xr.testing.assert_identical(want, got)
    assert np.isnan(got["sst"].values[0, 2])


def test_advise_gives_numbers_and_a_command(source):
    p = run("advise", source, "--patch", "latitude=8,longitude=8", "--window", "-1,0,+1", "--variables", "t2m", "--json")
    r = json.loads(p.stdout)
    v = r["variables"][0]
    # now: chunks of (5, 19, 36). A window of s steps at a random offset touches on average
    # 1 + (s - 1) / c chunks of c: 1 + 2/5 along time, 1 + 7/19 and 1 + 7/36 for the 8x8 patch.
    assert v["current"]["chunks"] == [5, 19, 36]
    assert abs(v["current"]["chunks_per_sample"] - (1 + 2 / 5) * (1 + 7 / 19) * (1 + 7 / 36)) < 1e-9
    used = 3 * 8 * 8 * 4
    assert abs(v["current"]["read_amplification"] - v["current"]["chunks_per_sample"] * 5 * 19 * 36 * 4 / used) < 1e-6
    assert "cubestream rechunk" in r["command"] and "--chunks" in r["command"]
    assert {c["flags"] for c in r["codecs"]} >= {"--codec zstd:3", "--codec zstd:3 --shuffle"}
    text = run("advise", source, "--patch", "latitude=8,longitude=8").stdout
    assert "read amplification" in text and "below 1 MB" in text  # a small test array


def test_advise_on_a_field_sized_store(tmp_path):
    # (40, 181, 360) float32 in chunks of 10 whole fields (2.6 MB), a 3-step window of 32x32
    # patches: the advice must read less per sample, with chunks within 1-100 MB.
    path = str(tmp_path / "field.zarr")
    g = zarr.open_group(path, mode="w")
    a = g.create_dataset("t", data=np.random.default_rng(1).standard_normal((40, 181, 360)).astype("f4"), chunks=(10, 181, 360))
    a.attrs["_ARRAY_DIMENSIONS"] = ["time", "lat", "lon"]
    zarr.consolidate_metadata(path)
    r = json.loads(run("advise", path, "--patch", "lat=32,lon=32", "--window", "-1,0,1", "--json").stdout)
    cur, rec = r["variables"][0]["current"], r["variables"][0]["recommended"]
    assert rec["bytes_read_per_sample"] < cur["bytes_read_per_sample"] / 2
    assert 1e6 <= rec["chunk_bytes"] <= 100e6
    assert rec["chunks"][0] <= 10 and rec["rule"] == "within 1-100 MB"
    assert r["bytes_read_per_sample"]["used"] == 3 * 32 * 32 * 4


def test_killed_run_resumes_to_the_same_bytes(tmp_path):
    """kill -9 in the middle of a run (no destructors, temporaries left behind), then
    --resume: every shard equals the uninterrupted run's, byte for byte."""
    import signal
    import time
    src = str(tmp_path / "src.zarr")
    g = zarr.open_group(src, mode="w")
    data = (np.random.default_rng(5).standard_normal((96, 181, 360)) * 10).astype("f4")
    a = g.create_dataset("t", data=data, chunks=(10, 181, 360))
    a.attrs["_ARRAY_DIMENSIONS"] = ["time", "lat", "lon"]
    zarr.consolidate_metadata(src)
    args = ["--chunks", "time=1", "--shards", "time=8", "--codec", "gzip:9", "--threads", "1", "--memory", "16M", "--no-progress"]
    ref = tmp_path / "ref.zarr"
    run("rechunk", src, ref, *args)
    dst = tmp_path / "killed.zarr"
    proc = subprocess.Popen([CLI, "rechunk", src, str(dst), *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    shards = dst / "t" / "c"
    deadline = time.time() + 60
    while time.time() < deadline and proc.poll() is None and len([p for p in shards.rglob("*") if p.is_file() and not p.name.startswith(".")]) < 3:
        time.sleep(0.01)
    if proc.poll() is not None:
        pytest.skip("the run finished before it could be interrupted")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done = [p for p in shards.rglob("*") if p.is_file() and not p.name.startswith(".")]
    assert 3 <= len(done) < 12
    p = run("rechunk", src, dst, *args, "--resume")
    assert f"{len(done)} already there (verified)" in p.stdout
    assert not list(dst.rglob(".*tmp-*"))
    for f in (ref / "t" / "c").rglob("*"):
        if f.is_file():
            assert (dst / f.relative_to(ref)).read_bytes() == f.read_bytes(), f
