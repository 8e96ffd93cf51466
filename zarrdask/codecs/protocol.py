"""What a chunk pipeline is to its callers: the interface of
:class:`~zarrdask.codecs.pipeline.CodecPipeline`, which runs both a v3 codec chain and the
v2 encoding (expressed as codecs by ``codecs/v2.py``).

A pipeline encodes and decodes the stored value of one unit (a chunk, or a shard) of a
fixed chunk spec, whole or in batches straight into a stack, and declares how its units
are stored (``sharding``), so the chunk source is chosen from the declaration.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..storage.base import Buffer
from .base import ArrayBytesCodec

__all__ = ["ChunkPipeline"]


@runtime_checkable
class ChunkPipeline(Protocol):
    """Encode/decode the stored bytes of one unit. ``decodes_into``: :meth:`decode_into`
    writes straight into the stack's memory (no copy); ``decodes_prefix``: it can stop
    before a chunk's end."""

    decodes_into: bool
    #: :meth:`decode_into` can leave the end of a chunk undecoded when ``stops`` says so
    decodes_prefix: bool

    @property
    def sharding(self) -> ArrayBytesCodec | None:
        """The sharding codec (a :class:`~zarrdask.codecs.sharding.ShardingCodec`) when each
        stored unit is a shard of chunks found through an index (the unit's array->bytes
        codec), else None: the storage kind. (Typed as its base class: the sharding module
        builds pipelines, so this one cannot name it.)"""

    @property
    def axis_permutation(self) -> tuple[int, ...] | None:
        """The axis order the array->bytes stage sees (``range(ndim)`` when unpermuted), or
        None when the stages before it do more than permute axes."""

    @property
    def has_bytes_stage(self) -> bool:
        """True when bytes->bytes stages (compressors, checksums) wrap the serialized unit."""

    def decode(self, data: Buffer) -> np.ndarray[Any, Any]:
        """Decode one stored value to an array of the spec's shape (may be read-only)."""

    def decode_into(self, data: Sequence[Buffer], out: np.ndarray[Any, Any],
                    slots: Sequence[int] | None = None, stops: Sequence[int | None] | None = None) -> None:
        """Decode a batch into the C-contiguous stack ``out``: ``data[i]`` into
        ``out[slots[i]]`` (default: in order); a failure names its item. ``stops[i]`` (not
        None): only the first values of item ``i`` in C order up to it are wanted, and the
        rest of its slot may be left undecoded."""

    def decode_bytes_stage(self, data: Buffer, stop: int = 0) -> Buffer:
        """Undo the bytes->bytes stages (the first ``stop`` of them left undone)."""

    def encode(self, array: np.ndarray[Any, Any]) -> bytes:
        """Encode one unit (the spec's shape) to its stored bytes."""

    def encode_bytes_stage(self, data: Buffer) -> Buffer:
        """Apply the bytes->bytes stages to a serialized unit (the counterpart of
        :meth:`decode_bytes_stage`)."""

    def encoded_size(self) -> int | None:
        """The fixed stored size of a unit, when every stage fixes it."""

    def to_json(self) -> list[dict[str, Any]]:
        """The stages as JSON, one object per codec."""

    def without_checksums(self) -> ChunkPipeline:
        """The same pipeline reading without verifying checksums."""
