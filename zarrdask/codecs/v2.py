"""The v2 chunk encoding as codecs of the one pipeline: ``order`` + numcodecs ``filters`` +
numcodecs ``compressor``.

A v2 chunk is the chunk's elements in C or F order, passed through each filter and then
the compressor. As zarr-python does, :func:`v2_pipeline` expresses it as a
:class:`~zarrdask.codecs.pipeline.CodecPipeline`: ``transpose`` for F order, then
:class:`V2Serializer` (the elements in the stored dtype through the filters; object
arrays carry their object codec, ``vlen-utf8``, ``vlen-bytes``, ``json2``, ``msgpack2``,
as the first filter), then :class:`V2Compressor`. ``pickle`` is refused: decoding it
would run code from the store.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import numcodecs
import numpy as np
from numcodecs.errors import UnknownCodecError

from ..errors import CodecError, CorruptChunkError, MetadataError, Problem, UnknownExtensionError
from ..metadata.dtypes import stored_dtype_v2
from ..metadata.dtypes.casting import exact_items
from ..metadata.v2 import ArrayMetadataV2
from ..storage.base import Buffer
from . import decompress
from .base import ArrayBytesCodec, BytesBytesCodec, ChunkSpec, Codec, Loc
from .pipeline import CodecPipeline
from .registry import numcodecs_checksummed, register_unlisted, unknown_numcodecs_id
from .transpose import TransposeCodec
from .vlen import check_item_count

__all__ = ["V2Compressor", "V2Serializer", "v2_pipeline"]

_VLEN_IDS = ("vlen-utf8", "vlen-bytes", "vlen-array")
#: netCDF-C writes ``elementsize: 0`` for data it shuffled by the item size; numcodecs
#: reads (and writes) 0 as no shuffle: the same document stands for two byte layouts
_AMBIGUOUS_SHUFFLE = ("a shuffle filter with elementsize 0 is ambiguous: netCDF-C writes it for data shuffled by "
                      "the item size ({n} bytes here), numcodecs for data not shuffled at all; zarrdask does not "
                      "guess. If netCDF-C wrote this array, set the filter's elementsize to {n} in .zarray; if "
                      "numcodecs did, remove the filter")
_REFUSED = {"pickle": "the pickle object codec would execute code from the store; it is refused"}


def v2_pipeline(metadata: ArrayMetadataV2) -> CodecPipeline:
    """The pipeline of a v2 array's chunks (v2 stores no shards)."""
    itemsize = metadata.data_type.dtype.itemsize
    for i, f in enumerate(metadata.filters or ()):
        if f.get("id") == "shuffle" and f.get("elementsize") == 0 and itemsize > 1:
            raise MetadataError([Problem(("filters", i, "elementsize"), _AMBIGUOUS_SHUFFLE.format(n=itemsize))])
    filters = [numcodecs_codec(f, ("filters", i)) for i, f in enumerate(metadata.filters or ())]
    if metadata.data_type.dtype.kind == "O" and not filters:
        raise MetadataError([Problem(("filters",), "an object (|O) array needs an object codec filter, e.g. vlen-utf8")])
    codecs: list[Codec] = []
    if metadata.order == "F" and len(metadata.chunk_shape) > 1:
        codecs.append(TransposeCodec("F"))
    codecs.append(V2Serializer(filters))
    if metadata.compressor:
        codecs.append(V2Compressor(numcodecs_codec(metadata.compressor, ("compressor",))))
    return CodecPipeline(codecs, ChunkSpec(metadata.chunk_shape, metadata.data_type, metadata.fill_value))


def numcodecs_codec(config: Mapping[str, Any], loc: Loc) -> Any:
    """The numcodecs codec object a v2 ``filters`` entry or ``compressor`` names."""
    codec_id = config.get("id")
    if codec_id in _REFUSED:
        raise MetadataError([Problem(loc, _REFUSED[codec_id])])
    try:
        return numcodecs.get_codec(dict(config))
    except UnknownCodecError:
        raise UnknownExtensionError([unknown_numcodecs_id(codec_id, (*loc, "id"))]) from None
    except (ValueError, TypeError) as exc:
        raise MetadataError([Problem(loc, f"expected settings numcodecs' {codec_id!r} codec takes: {exc}")]) from None


@contextmanager
def _decode_errors() -> Iterator[None]:
    """Any failure of a numcodecs backend on stored bytes (each raises its own types) as a
    CorruptChunkError saying a v2 chunk could not be decoded; MemoryError passes."""
    try:
        yield
    except CorruptChunkError as exc:
        raise type(exc)(f"v2 chunk cannot be decoded: {exc}") from None
    except MemoryError:
        raise
    except Exception as exc:
        raise CorruptChunkError(f"v2 chunk cannot be decoded: {exc}") from exc


@register_unlisted
class V2Serializer(ArrayBytesCodec):
    """A v2 chunk's elements (C order of what it sees) in the stored dtype, through the
    numcodecs filters. ``stored``: the on-disk dtype, set by :meth:`validate` from the spec."""

    name = "v2 filters"

    @classmethod
    def checksummed(cls, configuration: Mapping[str, Any]) -> bool:
        """When a filter does (by its numcodecs id)."""
        return any(numcodecs_checksummed(f) for f in configuration.get("filters") or ())

    def __init__(self, filters: Sequence[Any], stored: np.dtype[Any] | None = None) -> None:
        self.filters = tuple(filters)
        self.stored = stored

    @classmethod
    def from_config(cls, configuration: Mapping[str, Any], loc: Loc) -> V2Serializer:
        """From ``{"filters": [numcodecs configs]}``."""
        return cls([numcodecs_codec(f, (*loc, "filters", i)) for i, f in enumerate(configuration.get("filters") or ())])

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "configuration": {"filters": [f.get_config() for f in self.filters]}}

    def validate(self, spec: ChunkSpec, loc: Loc) -> V2Serializer:
        return V2Serializer(self.filters, np.dtype(object) if spec.dtype.dtype.kind == "O" else stored_dtype_v2(spec.dtype))

    def _dtype(self) -> np.dtype[Any]:
        assert self.stored is not None, "V2Serializer used before validate()"
        return self.stored

    def encoded_size(self, spec: ChunkSpec) -> int | None:
        plain = not self.filters and self._dtype().kind != "O"
        return math.prod(spec.shape) * self._dtype().itemsize if plain else None

    def reinterprets(self, spec: ChunkSpec) -> bool:
        return not self.filters and self._dtype() == spec.dtype.dtype

    def encode(self, array: np.ndarray, spec: ChunkSpec) -> bytes:
        flat = np.asarray(array, dtype=self._dtype()).ravel()
        try:
            try:
                data = self._filtered(flat)
            except TypeError:  # (numcodecs' vlen codecs take exact str / bytes: np.str_ is the same text)
                if flat.dtype.kind != "O":
                    raise
                data = self._filtered(exact_items(flat))
        except MemoryError:
            raise
        except Exception as exc:  # a configuration numcodecs accepted but cannot encode with
            raise CodecError(f"v2 chunk cannot be encoded with filters {self.to_json()['configuration']}: {exc}") from exc
        return data if isinstance(data, bytes) else bytes(numcodecs.compat.ensure_bytes(data))

    def _filtered(self, data: Any) -> Any:
        for f in self.filters:
            data = f.encode(data)
        return data

    def decode(self, data: Buffer, spec: ChunkSpec) -> np.ndarray:
        stored, n = self._dtype(), math.prod(spec.shape)
        decoded: Any = data
        with _decode_errors():
            for f in reversed(self.filters):
                if f.codec_id in _VLEN_IDS:
                    check_item_count(f.codec_id, decoded, n)
                decoded = f.decode(decoded)
        if stored.kind == "O":
            flat = np.asarray(decoded, dtype=object).reshape(-1)
        else:
            buf: Any = decoded if not isinstance(decoded, np.ndarray) else np.ascontiguousarray(decoded).view(np.uint8)
            size = memoryview(buf).nbytes
            if size != n * stored.itemsize:
                raise CorruptChunkError(f"v2 chunk decodes to {size} bytes, expected {n * stored.itemsize} "
                                        f"for chunk shape {spec.shape} of {stored}")
            flat = np.frombuffer(buf, dtype=stored)
        if flat.size != n:
            raise CorruptChunkError(f"v2 chunk holds {flat.size} items, expected {n}")
        arr = flat.reshape(spec.shape)
        return arr if arr.dtype == spec.dtype.dtype else arr.astype(spec.dtype.dtype)


@register_unlisted
class V2Compressor(BytesBytesCodec):
    """A v2 ``compressor``: any numcodecs codec, its decoding held to the size the chain
    fixes where the format allows (``decompress.py``), straight into the caller's memory
    for zstd and blosc, and only as far as a read needs for zstd."""

    name = "v2 compressor"

    @classmethod
    def checksummed(cls, configuration: Mapping[str, Any]) -> bool:
        """When the compressor does (its configuration is the numcodecs config, with its id)."""
        return numcodecs_checksummed(configuration)

    def __init__(self, impl: Any) -> None:
        self.impl = impl
        self._bounded = decompress.for_numcodecs(impl)
        self._into = decompress.into_for_numcodecs(impl)
        self.decodes_prefix = getattr(impl, "codec_id", None) == "zstd"

    @classmethod
    def from_config(cls, configuration: Mapping[str, Any], loc: Loc) -> V2Compressor:
        """From the numcodecs config (with its ``id``)."""
        return cls(numcodecs_codec(configuration, loc))

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "configuration": self.impl.get_config()}

    def encode(self, data: Buffer) -> bytes:
        try:
            encoded = self.impl.encode(data)
        except MemoryError:
            raise
        except Exception as exc:  # a configuration numcodecs accepted but cannot encode with
            raise CodecError(f"v2 chunk cannot be encoded with compressor {self.impl.get_config()}: {exc}") from exc
        return encoded if isinstance(encoded, bytes) else bytes(numcodecs.compat.ensure_bytes(encoded))

    def decode(self, data: Buffer, expected: int | None) -> Buffer:
        with _decode_errors():
            if self._bounded is not None:
                return self._bounded(data, expected)
            decoded: Buffer = self.impl.decode(data)
            return decoded

    def decode_prefix_into(self, data: Buffer, out: memoryview, size: int) -> bool:
        if not self.decodes_prefix:
            return False
        try:
            return decompress.zstd_prefix_into(data, out, size)
        except CorruptChunkError as exc:
            raise type(exc)(f"v2 chunk cannot be decoded: {exc}") from None

    def decode_into(self, data: Sequence[Buffer], outs: Sequence[memoryview]) -> None:
        if self._into is None:
            super().decode_into(data, outs)
            return
        try:
            self._into(data, outs)
        except CorruptChunkError as exc:
            error = type(exc)(f"v2 chunk cannot be decoded: {exc}")
            error.item = exc.item
            raise error from None
