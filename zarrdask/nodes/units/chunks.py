"""Unsharded storage: one stored value per chunk (or per shard that must be decoded whole,
when array->array codecs before the sharding codec do more than permute axes)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager

import numpy as np

from ...codecs.protocol import ChunkPipeline
from ...errors import CodecError
from ...indexing import Selection, c_order_stop
from ...metadata.grid import stored_shape
from ...plan.fetch_plan import ChunkPlacement, UnitRead, is_view
from ...runtime.output import scratch
from .base import ChunkSource, with_key
from .puts import UnitPuts

__all__ = ["PlainChunkSource"]


class PlainChunkSource(ChunkSource):
    """One stored value per chunk, decoded and encoded whole by its pipeline."""

    def _decode_unit(self, unit: UnitRead, target: np.ndarray, blob: bytes | None, threads: int | None) -> None:
        (placement,) = unit.chunks
        if blob is None:
            self._missing(f"chunk {unit.key}", target, placement.out_index)
            return
        try:
            shape = stored_shape(self.grid, unit.coords)
            pipeline = self._pipeline_at(unit.coords)
            dtype = self.spec.dtype.dtype
            whole = _whole_chunk_part(target, placement, shape, dtype) if pipeline.decodes_into else None
            if whole is not None:  # (straight into place: no scratch buffer, no copy)
                pipeline.decode_into([blob], whole[np.newaxis])
                return
            stop = c_order_stop(placement.chunk_index, shape) if pipeline.decodes_prefix else None
            with _decoded(pipeline, blob, shape, dtype, stop) as chunk:
                target[placement.out_index] = chunk[placement.chunk_index]
        except CodecError as exc:
            raise with_key(exc, unit.key) from exc

    def write(self, selection: Selection, values: np.ndarray) -> None:
        projections = list(selection.project(self.grid))
        keys = [self.key(p.coords) for p in projections]

        def write_units(indices: Sequence[int], existing: Mapping[int, bytes | None], puts: UnitPuts) -> None:
            def encode(i: int) -> None:
                blob, coords = existing.get(i), projections[i].coords
                pipeline = self._pipeline_at(coords)
                try:
                    old = None if blob is None else (lambda: pipeline.decode(blob))
                    chunk = self._updated_chunk(stored_shape(self.grid, coords), projections[i], values, old)
                except CodecError as exc:
                    raise with_key(exc, keys[i]) from exc
                puts.put(keys[i], pipeline.encode(chunk) if self._keep(chunk) else None)

            self._encode_all(encode, indices)

        self._write_units(keys, projections, write_units)


def _whole_chunk_part(target: np.ndarray, placement: ChunkPlacement, shape: tuple[int, ...],
                      dtype: np.dtype) -> np.ndarray | None:
    """The part of ``target`` a placement of a whole stored chunk fills, when the chunk can be
    decoded straight into it: a C-contiguous view of the chunk's shape and data type (a
    task's block that is one chunk, a read of one chunk); None otherwise."""
    index, out_index = placement.chunk_index, placement.out_index
    if index is not Ellipsis and not (is_view(index) and len(index) == len(shape) and all(
            s.start == 0 and s.stop == n and s.step == 1 for s, n in zip(index, shape))):
        return None
    if out_index is not None and not is_view(out_index):
        return None
    part = target if out_index is None else target[out_index or ...]
    return part if part.dtype == dtype and part.shape == shape and part.flags.c_contiguous else None


@contextmanager
def _decoded(pipeline: ChunkPipeline, blob: bytes, shape: tuple[int, ...], dtype: np.dtype,
             stop: int | None) -> Iterator[np.ndarray]:
    """A stored chunk decoded, for the duration of the block: into a reused scratch buffer
    (its pages already mapped, where a fresh result of megabytes is paid for in page
    faults) when the chain can decode straight into memory, else as ``decode`` gives it
    (then a buffer would only add a copy). ``stop``: only the first values (C order) up to
    it are wanted (``decode_into`` may leave the rest undecoded)."""
    if not pipeline.decodes_into:
        yield pipeline.decode(blob)
        return
    with scratch((1, *shape), dtype) as chunk:
        pipeline.decode_into([blob], chunk, stops=None if stop is None else [stop])
        yield chunk[0, ...]  # (a 0-d view, not an element, for 0-d chunks)
