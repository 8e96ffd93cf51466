"""Whether an array's stored chunks carry a checksum of their data, so that ``verify``
can tell a flipped byte from good data rather than only see that the chunk decodes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...codecs.v2 import V2Compressor, V2Serializer

__all__ = ["carries_checksum"]

#: codecs whose encoded bytes always hold a checksum their decoder checks (gzip: CRC-32,
#: zlib: Adler-32, bz2 and xz: CRC) — v3 names and v2 (numcodecs) ids
_ALWAYS = {"crc32c", "gzip", "zlib", "bz2", "lzma", "crc32", "adler32", "fletcher32", "jenkins_lookup3"}


def _checked(name: str, config: dict[str, Any]) -> bool:
    name = name.removeprefix("numcodecs.")
    if name == "zstd":
        return bool(config.get("checksum"))
    if name == "lzma":
        return bool(config.get("format", 1) != 3)  # (FORMAT_RAW has no integrity check)
    return name in _ALWAYS


def carries_checksum(codecs: Sequence[Any]) -> bool:
    """True when every stored chunk's data passes a checksummed codec: one in the chain
    (v3, inside or after sharding; the shard index's own checksum does not count), a v2
    filter or the v2 compressor."""
    for codec in codecs:
        if isinstance(codec, str):
            if _checked(codec, {}):
                return True
            continue
        config = codec.get("configuration") or {}
        if codec["name"] in (V2Serializer.name, V2Compressor.name):  # numcodecs configs, with their ids
            # (a compressor's own settings may be named "filters": lzma's)
            parts = config.get("filters") or () if codec["name"] == V2Serializer.name else [config]
            if any(_checked(p["id"], p) for p in parts):
                return True
            continue
        if codec["name"] == "sharding_indexed":
            if carries_checksum(config.get("codecs", ())):
                return True
        elif _checked(codec["name"], config):
            return True
    return False
