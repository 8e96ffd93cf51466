"""Differential tests against the peers, by generated cases (hypothesis).

Each example draws a random valid Zarr v3 array: data type, shape (0-d, zero-length and
partial edge chunks included), chunk grid, and a codec chain with ``transpose`` before
``sharding_indexed`` (outside the shard) and inside it, nested sharding, the index at
the start or the end, ``crc32c`` in chains and in index codecs, every compressor (gzip,
blosc with its shuffles and compressors, zstd with and without checksum), both byte
orders, and a fill value of the type (NaN, infinities and -0.0 for floats), with part of
the array left unwritten (fill).

* **Peer-written, zarrdask-read**: zarr-python and TensorStore each write the array;
  zarrdask reads it whole and through random basic, orthogonal and coordinate selections,
  through its decoded-chunk cache (twice) and through Dask, bit-exact against numpy; both
  peers read each other's copy back equal too.
* **zarrdask-written, peer-read**: zarrdask writes the array, and rewrites a random region
  of each peer-written copy (partial chunks and shards); both peers read every copy back
  bit-exact.

A peer is left out of an example only for a chain it cannot write (each named at
``_peer_limits``). Normal runs are deterministic (``derandomize``) and run
``ZARRDASK_DIFF_EXAMPLES`` examples in each of the two tests (default 400, so 800 in
``ci/test``). A long randomised run::

    ZARRDASK_DIFF_EXAMPLES=20000 .venv/bin/python -m pytest tests/interop/test_differential.py -p no:cacheprovider --timeout=0
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrdask
from _util import assert_bitwise_equal, assert_exact_equal

zarr = pytest.importorskip("zarr")
ts = pytest.importorskip("tensorstore")

EXAMPLES = int(os.environ.get("ZARRDASK_DIFF_EXAMPLES", "400"))
LONG_RUN = "ZARRDASK_DIFF_EXAMPLES" in os.environ
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=not LONG_RUN, database=None,
                    suppress_health_check=list(HealthCheck), print_blob=True)

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64", "complex64", "complex128"]


# -- generated arrays ------------------------------------------------------------------
@dataclass(frozen=True)
class Case:
    shape: tuple[int, ...]
    dtype: str
    grid: tuple[int, ...]
    codecs: list[Any]
    fill: Any  # JSON form
    data: np.ndarray  # the full array after the peers' write (fill outside ``region``)
    region: tuple[slice, ...]

    def metadata(self) -> dict[str, Any]:
        return {"zarr_format": 3, "node_type": "array", "shape": list(self.shape), "data_type": self.dtype,
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(self.grid)}},
                "chunk_key_encoding": {"name": "default"}, "fill_value": self.fill, "codecs": self.codecs,
                "attributes": {}}


def _bytes(endian: str) -> dict[str, Any]:
    return {"name": "bytes", "configuration": {"endian": endian}}


def _transpose(order: Any) -> dict[str, Any]:
    return {"name": "transpose", "configuration": {"order": list(order)}}


@st.composite
def _compressors(draw, itemsize: int, max_size: int = 2) -> list[Any]:
    chain = []
    for _ in range(draw(st.integers(0, max_size))):
        kind = draw(st.sampled_from(["gzip", "blosc", "zstd"]))
        if kind == "gzip":
            chain.append({"name": "gzip", "configuration": {"level": draw(st.integers(0, 9))}})
        elif kind == "zstd":
            chain.append({"name": "zstd", "configuration": {"level": draw(st.integers(-2, 6)),
                                                            "checksum": draw(st.booleans())}})
        else:
            chain.append({"name": "blosc", "configuration": {
                "cname": draw(st.sampled_from(["lz4", "lz4hc", "blosclz", "zstd", "zlib"])),
                "clevel": draw(st.integers(0, 9)), "shuffle": draw(st.sampled_from(["noshuffle", "shuffle", "bitshuffle"])),
                "typesize": itemsize, "blocksize": 0}})
    if draw(st.integers(0, 3)) == 0:
        chain.append({"name": "crc32c"})
    return chain


def _permuted(values: tuple[int, ...], perm: Any) -> list[int]:
    return [values[k] for k in perm] if perm is not None else list(values)


@st.composite
def _inner_chain(draw, chunk: tuple[int, ...], itemsize: int, depth: int) -> list[Any]:
    """The codecs a shard's inner chunk of shape ``chunk`` (as the sharding codec sees it) goes through."""
    codecs: list[Any] = []
    perm = None
    if len(chunk) >= 2 and draw(st.integers(0, 3)) == 0:
        perm = draw(st.permutations(range(len(chunk))))
        codecs.append(_transpose(perm))
    seen = tuple(_permuted(chunk, perm))
    if depth == 0 and draw(st.integers(0, 4)) == 0:  # nested sharding
        nested = tuple(draw(st.sampled_from([d for d in range(1, n + 1) if n % d == 0])) for n in seen)
        codecs.append(_sharding(draw, nested, draw(_inner_chain(nested, itemsize, depth + 1)), itemsize))
    else:
        codecs.append(_bytes(draw(st.sampled_from(["little", "big"]))))
        codecs.extend(draw(_compressors(itemsize)))
    return codecs


def _sharding(draw, inner: tuple[int, ...], codecs: list[Any], itemsize: int) -> dict[str, Any]:
    index = [_bytes(draw(st.sampled_from(["little", "big"])))]
    if draw(st.booleans()):
        index.append({"name": "crc32c"})
    return {"name": "sharding_indexed", "configuration": {
        "chunk_shape": list(inner), "codecs": codecs, "index_codecs": index,
        "index_location": draw(st.sampled_from(["start", "end"]))}}


@st.composite
def _fills(draw, dtype: np.dtype) -> tuple[Any, Any]:
    """(JSON fill value, numpy value)."""
    if dtype.kind == "b":
        v = draw(st.booleans())
        return v, v
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        v = draw(st.sampled_from([0, 1, int(info.min), int(info.max), 42 % (int(info.max) + 1)]))
        return v, v
    floats = [(0.0, 0.0), (-0.0, -0.0), (1.5, 1.5), ("NaN", np.nan), ("Infinity", np.inf), ("-Infinity", -np.inf)]
    if dtype.kind == "f":
        return draw(st.sampled_from(floats))
    (jr, vr), (ji, vi) = draw(st.sampled_from(floats)), draw(st.sampled_from(floats))
    return [jr, ji], complex(vr, vi)


@st.composite
def cases(draw) -> Case:
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    ndim = draw(st.integers(0, 3))
    shape = tuple(draw(st.integers(0, 9)) for _ in range(ndim))
    sharded = draw(st.integers(0, 2)) > 0
    codecs: list[Any] = []
    perm = None
    if ndim >= 2 and draw(st.integers(0, 2)) == 0:
        perm = draw(st.permutations(range(ndim)))
        codecs.append(_transpose(perm))
    if sharded:
        inner = tuple(draw(st.integers(1, 4)) for _ in range(ndim))
        grid = tuple(i * draw(st.integers(1, 3)) for i in inner)
        enc_inner = tuple(_permuted(inner, perm))
        codecs.append(_sharding(draw, enc_inner, draw(_inner_chain(enc_inner, dtype.itemsize, 0)), dtype.itemsize))
        # (TensorStore can't write codecs after the shard, zarr-python can't permute a
        # non-square shard nor write a sharded 0-d array: one peer must be able to write every case)
        if ndim and _permuted(grid, perm) == list(grid) and draw(st.integers(0, 5)) == 0:
            codecs.extend(draw(_compressors(dtype.itemsize, max_size=1)))
    else:
        grid = tuple(draw(st.integers(1, 6)) for _ in range(ndim))
        codecs.append(_bytes(draw(st.sampled_from(["little", "big"]))))
        codecs.extend(draw(_compressors(dtype.itemsize)))
    fill_json, fill = draw(_fills(dtype))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    data = np.full(shape, fill, dtype=dtype)
    region = tuple(slice(*sorted(draw(st.lists(st.integers(0, n), min_size=2, max_size=2)))) for n in shape)
    if draw(st.booleans()):
        region = tuple(slice(0, n) for n in shape)
    data[region] = _random(rng, dtype, data[region].shape)
    return Case(shape, dtype.name, grid, codecs, fill_json, data, region)


def _random(rng: np.random.Generator, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    values = rng.normal(scale=100.0, size=shape)
    if dtype.kind == "c":
        values = values + 1j * rng.normal(size=shape)
    out = values.astype(dtype)
    if out.size and dtype.kind == "f":
        out.reshape(-1)[rng.integers(0, out.size, size=max(1, out.size // 7))] = np.nan
    return out


# -- peers -------------------------------------------------------------------------------
def _has(codecs: list[Any], name: str) -> bool:
    for c in codecs:
        if c["name"] == name:
            return True
        if c["name"] == "sharding_indexed" and _has(c["configuration"]["codecs"], name):
            return True
    return False


def _peer_limits(case: Case) -> dict[str, str]:
    """Peers that cannot write this chain, with why."""
    limits = {}
    top = [c["name"] for c in case.codecs]
    if not case.shape and "sharding_indexed" in top:
        limits["zarr-python"] = "zarr-python 3.1.6 cannot write a sharded 0-d array (IndexError: too many indices)"
    if "sharding_indexed" in top and top.index("sharding_indexed") < len(top) - 1:
        limits["tensorstore"] = "TensorStore 0.1.86 refuses bytes->bytes codecs after sharding_indexed"
    if top[0] == "transpose" and "sharding_indexed" in top:
        order = case.codecs[0]["configuration"]["order"]
        if [case.grid[k] for k in order] != list(case.grid):
            limits["zarr-python"] = ("zarr-python 3.1.6 checks the shard's inner chunk shape against the "
                                     "unpermuted shard shape, so it refuses transposes of non-square shards")
    return limits


def _write_zarr_python(path: str, case: Case, values: np.ndarray, region: tuple[slice, ...]) -> None:
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "zarr.json"), "w") as f:
        json.dump(case.metadata(), f)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        z = zarr.open_array(path, mode="r+")
        z[region] = values[region]


def _write_tensorstore(path: str, case: Case, values: np.ndarray, region: tuple[slice, ...]) -> None:
    meta = {k: v for k, v in case.metadata().items() if k not in ("zarr_format", "node_type", "attributes")}
    t = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": path}, "metadata": meta,
                 "create": True}).result()
    t[region].write(values[region]).result()


def _read_zarr_python(path: str) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return zarr.open_array(path, mode="r")[...]


def _read_tensorstore(path: str) -> np.ndarray:
    t = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": path}, "open": True}).result()
    return np.asarray(t.read().result())


WRITERS = {"zarr-python": _write_zarr_python, "tensorstore": _write_tensorstore}
READERS = {"zarr-python": _read_zarr_python, "tensorstore": _read_tensorstore}


def _same(actual: Any, expected: np.ndarray, what: str) -> None:
    if expected.dtype.kind in "fc":
        assert_bitwise_equal(actual, expected, what)
    else:
        assert_exact_equal(actual, expected, what)


# -- selections --------------------------------------------------------------------------
def _basic(draw, shape: tuple[int, ...]) -> tuple[Any, ...]:
    sel = []
    for n in shape:
        if n and draw(st.integers(0, 3)) == 0:
            sel.append(draw(st.integers(-n, n - 1)))
        else:
            bound = st.none() | st.integers(-n - 1, n + 1)
            sel.append(slice(draw(bound), draw(bound), draw(st.sampled_from([None, 1, 2, 3, -1, -2]))))
    return tuple(sel)


def _orthogonal(draw, shape: tuple[int, ...]) -> tuple[Any, ...]:
    sel: list[Any] = []
    for n in shape:
        kind = draw(st.sampled_from(["ints", "mask", "slice"]))
        if kind == "ints" and n:
            sel.append(np.array(draw(st.lists(st.integers(-n, n - 1), min_size=1, max_size=5))))
        elif kind == "mask":
            sel.append(np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool))
        else:
            sel.append(slice(None))
    return tuple(sel)


def _points(draw, shape: tuple[int, ...]) -> tuple[np.ndarray, ...] | None:
    if not shape or 0 in shape:
        return None
    k = draw(st.integers(1, 6))
    return tuple(np.array([draw(st.integers(0, n - 1)) for _ in range(k)]) for n in shape)


# -- the tests --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def workdir():
    path = tempfile.mkdtemp(prefix="zarrdask-diff-")
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _fresh(workdir: str, name: str) -> str:
    path = os.path.join(workdir, name)
    shutil.rmtree(path, ignore_errors=True)
    return path


@SETTINGS
@given(case=cases(), data=st.data())
def test_peer_written_arrays_read_exact(workdir, case, data):
    limits = _peer_limits(case)
    writers = [w for w in WRITERS if w not in limits]
    assert writers, limits
    for writer in writers:
        path = _fresh(workdir, writer)
        WRITERS[writer](path, case, case.data, case.region)
        for reader in READERS:
            if reader not in limits:
                _same(READERS[reader](path), case.data, f"{writer} wrote, {reader} read")
        a = zarrdask.open_array(path)
        _same(a[...], case.data, f"{writer} wrote, zarrdask read all")
        sel = _basic(data.draw, case.shape)
        _same(a[sel], case.data[sel], f"{writer} wrote, zarrdask read {sel}")
        sel = _orthogonal(data.draw, case.shape)
        index = np.ix_(*(np.arange(n) if isinstance(s, slice) else s for s, n in zip(sel, case.shape)))
        _same(a.oindex[sel], case.data[index] if sel else case.data[()], f"{writer} wrote, oindex {sel}")
        points = _points(data.draw, case.shape)
        if points is not None:
            _same(a.vindex[points], case.data[points], f"{writer} wrote, vindex {points}")
        # through the decoded-chunk cache (shards held whole with 1 MiB, chunk by chunk with 1 KiB),
        # first visit then revisit, and through Dask (one task per shard)
        zarrdask.cache_clear()  # (the peer wrote this path, not zarrdask: what an earlier example left is stale)
        budget = data.draw(st.sampled_from(["1 MiB", 1 << 10]))
        cached = zarrdask.open_array(path, cache_bytes=budget)
        sel = _basic(data.draw, case.shape)
        for visit in ("first", "again"):
            _same(cached[sel], case.data[sel], f"{writer} wrote, cache {budget} {visit} {sel}")
            _same(cached[...], case.data, f"{writer} wrote, cache {budget} {visit} all")
        _same(zarrdask.from_zarr(path).compute(), case.data, f"{writer} wrote, from_zarr .compute()")


@SETTINGS
@given(case=cases(), data=st.data())
def test_zarrdask_written_arrays_read_exact_by_both_peers(workdir, case, data):
    limits = _peer_limits(case)
    readers = [r for r in READERS if r not in limits]
    # zarrdask writes the array from scratch
    path = _fresh(workdir, "zarrdask")
    os.makedirs(path)
    with open(os.path.join(path, "zarr.json"), "w") as f:
        json.dump(case.metadata(), f)
    zarrdask.open_array(path, mode="r+")[case.region] = case.data[case.region]
    for reader in readers:
        _same(READERS[reader](path), case.data, f"zarrdask wrote, {reader} read")
    # zarrdask rewrites a region of each peer's copy (partial chunks and shards)
    region = tuple(slice(*sorted(data.draw(st.lists(st.integers(0, n), min_size=2, max_size=2))))
                   for n in case.shape)
    patch = _random(np.random.default_rng(7), case.data.dtype, case.data[region].shape)
    expected = case.data.copy()
    expected[region] = patch
    for writer in WRITERS:
        if writer in limits:
            continue
        path = _fresh(workdir, writer)
        WRITERS[writer](path, case, case.data, case.region)
        zarrdask.open_array(path, mode="r+")[region] = patch
        for reader in readers:
            _same(READERS[reader](path), expected, f"{writer} wrote, zarrdask rewrote {region}, {reader} read")
        _same(zarrdask.open_array(path)[...], expected, f"{writer} wrote, zarrdask rewrote {region}, zarrdask read")
