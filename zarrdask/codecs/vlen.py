"""``vlen-utf8`` and ``vlen-bytes`` (array -> bytes): variable-length strings and bytes.

zarr-python's extension codecs for the ``string`` and ``variable_length_bytes`` data
types; the layout is numcodecs' VLenUTF8 / VLenBytes (a count, then length-prefixed items).
Examples: ``{"name": "vlen-utf8"}``, ``{"name": "vlen-bytes"}``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from numcodecs import VLenBytes, VLenUTF8

from ..errors import CorruptChunkError
from ..storage.base import Buffer
from ._config import check_keys, config_error
from .base import ArrayBytesCodec, ChunkSpec, Loc
from .registry import register_codec


class _VLenCodec(ArrayBytesCodec):
    _impl: Any
    _families: tuple[str, ...]

    @classmethod
    def from_config(cls, configuration: Mapping[str, Any], loc: Loc) -> _VLenCodec:
        check_keys(configuration, set(), loc)
        return cls()

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "configuration": {}}

    def validate(self, spec: ChunkSpec, loc: Loc) -> _VLenCodec:
        if spec.dtype.family not in self._families:
            raise config_error(loc, f"{self.name} cannot store data type {spec.dtype.name!r}")
        return self

    def encode(self, array: np.ndarray, spec: ChunkSpec) -> bytes:
        flat = np.asarray(array, dtype=object).reshape(-1)
        if not flat.flags.writeable:  # (numcodecs' VLenBytes takes writable buffers only: a broadcast value)
            flat = flat.copy()
        return bytes(self._impl.encode(flat))

    def decode(self, data: Buffer, spec: ChunkSpec) -> np.ndarray:
        n = math.prod(spec.shape)
        check_item_count(self.name, data, n)
        try:
            flat = self._impl.decode(data)
        except (ValueError, RuntimeError) as exc:
            raise CorruptChunkError(f"{self.name}: cannot decode ({exc})") from exc
        decoded: np.ndarray = flat.reshape(spec.shape)
        return decoded


def check_item_count(name: str, data: Buffer, n: int) -> None:
    """The numcodecs vlen layout starts with its item count (little-endian uint32), which
    numcodecs allocates before reading the items: it must be the chunk's ``n`` items."""
    view = memoryview(data).cast("B")
    if view.nbytes < 4:
        raise CorruptChunkError(f"{name}: {view.nbytes} bytes cannot hold the 4-byte item count (truncated)")
    count = int.from_bytes(view[:4], "little")
    if count != n:
        raise CorruptChunkError(f"{name}: chunk holds {count} items, expected {n}")


@register_codec
class VLenUTF8Codec(_VLenCodec):
    name = "vlen-utf8"
    numcodecs_ids = ("vlen-utf8",)
    _impl = VLenUTF8()
    _families = ("string", "object")


@register_codec
class VLenBytesCodec(_VLenCodec):
    name = "vlen-bytes"
    numcodecs_ids = ("vlen-bytes",)
    _impl = VLenBytes()
    _families = ("bytes", "object")
