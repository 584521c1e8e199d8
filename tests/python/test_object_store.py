"""cubestream.open() and friends with http:// URLs, against a real nginx on loopback.

The consolidated CMIP5 demo store (v2) and TensorStore's sharded v3 arrays are served by nginx
and read through URLs; every array must equal what the same functions read from the local
directory, byte for byte.
"""
import os
import shutil
import socket
import subprocess
import time

import numpy as np
import pytest

import cubestream

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEMO = os.path.join(ROOT, "data", "demo", "cmip5_2005.zarr")
SHARDED = os.path.join(ROOT, "tests", "data", "tensorstore", "sharded.zarr")


def _nginx_binary():
    for d in os.environ.get("PATH", "").split(os.pathsep) + ["/usr/sbin", "/sbin"]:
        p = os.path.join(d, "nginx")
        if d and os.access(p, os.X_OK):
            return p
    return None


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def http_root(tmp_path_factory):
    nginx = _nginx_binary()
    if nginx is None:
        pytest.skip("nginx is not installed (scripts/setup.sh installs it)")
    tmp = tmp_path_factory.mktemp("nginx")
    www = tmp / "www"
    shutil.copytree(DEMO, www / "cmip5_2005.zarr")
    shutil.copytree(SHARDED, www / "sharded.zarr")
    for attempt in range(5):
        port = _free_port()
        conf = tmp / "nginx.conf"
        conf.write_text(
            ("user root;\n" if os.geteuid() == 0 else "")
            + f"worker_processes 1;\nerror_log {tmp}/error.log warn;\npid {tmp}/nginx.pid;\n"
            + "events { worker_connections 256; }\n"
            + f"http {{ access_log off; default_type application/octet-stream;\n"
            + f"  client_body_temp_path {tmp}/body; proxy_temp_path {tmp}/proxy; fastcgi_temp_path {tmp}/fcgi;\n"
            + f"  uwsgi_temp_path {tmp}/uwsgi; scgi_temp_path {tmp}/scgi;\n"
            + f"  server {{ listen 127.0.0.1:{port}; root {www}; location / {{ try_files $uri =404; }} }} }}\n")
        proc = subprocess.Popen([nginx, "-p", str(tmp), "-e", f"{tmp}/error.log", "-c", str(conf), "-g", "daemon off;"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.01)
        if proc.poll() is None:
            yield f"http://127.0.0.1:{port}"
            proc.terminate()
            proc.wait(timeout=10)
            return
    pytest.fail("nginx did not start: " + (tmp / "error.log").read_text())


def _same(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes()


def test_open_consolidated_group_over_http(http_root):
    assert isinstance(cubestream.open(http_root + "/cmip5_2005.zarr"), cubestream.Dataset)
    remote = cubestream.open_group(http_root + "/cmip5_2005.zarr")
    local = cubestream.open_group(DEMO)
    assert isinstance(remote, cubestream.Group)
    assert remote.consolidated
    names = remote.all_array_paths()
    assert names == local.all_array_paths() and len(names) >= 4
    for name in names:
        _same(remote.open_array(name)[...], local.open_array(name)[...])
    ds = cubestream.open_dataset(http_root + "/cmip5_2005.zarr")
    assert ds.variable_names() == cubestream.open_dataset(DEMO).variable_names()
    assert "http://127.0.0.1" in repr(cubestream.open_store(http_root + "/cmip5_2005.zarr"))


def test_sharded_arrays_over_http(http_root):
    for name in ("f4_end_zstd", "f4_nested_sharding", "i2_end_blosc_lz4_shuffle"):
        remote = cubestream.open_array(http_root + "/sharded.zarr", name)
        local = cubestream.open_array(SHARDED, name)
        _same(remote[...], local[...])
        _same(remote[1:3, 5:30], local[1:3, 5:30])


def test_http_errors_are_cubestream_errors(http_root, monkeypatch):
    with pytest.raises(cubestream.CubestreamError) as e:
        cubestream.open_group(http_root + "/sharded.zarr").array_names()
    assert e.value.code == "unsupported"
    with pytest.raises(cubestream.CubestreamError) as e:
        cubestream.open(http_root + "/absent.zarr")
    assert e.value.code == "not_found"
    # Nothing listens on a fresh port: the retries (set through the environment) run out.
    monkeypatch.setenv("CUBESTREAM_HTTP_RETRIES", "1")
    monkeypatch.setenv("CUBESTREAM_HTTP_BACKOFF_MS", "1")
    url = f"http://127.0.0.1:{_free_port()}/x.zarr"
    with pytest.raises(cubestream.CubestreamError) as e:
        cubestream.open(url)
    assert e.value.code == "io"
    assert "2 attempts" in str(e.value) and e.value.store == url
    monkeypatch.setenv("CUBESTREAM_HTTP_RETRIES", "many")
    with pytest.raises(cubestream.CubestreamError) as e:
        cubestream.open(url)
    assert e.value.code == "invalid_argument" and "CUBESTREAM_HTTP_RETRIES" in str(e.value)
