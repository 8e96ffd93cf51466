"""``crc32c`` (bytes -> bytes): appends a 4-byte little-endian CRC32C, verified on decode.

Spec: https://zarr-specs.readthedocs.io/en/latest/v3/codecs/crc32c/index.html
Example: ``{"name": "crc32c"}`` or the short-hand ``"crc32c"``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from crc32c import crc32c

from ..errors import ChecksumError, CorruptChunkError
from ..storage.base import Buffer
from ._config import check_keys
from .base import BytesBytesCodec, Loc
from .registry import register_codec


@register_codec
class Crc32cCodec(BytesBytesCodec):
    name = "crc32c"
    numcodecs_ids = ("crc32c",)  # (numcodecs' CRC32C appends the same 4 bytes)

    @classmethod
    def checksummed(cls, configuration: Mapping[str, Any]) -> bool:
        return True

    def __init__(self, verify: bool = True) -> None:
        self.verify = verify

    @classmethod
    def from_config(cls, configuration: Mapping[str, Any], loc: Loc) -> Crc32cCodec:
        check_keys(configuration, set(), loc)
        return cls()

    def to_json(self) -> dict[str, Any]:
        return {"name": "crc32c"}

    def encode(self, data: Buffer) -> bytes:
        return bytes(data) + crc32c(data).to_bytes(4, "little")

    def decode(self, data: Buffer, expected: int | None) -> Buffer:
        if len(data) < 4:
            raise CorruptChunkError(f"crc32c: {len(data)} bytes is too short to hold a checksum (truncated)")
        view = memoryview(data)
        if not self.verify:
            return view[:-4]
        payload, stored = view[:-4], int.from_bytes(view[-4:], "little")
        computed = crc32c(payload)
        if computed != stored:
            raise ChecksumError(f"crc32c checksum mismatch: stored 0x{stored:08x}, computed 0x{computed:08x}")
        return payload

    def without_checksums(self) -> Crc32cCodec:
        return Crc32cCodec(verify=False)

    def encoded_size(self, size: int) -> int | None:
        return size + 4
