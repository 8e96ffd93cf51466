"""Other numcodecs codecs under their v3 names ``numcodecs.<id>`` (as zarr-python writes them).

Array -> array: ``numcodecs.delta``, ``fixedscaleoffset``, ``quantize``, ``astype``,
``packbits`` (``numcodecs.bitround`` is ``bitround``'s alias: bitround.py). Bytes -> bytes:
``numcodecs.zlib``, ``lz4``, ``bz2``, ``lzma``, ``shuffle``, ``adler32``, ``crc32``,
``fletcher32``, ``jenkins_lookup3``, ``gzip``, ``zstd``, ``blosc``. The configuration is the numcodecs codec's own (without ``id``).
Example: ``{"name": "numcodecs.delta", "configuration": {"dtype": "<i4"}}``.

Each says whether its bytes carry a checksum its decoder checks (``CHECKSUMMED``), which
also answers for a v2 ``filters``/``compressor`` entry of that id.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import numcodecs
import numpy as np

from ..metadata.dtypes import data_type_from_numpy
from ..errors import CodecError, CorruptChunkError
from ..storage.base import Buffer
from . import decompress
from .base import ArrayArrayCodec, BytesBytesCodec, ChunkSpec, Loc
from .registry import register_codec

ARRAY_TO_ARRAY = ("delta", "fixedscaleoffset", "quantize", "astype", "packbits")
BYTES_TO_BYTES = ("zlib", "lz4", "bz2", "lzma", "shuffle", "adler32", "crc32", "fletcher32",
                  "jenkins_lookup3", "gzip", "zstd", "blosc")


def _always(config: Mapping[str, Any]) -> bool:
    return True


#: the bytes->bytes ids whose encoded bytes hold a checksum their decoder checks, given the
#: configuration: the checksum codecs themselves; zlib (Adler-32), gzip (CRC-32) and bz2
#: (CRC) always; lzma unless raw (format 3 keeps no integrity check); zstd with ``checksum``
CHECKSUMMED: dict[str, Callable[[Mapping[str, Any]], bool]] = {
    **dict.fromkeys(("adler32", "crc32", "fletcher32", "jenkins_lookup3", "zlib", "gzip", "bz2"), _always),
    "lzma": lambda config: bool(config.get("format", 1) != 3),
    "zstd": lambda config: bool(config.get("checksum")),
}


def _build(codec_id: str, configuration: Mapping[str, Any], loc: Loc) -> Any:
    try:
        return numcodecs.get_codec({"id": codec_id, **configuration})
    except (TypeError, ValueError, KeyError) as exc:
        raise CodecError(f"{'/'.join(map(str, loc))}: invalid configuration for numcodecs.{codec_id}: {exc}") from None


class _NumcodecsMixin:
    codec_id: ClassVar[str]
    name: ClassVar[str]

    @classmethod
    def checksummed(cls, configuration: Mapping[str, Any]) -> bool:
        fact = CHECKSUMMED.get(cls.codec_id)
        return fact is not None and fact(configuration)

    def __init__(self, configuration: Mapping[str, Any], impl: Any) -> None:
        self.configuration = dict(configuration)
        self.impl = impl

    @classmethod
    def from_config(cls, configuration: Mapping[str, Any], loc: Loc) -> Any:
        return cls(configuration, _build(cls.codec_id, configuration, loc))

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "configuration": dict(self.configuration)}


class NumcodecsArrayArray(_NumcodecsMixin, ArrayArrayCodec):
    """A numcodecs filter applied to a whole chunk (it may change dtype, or flatten)."""

    def resolve(self, spec: ChunkSpec) -> ChunkSpec:
        cfg = self.configuration
        if self.codec_id == "packbits":
            n = math.prod(spec.shape)
            return ChunkSpec((1 + math.ceil(n / 8),), data_type_from_numpy("uint8"), 0)
        encoded = cfg.get("astype") or cfg.get("encode_dtype")
        if encoded is None:
            return spec
        dt = data_type_from_numpy(np.dtype(encoded).newbyteorder("="))
        return ChunkSpec(spec.shape, dt, dt.default_fill())

    def encode(self, array: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        out = np.asarray(_encode(self, np.ascontiguousarray(array)))
        target = self.resolve(spec)
        return out.astype(target.dtype.dtype, copy=False).reshape(target.shape)

    def decode(self, array: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        try:
            out = np.asarray(self.impl.decode(np.ascontiguousarray(array)))
        except (ValueError, RuntimeError) as exc:
            raise CorruptChunkError(f"{self.name}: cannot decode ({exc})") from exc
        return out.astype(spec.dtype.dtype, copy=False).reshape(spec.shape)


def _encode(codec: _NumcodecsMixin, data: Any) -> Any:
    """``codec.impl.encode(data)``; a configuration numcodecs accepted but cannot encode
    with (a string level, a huge one) is a CodecError."""
    return _call(codec.impl.encode, data, CodecError, f"{codec.name} {codec.configuration}: cannot encode")


def _call(fn: Any, data: Any, error: type[CodecError], what: str) -> Any:
    """``fn(data)``, any numcodecs backend's own exception (they each raise their own
    type) becoming ``error`` with ``what``; MemoryError passes through."""
    try:
        return fn(data)
    except MemoryError:
        raise
    except Exception as exc:
        raise error(f"{what} ({exc})") from exc


class NumcodecsBytesBytes(_NumcodecsMixin, BytesBytesCodec):
    """A numcodecs compressor or checksum applied to a chunk's bytes."""

    def encode(self, data: Buffer) -> bytes:
        return bytes(_encode(self, data))

    def __init__(self, configuration: Mapping[str, Any], impl: Any) -> None:
        super().__init__(configuration, impl)
        self._bounded = decompress.for_numcodecs(impl)

    def decode(self, data: Buffer, expected: int | None) -> Buffer:
        if self._bounded is not None:
            return self._bounded(data, expected)
        decoded: Buffer = _call(self.impl.decode, data, CorruptChunkError, f"{self.name}: cannot decode")
        return decoded


for _id in ARRAY_TO_ARRAY:
    register_codec(type(f"Numcodecs_{_id}", (NumcodecsArrayArray,),
                        {"codec_id": _id, "name": f"numcodecs.{_id}", "numcodecs_ids": (_id,)}))
for _id in BYTES_TO_BYTES:
    register_codec(type(f"Numcodecs_{_id}", (NumcodecsBytesBytes,),
                        {"codec_id": _id, "name": f"numcodecs.{_id}", "numcodecs_ids": (_id,)}))
