"""cubestream.codecs: numcodecs-style decoding on the CPU (against numcodecs 0.11, Debian's, as
the encoder and reference; skipped where numcodecs is missing) and on the GPU (the committed
codec goldens of tests/data/codec, which need no encoder: the GPU machine has no numcodecs;
skipped without a CUDA build, a device, and CuPy or CUDA torch)."""
import json
import os

import numpy as np
import pytest

try:
    import numcodecs
except ImportError:  # the GPU machine: the CPU tests below skip, the golden GPU tests run
    numcodecs = None

import cubestream
from cubestream import codecs


def era5_like(n, seed=0):
    """Smooth float32 field plus noise quantised to 16 bits: compresses ~1.5-2x like ERA5."""
    rng = np.random.default_rng(seed)
    side = int(np.sqrt(n)) + 1
    y, x = np.mgrid[0:side, 0:side]
    field = 273.15 + 30 * np.cos(y / side * np.pi - np.pi / 2) + 5 * np.sin(3 * x / side * 2 * np.pi)
    field = field.ravel()[:n] + rng.normal(0, 0.5, n)
    lo, hi = field.min(), field.max()
    q = np.round((field - lo) / (hi - lo) * 65535)
    return (lo + q * (hi - lo) / 65535).astype(np.float32)


needs_numcodecs = pytest.mark.skipif(numcodecs is None, reason="numcodecs is not installed")

DATA = {
    "era5": era5_like(50000).tobytes(),
    "random": np.random.default_rng(1).integers(0, 256, 30001, dtype=np.uint8).tobytes(),
    "zeros": bytes(70000),
    "one": b"\x07",
    "empty": b"",
}

COMPRESSORS = [] if numcodecs is None else [
    numcodecs.LZ4(acceleration=1),
    numcodecs.LZ4(acceleration=10),
    numcodecs.Zstd(level=1),
    numcodecs.Zstd(level=19),
    numcodecs.Zlib(level=6),
    numcodecs.GZip(level=5),
] + [
    numcodecs.Blosc(cname=c, clevel=lvl, shuffle=s, blocksize=b)
    for c in ("lz4", "lz4hc", "blosclz", "zstd", "zlib")
    for lvl in (1, 5, 9)
    for s in (numcodecs.Blosc.NOSHUFFLE, numcodecs.Blosc.SHUFFLE, numcodecs.Blosc.BITSHUFFLE)
    for b in (0, 4096)
]


def _id(c):
    return repr(c.get_config())


@pytest.mark.parametrize("name", sorted(DATA))
@pytest.mark.parametrize("compressor", COMPRESSORS, ids=_id)
def test_cpu_decode_matches_numcodecs(compressor, name):
    raw = DATA[name]
    enc = compressor.encode(raw)
    cfg = compressor.get_config()
    out = codecs.decode(enc, cfg, out_size=len(raw))
    assert out.dtype == np.uint8
    assert out.tobytes() == raw
    # without out_size: from the header (lz4, blosc) or by growing the output (zstd, zlib)
    assert codecs.decode(enc, cfg).tobytes() == raw


@needs_numcodecs
@pytest.mark.parametrize("typesize", [1, 2, 4, 8])
@pytest.mark.parametrize("cname", ["lz4", "zstd", "blosclz"])
def test_cpu_blosc_typesizes_from_numpy_input(cname, typesize):
    arr = era5_like(40000).view(np.uint8)[: 40000 * 4 // typesize * typesize].view(f"u{typesize}")
    c = numcodecs.Blosc(cname=cname, clevel=5, shuffle=numcodecs.Blosc.SHUFFLE)
    enc = c.encode(arr)
    # NumPy, bytearray and memoryview inputs
    for data in (np.frombuffer(enc, dtype=np.uint8), bytearray(enc), memoryview(enc)):
        assert codecs.decode(data, c.get_config()).tobytes() == arr.tobytes()


FILTERS = [] if numcodecs is None else [
    numcodecs.Shuffle(elementsize=4),
    numcodecs.Shuffle(elementsize=8),
    numcodecs.Delta(dtype="<i4"),
    numcodecs.Delta(dtype="<i8", astype="<i2"),
    numcodecs.Delta(dtype="<f8"),
    numcodecs.FixedScaleOffset(offset=270, scale=100, dtype="<f8", astype="<u2"),
]


@pytest.mark.parametrize("flt", FILTERS, ids=_id)
def test_cpu_filters_match_numcodecs(flt):
    cfg = flt.get_config()
    dtype = np.dtype(cfg.get("dtype", "<u4"))
    base = era5_like(10000).astype(np.float64)
    x = (base - 200).astype(dtype) if dtype.kind in "iu" else base.astype(dtype)
    enc = np.asarray(flt.encode(x))
    want = np.asarray(flt.decode(enc)).view(np.uint8).tobytes()
    got = codecs.decode(enc, cfg, out_size=len(want))
    assert got.tobytes() == want


@needs_numcodecs
def test_cpu_errors_are_cubestream_errors():
    enc = numcodecs.LZ4().encode(DATA["era5"])
    with pytest.raises(cubestream.CubestreamError) as e:
        codecs.decode(enc[: len(enc) // 2], {"id": "lz4"})
    assert e.value.code == "corrupt_data"
    with pytest.raises(cubestream.CubestreamError) as e:
        codecs.decode(enc, {"id": "lz4"}, out_size=10)
    assert e.value.code == "size_mismatch"
    with pytest.raises(cubestream.CubestreamError) as e:
        codecs.decode(enc, {"id": "no-such-codec"})
    assert e.value.code == "unsupported"
    with pytest.raises(ValueError):
        codecs.decode(enc, {"not": "an id"})
    with pytest.raises(ValueError):
        codecs.decode(enc, {"id": "lz4"}, device="tpu")


@needs_numcodecs
def test_decoded_size_from_headers():
    raw = DATA["era5"]
    assert codecs.decoded_size(numcodecs.LZ4().encode(raw), {"id": "lz4"}) == len(raw)
    assert codecs.decoded_size(numcodecs.Blosc().encode(raw), {"id": "blosc"}) == len(raw)
    assert codecs.decoded_size(numcodecs.Zstd().encode(raw), {"id": "zstd"}) == len(raw)
    assert codecs.decoded_size(numcodecs.Zlib().encode(raw), {"id": "zlib"}) is None
    assert sorted(codecs.gpu_codec_ids()) == ["blosc", "lz4", "zstd"]


# ---- GPU -------------------------------------------------------------------------------------

def _gpu_array_module():
    if not cubestream._cubestream._compiled_with_cuda():
        return None
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() > 0:
            return "cupy"
    except Exception:  # noqa: BLE001
        pass
    try:
        import torch
        if torch.cuda.is_available():
            return "torch"
    except Exception:  # noqa: BLE001
        pass
    return None


GPU = _gpu_array_module()
needs_gpu = pytest.mark.skipif(GPU is None, reason="no CUDA build, device, CuPy or CUDA torch")


def _to_host(a):
    if GPU == "cupy":
        import cupy
        return cupy.asnumpy(a).tobytes()
    return a.cpu().numpy().tobytes()


def _to_device(b):
    arr = np.frombuffer(b, dtype=np.uint8)
    if GPU == "cupy":
        import cupy
        return cupy.asarray(arr)
    import torch
    return torch.from_numpy(arr.copy()).cuda()


GPU_COMPRESSORS = [] if numcodecs is None else [numcodecs.LZ4(), numcodecs.Zstd(level=3)] + [
    numcodecs.Blosc(cname=c, clevel=5, shuffle=s)
    for c in ("lz4", "lz4hc", "blosclz", "zstd")
    for s in (numcodecs.Blosc.NOSHUFFLE, numcodecs.Blosc.SHUFFLE, numcodecs.Blosc.BITSHUFFLE)
]


@needs_gpu
@needs_numcodecs
@pytest.mark.parametrize("compressor", GPU_COMPRESSORS, ids=_id)
def test_cuda_decode_matches_cpu(compressor):
    for name, raw in DATA.items():
        enc = compressor.encode(raw)
        cfg = compressor.get_config()
        from_host = codecs.decode(enc, cfg, device="cuda", out_size=len(raw))
        from_device = codecs.decode(_to_device(enc), cfg, device="cuda")
        assert _to_host(from_host) == raw, name
        assert _to_host(from_device) == raw, name


@needs_gpu
@needs_numcodecs
def test_cuda_batch_and_errors():
    c = numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE)
    raws = [era5_like(20000 + 100 * i, seed=i).tobytes() for i in range(64)]
    encs = [c.encode(r) for r in raws]
    outs = codecs.decode_batch([_to_device(e) for e in encs], c.get_config(), device="cuda")
    assert [_to_host(o) for o in outs] == raws
    bad = encs[0][: len(encs[0]) // 2]  # shorter than its header's cbytes: corrupt
    with pytest.raises(cubestream.CubestreamError) as e:
        codecs.decode_batch([encs[1], bad], c.get_config(), device="cuda", out_sizes=[len(raws[1]), len(raws[0])])
    assert "buffer" in str(e.value)
    with pytest.raises(cubestream.CubestreamError):
        codecs.decode(encs[0], {"id": "zlib"}, device="cuda")


GOLDEN = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "codec")


def _golden_cases():
    cases = []
    for codec_id in ("lz4", "blosc", "zstd"):
        index = os.path.join(GOLDEN, codec_id, "cases.json")
        if os.path.exists(index):
            for case in json.load(open(index)):
                cases.append(pytest.param(codec_id, case, id=f"{codec_id}-{case['name']}"))
    return cases


@needs_gpu
@pytest.mark.parametrize("codec_id,case", _golden_cases())
def test_cuda_goldens(codec_id, case):
    folder = os.path.join(GOLDEN, codec_id)
    enc = open(os.path.join(folder, case["encoded"]), "rb").read()
    dec = open(os.path.join(folder, case["decoded"]), "rb").read()
    if case["name"].endswith("_unsupported"):  # snappy streams: the GPU leaves them, the CPU refuses
        with pytest.raises(cubestream.CubestreamError) as e:
            codecs.decode(_to_device(enc), case["config"], device="cuda", out_size=len(dec))
        assert e.value.code == "unsupported"
        return
    out = codecs.decode(_to_device(enc), case["config"], device="cuda", out_size=len(dec))
    assert _to_host(out) == dec
    # the CPU path gives the same bytes
    assert codecs.decode(enc, case["config"], out_size=len(dec)).tobytes() == dec


@needs_gpu
def test_cuda_golden_batch():
    cases = [c.values for c in _golden_cases() if c.values[0] == "blosc" and "unsupported" not in c.values[1]["name"]]
    encs, decs = [], []
    for _, case in cases:
        folder = os.path.join(GOLDEN, "blosc")
        encs.append(open(os.path.join(folder, case["encoded"]), "rb").read())
        decs.append(open(os.path.join(folder, case["decoded"]), "rb").read())
    outs = codecs.decode_batch([_to_device(e) for e in encs], {"id": "blosc"}, device="cuda",
                               out_sizes=[len(d) for d in decs])
    assert [_to_host(o) for o in outs] == decs


@pytest.mark.parametrize("codec_id,case", _golden_cases())
def test_cpu_goldens(codec_id, case):
    folder = os.path.join(GOLDEN, codec_id)
    enc = open(os.path.join(folder, case["encoded"]), "rb").read()
    dec = open(os.path.join(folder, case["decoded"]), "rb").read()
    if case["name"].endswith("_unsupported"):
        with pytest.raises(cubestream.CubestreamError) as e:
            codecs.decode(enc, case["config"])
        assert e.value.code == "unsupported"
        return
    assert codecs.decode(enc, case["config"]).tobytes() == dec
    assert codecs.decode(np.frombuffer(enc, dtype=np.uint8), case["config"], out_size=len(dec)).tobytes() == dec
