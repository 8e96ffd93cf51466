"""``n5_default`` (array -> bytes): N5 blocks in "default" mode, a header then a codec chain.

Spec: zarr-extensions ``codecs/n5_default``. Example: ``{"name": "n5_default",
"configuration": {"codecs": [{"name": "transpose", "configuration": {"order": [1, 0]}},
{"name": "bytes", "configuration": {"endian": "big"}}, {"name": "zstd"}]}}``.
A block is ``mode`` (uint16, big endian, 0 = default), the number of dimensions (uint16)
and the block's shape (uint32 each, in the array's axis order), then the chain's bytes for
a block of that shape. The chain must be a full transpose, a ``bytes`` codec with
``endian: "big"`` (omittable for one-byte types) and at most one bytes->bytes codec.
Blocks smaller than the chunk (N5 writers that truncate edge blocks) are padded with the
fill value; a block larger than the chunk is refused. Blocks are written whole.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..errors import CodecError, CorruptChunkError, MetadataError
from ..storage.base import Buffer
from ._config import check_keys, config_error
from .base import ArrayBytesCodec, ChunkSpec, Codec, Loc
from .bytes import BytesCodec
from .nested import parse_codec_list
from .pipeline import CodecPipeline
from .registry import chain_checksummed, register_codec

#: the data types N5 has
_N5_TYPES = {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64"}


@register_codec
class N5DefaultCodec(ArrayBytesCodec):
    name = "n5_default"

    def __init__(self, codecs: list[Codec]) -> None:
        self.codecs = list(codecs)
        self._pipelines: dict[tuple[int, ...], CodecPipeline] = {}

    @classmethod
    def checksummed(cls, configuration: Mapping[str, Any]) -> bool:
        """When N5's compression keeps one (gzip's CRC-32, zlib's Adler-32): the block
        header guards no data."""
        return chain_checksummed(configuration.get("codecs") or ())

    @classmethod
    def from_config(cls, configuration: Mapping[str, Any], loc: Loc) -> N5DefaultCodec:
        check_keys(configuration, {"codecs"}, loc)
        where = (*loc, "configuration", "codecs")
        codecs = parse_codec_list(configuration.get("codecs"), where)
        kinds = [c.kind for c in codecs]
        if len(codecs) < 2 or kinds[0] != "array->array" or codecs[0].name != "transpose":
            raise config_error((*where, 0), "the first codec must be 'transpose' (a full transposition)")
        if not isinstance(codecs[1], BytesCodec):
            raise config_error((*where, 1), "the second codec must be 'bytes'")
        if codecs[1].endian == "little":
            raise config_error((*where, 1, "configuration", "endian"), "N5 blocks are big endian: expected \"big\"")
        if len(codecs) > 3 or any(k != "bytes->bytes" for k in kinds[2:]):
            raise config_error(where, "after 'transpose' and 'bytes', at most one bytes->bytes codec is allowed")
        return cls(codecs)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "configuration": {"codecs": [c.to_json() for c in self.codecs]}}

    def validate(self, spec: ChunkSpec, loc: Loc) -> N5DefaultCodec:
        ndim = len(spec.shape)
        where = (*loc, "configuration", "codecs")
        if spec.dtype.name not in _N5_TYPES:
            raise config_error(loc, f"N5 has no data type {spec.dtype.name!r}; it has {', '.join(sorted(_N5_TYPES))}")
        if self.codecs[0].axis_permutation(ndim) != tuple(reversed(range(ndim))):  # type: ignore[attr-defined]
            raise config_error((*where, 0, "configuration", "order"),
                               f"expected the full transposition {list(reversed(range(ndim)))}")
        endian = self.codecs[1].endian  # type: ignore[attr-defined]
        if endian is None and spec.dtype.dtype.itemsize > 1:
            raise config_error((*where, 1, "configuration", "endian"),
                               f"required for {spec.dtype.name}: expected \"big\"")
        if any(n >= 1 << 32 for n in spec.shape):
            raise config_error(loc, f"N5 block dimensions are uint32: chunk shape {spec.shape} is too large")
        try:
            self._pipeline(spec.shape, spec)
        except MetadataError as exc:
            raise config_error(where, str(exc)) from None
        return self

    def _pipeline(self, shape: tuple[int, ...], spec: ChunkSpec) -> CodecPipeline:
        """The inner chain for a block of ``shape`` (one per block shape met: full and edge blocks)."""
        pipeline = self._pipelines.get(shape)
        if pipeline is None:
            pipeline = CodecPipeline(self.codecs, ChunkSpec(shape, spec.dtype, spec.fill_value))
            if len(self._pipelines) < 64:
                self._pipelines[shape] = pipeline
        return pipeline

    def encode(self, array: np.ndarray, spec: ChunkSpec) -> bytes:
        shape = spec.shape
        header = struct.pack(f">HH{len(shape)}I", 0, len(shape), *shape)
        return header + self._pipeline(shape, spec).encode(array)

    def decode(self, data: Buffer, spec: ChunkSpec) -> np.ndarray:
        view = memoryview(data).cast("B")
        ndim = len(spec.shape)
        size = 4 + 4 * ndim
        if len(view) < size:
            raise CorruptChunkError(f"n5_default: block of {len(view)} bytes is shorter than its {size}-byte header")
        mode, n = struct.unpack_from(">HH", view)
        if mode != 0:
            raise CorruptChunkError(f"n5_default: block mode {mode:#06x} is not the default mode 0x0000")
        if n != ndim:
            raise CorruptChunkError(f"n5_default: block header has {n} dimensions, the array {ndim}")
        shape = struct.unpack_from(f">{ndim}I", view, 4)
        if any(b > c for b, c in zip(shape, spec.shape)):
            raise CorruptChunkError(f"n5_default: block shape {shape} exceeds the chunk shape {spec.shape}")
        try:
            block = self._pipeline(shape, spec).decode(view[size:])
        except MetadataError as exc:
            raise CodecError(f"n5_default: {exc}") from None
        if shape == spec.shape:
            return block
        out = np.full(spec.shape, spec.fill_value, dtype=spec.dtype.dtype)
        out[tuple(slice(0, b) for b in shape)] = block
        return out
