"""``zstd`` (bytes -> bytes): Zstandard compression (numcodecs, C libzstd).

Spec: https://github.com/zarr-developers/zarr-extensions/tree/main/codecs/zstd
Example: ``{"name": "zstd", "configuration": {"level": 1, "checksum": false}}``
(negative levels are the fast modes).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from numcodecs import Zstd

from ..errors import CorruptChunkError
from ._config import check_keys, config_error, get_int
from .base import BytesBytesCodec, Loc
from .registry import register_codec


@register_codec
class ZstdCodec(BytesBytesCodec):
    name = "zstd"

    def __init__(self, level: int = 0, checksum: bool = False) -> None:
        self.level = level
        self.checksum = checksum
        self._impl = Zstd(level=level, checksum=checksum)

    @classmethod
    def from_config(cls, configuration: Mapping[str, Any], loc: Loc) -> ZstdCodec:
        check_keys(configuration, {"level", "checksum"}, loc)
        checksum = configuration.get("checksum", False)
        if not isinstance(checksum, bool):
            raise config_error((*loc, "configuration", "checksum"), f"expected true or false, got {checksum!r}")
        return cls(get_int(configuration, "level", loc, default=0, low=-131072, high=22), checksum)

    def to_json(self) -> dict[str, Any]:
        return {"name": "zstd", "configuration": {"level": self.level, "checksum": self.checksum}}

    def encode(self, data: bytes | memoryview) -> bytes:
        return self._impl.encode(data)

    def decode(self, data: bytes | memoryview) -> bytes | memoryview:
        try:
            return self._impl.decode(data)
        except RuntimeError as exc:
            raise CorruptChunkError(f"zstd: cannot decompress ({exc})") from exc
