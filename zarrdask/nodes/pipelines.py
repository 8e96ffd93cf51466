"""The chunk pipelines of an array: built from its metadata, per stored unit shape.

A v3 array's codec chain is validated against the shape its units are stored with (a
rectilinear grid's units each have their own); a v2 array has one encoding, expressed
as codecs of the same pipeline type (``codecs/v2.py``). Built v3
pipelines are immutable and shared between arrays with the same chain and chunk spec.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from ..codecs.base import ChunkSpec
from ..codecs.pipeline import CodecPipeline
from ..codecs.protocol import ChunkPipeline
from ..codecs.v2 import v2_pipeline
from ..errors import MetadataError, Problem
from ..metadata.grid import MAX_EXTENT, AxisGrid, stored_shape
from ..metadata.nodes import ArrayMetadata
from ..metadata.v3 import ArrayMetadataV3
from ..storage.base import join_path

__all__ = ["ArrayLayout", "PipelineAt", "array_layout", "shape_pipelines"]

#: the pipeline of a unit stored with a given shape
PipelineAt = Callable[[tuple[int, ...]], ChunkPipeline]

#: built pipelines by (the codec config objects' identities, chunk spec); each entry keeps
#: its config objects alive, so an identity can't be reused by another object meanwhile
_PIPELINES: dict[tuple[Any, ...], tuple[tuple[Any, ...], CodecPipeline]] = {}
_PIPELINES_MAX = 256


class ArrayLayout(NamedTuple):
    """An array's stored units as its metadata lays them out, checked: the grid, the spec
    of a unit at the origin, the pipelines per stored shape and the origin unit's one."""

    grid: tuple[AxisGrid, ...]
    spec: ChunkSpec
    pipelines: PipelineAt
    pipeline: ChunkPipeline


def array_layout(metadata: ArrayMetadata, path: str, *, verify: bool) -> ArrayLayout:
    """The layout of the array at ``path``; a MetadataError naming its metadata document
    where the grid or the codec chain cannot hold its units. Needs no store, so creating
    an array checks it before anything is written."""
    key = join_path(path, "zarr.json" if metadata.zarr_format == 3 else ".zarray")
    try:
        grid = metadata.chunk_grid.axes(metadata.shape)
        # (every unit of a regular grid is stored with one shape; a rectilinear grid's
        # units each with their own, so each shape gets its pipeline, built on first use)
        spec = ChunkSpec(stored_shape(grid, (0,) * len(grid)), metadata.data_type, metadata.chunk_fill)
        if spec.nbytes > MAX_EXTENT:
            raise MetadataError([Problem(("chunk_grid" if metadata.zarr_format == 3 else "chunks",),
                                         f"a chunk of shape {spec.shape} ({spec.nbytes} bytes) is larger "
                                         "than memory can address")])
        pipelines = shape_pipelines(metadata, key, verify=verify)
        return ArrayLayout(grid, spec, pipelines, pipelines(spec.shape))
    except MetadataError as exc:
        if exc.key is not None:
            raise
        raise type(exc)(exc.problems, key=key) from None


def shape_pipelines(metadata: ArrayMetadata, key: str, *, verify: bool) -> PipelineAt:
    """The pipeline of a unit stored with a given shape, validated for that shape (the
    sharding codec checks its inner chunks divide it), cached per shape; ``verify=False``:
    reading without checking checksums. ``key``: the metadata document errors name."""
    if metadata.zarr_format == 2:
        try:
            v2 = v2_pipeline(metadata)
        except MetadataError as exc:
            raise type(exc)(exc.problems, key=exc.key or key) from None
        return lambda shape: v2  # (v2: a regular grid, one encoding; its checksums are numcodecs')
    built: dict[tuple[int, ...], ChunkPipeline] = {}

    def pipeline(shape: tuple[int, ...]) -> ChunkPipeline:
        found = built.get(shape)
        if found is None:
            try:
                found = _v3_pipeline(metadata, ChunkSpec(shape, metadata.data_type, metadata.chunk_fill))
                if not verify:
                    found = found.without_checksums()
            except MetadataError as exc:
                raise type(exc)(exc.problems, key=exc.key or key) from None
            built[shape] = found
        return found

    return pipeline


def _v3_pipeline(metadata: ArrayMetadataV3, spec: ChunkSpec) -> CodecPipeline:
    """The codec pipeline of a v3 array. Pipelines are immutable and shared between
    arrays with the same chain and chunk spec: opening a dataset of many alike
    variables builds them once. The parser shares one config object per distinct
    configuration (``metadata/extension.py``), so a chain is keyed by the identities
    of its objects: equal-comparing settings of another JSON type (``1`` / ``true``)
    never match."""
    codecs = tuple(metadata.codecs)
    key = (tuple(map(id, codecs)), spec.shape, spec.dtype.name, spec.dtype.dtype, _fill_key(spec))
    hit = _PIPELINES.get(key)
    if hit is not None:
        return hit[1]
    pipeline = CodecPipeline.from_metadata(codecs, spec)
    if len(_PIPELINES) >= _PIPELINES_MAX:
        _PIPELINES.pop(next(iter(_PIPELINES)))
    _PIPELINES[key] = (codecs, pipeline)
    return pipeline


def _fill_key(spec: ChunkSpec) -> object:
    """The fill value as a hashable key by its bits (NaN payloads and -0.0 kept apart)."""
    dtype = spec.dtype.dtype
    if dtype.hasobject:  # (the bytes of an object array are pointers)
        return (type(spec.fill_value), repr(spec.fill_value))
    try:
        return np.asarray(spec.fill_value, dtype=dtype).tobytes()
    except (TypeError, ValueError):
        return (type(spec.fill_value), repr(spec.fill_value))
