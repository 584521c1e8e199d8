"""cubestream: fast reads of Zarr v2/v3 datacubes.

    import cubestream
    ds = cubestream.open_dataset("era5.zarr")
    t2m = cubestream.open_array("era5.zarr", "2m_temperature")
    block = t2m[0:24, 100:300, :]          # NumPy array, decoded in parallel
"""
import os as _os

from .errors import CubestreamError, InvalidArgumentError
from ._cubestream import (  # noqa: F401  (re-exported)
    Array,
    CFDateTime,
    Dataset,
    Group,
    MemoryStore,
    Store,
    __version__,
    open_store,
)

from .loader import Loader, torch_dataset  # noqa: E402

__all__ = [
    "Array", "CFDateTime", "CubestreamError", "Dataset", "Group", "InvalidArgumentError", "Loader",
    "MemoryStore", "Store", "torch_dataset",
    "open", "open_array", "open_dataset", "open_group", "open_store", "__version__",
]


def _as_store(store):
    if isinstance(store, Store):
        return store
    return open_store(_os.fspath(store))


def open_array(store, path=""):
    """Open the array at ``path`` of ``store``: a path, a file://, http(s):// or s3:// URL, or a Store.

    Object store URLs read their settings from the environment (CUBESTREAM_HTTP_*, and for S3
    the usual AWS_* variables and ~/.aws files); plain HTTP cannot list, so groups there open
    through consolidated metadata."""
    return Array.open(_as_store(store), path)


def open_group(store, path=""):
    """Open the group at ``path`` of ``store``."""
    return Group.open(_as_store(store), path)


def open_dataset(store, path=""):
    """Open the group at ``path`` as a dataset of named variables (xarray-style)."""
    return Dataset.open(_as_store(store), path)


def open(store, path=""):  # noqa: A001  (mirrors zarr.open)
    """Open whatever is at ``path``: a Dataset (variables, dims, coords, attrs) if it is a
    group, else an Array."""
    s = _as_store(store)
    try:
        return Dataset.open(s, path)
    except CubestreamError as e:
        if e.code != "not_found":
            raise
    return Array.open(s, path)


def _normalise_index(array, key):
    """Turn a NumPy-style basic index into (start, shape, squeeze axes)."""
    shape = array.shape
    if not isinstance(key, tuple):
        key = (key,)
    if any(k is Ellipsis for k in key):
        i = next(i for i, k in enumerate(key) if k is Ellipsis)
        fill = len(shape) - (len(key) - 1)
        key = key[:i] + (slice(None),) * fill + key[i + 1:]
    if len(key) > len(shape):
        raise IndexError(f"too many indices for an array of rank {len(shape)}")
    key = key + (slice(None),) * (len(shape) - len(key))
    start, extent, squeeze = [], [], []
    for axis, (k, n) in enumerate(zip(key, shape)):
        if isinstance(k, slice):
            b, e, step = k.indices(n)
            if step != 1:
                raise IndexError("cubestream arrays support slices with step 1 only")
            start.append(b)
            extent.append(max(0, e - b))
        else:
            i = int(k)
            if i < 0:
                i += n
            if not 0 <= i < n:
                raise IndexError(f"index {k} is out of bounds for axis {axis} with size {n}")
            start.append(i)
            extent.append(1)
            squeeze.append(axis)
    return start, extent, tuple(squeeze)


def _array_getitem(self, key):
    start, extent, squeeze = _normalise_index(self, key)
    out = self.read(start, extent)
    return out.squeeze(axis=squeeze) if squeeze else out


def _array_repr(self):
    return (f"<cubestream.Array {self.path or '/'} shape={tuple(self.shape)} dtype={self.dtype} "
            f"chunks={tuple(self.chunks)}>")


Array.__getitem__ = _array_getitem
Array.__repr__ = _array_repr
Array.ndim = property(lambda self: len(self.shape))
