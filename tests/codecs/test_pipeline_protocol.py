"""Every chunk pipeline the package builds is a ``ChunkPipeline`` and decodes what is stored.

Pipelines come from ``zarrdask.nodes.pipelines.shape_pipelines``, the one builder arrays
use: for each array of the conformance corpus (v2 and v3, sharded or not), for generated
v3 chains and for v2 arrays of several compressors, filters and orders. Each must pass
the runtime Protocol check, declare its storage kind as the metadata says (``sharding``),
and decode every stored unit to the values the corpus (or the writer) holds, whole
(``decode``) and in a batch (``decode_into``), bit for bit; its bytes stage must undo
what its encoding counterpart does.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import zarrdask
from zarrdask.codecs.protocol import ChunkPipeline
from zarrdask.codecs.sharding import ShardingCodec
from zarrdask.nodes.pipelines import shape_pipelines
from zarrdask.metadata.grid import all_chunk_coords, chunk_slices, stored_shape
from zarrdask.storage.base import join_path

from _util import (assert_bitwise_equal, assert_exact_equal, assert_same, assert_string_values_equal, corpus_dir,
                   load_manifest)

CORPUS = corpus_dir()
MANIFEST = load_manifest() or {"cases": []}
COMPARE = {"bitwise": assert_bitwise_equal, "exact": assert_exact_equal, "string-values": assert_string_values_equal}
#: single-array cases with their values (ml_dtypes bit-pattern files are compared elsewhere)
ARRAY_CASES = [c for c in MANIFEST["cases"] if "npy" in c["expect"] and not c["expect"].get("npy_is_bit_pattern")]


def _sharded_in_json(array: zarrdask.Array) -> bool:
    """Whether the metadata's chain serialises with the sharding codec (its parsed names)."""
    return array.zarr_format == 3 and any(c.name == "sharding_indexed" for c in array.metadata.codecs)


def _check_pipelines(array: zarrdask.Array, expected: np.ndarray, compare=assert_same) -> int:
    """Check the pipeline of every stored unit of ``array`` against ``expected``; the number
    of units checked."""
    meta = array.metadata
    pipelines = shape_pipelines(meta, "zarr.json", verify=True)
    grid = meta.chunk_grid.axes(meta.shape)
    checked = 0
    for coords in all_chunk_coords(grid):
        blob = array.store.get(join_path(array.path, meta.chunk_key_encoding.encode(coords)))
        if blob is None:
            continue
        shape = stored_shape(grid, coords)
        pipeline = pipelines(shape)
        assert isinstance(pipeline, ChunkPipeline), type(pipeline)
        assert isinstance(pipeline.without_checksums(), ChunkPipeline)
        assert (pipeline.sharding is not None) == _sharded_in_json(array)
        assert pipeline.sharding is None or isinstance(pipeline.sharding, ShardingCodec)
        assert isinstance(pipeline.to_json(), list)
        region = chunk_slices(grid, coords)
        inside = tuple(slice(0, s.stop - s.start) for s in region)
        decoded = pipeline.decode(blob)
        assert decoded.shape == shape
        compare(decoded[inside], expected[region], f"{coords} decode")
        stack = np.empty((2, *shape), dtype=decoded.dtype)
        pipeline.decode_into([blob], stack, [1])
        compare(stack[1][inside], expected[region], f"{coords} decode_into")
        again = pipeline.decode(pipeline.encode(decoded))
        compare(again[inside], expected[region], f"{coords} encode -> decode")
        serialized = pipeline.decode_bytes_stage(blob)
        assert bytes(pipeline.decode_bytes_stage(pipeline.encode_bytes_stage(serialized))) == bytes(serialized)
        assert pipeline.has_bytes_stage or bytes(serialized) == bytes(blob)
        checked += 1
    return checked


@pytest.mark.parametrize("case", ARRAY_CASES, ids=[c["id"] for c in ARRAY_CASES])
def test_corpus_pipelines(case):
    array = zarrdask.open_array(str(CORPUS / case["path"]), mode="r")
    expected = np.load(CORPUS / case["expect"]["npy"], allow_pickle=False)
    _check_pipelines(array, expected, COMPARE[case["expect"]["compare"]])


def test_corpus_covers_both_formats_and_sharding():
    formats = {c["zarr_format"] for c in ARRAY_CASES}
    sharded = [c for c in ARRAY_CASES if "sharding" in json.dumps(c["features"])]
    assert formats == {2, 3} and sharded


_ZSTD = {"name": "zstd", "configuration": {"level": 3, "checksum": False}}
_BYTES = {"name": "bytes", "configuration": {"endian": "little"}}
V3_CHAINS = {
    "bytes": [_BYTES],
    "bytes-big-endian": [{"name": "bytes", "configuration": {"endian": "big"}}],
    "zstd": [_BYTES, _ZSTD],
    "zstd-crc32c": [_BYTES, _ZSTD, {"name": "crc32c"}],
    "gzip": [_BYTES, {"name": "gzip", "configuration": {"level": 5}}],
    "blosc": [_BYTES, {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5, "shuffle": "shuffle",
                                                          "typesize": 4, "blocksize": 0}}],
    "transpose-zstd": [{"name": "transpose", "configuration": {"order": [1, 0]}}, _BYTES, _ZSTD],
    "sharding": [{"name": "sharding_indexed", "configuration": {
        "chunk_shape": [4, 5], "codecs": [_BYTES, _ZSTD], "index_codecs": [_BYTES, {"name": "crc32c"}],
        "index_location": "end"}}],
    "sharding-index-start-then-zstd": [{"name": "sharding_indexed", "configuration": {
        "chunk_shape": [4, 5], "codecs": [_BYTES], "index_codecs": [_BYTES, {"name": "crc32c"}],
        "index_location": "start"}}, _ZSTD],
    "transpose-sharding": [{"name": "transpose", "configuration": {"order": [1, 0]}},
                           {"name": "sharding_indexed", "configuration": {
                               "chunk_shape": [5, 4], "codecs": [_BYTES, _ZSTD],
                               "index_codecs": [_BYTES, {"name": "crc32c"}], "index_location": "end"}}],
}


def _values(dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    rng = np.random.default_rng(24)
    if np.dtype(dtype).kind == "f":
        return rng.normal(size=shape).astype(dtype)
    return rng.integers(-1000, 1000, size=shape).astype(dtype)


@pytest.mark.parametrize("name", sorted(V3_CHAINS))
def test_generated_v3_chains(tmp_path, name):
    values = _values("float32", (17, 23))
    array = zarrdask.create_array(str(tmp_path / "a.zarr"), shape=values.shape, dtype=values.dtype,
                                  chunks=(8, 10), codecs=V3_CHAINS[name], fill_value=0)
    array[...] = values
    array = zarrdask.open_array(str(tmp_path / "a.zarr"), mode="r")
    assert _check_pipelines(array, values, assert_bitwise_equal) == 9


V2_ENCODINGS = {
    "zstd": dict(compressors=[{"id": "zstd", "level": 1}]),
    "blosc": dict(compressors=[{"id": "blosc", "cname": "zstd", "clevel": 3, "shuffle": 1}]),
    "gzip": dict(compressors=[{"id": "gzip", "level": 1}]),
    "lz4": dict(compressors=[{"id": "lz4"}]),
    "none": dict(compressors=None),
    "delta-zlib": dict(filters=[{"id": "delta", "dtype": "<i4"}], compressors=[{"id": "zlib", "level": 1}]),
    "order-F-zstd": dict(order="F", compressors=[{"id": "zstd", "level": 1}]),
    "big-endian-blosc": dict(dtype=">i4", compressors=[{"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 2}]),
}


@pytest.mark.parametrize("name", sorted(V2_ENCODINGS))
def test_v2_encodings(tmp_path, name):
    settings = dict(V2_ENCODINGS[name])
    dtype = settings.pop("dtype", "<i4")
    values = _values(dtype, (17, 23))
    array = zarrdask.create_array(str(tmp_path / "a.zarr"), shape=values.shape, dtype=dtype, chunks=(8, 10),
                                  zarr_format=2, fill_value=0, **settings)
    array[...] = values
    array = zarrdask.open_array(str(tmp_path / "a.zarr"), mode="r")
    assert _check_pipelines(array, values, assert_exact_equal) == 9


def test_v2_object_strings(tmp_path):
    values = np.array([f"item {i}" * (i % 4) for i in range(30)], dtype=object)
    array = zarrdask.create_array(str(tmp_path / "s.zarr"), shape=values.shape, dtype=str, chunks=(7,),
                                  zarr_format=2)
    array[...] = values
    array = zarrdask.open_array(str(tmp_path / "s.zarr"), mode="r")
    assert _check_pipelines(array, values, assert_string_values_equal) == 5
