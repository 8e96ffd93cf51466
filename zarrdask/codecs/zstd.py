"""``zstd`` (bytes -> bytes): Zstandard compression (libzstd through the ``zstandard`` package).

Spec: https://github.com/zarr-developers/zarr-extensions/tree/main/codecs/zstd
Example: ``{"name": "zstd", "configuration": {"level": 1, "checksum": false}}``
(negative levels are the fast modes; 0 means libzstd's default).

``zstandard`` rather than numcodecs' Zstd for compressing and for single frames: it
decodes small chunks faster (figures in benchmarks/README.md), and a sharded read is
thousands of such calls; neighbouring frames of a shard are decoded as one run instead
(``decompress.zstd_into``). (De)compressor objects are not thread-safe, so each thread
keeps its own; decoding is ``decompress.zstd``, held to the chunk's size.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any, cast

import zstandard

from ..storage.base import Buffer
from . import decompress
from ._config import check_keys, config_error, get_int
from .base import BytesBytesCodec, Loc
from .registry import register_codec

_local = threading.local()


@register_codec
class ZstdCodec(BytesBytesCodec):
    name = "zstd"
    numcodecs_ids = ("zstd",)

    @classmethod
    def checksummed(cls, configuration: Mapping[str, Any]) -> bool:
        """With ``checksum``, each frame ends in an XXH64 of its content, checked on decoding."""
        return bool(configuration.get("checksum"))

    @classmethod
    def from_numcodecs(cls, config: Mapping[str, Any]) -> dict[str, Any]:
        return {"name": "zstd", "configuration": {"level": config.get("level", 0),
                                                    "checksum": config.get("checksum", False)}}

    def __init__(self, level: int = 0, checksum: bool = False) -> None:
        self.level = level
        self.checksum = checksum

    @classmethod
    def from_config(cls, configuration: Mapping[str, Any], loc: Loc) -> ZstdCodec:
        check_keys(configuration, {"level", "checksum"}, loc)
        checksum = configuration.get("checksum", False)
        if not isinstance(checksum, bool):
            raise config_error((*loc, "configuration", "checksum"), f"expected true or false, got {checksum!r}")
        return cls(get_int(configuration, "level", loc, default=0, low=-131072, high=22), checksum)

    def to_json(self) -> dict[str, Any]:
        return {"name": "zstd", "configuration": {"level": self.level, "checksum": self.checksum}}

    def _compressor(self) -> zstandard.ZstdCompressor:
        key = (self.level, self.checksum)
        cache = getattr(_local, "compressors", None)
        if cache is None:
            cache = _local.compressors = {}
        c = cache.get(key)
        if c is None:
            c = cache[key] = zstandard.ZstdCompressor(level=self.level, write_checksum=self.checksum,
                                                      write_content_size=True)
        return c

    def encode(self, data: Buffer) -> bytes:
        return self._compressor().compress(data)

    def encode_many(self, data: Sequence[Buffer]) -> list[Buffer]:
        """The batch in one call that holds no GIL (each frame what ``compress`` makes of
        its item: the same compressor, parameters and content size; tests/codecs check it)."""
        if not data:
            return []
        frames = self._compressor().multi_compress_to_buffer(list(data), threads=1)
        # (views: a copy is a GIL step per chunk; a BufferSegment exports its bytes, untyped)
        return [memoryview(cast(Any, frames[i])) for i in range(len(frames))]

    def decode(self, data: Buffer, expected: int | None) -> Buffer:
        return decompress.zstd(data, expected)

    def decode_into(self, data: Sequence[Buffer], outs: Sequence[memoryview]) -> None:
        decompress.zstd_into(data, outs)

    decodes_prefix = True

    def decode_prefix_into(self, data: Buffer, out: memoryview, size: int) -> bool:
        return decompress.zstd_prefix_into(data, out, size)
