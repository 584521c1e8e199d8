"""The streaming loader: shuffled, normalised training batches out of Zarr datacubes.

    import cubestream, torch
    ds = cubestream.open("era5.zarr")
    loader = cubestream.Loader(
        ds, variables=["2m_temperature", "temperature"], select={"level": [500, 850]},
        window={"inputs": [0], "targets": [1]}, batch_size=16, shuffle="chunk",
        normalisation="stored", device="cuda", dtype="bfloat16")
    for epoch in range(10):
        loader.set_epoch(epoch)
        for batch in loader:            # dicts of named tensors, already on the GPU
            loss = model(batch["inputs"]).sub(batch["targets"]).pow(2).mean()

Every batch is a dict:
    inputs     [batch, input steps, channels, *sample dims]   (tensor)
    targets    [batch, target steps, channels, *sample dims]  (tensor; only with targets)
    time       numpy datetime64[ns] per sample (the anchor's time; NaT where unknown)
    anchor     numpy int64 per sample (time index of the anchor, -1 without a window)
    start      numpy int64 [batch, len(dims)]: region start of each sample per dim
    sample_id  numpy int64 per sample; repeat: numpy bool (padding repeats, see docs)
    epoch, batch
Channels are ordered as ``loader.channel_names`` tells. Tensors are handed over through
DLPack without a copy: ``output="torch"`` (default when torch is importable), ``"cupy"``,
``"jax"``, ``"numpy"`` (CPU only) or ``"dlpack"`` (the raw objects, which implement
``__dlpack__``). CUDA tensors are stream-ordered: the consumer's current stream waits on the
loader's copy, nothing blocks the host.

With ``device="cuda"`` chunks are decoded on the GPU where the codec allows (blosc, lz4, zstd;
``decode="auto"``, the default) and the batch is assembled there, so decoded data never crosses
PCIe; ``decode="cpu"`` decodes and assembles on the host and copies finished batches;
``decode="gpu"`` refuses variables the GPU path cannot take. Both give the same bits.
With ``decode="auto"`` the fetch threads also decode a share of the GPU's chunks themselves
when they have time to spare (``host_decode_share``: ``None`` adapts it batch by batch so that
host cores that would idle take decode work off a GPU that is also training, and gives the
GPU everything while the consumer itself waits for batches; a number in [0, 1] fixes it;
those chunks cross PCIe decoded). While the adaptive share stands at 1 (the host keeps up
with all of the decoding) batches are built whole on the host, as with ``decode="cpu"``, and
reach the GPU in one copy; the adaptive share starts by trying a few such batches and keeps
them while the host builds them within the consumer's pace, and tries them again every 100
batches it rests below them. ``stats()`` reports the share in use and ``batches_built_on_host``.

``gpu_pacing="step"`` (GPU decode path) holds a batch fetched ahead until the consumer takes
its next batch before its copies and decoders are enqueued, so the loader's GPU work starts
with the training step; under DDP, where the ranks meet in collectives every step, GPU work
at a different point of each rank's step delays all of them. The default, ``"off"``, enqueues
as soon as the host has fetched. Batches are the same either way.

The loader's CUDA streams have the device's lowest priority. A training loop that runs on a
stream of higher priority (``torch.cuda.Stream(priority=-1)``) gets free SMs before the
loader's pending thread blocks (blocks already running are not preempted).

While a batch is fetched, the loader tells the store which chunks the next
``readahead_batches`` batches (default 1; 0 turns it off) will read and no cache holds; a
local store has the kernel read them into the page cache meanwhile, so a cold disk's queue
stays full between batches. ``stats()["units_hinted"]`` counts them. The batches are the same
either way.
"""
import json as _json
import os as _os

from . import _cubestream
from .errors import InvalidArgumentError

STATS_FILE = "cubestream_stats.json"


def _parts(source):
    """A Dataset, a path, or a list of them (one store per year, joined along time)."""
    from . import open_dataset

    items = source if isinstance(source, (list, tuple)) else [source]
    out = []
    for s in items:
        out.append(s if isinstance(s, _cubestream.Dataset) else open_dataset(s))
    if not out:
        raise InvalidArgumentError("Loader needs at least one dataset", code="invalid_argument")
    return out


def _stored_normalisation(source):
    """mean/std per variable and channel from the cubestream_stats.json beside the data."""
    items = source if isinstance(source, (list, tuple)) else [source]
    first = items[0]
    if isinstance(first, _cubestream.Dataset):
        raise InvalidArgumentError(
            'normalisation="stored" needs the dataset as a path, to find ' + STATS_FILE, code="invalid_argument")
    path = _os.path.join(_os.fspath(first), STATS_FILE)
    try:
        with open(path) as f:
            doc = _json.load(f)
    except FileNotFoundError:
        raise InvalidArgumentError(
            f"no {STATS_FILE} in {first}: compute it once with `cubestream stats {first}`",
            code="invalid_argument") from None
    # Variables first, channels after: the loader looks a channel up by its name, then by
    # its variable. A constant field (std 0) keeps std 1.
    table = {}
    for section in ("variables", "channels"):
        for k, v in doc.get(section, {}).items():
            table[k] = (v["mean"], v["std"] if v["std"] > 0 else 1.0)
    return table


def _device(device):
    if device in (None, "cpu"):
        return "cpu", 0
    if isinstance(device, int):
        return "cuda", device
    text = str(device)
    if text == "cuda":
        return "cuda", 0
    if text.startswith("cuda:") and text[5:].isdigit():
        return "cuda", int(text[5:])
    raise InvalidArgumentError(f'device must be "cpu", "cuda" or "cuda:N", not {device!r}', code="invalid_argument")


class Loader:
    """An iterable of batches (see the module docstring); one pass is one epoch."""

    def __init__(self, dataset, variables, *, patch=None, overlap=None, batch_dims=None, window=None,
                 select=None, static=None, static_variables=None, normalisation=None, nan_fill=None,
                 dtype="float32", device="cpu", batch_size=1, shuffle="none", buffer_size=16, seed=0,
                 drop_last=False, rank=0, world_size=1, dims=None, chunks=None, threads=0, prefetch=2,
                 memory_limit=0, trace=False, output=None, time_dim="time", decode="auto", gpu_cache_bytes=0,
                 host_decode_share=None, readahead_batches=1, gpu_pacing="off"):
        kind, index = _device(device)
        if isinstance(variables, str):
            variables = [variables]
        norm = normalisation
        if isinstance(norm, str):
            if norm != "stored":
                raise InvalidArgumentError('normalisation must be a dict or "stored"', code="invalid_argument")
            norm = _stored_normalisation(dataset)
        cfg = {
            "variables": list(variables), "static_variables": list(static_variables or []),
            "select": {k: [float(x) for x in v] for k, v in (select or {}).items()},
            "normalisation": {k: [float(m), float(s)] for k, (m, s) in (norm or {}).items()},
            "normalisation_is_table": normalisation == "stored",
            "nan_fill": None if nan_fill is None else float(nan_fill),
            "patch": dict(patch or {}), "overlap": dict(overlap or {}), "batch_dims": list(batch_dims or []),
            "shuffle": shuffle, "seed": int(seed), "buffer_size": int(buffer_size), "batch_size": int(batch_size),
            "drop_last": bool(drop_last), "rank": int(rank), "world_size": int(world_size), "dtype": dtype,
            "device": kind, "device_index": index, "threads": int(threads), "prefetch": int(prefetch),
            "memory_limit": int(memory_limit), "trace": bool(trace), "decode": decode,
            "gpu_cache_bytes": int(gpu_cache_bytes),
            "host_decode_share": -1.0 if host_decode_share is None else float(host_decode_share),
            "readahead_batches": int(readahead_batches), "gpu_pacing": gpu_pacing,
        }
        if chunks:
            cfg["chunks"] = dict(chunks)
        if dims:
            cfg["dims"] = [[k, int(v)] for k, v in dims]
        if window is not None:
            w = dict(window)
            cfg["window"] = {"time_dim": w.get("time_dim", time_dim), "inputs": [int(x) for x in w.get("inputs", [0])],
                             "targets": [int(x) for x in w.get("targets", [])]}
        statics = None
        if static is not None:
            statics = static if isinstance(static, _cubestream.Dataset) else _parts(static)[0]
        self._core = _cubestream.Loader(_parts(dataset), statics, time_dim, _json.dumps(cfg))
        self.device = "cpu" if kind == "cpu" else f"cuda:{index}"
        self._convert = _converter(output, kind)

    # ---- iteration ----
    def __iter__(self):
        while True:
            b = self._core.next()
            if b is None:
                return
            for k in ("inputs", "targets"):
                if k in b:
                    b[k] = self._convert(b[k])
            yield b

    def __len__(self):
        """Batches per epoch on this rank."""
        return len(self._core)

    def set_epoch(self, epoch):
        """Start epoch ``epoch`` (a new permutation); drops what was prefetched."""
        self._core.set_epoch(int(epoch))

    @property
    def epoch(self):
        return self._core.epoch

    # ---- what the batches hold ----
    @property
    def channel_names(self):
        return self._core.channel_names

    @property
    def dims(self):
        """The sample dims with their sizes, as the sampler uses them."""
        return self._core.dims

    @property
    def sample_dims(self):
        """Names of the trailing tensor axes (after batch, step and channel)."""
        return self._core.sample_dims

    @property
    def input_shape(self):
        return tuple(self._core.input_shape)

    @property
    def target_shape(self):
        return tuple(self._core.target_shape)

    # ---- resuming ----
    def state_dict(self):
        """Where iteration stands (batches handed out); JSON-serialisable."""
        return _json.loads(self._core.state())

    def load_state_dict(self, state):
        """Continue exactly where ``state`` was taken (on any rank of the same config)."""
        self._core.load_state(_json.dumps(state))

    # ---- observability ----
    def stats(self):
        """Per-stage busy seconds, bytes, cache hits, consumer wait, memory peak (a dict)."""
        return self._core.stats()

    def reset_stats(self):
        self._core.reset_stats()

    def write_trace(self, path):
        """Write a Chrome/Perfetto trace of every stage (needs trace=True)."""
        with open(path, "w") as f:
            f.write(self._core.trace_json())


def _converter(output, kind):
    if output is None:
        try:
            import torch  # noqa: F401
            output = "torch"
        except ImportError:
            output = "numpy" if kind == "cpu" else "cupy"
    if output == "dlpack":
        return lambda t: t
    if output == "torch":
        import torch
        return torch.from_dlpack
    if output == "numpy":
        if kind != "cpu":
            raise InvalidArgumentError('output="numpy" needs device="cpu"', code="invalid_argument")
        import numpy
        return numpy.from_dlpack
    if output == "cupy":
        import cupy
        return cupy.from_dlpack
    if output == "jax":
        import jax.dlpack
        return jax.dlpack.from_dlpack
    raise InvalidArgumentError(f'output must be torch, numpy, cupy, jax or dlpack, not {output!r}',
                               code="invalid_argument")


def torch_dataset(loader):
    """A torch IterableDataset over the loader, for DataLoader(batch_size=None) and Lightning.

    Its batches hold torch tensors only (what DataLoader's default conversion accepts): the
    ``time`` entry becomes int64 nanoseconds since 1970-01-01 (NaT: the smallest int64), the
    other per-sample entries int64 / bool tensors. Use it with ``num_workers=0``: the loader
    has its own threads, and its batches are already tensors, on the GPU with device="cuda".
    """
    import numpy
    import torch
    import torch.utils.data

    def as_torch(batch):
        out = {}
        for k, v in batch.items():
            if isinstance(v, numpy.ndarray):
                if v.dtype.kind == "M":
                    v = v.view("int64")
                v = torch.from_numpy(v)
            out[k] = v
        return out

    class _CubestreamIterable(torch.utils.data.IterableDataset):
        def __init__(self, inner):
            super().__init__()
            self.loader = inner

        def __iter__(self):
            return (as_torch(b) for b in self.loader)

        def __len__(self):
            return len(self.loader)

        def set_epoch(self, epoch):
            self.loader.set_epoch(epoch)

    return _CubestreamIterable(loader)
