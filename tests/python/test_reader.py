"""The Python face of the reader, checked against zarr-python 2.13 (Debian's) and xarray.

Stores are written here by zarr-python with many codecs, dtypes and layouts; cubestream must
read back exactly what zarr-python reads, for whole arrays and random regions.
"""
import os

import numpy as np
import pytest

zarr = pytest.importorskip("zarr")
numcodecs = pytest.importorskip("numcodecs")

import cubestream

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEMO = os.path.join(ROOT, "data", "demo", "cmip5_2005.zarr")

COMPRESSORS = [
    None,
    numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE),
    numcodecs.Blosc(cname="zstd", clevel=3, shuffle=numcodecs.Blosc.BITSHUFFLE),
    numcodecs.Blosc(cname="zlib", clevel=1, shuffle=numcodecs.Blosc.NOSHUFFLE),
    numcodecs.Blosc(cname="lz4hc", clevel=9, shuffle=numcodecs.Blosc.SHUFFLE),
    numcodecs.Zstd(level=3),
    numcodecs.LZ4(),
    numcodecs.Zlib(level=6),
    numcodecs.GZip(level=5),
]


def field(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "b":
        return rng.integers(0, 2, size=shape).astype(bool)
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -1000), min(info.max, 1000), size=shape, endpoint=True).astype(dtype)
    grid = np.indices(shape).sum(axis=0).astype(np.float64)
    return (np.sin(grid / 7.0) * 20 + 280 + rng.normal(0, 0.5, size=shape)).astype(dtype)


def random_regions(shape, n, rng):
    for _ in range(n):
        start = [int(rng.integers(0, s + 1)) for s in shape]
        stop = [int(rng.integers(b, s + 1)) for b, s in zip(start, shape)]
        yield tuple(slice(b, e) for b, e in zip(start, stop))


@pytest.mark.parametrize("compressor", COMPRESSORS, ids=lambda c: "none" if c is None else repr(c).split("(")[0] + "-" + str(getattr(c, "cname", "")))
@pytest.mark.parametrize("order", ["C", "F"])
def test_matches_zarr_python(tmp_path, compressor, order):
    data = field((13, 17, 9), "<f4")
    path = str(tmp_path / "a.zarr")
    z = zarr.open(path, mode="w", shape=data.shape, chunks=(4, 5, 9), dtype=data.dtype, compressor=compressor, order=order)
    z[...] = data
    a = cubestream.open_array(path)
    assert tuple(a.shape) == data.shape
    np.testing.assert_array_equal(a.read(), data)
    rng = np.random.default_rng(1)
    for sel in random_regions(data.shape, 40, rng):
        np.testing.assert_array_equal(a[sel], data[sel])


@pytest.mark.parametrize("dtype", ["|b1", "|i1", "<i2", ">i4", "<i8", "|u1", ">u2", "<u4", "<u8", "<f2", ">f4", "<f8", "<c8", ">c16"])
def test_dtypes_and_byte_orders(tmp_path, dtype):
    data = field((7, 11), dtype.replace(">", "<") if "c" not in dtype else "<f8").astype(dtype) if "c" not in dtype else \
        (field((7, 11), "<f8") + 1j * field((7, 11), "<f8", seed=2)).astype(dtype)
    path = str(tmp_path / "d.zarr")
    z = zarr.open(path, mode="w", shape=data.shape, chunks=(3, 4), dtype=dtype, compressor=numcodecs.Zstd(1))
    z[...] = data
    got = cubestream.open_array(path).read()
    assert got.dtype == np.dtype(dtype).newbyteorder("=")
    np.testing.assert_array_equal(got, data)


def test_missing_chunks_read_as_fill_value(tmp_path):
    path = str(tmp_path / "m.zarr")
    z = zarr.open(path, mode="w", shape=(10, 10), chunks=(3, 3), dtype="<f4", fill_value=-9.5)
    z[0:3, 0:3] = 1.0
    expect = z[...]
    a = cubestream.open_array(path)
    np.testing.assert_array_equal(a.read(), expect)
    assert a.fill_value == np.float32(-9.5)


def test_nested_keys_filters_and_consolidated(tmp_path):
    path = str(tmp_path / "g.zarr")
    root = zarr.open_group(zarr.storage.NestedDirectoryStore(path), mode="w")
    data = field((20, 6), "<f8")
    arr = root.create_dataset("sub/x", shape=data.shape, chunks=(7, 4), dtype="<f8",
                              filters=[numcodecs.Delta(dtype="<f8"), numcodecs.Shuffle(elementsize=8)],
                              compressor=numcodecs.Blosc("lz4"))
    arr[...] = data
    arr.attrs["_ARRAY_DIMENSIONS"] = ["t", "k"]
    zarr.consolidate_metadata(zarr.storage.NestedDirectoryStore(path))
    g = cubestream.open_group(path)
    assert g.consolidated
    assert g.all_array_paths() == ["sub/x"]
    x = g.open_array("sub/x")
    assert list(x.dimension_names) == ["t", "k"]
    np.testing.assert_array_equal(x.read(), data)


def test_errors_are_cubestream_errors(tmp_path):
    path = str(tmp_path / "e.zarr")
    z = zarr.open(path, mode="w", shape=(4,), chunks=(4,), dtype="<i4", compressor=numcodecs.Zstd(1))
    z[...] = np.arange(4)
    with open(os.path.join(path, "0"), "r+b") as f:  # corrupt the only chunk
        f.seek(6)
        f.write(b"\xff\xff\xff\xff")
    a = cubestream.open_array(path)
    with pytest.raises(cubestream.CubestreamError) as ei:
        a.read()
    e = ei.value
    assert e.code in ("corrupt_data", "size_mismatch", "checksum_mismatch")
    assert e.key == "0"
    assert e.store.startswith("file://")
    with pytest.raises(cubestream.CubestreamError) as ei:
        cubestream.open_array(str(tmp_path / "nothing-here"))
    assert ei.value.code == "not_found"
    with pytest.raises(cubestream.CubestreamError) as ei:
        a.read([2], [5])
    assert ei.value.code == "invalid_argument"
    with pytest.raises(IndexError):
        a[0:4:2]


def test_read_into_buffer_and_threads(tmp_path):
    data = field((40, 30), "<f4")
    path = str(tmp_path / "r.zarr")
    z = zarr.open(path, mode="w", shape=data.shape, chunks=(8, 8), dtype="<f4")
    z[...] = data
    a = cubestream.open_array(path)
    out = np.empty((10, 30), dtype=np.float32)
    a.read_into([5, 0], [10, 30], out, threads=3)
    np.testing.assert_array_equal(out, data[5:15])
    with pytest.raises(cubestream.CubestreamError):
        a.read_into([5, 0], [10, 30], np.empty((10, 29), dtype=np.float32))
    # Same byte count, wrong element type or shape: refused, never reinterpreted.
    with pytest.raises(cubestream.CubestreamError):
        a.read_into([5, 0], [10, 30], np.empty((10, 30), dtype=np.int32))
    with pytest.raises(cubestream.CubestreamError):
        a.read_into([5, 0], [10, 30], np.empty((30, 10), dtype=np.float32))


def test_demo_store_matches_xarray():
    xr = pytest.importorskip("xarray")
    ds = xr.open_zarr(DEMO, mask_and_scale=False, decode_times=False)
    g = cubestream.open_group(DEMO)
    for name in ["tas", "uas", "vas", "lat", "lon", "time"]:
        np.testing.assert_array_equal(g.open_array(name).read(), ds[name].values)


def _gpu_visible():
    if not cubestream._cubestream._compiled_with_cuda():
        return False
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


@pytest.mark.parametrize("compressor", [numcodecs.Zstd(level=3), numcodecs.LZ4(),
                                        numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE)],
                         ids=["zstd", "lz4", "blosc-lz4"])
def test_decode_on_the_gpu_or_a_clear_error(tmp_path, compressor):
    data = field((6, 40, 50), "<f4")
    path = str(tmp_path / "g.zarr")
    z = zarr.open(path, mode="w", shape=data.shape, chunks=(2, 16, 25), dtype="<f4", compressor=compressor)
    z[...] = data
    a = cubestream.open_array(path)
    np.testing.assert_array_equal(a.read(decode="cpu"), data)
    np.testing.assert_array_equal(a.read([1, 3, 4], [4, 30, 40], decode="auto"), data[1:5, 3:33, 4:44])
    if _gpu_visible():
        np.testing.assert_array_equal(a.read(decode="gpu"), data)
        out = np.empty((4, 30, 40), dtype=np.float32)
        a.read_into([1, 3, 4], [4, 30, 40], out, decode="gpu")
        np.testing.assert_array_equal(out, data[1:5, 3:33, 4:44])
    else:
        with pytest.raises(cubestream.CubestreamError) as e:
            a.read(decode="gpu")
        assert e.value.code == "unsupported" and "GPU" in str(e.value)
    with pytest.raises(ValueError):
        a.read(decode="tpu")


def test_decode_gpu_refuses_a_chain_without_a_gpu_decoder(tmp_path):
    data = field((4, 10), "<f4")
    path = str(tmp_path / "z.zarr")
    z = zarr.open(path, mode="w", shape=data.shape, chunks=(2, 5), dtype="<f4", compressor=numcodecs.Zlib(level=3))
    z[...] = data
    a = cubestream.open_array(path)
    with pytest.raises(cubestream.CubestreamError) as e:
        a.read(decode="gpu")
    assert e.value.code == "unsupported" and "zlib" in str(e.value)
    np.testing.assert_array_equal(a.read(decode="auto"), data)
