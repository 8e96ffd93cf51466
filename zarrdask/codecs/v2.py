"""The v2 chunk encoding: ``order`` + numcodecs ``filters`` + numcodecs ``compressor``.

A v2 chunk is the chunk's elements in C or F order, passed through each filter and
then the compressor. Object arrays carry their object codec (``vlen-utf8``,
``vlen-bytes``, ``json2``, ``msgpack2``) as the first filter. ``pickle`` is refused:
decoding it would run code from the store.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numcodecs
import numpy as np
from numcodecs.errors import UnknownCodecError

from ..metadata.dtypes import stored_dtype_v2
from ..errors import CodecError, CorruptChunkError, MetadataError, Problem, UnknownExtensionError
from ..metadata.v2 import ArrayMetadataV2
from ..storage.base import Buffer
from . import decompress
from .base import decode_each, slot_views
from .registry import unknown_numcodecs_id
from .vlen import check_item_count

__all__ = ["V2Pipeline"]

_VLEN_IDS = ("vlen-utf8", "vlen-bytes", "vlen-array")
_REFUSED = {"pickle": "the pickle object codec would execute code from the store; it is refused"}


def _codec(config: Mapping[str, Any], loc: tuple[str | int, ...]) -> Any:
    codec_id = config.get("id")
    if codec_id in _REFUSED:
        raise MetadataError([Problem(loc, _REFUSED[codec_id])])
    try:
        return numcodecs.get_codec(dict(config))
    except UnknownCodecError:
        raise UnknownExtensionError([unknown_numcodecs_id(codec_id, (*loc, "id"))]) from None
    except (ValueError, TypeError) as exc:
        raise MetadataError([Problem(loc, f"expected settings numcodecs' {codec_id!r} codec takes: {exc}")]) from None


class V2Pipeline:
    """Encode/decode v2 chunks: a :class:`~zarrdask.codecs.protocol.ChunkPipeline`, its
    bytes stage the compressor (v2 stores no shards)."""

    sharding = None

    def __init__(self, metadata: ArrayMetadataV2) -> None:
        self.shape = metadata.chunk_shape
        self.order = metadata.order
        self.dtype = metadata.data_type.dtype
        self.stored = stored_dtype_v2(metadata.data_type)
        self.filters = [_codec(f, ("filters", i)) for i, f in enumerate(metadata.filters or ())]
        self.compressor = _codec(metadata.compressor, ("compressor",)) if metadata.compressor else None
        self.is_object = self.dtype.kind == "O"
        if self.is_object and not self.filters:
            raise MetadataError([Problem(("filters",), "an object (|O) array needs an object codec filter, e.g. vlen-utf8")])
        self._decompress = decompress.for_numcodecs(self.compressor) if self.compressor is not None else None
        # what the compressor decodes to, when fixed: the chunk's bytes (filters may change the size)
        n = math.prod(self.shape)
        self._compressed_size = None if self.filters or self.is_object else n * self.stored.itemsize
        # a chunk that is only compressed bytes in C order can be decompressed straight into memory
        plain = not self.filters and not self.is_object and self.order == "C" and self.stored == self.dtype
        self._into = decompress.into_for_numcodecs(self.compressor) if plain and self.compressor else None
        #: decode_into writes straight into the chunk's memory (no copy)
        self.decodes_into = self._into is not None

    @property
    def axis_permutation(self) -> tuple[int, ...] | None:
        """The chunk's axes as stored (reversed in F order), None when filters recode it."""
        if self.filters or self.is_object:
            return None
        axes = tuple(range(len(self.shape)))
        return axes if self.order == "C" else axes[::-1]

    @property
    def has_bytes_stage(self) -> bool:
        return self.compressor is not None

    def without_checksums(self) -> V2Pipeline:
        """Itself: a v2 chunk's checksum filters are verified by numcodecs as they decode."""
        return self

    def encoded_size(self) -> int | None:
        """The stored size of a chunk kept as its plain bytes (no filter, no compressor)."""
        plain = not self.filters and not self.is_object and self.compressor is None
        return math.prod(self.shape) * self.stored.itemsize if plain else None

    def decode_into(self, data: Sequence[Buffer], out: np.ndarray[Any, Any],
                    slots: Sequence[int] | None = None) -> None:
        """Decode chunks into the stack ``out`` (C-contiguous, ``(n, *shape)``): ``data[i]``
        into ``out[slots[i]]`` (default: in order), as :meth:`CodecPipeline.decode_into`
        does: straight into its memory when only a zstd or blosc compressor stands between,
        else decoded and copied. A failure names its chunk as the error's ``item``."""
        slots = range(len(data)) if slots is None else slots
        if self._into is None:
            decode_each(self.decode, data, out, slots)
            return
        try:
            self._into(data, slot_views(out, slots))
        except CorruptChunkError as exc:
            error = type(exc)(f"v2 chunk cannot be decoded: {exc}")
            error.item = exc.item
            raise error from None

    def decode_bytes_stage(self, data: Buffer, stop: int = 0) -> Buffer:
        """Undo the compressor (v2's one bytes->bytes stage; ``stop=1`` leaves it undone)."""
        if stop or self.compressor is None:
            return data
        if self._decompress is not None:
            return self._decompress(data, self._compressed_size)
        decoded: Buffer = self.compressor.decode(data)
        return decoded

    def decode(self, data: Buffer) -> np.ndarray[Any, Any]:
        n = math.prod(self.shape)
        try:
            data = self.decode_bytes_stage(data)
            for f in reversed(self.filters):
                if f.codec_id in _VLEN_IDS:
                    check_item_count(f.codec_id, data, n)
                data = f.decode(data)
        except CorruptChunkError as exc:
            raise type(exc)(f"v2 chunk cannot be decoded: {exc}") from None
        except MemoryError:
            raise
        except Exception as exc:  # numcodecs backends raise assorted types on corrupt input
            raise CorruptChunkError(f"v2 chunk cannot be decoded: {exc}") from exc
        if self.is_object:
            flat = np.asarray(data, dtype=object).reshape(-1)
        else:
            buf = data if not isinstance(data, np.ndarray) else np.ascontiguousarray(data).view(np.uint8)
            if len(memoryview(buf).cast("B")) != n * self.stored.itemsize:
                raise CorruptChunkError(
                    f"v2 chunk decodes to {len(memoryview(buf).cast('B'))} bytes, expected {n * self.stored.itemsize} "
                    f"for chunk shape {self.shape} of {self.stored}"
                )
            flat = np.frombuffer(buf, dtype=self.stored)
        if flat.size != n:
            raise CorruptChunkError(f"v2 chunk holds {flat.size} items, expected {n}")
        arr: np.ndarray[Any, Any] = flat.reshape(self.shape, order=self.order)
        return arr if arr.dtype == self.dtype else arr.astype(self.dtype)

    def encode(self, array: np.ndarray[Any, Any]) -> bytes:
        data: Any = np.asarray(array, dtype=self.stored if not self.is_object else object).ravel(order=self.order)
        try:
            for f in self.filters:
                data = f.encode(data)
            return self.encode_bytes_stage(data)
        except MemoryError:
            raise
        except Exception as exc:  # a configuration numcodecs accepted but cannot encode with
            raise CodecError(f"v2 chunk cannot be encoded with {self.to_json()[0]}: {exc}") from exc

    def encode_bytes_stage(self, data: Buffer) -> bytes:
        """Compress a serialized chunk (with no compressor: its bytes as they are)."""
        encoded: Any = data if self.compressor is None else self.compressor.encode(data)
        return encoded if isinstance(encoded, bytes) else bytes(numcodecs.compat.ensure_bytes(encoded))

    def to_json(self) -> list[dict[str, Any]]:
        """One record: the numcodecs ``filters`` and ``compressor`` configurations."""
        return [{
            "filters": [f.get_config() for f in self.filters] or None,
            "compressor": self.compressor.get_config() if self.compressor else None,
        }]
