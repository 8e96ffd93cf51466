"""``bytes`` (array -> bytes): the chunk's elements in C order, little or big endian.

Spec: https://zarr-specs.readthedocs.io/en/latest/v3/codecs/bytes/index.html
Names: ``bytes`` (alias ``endian``, its old name). Example: ``{"name": "bytes", "configuration": {"endian": "little"}}``.

Structured types (``struct``, complex pairs such as ``complex_bfloat16``) swap field by field.
Types narrower than a byte (``int4``, ``float4_e2m1fn``, ...) are one value per byte, the
byte's upper bits ignored on reading (zarr-extensions).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..metadata.dtypes import SUB_BYTE_BITS, DataType
from ..errors import CorruptChunkError
from ..storage.base import Buffer
from ._config import check_keys, config_error, get_choice
from .base import ArrayBytesCodec, ChunkSpec, Loc
from .registry import register_codec


@register_codec
class BytesCodec(ArrayBytesCodec):
    name = "bytes"
    aliases = ("endian",)

    def __init__(self, endian: str | None = "little") -> None:
        self.endian = endian

    @classmethod
    def from_config(cls, configuration: Mapping[str, Any], loc: Loc) -> BytesCodec:
        check_keys(configuration, {"endian"}, loc)
        return cls(get_choice(configuration, "endian", ("little", "big", None), loc, default=None))

    def to_json(self) -> dict[str, Any]:
        if self.endian is None:
            return {"name": "bytes"}
        return {"name": "bytes", "configuration": {"endian": self.endian}}

    def validate(self, spec: ChunkSpec, loc: Loc) -> BytesCodec:
        dt = spec.dtype.dtype
        if dt.kind == "O":
            raise config_error(loc, f"the bytes codec cannot store variable-length data type {spec.dtype.name!r}; "
                                    "use vlen-utf8 or vlen-bytes")
        raw = dt.kind in "SV" and dt.type in (np.bytes_, np.void) and not spec.dtype.fields
        if self.endian is None and dt.itemsize > 1 and not raw:
            # the configuration is optional in practice; zarr-python defaults to little, and so
            # does the legacy ``structured`` data type
            return BytesCodec("little")
        return self

    def _stored(self, dt: np.dtype) -> np.dtype:
        """A struct's dtype with every field in the stored byte order (a struct swaps field by field)."""
        return dt.newbyteorder("<" if self.endian == "little" else ">")

    def _swap(self, dt: np.dtype) -> bool:
        """True when the stored byte order differs from this machine's."""
        if self.endian is None or dt.itemsize == 1 or dt.kind == "S" or (dt.kind == "V" and dt.type is np.void):
            return False
        return (self.endian == "little") != (sys.byteorder == "little")

    @staticmethod
    def _byteswap(arr: np.ndarray) -> np.ndarray:
        if arr.dtype.kind == "V":  # ml_dtypes types (bfloat16, ...) swap through an unsigned view
            return arr.view(f"u{arr.dtype.itemsize}").byteswap().view(arr.dtype)
        return arr.byteswap()

    def encode(self, array: np.ndarray, spec: ChunkSpec) -> Buffer:
        arr = np.ascontiguousarray(array, dtype=spec.dtype.dtype)
        if spec.dtype.fields:
            return arr.astype(self._stored(arr.dtype), copy=False).tobytes()
        if self._swap(arr.dtype):
            arr = self._byteswap(arr)
        # the values' own memory, not a copy: the bytes stage reads it (the pipeline copies
        # it only when no bytes->bytes codec follows)
        return arr.reshape(-1).view(np.uint8).data

    def decode(self, data: Buffer, spec: ChunkSpec) -> np.ndarray:
        dt = spec.dtype.dtype
        if len(data) != spec.nbytes:
            raise CorruptChunkError(
                f"bytes codec: chunk of shape {spec.shape} and data type {spec.dtype.name} needs "
                f"{spec.nbytes} bytes, found {len(data)} (truncated or corrupt chunk)"
            )
        mask = _value_mask(spec.dtype)
        if mask is not None:  # one-byte values or pairs of them: no byte order
            return (np.frombuffer(data, dtype=np.uint8) & np.uint8(mask)).view(dt).reshape(spec.shape)
        if spec.dtype.fields:
            return np.frombuffer(data, dtype=self._stored(dt)).astype(dt, copy=False).reshape(spec.shape)
        arr = np.frombuffer(data, dtype=dt).reshape(spec.shape)
        return self._byteswap(arr) if self._swap(dt) else arr

    def encoded_size(self, spec: ChunkSpec) -> int | None:
        return spec.nbytes

    def reinterprets(self, spec: ChunkSpec) -> bool:
        dt = spec.dtype.dtype
        return (dt.kind != "O" and not spec.dtype.fields and _value_mask(spec.dtype) is None
                and not self._swap(dt))


def _value_mask(dtype: DataType) -> int | None:
    """The bits a sub-byte type (or a complex pair of them) reads from each byte, else None."""
    name = dtype.fields[0].data_type.name if dtype.family == "complex" and dtype.fields else dtype.name
    bits = SUB_BYTE_BITS.get(name) if name != "bool" else None
    return None if bits is None else (1 << bits) - 1
