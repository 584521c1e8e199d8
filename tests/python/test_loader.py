"""cubestream.Loader against a NumPy reference built by slicing whole arrays.

The store is written here by zarr-python (or, where zarr-python is missing, as on the GPU
machine, by TensorStore with the group and attribute files written by hand), as Zarr v2 the
way xarray lays out an ERA5 store: a time
coordinate in CF units, level/latitude/longitude coordinates, _ARRAY_DIMENSIONS), compressed
with blosc and zstd, chunked so that samples cross chunk borders. A second store holds static
fields. Every batch of many random configs (patches, overlaps, windows, variables, levels,
statics, shuffles, dtypes) equals the reference; then coverage, resume, ranks, errors, DLPack
and the torch wrapper.
"""
import json
import os
import random
import time

import numpy as np
import pytest

import cubestream

try:
    import zarr
    import numcodecs
except ImportError:
    zarr = numcodecs = None
if zarr is None:
    ts = pytest.importorskip("tensorstore", reason="needs zarr-python or TensorStore to write the test store")

NT, NLEV, NLAT, NLON = 14, 3, 9, 12
LEVELS = [1000.0, 850.0, 500.0]
BLOSC = {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0}
ZSTD = {"id": "zstd", "level": 3}


class _Group:
    """A Zarr v2 group being written: zarr-python where installed, else TensorStore."""

    def __init__(self, path):
        self.path = path
        if zarr is not None:
            self.g = zarr.open_group(path, mode="w")
        else:
            os.makedirs(path, exist_ok=True)
            with open(os.path.join(path, ".zgroup"), "w") as f:
                json.dump({"zarr_format": 2}, f)

    def put(self, name, data, dims, chunks, compressor, attrs=None, fill=None):
        attrs = dict(attrs or {}, _ARRAY_DIMENSIONS=list(dims))
        if zarr is not None:
            comp = None
            if compressor == BLOSC:
                comp = numcodecs.Blosc("lz4", 5, numcodecs.Blosc.SHUFFLE)
            elif compressor == ZSTD:
                comp = numcodecs.Zstd(3)
            z = self.g.create_dataset(name, data=data, chunks=chunks, compressor=comp, fill_value=fill)
            z.attrs.update(attrs)
            return
        fill_json = None if fill is None else ("NaN" if isinstance(fill, float) and np.isnan(fill) else fill)
        meta = {"zarr_format": 2, "shape": list(data.shape), "chunks": list(chunks), "dtype": data.dtype.str,
                "fill_value": fill_json, "order": "C", "compressor": compressor, "filters": None}
        arr = ts.open({"driver": "zarr", "kvstore": {"driver": "file", "path": os.path.join(self.path, name)},
                       "metadata": meta}, create=True, delete_existing=True).result()
        arr.write(data).result()
        with open(os.path.join(self.path, name, ".zattrs"), "w") as f:
            json.dump(attrs, f)

    def consolidate(self):
        if zarr is not None:
            zarr.consolidate_metadata(self.path)


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    root = tmp_path_factory.mktemp("loader")
    rng = np.random.default_rng(5)
    main = str(root / "era5.zarr")
    g = _Group(main)
    g.put("time", np.arange(NT, dtype="i8") * 6, ["time"], (NT,), None,
          {"units": "hours since 2000-01-01", "calendar": "proleptic_gregorian"})
    g.put("level", np.array(LEVELS), ["level"], (NLEV,), None)
    g.put("latitude", np.linspace(90, -90, NLAT), ["latitude"], (NLAT,), None)
    g.put("longitude", np.linspace(0, 330, NLON), ["longitude"], (NLON,), None)
    t2m = (rng.normal(280, 15, (NT, NLAT, NLON))).astype("f4")
    t2m[3, 2, 5] = np.nan
    g.put("t2m", t2m, ["time", "latitude", "longitude"], (2, 4, 5), BLOSC, fill=float("nan"))
    temp = rng.normal(250, 20, (NT, NLEV, NLAT, NLON)).astype("f4")
    g.put("temperature", temp, ["time", "level", "latitude", "longitude"], (1, 2, 5, 12), ZSTD)
    packed = rng.integers(-30000, 30000, (NT, NLAT, NLON)).astype("i2")
    packed[0, 0, 0] = -32767
    g.put("z", packed, ["time", "latitude", "longitude"], (3, 9, 6), ZSTD,
          {"scale_factor": 0.5, "add_offset": 5000.0}, fill=-32767)
    g.consolidate()
    stat = str(root / "static.zarr")
    s = _Group(stat)
    s.put("latitude", np.linspace(90, -90, NLAT), ["latitude"], (NLAT,), None)
    s.put("longitude", np.linspace(0, 330, NLON), ["longitude"], (NLON,), None)
    lsm = (rng.random((NLAT, NLON)) > 0.6).astype("f4")
    s.put("lsm", lsm, ["latitude", "longitude"], (5, 5), BLOSC)
    ref = {"t2m": t2m.astype("f8"), "temperature": temp.astype("f8"),
           "z": np.where(packed == -32767, np.nan, packed * 0.5 + 5000.0), "lsm": lsm.astype("f8")}
    return {"main": main, "static": stat, "ref": ref}


def _reference_sample(ref, loader_dims, extent, layout, variables, select, statics, norm, nan_fill, start, steps,
                      window):
    """[steps, channels, *layout] for one sample, from whole arrays; `extent`: sample extent per dim."""
    dims = [d for d, _ in loader_dims]
    out_steps = []
    for t0 in steps:
        chans = []
        for v in list(variables) + list(statics):
            a = ref[v]
            # Slice in the variable's own dims: (time?, level?, latitude, longitude).
            vdims = {"t2m": ["time", "latitude", "longitude"], "z": ["time", "latitude", "longitude"],
                     "temperature": ["time", "level", "latitude", "longitude"],
                     "lsm": ["latitude", "longitude"]}[v]
            levels = [LEVELS.index(x) for x in select.get("level", LEVELS)] if "level" in vdims else [None]
            for li in levels:
                idx = []
                for d in vdims:
                    if d == "level":
                        idx.append(li)
                        continue
                    k = dims.index(d)
                    if d == "time" and window is not None:
                        idx.append(t0)
                    else:
                        idx.append(slice(start[k], start[k] + extent[d]))
                block = a[tuple(idx)]
                # Broadcast a static field along a time axis kept in the layout.
                if "time" not in vdims and "time" in layout:
                    block = np.broadcast_to(block, (extent["time"],) + block.shape)
                m, s = norm.get(v, (0.0, 1.0))
                block = ((block - m) / s).astype("f4")
                if nan_fill is not None:
                    block = np.where(np.isnan(block), np.float32(nan_fill), block)
                chans.append(block)
        out_steps.append(np.stack(chans))
    return np.stack(out_steps)


def _random_config(rng):
    cfg = {"patch": {}, "overlap": {}, "batch_dims": []}
    for d, n in (("latitude", NLAT), ("longitude", NLON)):
        role = rng.randrange(3)
        if role == 0:
            cfg["patch"][d] = rng.randint(1, n)
            cfg["overlap"][d] = rng.randint(0, cfg["patch"][d] - 1)
        elif role == 1:
            cfg["batch_dims"].append(d)
    if rng.random() < 0.7:
        cfg["window"] = {"inputs": sorted({-rng.randint(0, 2) for _ in range(rng.randint(1, 2))}),
                         "targets": sorted({rng.randint(1, 3) for _ in range(rng.randint(0, 2))})}
    else:
        cfg["patch"]["time"] = rng.randint(1, 4)
    # A surface variable always: with it, level is a channel dim (see LoaderConfig's dims rule).
    cfg["variables"] = rng.sample(["t2m", "temperature", "z"], rng.randint(1, 3))
    if cfg["variables"] == ["temperature"]:
        cfg["variables"].append("z")
    if "temperature" in cfg["variables"] and rng.random() < 0.6:
        cfg["select"] = {"level": rng.sample(LEVELS, rng.randint(1, 3))}
    if rng.random() < 0.5:
        cfg["static_variables"] = ["lsm"]
    if rng.random() < 0.5:
        cfg["normalisation"] = {v: (rng.uniform(0, 300), rng.uniform(1, 30)) for v in cfg["variables"]}
    if rng.random() < 0.4:
        cfg["nan_fill"] = 0.0
    cfg["shuffle"] = rng.choice(["none", "sample", "chunk"])
    cfg["batch_size"] = rng.randint(1, 5)
    cfg["seed"] = rng.randrange(1 << 30)
    cfg["threads"] = rng.randint(1, 4)
    cfg["prefetch"] = rng.randint(1, 3)
    return cfg


def _devices():
    out = ["cpu"]
    try:
        import torch
        if torch.cuda.is_available():
            out.append("cuda")
    except ImportError:
        pass
    return out


def _to_numpy(t):
    """A batch tensor as NumPy: CPU arrays as they are, torch CUDA tensors copied back."""
    if isinstance(t, np.ndarray):
        return t
    return t.cpu().numpy()


@pytest.mark.parametrize("device", _devices())
def test_batches_equal_numpy_reference(stores, device):
    rng = random.Random(3)
    checked = 0
    for round_ in range(25):
        cfg = _random_config(rng)
        static = cfg.pop("static_variables", [])
        dtype = rng.choice(["float32", "float16"])
        if device == "cuda":   # the GPU path with none, some, all or an adaptive share host-decoded
            cfg["host_decode_share"] = rng.choice([None, 0.0, 0.3, 1.0])
        loader = cubestream.Loader(stores["main"], static=stores["static"] if static else None,
                                   static_variables=static, output="numpy" if device == "cpu" else "torch",
                                   device=device, dtype=dtype, **cfg)
        dims = loader.dims
        layout = loader.sample_dims
        extent = {d: cfg["patch"].get(d, 1 if d in cfg["batch_dims"] else n) for d, n in dims}
        window = cfg.get("window")
        n_batches = 0
        for b in loader:
            n_batches += 1
            for i in range(len(b["sample_id"])):
                start = b["start"][i]
                if window:
                    anchor = int(b["anchor"][i])
                    steps_in = [anchor + o for o in window["inputs"]]
                    steps_out = [anchor + o for o in window["targets"]]
                else:
                    steps_in, steps_out = [None], []
                want = _reference_sample(stores["ref"], dims, extent, layout, cfg["variables"], cfg.get("select", {}), static,
                                         cfg.get("normalisation", {}), cfg.get("nan_fill"), start, steps_in, window)
                got = _to_numpy(b["inputs"])[i]
                want = want.astype(dtype)
                assert got.shape == want.shape, (round_, got.shape, want.shape)
                np.testing.assert_array_equal(got, want, err_msg=f"round {round_}")
                if steps_out:
                    want_t = _reference_sample(stores["ref"], dims, extent, layout, cfg["variables"], cfg.get("select", {}), static,
                                               cfg.get("normalisation", {}), cfg.get("nan_fill"), start, steps_out,
                                               window)
                    np.testing.assert_array_equal(_to_numpy(b["targets"])[i], want_t.astype(dtype),
                                                  err_msg=f"round {round_} targets")
                checked += 1
        assert n_batches == len(loader)
    assert checked > 200


def test_every_sample_once_and_time_stamps(stores):
    loader = cubestream.Loader(stores["main"], ["t2m", "temperature"], select={"level": [500, 850]},
                               window={"inputs": [-1, 0], "targets": [1]}, batch_size=4, shuffle="chunk",
                               buffer_size=2, seed=9, output="numpy")
    assert loader.channel_names == ["t2m", "temperature@level=500", "temperature@level=850"]
    assert loader.input_shape == (4, 2, 3, NLAT, NLON)
    assert loader.target_shape == (4, 1, 3, NLAT, NLON)
    orders = []
    for epoch in range(2):
        loader.set_epoch(epoch)
        anchors, times = [], []
        for b in loader:
            anchors += list(b["anchor"])
            times += list(b["time"])
        assert sorted(anchors) == list(range(1, NT - 1))
        expect = np.datetime64("2000-01-01T00:00", "ns") + np.array(anchors) * np.timedelta64(6, "h")
        assert list(times) == list(expect)
        orders.append(anchors)
    assert orders[0] != orders[1]  # a new permutation each epoch


def test_readahead_off_and_on_give_the_same_batches(stores):
    """readahead_batches only hints the store about the next batches' chunks: same batches."""
    def epochs(**kw):
        loader = cubestream.Loader(stores["main"], ["t2m", "temperature", "z"], select={"level": [500, 850]},
                                   window={"inputs": [0], "targets": [1]}, batch_size=3, shuffle="sample",
                                   seed=4, threads=2, output="numpy", **kw)
        out = []
        for epoch in range(2):
            loader.set_epoch(epoch)
            for b in loader:
                out.append((list(b["anchor"]), b["inputs"].copy(), b["targets"].copy()))
        return loader, out

    off, want = epochs(readahead_batches=0)
    assert off.stats()["units_hinted"] == 0
    on, got = epochs()  # the default: one batch ahead
    assert len(got) == len(want) > 2
    for (a, i, t), (wa, wi, wt) in zip(got, want):
        assert a == wa
        np.testing.assert_array_equal(i, wi)
        np.testing.assert_array_equal(t, wt)
    # Hints are counted by the loader's hint thread, a moment after they were queued.
    for _ in range(500):
        if on.stats()["units_hinted"] > 0:
            break
        time.sleep(0.01)
    assert on.stats()["units_hinted"] > 0
    with pytest.raises(ValueError):
        cubestream.Loader(stores["main"], ["t2m"], readahead_batches=-1)


def test_resume_and_ranks(stores):
    kw = dict(window={"inputs": [0], "targets": [1]}, batch_size=2, shuffle="sample", seed=4, output="numpy",
              patch={"latitude": 3})
    full = [b["inputs"].copy() for b in cubestream.Loader(stores["main"], ["t2m"], **kw)]
    first = cubestream.Loader(stores["main"], ["t2m"], **kw)
    it = iter(first)
    head = [next(it)["inputs"].copy() for _ in range(5)]
    state = json.loads(json.dumps(first.state_dict()))
    resumed = cubestream.Loader(stores["main"], ["t2m"], **kw)
    resumed.load_state_dict(state)
    tail = [b["inputs"].copy() for b in resumed]
    for a, b in zip(head + tail, full):
        np.testing.assert_array_equal(a, b)
    assert len(head) + len(tail) == len(full)
    ids = []
    lengths = set()
    for rank in range(3):
        ld = cubestream.Loader(stores["main"], ["t2m"], rank=rank, world_size=3, drop_last=True, **kw)
        got = [int(i) for b in ld for i in b["sample_id"]]
        lengths.add(len(got))
        ids += got
    assert len(lengths) == 1 and len(ids) == len(set(ids))


def test_stats_report_the_host_decode_share(stores):
    loader = cubestream.Loader(stores["main"], ["t2m"], batch_size=2, host_decode_share=0.5)
    assert sum(1 for _ in loader) == len(loader)
    st = loader.stats()
    # The CPU path decodes everything on the host; no GPU unit was taken over.
    assert st["decode_path"] == "cpu"
    assert st["host_decode_share"] == 1.0
    assert st["units_host_decoded"] == 0
    assert st["batches"] == len(loader) and st["batches_built_on_host"] >= st["batches"]
    assert st["staging_pinned_calls"] == 0 and st["staging_pinned_s"] == 0.0


@pytest.mark.parametrize("share", [0.0, 1.0, None])
def test_gpu_path_stops_pinning_memory_after_its_first_epoch(stores, share):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    # Pinning (or unpinning) staging memory is slow and contends with the training thread's
    # CUDA calls: once the staging buffers have their size, later epochs must not do it again.
    # A GPU cache too small for any unit: every epoch stages every unit again, in a new order.
    loader = cubestream.Loader(stores["main"], ["t2m"], batch_dims=["time"], batch_size=4, drop_last=True,
                               shuffle="sample", device="cuda", host_decode_share=share, prefetch=3,
                               gpu_cache_bytes=1)
    assert sum(1 for _ in loader) == len(loader)
    loader.reset_stats()
    for _ in range(2):
        assert sum(1 for _ in loader) == len(loader)
    st = loader.stats()
    assert st["decode_path"].startswith("gpu")
    assert st["staging_pinned_calls"] == 0, st


def test_gpu_pacing_keeps_the_batches(stores, monkeypatch, tmp_path):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    monkeypatch.delenv("CUBESTREAM_GPU_PACING", raising=False)
    # Pacing only moves when a batch's GPU work is enqueued: the same batches, in order, under
    # a consumer that takes a moment per batch, where the gate holds launches back (the trace
    # records each wait that happened).
    kw = dict(batch_dims=["time"], batch_size=2, drop_last=True, shuffle="sample", seed=3, device="cuda",
              host_decode_share=0.0, prefetch=3)
    want = [b["inputs"].cpu().numpy() for b in cubestream.Loader(stores["main"], ["t2m"], output="torch", **kw)]
    paced = cubestream.Loader(stores["main"], ["t2m"], output="torch", gpu_pacing="step", trace=True, **kw)
    got = []
    for b in paced:
        got.append(b["inputs"].cpu().numpy())
        time.sleep(0.005)
    assert len(got) == len(want) > 2
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    paced.write_trace(tmp_path / "trace.json")
    waits = [e for e in json.loads((tmp_path / "trace.json").read_text())["traceEvents"]
             if e["name"] == "gpu pacing wait"]
    assert waits and sum(e.get("dur", 0) for e in waits) > 1000   # microseconds


def test_bad_configs_raise_value_error_at_construction(stores):
    with pytest.raises(ValueError, match="t2m"):
        cubestream.Loader(stores["main"], ["nope"])
    with pytest.raises(ValueError, match="latitude"):
        cubestream.Loader(stores["main"], ["t2m"], patch={"latitude": 100})
    with pytest.raises(ValueError, match="window"):
        cubestream.Loader(stores["main"], ["t2m"], window={"inputs": [-40], "targets": [1]})
    with pytest.raises(ValueError, match="world_size"):
        cubestream.Loader(stores["main"], ["t2m"], world_size=0)
    with pytest.raises(ValueError, match="shuffle"):
        cubestream.Loader(stores["main"], ["t2m"], shuffle="random")
    with pytest.raises(ValueError, match="level"):
        cubestream.Loader(stores["main"], ["temperature"], select={"level": [123]})
    with pytest.raises(ValueError, match="gpu_pacing"):
        cubestream.Loader(stores["main"], ["t2m"], gpu_pacing="always")
    with pytest.raises(ValueError, match="cubestream stats"):
        cubestream.Loader(stores["main"], ["t2m"], normalisation="stored")
    with pytest.raises(cubestream.CubestreamError):
        cubestream.Loader(stores["main"], ["t2m"], device="cuda:999")


def test_dlpack_numpy_and_torch(stores):
    ld = cubestream.Loader(stores["main"], ["t2m"], batch_size=3, output="dlpack", dtype="float16",
                           window={"inputs": [0], "targets": []})
    b = next(iter(ld))
    t = b["inputs"]
    assert t.shape == (3, 1, 1, NLAT, NLON) and t.dtype == "float16" and t.device == "cpu"
    a = np.from_dlpack(t)
    assert a.dtype == np.float16 and a.shape == t.shape
    want = stores["ref"]["t2m"][:3].astype("f4").astype("f2")
    np.testing.assert_array_equal(a[:, 0, 0], want)
    del b, t
    assert a[0, 0, 0, 0, 0] == want[0, 0, 0]  # the array keeps the batch memory alive
    torch = pytest.importorskip("torch")
    ld = cubestream.Loader(stores["main"], ["t2m"], batch_size=2, window={"inputs": [0], "targets": [1]})
    ds = cubestream.torch_dataset(ld)
    dl = torch.utils.data.DataLoader(ds, batch_size=None)
    batches = list(dl)
    assert len(batches) == len(ds) == len(ld)
    first = batches[0]
    assert isinstance(first["inputs"], torch.Tensor) and first["time"].dtype == torch.int64
    assert int(first["time"][0]) == int(np.datetime64("2000-01-01T00:00", "ns").view("int64")) + \
        int(first["anchor"][0]) * 6 * 3600 * 10**9


def test_stats_command_and_stored_normalisation(stores, tmp_path):
    import shutil
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    cli = os.environ.get("CUBESTREAM_CLI", os.path.join(root, "build", "cubestream"))
    store = str(tmp_path / "copy.zarr")
    shutil.copytree(stores["main"], store)
    with pytest.raises(ValueError, match="cubestream stats"):
        cubestream.Loader(store, ["t2m"], normalisation="stored")
    subprocess.run([cli, "stats", store, "--variables", "t2m,temperature,z", "--threads", "2"], check=True,
                   capture_output=True)
    doc = json.load(open(os.path.join(store, "cubestream_stats.json")))
    ref = stores["ref"]
    # Per variable and per level, against NumPy over the float32 values the loader reads.
    t2m = ref["t2m"].astype("f4").astype("f8")
    assert doc["variables"]["t2m"]["count"] == np.count_nonzero(~np.isnan(t2m))
    assert doc["variables"]["t2m"]["mean"] == pytest.approx(np.nanmean(t2m), rel=1e-12)
    assert doc["variables"]["t2m"]["std"] == pytest.approx(np.nanstd(t2m), rel=1e-10)
    for i, lev in enumerate(LEVELS):
        name = f"temperature@level={lev:g}"
        vals = ref["temperature"][:, i].astype("f4").astype("f8")
        assert doc["channels"][name]["mean"] == pytest.approx(vals.mean(), rel=1e-12)
        assert doc["channels"][name]["std"] == pytest.approx(vals.std(), rel=1e-10)
    z = ref["z"].astype("f4").astype("f8")
    assert doc["variables"]["z"]["mean"] == pytest.approx(np.nanmean(z), rel=1e-12)
    # The loader normalises with the stored table: per channel mean 0, std 1 over an epoch.
    ld = cubestream.Loader(store, ["t2m", "temperature"], select={"level": [500]}, normalisation="stored",
                           batch_dims=["time"], batch_size=NT, output="numpy")
    b = next(iter(ld))
    x = b["inputs"].astype("f8")  # [NT, 1, 2, lat, lon]
    for c in range(2):
        assert np.nanmean(x[:, 0, c]) == pytest.approx(0, abs=1e-5)
        assert np.nanstd(x[:, 0, c]) == pytest.approx(1, abs=1e-5)


def test_cupy_and_jax_take_cuda_batches(stores):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    kw = dict(window={"inputs": [0], "targets": [1]}, batch_size=2, shuffle="sample", seed=1)
    want = [b["inputs"].copy() for b in cubestream.Loader(stores["main"], ["t2m"], output="numpy", **kw)]
    tried = 0
    for name in ("cupy", "jax"):
        try:
            __import__(name)
        except ImportError:
            continue
        tried += 1
        got = [np.asarray(b["inputs"].get() if name == "cupy" else b["inputs"])
               for b in cubestream.Loader(stores["main"], ["t2m"], device="cuda", output=name, **kw)]
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
    if not tried:
        pytest.skip("neither CuPy nor JAX is installed")
