#!/usr/bin/python3
"""Writes the golden files of the bytes->bytes codec tests (tests/cpp/codec/golden_test.cpp).

For each numcodecs codec id, tests/data/codec/<id>/ holds
  cases.json        [{"name", "config", "encoded", "decoded"}, ...]
  <name>.enc        what numcodecs' encode wrote
  <name>.dec        what numcodecs' decode returns for it (the oracle for our decoder; for the
                    lossy filters it differs from the original data)
The config is numcodecs' get_config(), "id" included, exactly as Zarr v2 stores it.

Run with the system Python (numcodecs 0.11, numpy 1.24):
    /usr/bin/python3 tests/data/codec/generate.py
Output is deterministic for a given numcodecs/numpy/libblosc version (numpy may warn about
an invalid cast inside np.cumsum: it reads the uninitialised output buffer it then overwrites). The arrays are small
(a few hundred elements) to keep the repository light; the C++ tests cover large sizes against
the libraries directly.
"""
import json
import os
import shutil

import numpy as np
import numcodecs
from numcodecs import blosc

HERE = os.path.dirname(os.path.abspath(__file__))
RNG = np.random.default_rng(20261121)


def climate_field(n, dtype="<f4"):
    """A smooth 2-D temperature-like field (kelvin) with a little noise, flattened."""
    rows = max(1, int(np.sqrt(n)))
    cols = (n + rows - 1) // rows
    lat = np.linspace(-np.pi / 2, np.pi / 2, rows)[:, None]
    lon = np.linspace(0, 2 * np.pi, cols)[None, :]
    field = 273.15 + 30 * np.cos(lat) + 5 * np.sin(3 * lon) * np.cos(lat) ** 2
    field = field + RNG.normal(0, 0.05, field.shape)
    return field.ravel()[:n].astype(dtype)


def precip_field(n, dtype="<f4"):
    """Mostly zeros with positive bursts (like precipitation), quantised to 0.1 mm."""
    x = np.maximum(RNG.gamma(0.3, 4.0, n) - 1.0, 0.0)
    return (np.round(x * 10) / 10).astype(dtype)


def write_cases(codec_id, cases):
    folder = os.path.join(HERE, codec_id)
    if os.path.isdir(folder):
        shutil.rmtree(folder)
    os.makedirs(folder)
    index = []
    for name, codec, data in cases:
        data = np.ascontiguousarray(data)
        enc = codec.encode(data)
        enc_bytes = bytes(memoryview(np.ascontiguousarray(enc)).cast("B")) if not isinstance(enc, bytes) else enc
        if codec_id == "gzip":
            # Python's gzip stores the current time (bytes 4-7, outside the CRC): zero it so
            # the files do not change on every run.
            enc_bytes = enc_bytes[:4] + bytes(4) + enc_bytes[8:]
        try:
            dec = codec.decode(enc_bytes)
            dec_bytes = bytes(memoryview(np.ascontiguousarray(dec)).cast("B")) if not isinstance(dec, bytes) else dec
        except RuntimeError:
            # numcodecs 0.11 cannot decode its own LZ4 encoding of an empty buffer (it treats
            # LZ4's 0-byte result as an error); the right answer is the empty buffer.
            if data.nbytes != 0:
                raise
            dec_bytes = b""
        with open(os.path.join(folder, name + ".enc"), "wb") as f:
            f.write(enc_bytes)
        with open(os.path.join(folder, name + ".dec"), "wb") as f:
            f.write(dec_bytes)
        index.append({"name": name, "config": codec.get_config(),
                      "encoded": name + ".enc", "decoded": name + ".dec"})
    with open(os.path.join(folder, "cases.json"), "w") as f:
        json.dump(index, f, indent=1, sort_keys=True)
        f.write("\n")


def main():
    t2m = climate_field(300)
    t2m_f8 = climate_field(200, "<f8")
    rain = precip_field(400)
    ramp_i4 = (np.arange(300, dtype="<i4") * 7 - 1000)
    rand_bytes = RNG.integers(0, 256, 777, dtype=np.uint8)

    # ---- compressors -------------------------------------------------------------------
    write_cases("zlib", [
        ("level1_t2m", numcodecs.Zlib(level=1), t2m),
        ("level9_rain", numcodecs.Zlib(level=9), rain),
        ("level0_random", numcodecs.Zlib(level=0), rand_bytes),
        ("empty", numcodecs.Zlib(level=5), np.zeros(0, "u1")),
    ])
    write_cases("gzip", [
        ("level1_t2m", numcodecs.GZip(level=1), t2m),
        ("level9_rain", numcodecs.GZip(level=9), rain),
        ("empty", numcodecs.GZip(level=5), np.zeros(0, "u1")),
    ])
    write_cases("lz4", [
        ("accel1_t2m", numcodecs.LZ4(acceleration=1), t2m),
        ("accel9_ramp", numcodecs.LZ4(acceleration=9), ramp_i4),
        ("random", numcodecs.LZ4(), rand_bytes),
        ("empty", numcodecs.LZ4(), np.zeros(0, "u1")),
    ])
    write_cases("zstd", [
        ("level1_t2m", numcodecs.Zstd(level=1), t2m),
        ("level19_rain", numcodecs.Zstd(level=19), rain),
        ("level_neg3_ramp", numcodecs.Zstd(level=-3), ramp_i4),
        ("empty", numcodecs.Zstd(level=3), np.zeros(0, "u1")),
    ])
    big_t2m = climate_field(3000)  # 12 kB: several blocks with a small blocksize
    blosc_cases = []
    for cname in ["blosclz", "lz4", "lz4hc", "zlib", "zstd"]:
        for shuffle, sname in [(blosc.NOSHUFFLE, "noshuffle"), (blosc.SHUFFLE, "shuffle"),
                               (blosc.BITSHUFFLE, "bitshuffle")]:
            blosc_cases.append((f"{cname}_{sname}_t2m",
                                numcodecs.Blosc(cname=cname, clevel=5, shuffle=shuffle), t2m))
    blosc_cases += [
        ("lz4_shuffle_blocks", numcodecs.Blosc("lz4", 5, blosc.SHUFFLE, blocksize=1024), big_t2m),
        ("blosclz_bitshuffle_blocks", numcodecs.Blosc("blosclz", 9, blosc.BITSHUFFLE, blocksize=1000), big_t2m),
        ("zstd_shuffle_f8", numcodecs.Blosc("zstd", 3, blosc.SHUFFLE), t2m_f8),
        ("lz4_clevel0", numcodecs.Blosc("lz4", 0, blosc.SHUFFLE), t2m),
        ("blosclz_random", numcodecs.Blosc("blosclz", 9, blosc.NOSHUFFLE), rand_bytes),
        ("lz4_tiny", numcodecs.Blosc("lz4", 5, blosc.SHUFFLE), np.arange(5, dtype="<i4")),
        ("empty", numcodecs.Blosc("lz4", 5, blosc.SHUFFLE), np.zeros(0, "<f4")),
        # decoding snappy is not supported: the test expects Error(kUnsupported)
        ("snappy_unsupported", numcodecs.Blosc("snappy", 5, blosc.SHUFFLE), t2m),
    ]
    write_cases("blosc", blosc_cases)

    # ---- checksums -----------------------------------------------------------------------
    write_cases("crc32", [
        ("t2m", numcodecs.CRC32(), t2m),
        ("random", numcodecs.CRC32(), rand_bytes),
        ("empty", numcodecs.CRC32(), np.zeros(0, "u1")),
    ])
    write_cases("adler32", [
        ("t2m", numcodecs.Adler32(), t2m),
        ("random", numcodecs.Adler32(), rand_bytes),
        ("empty", numcodecs.Adler32(), np.zeros(0, "u1")),
    ])

    # ---- filters -----------------------------------------------------------------------
    write_cases("shuffle", [
        ("es1", numcodecs.Shuffle(1), rand_bytes),
        ("es2", numcodecs.Shuffle(2), rand_bytes[:776]),
        ("es3", numcodecs.Shuffle(3), rand_bytes[:774]),
        ("es4_t2m", numcodecs.Shuffle(4), t2m),
        ("es8_t2m_f8", numcodecs.Shuffle(8), t2m_f8),
        ("es16", numcodecs.Shuffle(16), rand_bytes[:768]),
    ])

    i2 = (np.cumsum(RNG.integers(-40, 40, 300)) + 1000).astype("<i2")
    delta = [
        ("i4_i4", dict(dtype="<i4"), ramp_i4),
        ("i2_i1_wrap", dict(dtype="<i2", astype="<i1"), i2),
        ("i8_i2", dict(dtype="<i8", astype="<i2"), i2.astype("<i8")),
        ("u2_u1", dict(dtype="<u2", astype="|u1"), np.arange(0, 900, 3, dtype="<u2")),
        ("u1_u1", dict(dtype="|u1"), rand_bytes),
        ("u4_i4", dict(dtype="<u4", astype="<i4"), RNG.integers(0, 2**32, 200, dtype=np.uint64).astype("<u4")),
        ("u8_i8", dict(dtype="<u8", astype="<i8"), RNG.integers(0, 2**40, 100, dtype=np.uint64).astype("<u8")),
        ("i4_be", dict(dtype=">i4", astype=">i4"), ramp_i4.astype(">i4")),
        ("i4_le_i2_be", dict(dtype="<i4", astype=">i2"), ramp_i4),
        ("f4_f4_t2m", dict(dtype="<f4"), t2m),
        ("f8_f4", dict(dtype="<f8", astype="<f4"), t2m_f8),
        ("f4_f8", dict(dtype="<f4", astype="<f8"), t2m),
        ("f2_f2", dict(dtype="<f2"), t2m.astype("<f2")),
        ("f4_be", dict(dtype=">f4"), t2m.astype(">f4")),
        ("f4_i2", dict(dtype="<f4", astype="<i2"), rain * 10),
        ("i4_f4", dict(dtype="<i4", astype="<f4"), ramp_i4),
        ("f8_i8", dict(dtype="<f8", astype="<i8"), np.round(t2m_f8 * 100)),
        ("b1_b1", dict(dtype="|b1"), rand_bytes[:100] > 128),
        # wide-ranging values: the precision of the running sum shows in the result
        ("f4_f8_wide", dict(dtype="<f4", astype="<f8"), RNG.normal(0, 1000, 300).astype("<f4")),
        ("f2_f2_wide", dict(dtype="<f2"), RNG.normal(0, 100, 300).astype("<f2")),
        ("f4_f2_wide", dict(dtype="<f4", astype="<f2"), RNG.normal(0, 100, 300).astype("<f4")),
    ]
    write_cases("delta", [(n, numcodecs.Delta(**kw), d) for n, kw, d in delta])

    fso = [
        ("f8_u1_int_scale", dict(scale=10, offset=1000, dtype="<f8", astype="|u1"),
         np.linspace(1000, 1025, 250)),
        ("f4_u2_t2m", dict(scale=100, offset=250.5, dtype="<f4", astype="<u2"), t2m),
        ("f8_i2_float_scale", dict(scale=1000.0, offset=-3.25, dtype="<f8", astype="<i2"),
         np.linspace(-30, 25, 200)),
        ("f4_be_i2_be", dict(scale=10, offset=0, dtype=">f4", astype=">i2"), (t2m - 273).astype(">f4")),
        ("f4_f4", dict(scale=10, offset=1000, dtype="<f4", astype="<f4"), t2m + 700),
        ("f2_f2_small_offset", dict(scale=10, offset=10, dtype="<f2", astype="<f2"), (t2m / 30).astype("<f2")),
        ("f2_f2_large_offset", dict(scale=10, offset=1000, dtype="<f2", astype="<f2"), (t2m + 700).astype("<f2")),
        ("f4_f4_scale_u4", dict(scale=100000, offset=0, dtype="<f4", astype="<f4"), t2m / 300),
        ("f4_f4_offset_1e6", dict(scale=0.1, offset=1e6, dtype="<f4", astype="<f4"), t2m + 1e6),
        ("f8_f8", dict(scale=3.7, offset=-12.2, dtype="<f8", astype="<f8"), t2m_f8),
        ("i4_i2", dict(scale=2, offset=100, dtype="<i4", astype="<i2"), ramp_i4),
        ("u1_u1", dict(scale=3, offset=0, dtype="|u1", astype="|u1"), rand_bytes[:80]),
        ("f4_u1_rain", dict(scale=10, offset=0, dtype="<f4", astype="|u1"), np.minimum(rain, 25)),
        ("f8_f4_neg_int_offset", dict(scale=8, offset=-70000, dtype="<f8", astype="<f4"), t2m_f8 - 70000),
        # cases where the precision numpy computes in shows in the result (dtype wider than the
        # operation type, or two roundings): pin down the value-based casting rules
        ("f8_f2_in_f2_then_f4", dict(scale=10, offset=1000, dtype="<f8", astype="<f2"), t2m_f8 + 700),
        ("f8_f4_in_f4", dict(scale=10, offset=0.5, dtype="<f8", astype="<f4"), t2m_f8),
        ("f4_f4_in_f8", dict(scale=100000, offset=0.3, dtype="<f4", astype="<f4"), t2m / 300),
        ("f8_f2_in_f2", dict(scale=3, offset=-2, dtype="<f8", astype="<f2"), t2m_f8 / 100),
    ]
    write_cases("fixedscaleoffset", [(n, numcodecs.FixedScaleOffset(**kw), d) for n, kw, d in fso])

    write_cases("quantize", [
        ("d1_f8_f8", numcodecs.Quantize(1, "<f8"), t2m_f8),
        ("d3_f8_f4", numcodecs.Quantize(3, "<f8", astype="<f4"), t2m_f8),
        ("d2_f4_f4", numcodecs.Quantize(2, "<f4"), t2m),
        ("d2_f4_f2", numcodecs.Quantize(2, "<f4", astype="<f2"), t2m / 10),
        ("d4_f8_f2", numcodecs.Quantize(4, "<f8", astype="<f2"), t2m_f8 / 100),
        ("d2_f4_f8", numcodecs.Quantize(2, "<f4", astype="<f8"), t2m),
        ("d3_be", numcodecs.Quantize(3, ">f8", astype=">f4"), t2m_f8.astype(">f8")),
    ])

    write_cases("bitround", [
        ("f4_keep5", numcodecs.BitRound(5), t2m),
        ("f8_keep10", numcodecs.BitRound(10), t2m_f8),
        ("f4_keep23", numcodecs.BitRound(23), t2m),
    ])


if __name__ == "__main__":
    main()
