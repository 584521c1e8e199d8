"""Decoding single buffers with a codec configuration, numcodecs-style, on the CPU or the GPU.

    from cubestream import codecs
    raw = codecs.decode(chunk_bytes, {"id": "blosc"})                      # NumPy uint8
    dev = codecs.decode(cupy_chunk, {"id": "lz4"}, device="cuda")          # CuPy (or torch)
    outs = codecs.decode_batch(list_of_chunks, {"id": "zstd"}, device="cuda", out_sizes=sizes)

``config`` is a numcodecs configuration dict with its ``"id"``. On ``"cpu"`` any registered
bytes->bytes codec decodes (zstd, lz4, blosc, zlib, gzip, shuffle, delta, fixedscaleoffset,
bitround, quantize, crc32, crc32c, adler32, also under ``"numcodecs.<id>"``). On ``"cuda"`` the
batched GPU decoders take lz4, blosc and zstd; a buffer the GPU path does not support (blosc with
zstd/zlib/snappy streams, and zstd until the GPU Zstandard decoder is merged) is decoded by the
CPU codec instead, so the result is the same either way.

Inputs: bytes, bytearray, memoryview, NumPy arrays (any dtype, C-contiguous), or CUDA arrays
(CuPy arrays, torch CUDA tensors, anything with ``__cuda_array_interface__`` or DLPack).
"""
import json as _json

import numpy as _np

from . import _cubestream
from .errors import CubestreamError

__all__ = ["decode", "decode_batch", "decoded_size", "gpu_codec_ids"]


def _codec_id(config):
    if not isinstance(config, dict) or not isinstance(config.get("id"), str):
        raise ValueError(f"config must be a dict with a string 'id', got {config!r}")
    cid = config["id"]
    return cid[len("numcodecs."):] if cid.startswith("numcodecs.") else cid


def gpu_codec_ids():
    """The codec ids ``device="cuda"`` decodes with the batched GPU decoder."""
    return list(_cubestream._codec_gpu_codecs())


# ---- host and device views of the input ------------------------------------------------------

def _is_cuda(obj):
    if hasattr(obj, "__cuda_array_interface__"):
        return True
    dev = getattr(obj, "__dlpack_device__", None)
    if dev is not None:
        try:
            return dev()[0] in (2, 3, 13)  # kDLCUDA, kDLCUDAHost, kDLCUDAManaged
        except Exception:  # noqa: BLE001 (an object whose DLPack device cannot be asked)
            return False
    return False


def _host_bytes(data):
    """A C-contiguous uint8 NumPy view (or copy) of host data, or a host copy of device data."""
    if _is_cuda(data):
        cp = _cupy()
        if cp is not None:
            return _np.ascontiguousarray(cp.asnumpy(_as_cupy(data))).view(_np.uint8).reshape(-1)
        return _np.ascontiguousarray(data.detach().cpu().numpy()).view(_np.uint8).reshape(-1)
    if isinstance(data, (bytes, bytearray, memoryview)):
        return _np.frombuffer(data, dtype=_np.uint8)
    arr = _np.ascontiguousarray(data)
    return arr.view(_np.uint8).reshape(-1)


def _cupy():
    try:
        import cupy  # noqa: PLC0415 (optional dependency)
        return cupy
    except Exception:  # noqa: BLE001 (cupy missing or without a usable CUDA)
        return None


def _torch():
    try:
        import torch  # noqa: PLC0415 (optional dependency)
        return torch
    except Exception:  # noqa: BLE001
        return None


def _as_cupy(obj):
    cp = _cupy()
    if hasattr(obj, "__cuda_array_interface__"):
        return cp.asarray(obj)
    return cp.from_dlpack(obj)


def _device_view(data):
    """(pointer, nbytes, keep-alive) of a contiguous device buffer holding `data`'s bytes;
    host data is copied to the device first (with CuPy, else torch)."""
    if _is_cuda(data):
        if hasattr(data, "__cuda_array_interface__"):
            cai = data.__cuda_array_interface__
            shape, strides = tuple(cai["shape"]), cai.get("strides")
            itemsize = _np.dtype(cai["typestr"]).itemsize
            n = int(_np.prod(shape, dtype=_np.int64)) if shape else 1
            if strides is not None:
                expect = itemsize
                for dim, st in zip(reversed(shape), reversed(strides)):
                    if dim > 1 and st != expect:
                        raise ValueError("device input must be C-contiguous")
                    expect *= dim
            return int(cai["data"][0]), n * itemsize, data
        t = _torch()
        if t is not None and isinstance(data, t.Tensor):
            data = data.contiguous()
            return data.data_ptr(), data.numel() * data.element_size(), data
        arr = _as_cupy(data)
        return arr.data.ptr, arr.nbytes, arr
    host = _host_bytes(data)
    cp = _cupy()
    if cp is not None:
        dev = cp.asarray(host)
        return dev.data.ptr, dev.nbytes, dev
    t = _torch()
    if t is None or not t.cuda.is_available():
        raise CubestreamError("device='cuda' needs CuPy or a CUDA-enabled torch", "unsupported")
    dev = t.from_numpy(host.copy()).cuda()
    return dev.data_ptr(), dev.numel(), dev


def _empty_device(nbytes):
    """A device uint8 buffer: (array, pointer)."""
    cp = _cupy()
    if cp is not None:
        a = cp.empty(max(nbytes, 0), dtype=cp.uint8)
        return a, a.data.ptr
    t = _torch()
    if t is None or not t.cuda.is_available():
        raise CubestreamError("device='cuda' needs CuPy or a CUDA-enabled torch", "unsupported")
    a = t.empty(max(nbytes, 0), dtype=t.uint8, device="cuda")
    return a, a.data_ptr()


def _current_stream():
    cp = _cupy()
    if cp is not None:
        return cp.cuda.get_current_stream().ptr
    t = _torch()
    if t is not None and t.cuda.is_available():
        return t.cuda.current_stream().cuda_stream
    return 0


# ---- decoded sizes from headers ----------------------------------------------------------------

def decoded_size(head, config):
    """The decoded size recorded in the first bytes of an encoded buffer (`head`: bytes-like, at
    least 18 bytes or the whole buffer), or None where the format does not record it: numcodecs
    lz4 (4-byte size), blosc (header nbytes), zstd (frame content size of a single frame)."""
    h = bytes(head[:18])
    cid = _codec_id(config)
    if cid == "lz4" and len(h) >= 4:
        return int.from_bytes(h[:4], "little")
    if cid == "blosc" and len(h) >= 16:
        return int.from_bytes(h[4:8], "little")
    if cid == "zstd" and len(h) >= 5 and h[:4] == b"\x28\xb5\x2f\xfd":
        # RFC 8878 3.1.1.1: frame header descriptor, then window/dictionary/content size fields
        fhd = h[4]
        fcs_flag, single, dict_flag = fhd >> 6, (fhd >> 5) & 1, fhd & 3
        if fcs_flag == 0 and not single:
            return None
        pos = 5 + (0 if single else 1) + (0, 1, 2, 4)[dict_flag]
        size = (1, 2, 4, 8)[fcs_flag]
        if len(h) < pos + size:
            return None
        v = int.from_bytes(h[pos:pos + size], "little")
        return v + 256 if size == 2 else v
    return None


# ---- decoding ----------------------------------------------------------------------------------

def decode(data, config, device="cpu", out_size=None):
    """Decode one encoded buffer with the codec ``config`` on ``device`` ("cpu" or "cuda").

    Returns a NumPy uint8 array ("cpu") or a device uint8 array ("cuda": CuPy if importable, else
    a torch CUDA tensor). ``out_size`` is the decoded size; it may be omitted on the CPU, and on
    "cuda" where the format records it (lz4, blosc, zstd with a content size)."""
    _codec_id(config)
    if device == "cpu":
        return _cubestream._codec_decode_cpu(_json.dumps(config), _host_bytes(data), out_size)
    if device == "cuda":
        return decode_batch([data], config, device="cuda", out_sizes=None if out_size is None else [out_size])[0]
    raise ValueError(f"device must be 'cpu' or 'cuda', got {device!r}")


def decode_batch(buffers, config, device="cuda", out_sizes=None):
    """Decode several buffers with one codec configuration; on "cuda" they form one GPU batch
    (the way to keep the GPU busy: thousands of blocks in flight). Returns a list of arrays."""
    buffers = list(buffers)
    if device == "cpu":
        sizes = out_sizes or [None] * len(buffers)
        return [decode(b, config, "cpu", s) for b, s in zip(buffers, sizes)]
    if device != "cuda":
        raise ValueError(f"device must be 'cpu' or 'cuda', got {device!r}")
    cid = _codec_id(config)
    if cid not in gpu_codec_ids():
        raise CubestreamError(f"codec '{cid}' has no GPU decoder; use device='cpu'", "unsupported")
    if not _cubestream._compiled_with_cuda():
        raise CubestreamError("cubestream was built without CUDA: use device='cpu'", "unsupported")
    views = [_device_view(b) for b in buffers]
    sizes = list(out_sizes) if out_sizes is not None else [None] * len(buffers)
    if len(sizes) != len(buffers):
        raise ValueError("out_sizes must have one entry per buffer")
    for i, s in enumerate(sizes):
        if s is None:
            s = decoded_size(_head(buffers[i], views[i][2]), config)
            if s is None:
                raise ValueError(f"buffer {i}: its decoded size is not recorded in it; pass out_size(s)")
            sizes[i] = s
    outs = [_empty_device(s) for s in sizes]
    _cubestream._codec_decode_cuda(_json.dumps(config), [v[0] for v in views], [v[1] for v in views],
                                   [o[1] for o in outs], sizes, _current_stream())
    return [o[0] for o in outs]


def _head(data, device_copy):
    """The first 18 bytes of a buffer, as bytes (from the device copy for device data)."""
    if not _is_cuda(data):
        return _host_bytes(data)[:18].tobytes()
    cp = _cupy()
    if cp is not None:
        return cp.asnumpy(_as_cupy(device_copy).reshape(-1).view(cp.uint8)[:18]).tobytes()
    t = _torch()
    return device_copy.reshape(-1).view(t.uint8)[:18].cpu().numpy().tobytes()
