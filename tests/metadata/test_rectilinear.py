"""The ``rectilinear`` chunk grid (zarr-extensions): chunks of given lengths per dimension,
run-length pairs, lengths repeated over the array, chunks past the edge; plain and sharded
(rectilinear shards of regular inner chunks). Reads, writes and ``from_zarr`` against numpy
(hypothesis); the registry's metadata example."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrdask
from zarrdask.errors import MetadataError
from zarrdask.metadata.grid import RectilinearChunkGrid
from zarrdask.storage import MemoryStore

SETTINGS = settings(max_examples=150, deadline=None, derandomize=True, database=None,
                    suppress_health_check=list(HealthCheck))
BYTES = {"name": "bytes", "configuration": {"endian": "little"}}


def _array(store, shape, chunk_shapes, codecs, path="a"):
    doc = {"zarr_format": 3, "node_type": "array", "shape": list(shape), "data_type": "int32",
           "chunk_grid": {"name": "rectilinear", "configuration": {"kind": "inline", "chunk_shapes": chunk_shapes}},
           "chunk_key_encoding": {"name": "default"}, "fill_value": -1, "codecs": codecs}
    store.set(f"{path}/zarr.json", json.dumps(doc).encode())
    return zarrdask.open_array(store, path=path, mode="r+")


def test_the_registry_example_expands_as_specified():
    axes = RectilinearChunkGrid((4, [1, 2, 3], [[4, 2]], [[1, 3], 3], [4, 4, 4])).axes((6,) * 5)
    assert [a.edges for a in axes] == [(0, 4, 8), (0, 1, 3, 6), (0, 4, 8), (0, 1, 2, 3, 6), (0, 4, 8, 12)]
    assert [a.extents() for a in axes] == [(4, 2), (1, 2, 3), (4, 2), (1, 1, 1, 3), (4, 2)]  # overflow chunks dropped


@pytest.mark.parametrize("config, message", [
    ({"kind": "other", "chunk_shapes": [2]}, "expected 'inline'"),
    ({"kind": "inline", "chunk_shapes": [2, 2]}, "one per dimension"),
    ({"kind": "inline", "chunk_shapes": [[0, 2]]}, "positive integer"),
    ({"kind": "inline", "chunk_shapes": [[[2, 0]]]}, "positive integer"),
    ({"kind": "inline", "chunk_shapes": [[2, 2]]}, "sum to 4, less than the array's extent 5"),
])
def test_invalid_configurations_are_metadata_errors(config, message):
    store = MemoryStore()
    doc = {"zarr_format": 3, "node_type": "array", "shape": [5], "data_type": "int8",
           "chunk_grid": {"name": "rectilinear", "configuration": config},
           "chunk_key_encoding": {"name": "default"}, "fill_value": 0, "codecs": [BYTES]}
    store.set("zarr.json", json.dumps(doc).encode())
    with pytest.raises(MetadataError, match=message):
        zarrdask.open_array(store)[...]


@st.composite
def _lengths(draw, size, multiple=1):
    lengths = [multiple * draw(st.integers(1, 3))]
    while sum(lengths) < size:
        lengths.append(multiple * draw(st.integers(1, 3)))
    if draw(st.booleans()):
        lengths.append(multiple * draw(st.integers(1, 2)))  # an overflow chunk
    form = draw(st.sampled_from(["list", "rle"]))
    if form == "rle":
        return RectilinearChunkGrid.from_extents([lengths]).chunk_shapes[0], lengths
    return lengths, lengths


@st.composite
def cases(draw):
    ndim = draw(st.integers(1, 3))
    sharded = draw(st.booleans())
    inner = tuple(draw(st.integers(1, 2)) for _ in range(ndim)) if sharded else (1,) * ndim
    shape = tuple(draw(st.integers(0, 9)) for _ in range(ndim))
    specs = [draw(_lengths(n, m)) for n, m in zip(shape, inner)]
    codecs = [BYTES, {"name": "zstd", "configuration": {"level": 1}}]
    if sharded:
        codecs = [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": list(inner), "codecs": codecs, "index_codecs": [BYTES, {"name": "crc32c"}],
            "index_location": draw(st.sampled_from(["start", "end"]))}}]
    return shape, [s for s, _ in specs], [lengths for _, lengths in specs], codecs


def _window(draw, shape):
    return tuple(slice(*sorted(draw(st.lists(st.integers(0, n), min_size=2, max_size=2)))) for n in shape)


@SETTINGS
@given(case=cases(), data=st.data())
def test_reads_and_writes_match_numpy(case, data):
    shape, chunk_shapes, lengths, codecs = case
    a = _array(MemoryStore(), shape, chunk_shapes, codecs)
    expected = np.full(shape, -1, dtype="int32")
    values = np.arange(int(np.prod(shape)), dtype="int32").reshape(shape)
    for _ in range(2):  # a region, then another over it (partial chunks and shards)
        region = _window(data.draw, shape)
        a[region] = values[region]
        expected[region] = values[region]
    assert np.array_equal(a[...], expected)
    window = _window(data.draw, shape)
    assert np.array_equal(a[window], expected[window])
    x = zarrdask.from_zarr(a)
    edges = [np.cumsum([0, *ls]).tolist() for ls in lengths]
    if 0 in shape:  # (nothing to read: one block per axis, however many units the grid lays over it)
        assert x.chunks == tuple((n,) for n in shape)
    else:
        assert x.chunks == tuple(tuple(min(hi, n) - lo for lo, hi in zip(e, e[1:]) if lo < n)
                                 for e, n in zip(edges, shape))
    assert np.array_equal(x.compute(), expected)
