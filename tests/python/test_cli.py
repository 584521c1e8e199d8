"""The `cubestream` command: inspect (text and JSON), bench read, info, and error exits."""
import json
import os
import subprocess

import numpy as np
import pytest

numcodecs = pytest.importorskip("numcodecs")
zarr = pytest.importorskip("zarr")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLI = os.path.join(ROOT, "build", "cubestream")
DEMO = os.path.join(ROOT, "data", "demo", "cmip5_2005.zarr")


def run(*args, check=True):
    return subprocess.run([CLI, *args], capture_output=True, text=True, check=check)


def test_inspect_json_reports_sizes_and_codecs():
    out = json.loads(run("inspect", DEMO, "--json").stdout)
    assert out["zarr_format"] == 2 and out["consolidated"] is True
    arrays = {a["path"]: a for a in out["arrays"]}
    tas = arrays["tas"]
    assert tas["shape"] == [12, 96, 192] and tas["chunk_shape"] == [1, 96, 192]
    assert tas["dims"] == ["time", "lat", "lon"]
    assert tas["dtype"] == "float32"
    stored = sum(os.path.getsize(os.path.join(DEMO, "tas", f)) for f in os.listdir(os.path.join(DEMO, "tas")) if not f.startswith("."))
    assert tas["stored_bytes"] == stored
    assert tas["decoded_bytes"] == 12 * 96 * 192 * 4
    assert tas["chunks_stored"] == 12
    assert [c["name"] for c in tas["codecs"]] == ["bytes", "blosc"]


def test_inspect_text_gives_chunk_size_advice(tmp_path):
    # 3 MB of incompressible-ish data in 100 tiny chunks: the advice must say so.
    path = str(tmp_path / "small_chunks.zarr")
    z = zarr.open(path, mode="w", shape=(100, 100, 75), chunks=(1, 100, 75), dtype="<f4", compressor=numcodecs.Zstd(1))
    z[...] = np.random.default_rng(0).random((100, 100, 75), dtype=np.float32)
    text = run("inspect", path).stdout
    assert "advice: chunks average" in text and "under 1 MB" in text
    assert "zstd" in text


def test_bench_read_json():
    out = json.loads(run("bench", "read", DEMO, "--array", "tas", "--threads", "2", "--repeat", "2", "--json").stdout)
    assert out["bytes_decoded"] == 12 * 96 * 192 * 4
    assert len(out["seconds"]) == 2 and out["gbps_median"] > 0
    assert out["codec_single_thread"]["name"].startswith("liblz4")
    assert out["decode"] == "auto" and out["chunks_decoded_on_gpu"] == 0  # 0.9 MB: below the GPU's share
    cpu = json.loads(run("bench", "read", DEMO, "--array", "tas", "--repeat", "1", "--decode", "cpu", "--no-baseline",
                         "--json").stdout)
    assert cpu["decode"] == "cpu" and cpu["bytes_decoded"] == out["bytes_decoded"]
    bad = run("bench", "read", DEMO, "--array", "tas", "--decode", "tpu", check=False)
    assert bad.returncode != 0 and "--decode" in bad.stderr


def test_info_and_errors():
    assert "cubestream" in run("info").stdout
    bad = run("inspect", "/no/such/store", check=False)
    assert bad.returncode == 1 and "not_found" in bad.stderr
    usage = run("frobnicate", check=False)
    assert usage.returncode == 2
