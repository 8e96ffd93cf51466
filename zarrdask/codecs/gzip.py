"""``gzip`` (bytes -> bytes): gzip-format compression (numcodecs, C zlib; decoded by
``decompress.gzip``, held to the chunk's size).

Spec: https://zarr-specs.readthedocs.io/en/latest/v3/codecs/gzip/index.html
Example: ``{"name": "gzip", "configuration": {"level": 5}}`` (level 0..9).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from numcodecs import GZip

from ..storage.base import Buffer
from . import decompress
from ._config import check_keys, get_int
from .base import BytesBytesCodec, Loc
from .registry import register_codec


@register_codec
class GzipCodec(BytesBytesCodec):
    name = "gzip"
    numcodecs_ids = ("gzip",)

    @classmethod
    def checksummed(cls, configuration: Mapping[str, Any]) -> bool:
        """The gzip trailer's CRC-32 of the content, checked on decoding."""
        return True

    @classmethod
    def from_numcodecs(cls, config: Mapping[str, Any]) -> dict[str, Any]:
        return {"name": "gzip", "configuration": {"level": config.get("level", 5)}}

    def __init__(self, level: int = 5) -> None:
        self.level = level
        self._impl = GZip(level)

    @classmethod
    def from_config(cls, configuration: Mapping[str, Any], loc: Loc) -> GzipCodec:
        check_keys(configuration, {"level"}, loc)
        return cls(get_int(configuration, "level", loc, low=0, high=9))

    def to_json(self) -> dict[str, Any]:
        return {"name": "gzip", "configuration": {"level": self.level}}

    def encode(self, data: Buffer) -> bytes:
        return bytes(self._impl.encode(data))

    def decode(self, data: Buffer, expected: int | None) -> Buffer:
        return decompress.gzip(data, expected)
