#!/usr/bin/python3
"""Builds seed corpora for the codec fuzzers from the golden files in tests/data/codec.

    /usr/bin/python3 tests/fuzz/seed_corpus.py OUT_DIR

writes OUT_DIR/<codec>/<case>-<config>: the harness's 3-byte prefix (output size / 16 as
little-endian u16, then the configuration index) followed by an encoded golden buffer.
Codecs without goldens (crc32c) get a few hand-made inputs.
"""
import json
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data", "codec")
# number of configurations each harness cycles through (fuzz_codec.cpp)
CONFIGS = {"zstd": 1, "gzip": 1, "zlib": 1, "lz4": 1, "blosc": 1, "crc32c": 2, "crc32": 2,
           "adler32": 2, "bitround": 1, "shuffle": 6, "delta": 8, "fixedscaleoffset": 5,
           "quantize": 4}
# fuzz_zstd_logic reads the zstd goldens with its own flag byte (bit 0 verify, bit 1 output
# size from the content size): all four combinations.
SHARED_AS = {"zstd_logic": ("zstd", 4)}


def prefix(decoded_size, config):
    units = min((decoded_size + 15) // 16, 0xFFFF)
    return struct.pack("<HB", units, config)


def golden_seeds(folder, codec, index, nconf):
    """One seed per golden case of `codec` and per configuration byte."""
    for case in json.load(open(index)):
        enc = open(os.path.join(DATA, codec, case["encoded"]), "rb").read()
        dec = os.path.getsize(os.path.join(DATA, codec, case["decoded"]))
        for conf in range(nconf):
            with open(os.path.join(folder, f"{case['name']}-{conf}"), "wb") as f:
                f.write(prefix(dec, conf) + enc)


def main(out):
    for codec, nconf in CONFIGS.items():
        folder = os.path.join(out, codec)
        os.makedirs(folder, exist_ok=True)
        index = os.path.join(DATA, codec, "cases.json")
        if not os.path.exists(index):
            for i, payload in enumerate([b"\x00" * 4, b"\x8a\x91\x36\xaa" + b"\x00" * 32]):
                with open(os.path.join(folder, f"seed{i}"), "wb") as f:
                    f.write(prefix(64, i % nconf) + payload)
            continue
        golden_seeds(folder, codec, index, nconf)


def shared_decoder_seeds(out):
    for name, (codec, nconf) in SHARED_AS.items():
        folder = os.path.join(out, name)
        os.makedirs(folder, exist_ok=True)
        index = os.path.join(DATA, codec, "cases.json")
        if not os.path.exists(index):
            continue
        golden_seeds(folder, codec, index, nconf)
    climate_zstd_seeds(os.path.join(out, "zstd_logic"))


def climate_zstd_seeds(folder):
    """Frames of a smooth, quantised float32 field (~40 KB) at levels 1, 3 and 5: their
    sequence streams are long enough for the GPU's word-window reader (the goldens' are not),
    so the fuzzer mutates that path too. Skipped where numcodecs or numpy is missing."""
    try:
        import numpy as np
        from numcodecs import Zstd
    except ImportError:
        return
    y, x = np.meshgrid(np.linspace(0, 3, 80), np.linspace(0, 6, 125), indexing="ij")
    field = 280 + 15 * np.sin(y) * np.cos(x) + np.random.default_rng(7).normal(0, 0.3, y.shape)
    raw = (np.round(field * 64) / 64).astype("<f4").tobytes()
    for level in (1, 3, 5):
        enc = Zstd(level=level).encode(raw)
        with open(os.path.join(folder, f"climate_level{level}"), "wb") as f:
            f.write(prefix(len(raw), 2) + bytes(enc))


def structural_seeds(out):
    """Seeds for fuzz_metadata (mode byte + a real metadata document) and fuzz_shard_index
    (flags byte + a valid shard of the harness's 6x8 int16 array with 3x4 inner chunks)."""
    root = os.path.join(HERE, "..", "..")
    folder = os.path.join(out, "metadata")
    os.makedirs(folder, exist_ok=True)
    docs = []
    demo = os.path.join(root, "data", "demo", "cmip5_2005.zarr")
    for mode, rel in [(1, "tas/.zarray"), (3, ".zmetadata")]:
        p = os.path.join(demo, rel)
        if os.path.exists(p):
            docs.append((mode, open(p, "rb").read()))
    ts = os.path.join(root, "tests", "data", "tensorstore", "sharded.zarr")
    if os.path.isdir(ts):
        for name in sorted(os.listdir(ts))[:8]:
            p = os.path.join(ts, name, "zarr.json")
            if os.path.exists(p):
                docs.append((0, open(p, "rb").read()))
        if os.path.exists(os.path.join(ts, "zarr.json")):
            docs.append((2, open(os.path.join(ts, "zarr.json"), "rb").read()))
    for i, (mode, doc) in enumerate(docs):
        with open(os.path.join(folder, f"seed{i}"), "wb") as f:
            f.write(bytes([mode]) + doc)
    folder = os.path.join(out, "shard_index")
    os.makedirs(folder, exist_ok=True)
    chunks = [struct.pack("<12h", *range(k * 12, k * 12 + 12)) for k in range(4)]
    data = b"".join(chunks)
    index = b"".join(struct.pack("<QQ", 24 * k, 24) for k in range(4))
    with open(os.path.join(folder, "end"), "wb") as f:
        f.write(bytes([0]) + data + index)
    shifted = b"".join(struct.pack("<QQ", 64 + 24 * k, 24) for k in range(4))
    with open(os.path.join(folder, "start"), "wb") as f:
        f.write(bytes([1]) + shifted + data)
    empty = struct.pack("<QQ", 2**64 - 1, 2**64 - 1) * 4
    with open(os.path.join(folder, "empty"), "wb") as f:
        f.write(bytes([0]) + empty)


def climate_lz4_seeds(folder):
    """Raw LZ4 blocks (numcodecs' LZ4 without its 4-byte size) of smooth float32 fields of 40 000
    bytes, quantised finely (few, short matches: the era5-like kind) and coarsely (more, longer
    ones), with the 2-byte prefix that gives exactly their decoded size: thousands of sequences
    over many segments that every exact-size decoder accepts, so that the fuzzer also mutates
    the segmented path's walks, runs and match passes on multi-segment blocks (the lz4 goldens
    are ~1 KB, one sequence). Skipped where numcodecs or numpy is missing."""
    try:
        import numpy as np
        from numcodecs import LZ4
    except ImportError:
        return
    y, x = np.meshgrid(np.linspace(0, 3, 80), np.linspace(0, 6, 125), indexing="ij")
    field = 280 + 15 * np.sin(y) * np.cos(x) + np.random.default_rng(11).normal(0, 0.3, y.shape)
    for name, step in (("climate_fine", 64), ("climate_coarse", 2)):
        raw = (np.round(field * step) / step).astype("<f4").tobytes()
        enc = bytes(LZ4(acceleration=1).encode(raw))[4:]
        with open(os.path.join(folder, name), "wb") as f:
            f.write(struct.pack("<H", len(raw) // 16) + enc)


def gpu_logic_seeds(out):
    """Seeds for fuzz_gpu_logic.cpp (2-byte output-size prefix, no configuration byte): the
    lz4 goldens as raw blocks (after numcodecs' 4-byte size) and the blosc goldens."""
    for harness, codec, skip in [("gpu_lz4_block", "lz4", 4), ("gpu_blosc_units", "blosc", 0)]:
        folder = os.path.join(out, harness)
        os.makedirs(folder, exist_ok=True)
        index = os.path.join(DATA, codec, "cases.json")
        if not os.path.exists(index):
            continue
        for case in json.load(open(index)):
            enc = open(os.path.join(DATA, codec, case["encoded"]), "rb").read()
            dec = os.path.getsize(os.path.join(DATA, codec, case["decoded"]))
            units = min((dec + 15) // 16, 0xFFFF)
            with open(os.path.join(folder, case["name"]), "wb") as f:
                f.write(struct.pack("<H", units) + enc[skip:])
    climate_lz4_seeds(os.path.join(out, "gpu_lz4_block"))


if __name__ == "__main__":
    gpu_logic_seeds(sys.argv[1] if len(sys.argv) > 1 else "corpus")
    structural_seeds(sys.argv[1] if len(sys.argv) > 1 else "corpus")
    shared_decoder_seeds(sys.argv[1] if len(sys.argv) > 1 else "corpus")
    main(sys.argv[1] if len(sys.argv) > 1 else "corpus")
