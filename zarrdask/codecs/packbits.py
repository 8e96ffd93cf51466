"""``packbits`` (array -> bytes): each element's bits packed end to end, no byte alignment.

Spec: https://github.com/zarr-developers/zarr-extensions/tree/main/codecs/packbits
Example: ``{"name": "packbits", "configuration": {"padding_encoding": "first_byte",
"first_bit": 0, "last_bit": 11}}`` stores the low 12 bits of each ``uint16``.

Each component (the value; real and imaginary parts of complex numbers) contributes bits
``first_bit..last_bit`` of its little-endian representation, least significant bit first;
element ``i`` is bits ``[i*k, (i+1)*k)`` of the stream, and stream bit ``j`` is bit ``j % 8``
of byte ``j // 8``. Decoding shifts the bits back to ``first_bit`` and sign-extends signed
integers. Component sizes: ``bool`` 1 bit, ``int2``/``uint2`` 2, ``int4``/``uint4``/
``float4_e2m1fn`` 4, ``float6_*`` 6, every other fixed-size number its size in bytes * 8;
``complex_<part>`` two components of its part's size.
The schema's spellings (``start_bit``/``end_bit``, ``start_byte``/``end_byte``) are read
as the README's; the README's are written, as zarrs writes them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..metadata.dtypes import SUB_BYTE_BITS, DataType
from ..errors import CorruptChunkError
from ..storage.base import Buffer
from ._config import check_keys, config_error
from .base import ArrayBytesCodec, ChunkSpec, Loc
from .registry import register_codec

_PADDING = {"none": "none", "first_byte": "first_byte", "last_byte": "last_byte",
            "start_byte": "first_byte", "end_byte": "last_byte"}
_KEYS = {"padding_encoding", "first_bit", "last_bit", "start_bit", "end_bit"}


@dataclass(frozen=True, slots=True)
class Components:
    """How a data type's elements are split for packing."""

    bits: int  #: N, the size of one component
    count: int  #: 1, or 2 for complex numbers
    signed: bool  #: sign-extend on decoding
    unsigned: np.dtype  #: the unsigned view of one component's container


def components(dtype: DataType) -> Components | None:
    """The packing layout of ``dtype``, or None when packbits cannot store it."""
    dt = dtype.dtype
    if dtype.name in SUB_BYTE_BITS:
        return Components(SUB_BYTE_BITS[dtype.name], 1, dtype.name.startswith("int"), np.dtype("u1"))
    if dtype.family == "complex" and dtype.fields:  # complex_bfloat16, complex_float4_e2m1fn, ...
        part = components(dtype.fields[0].data_type)
        return None if part is None else Components(part.bits, 2, False, part.unsigned)
    if dtype.family in ("int", "uint", "float", "ml") and dt.itemsize in (1, 2, 4, 8):
        return Components(8 * dt.itemsize, 1, dtype.family == "int", np.dtype(f"u{dt.itemsize}"))
    if dtype.family == "complex":
        half = dt.itemsize // 2
        return Components(8 * half, 2, False, np.dtype(f"u{half}"))
    return None


@register_codec
class PackBitsCodec(ArrayBytesCodec):
    name = "packbits"

    def __init__(self, padding_encoding: str = "none", first_bit: int | None = None,
                 last_bit: int | None = None) -> None:
        self.padding_encoding = padding_encoding
        self.first_bit = first_bit
        self.last_bit = last_bit

    @classmethod
    def from_config(cls, configuration: Mapping[str, Any], loc: Loc) -> PackBitsCodec:
        check_keys(configuration, _KEYS, loc)
        padding = configuration.get("padding_encoding", "none")
        if padding not in _PADDING:
            raise config_error((*loc, "configuration", "padding_encoding"),
                               f"expected 'none', 'first_byte' or 'last_byte', got {padding!r}")
        bits = []
        for key, alias in (("first_bit", "start_bit"), ("last_bit", "end_bit")):
            value = configuration.get(key, configuration.get(alias))
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
                raise config_error((*loc, "configuration", key), f"expected a non-negative integer or null, "
                                                                 f"got {value!r}")
            bits.append(value)
        if bits[0] is not None and bits[1] is not None and bits[1] < bits[0]:
            raise config_error((*loc, "configuration", "last_bit"),
                               f"must not be less than first_bit ({bits[0]}), got {bits[1]}")
        return cls(_PADDING[padding], bits[0], bits[1])

    def to_json(self) -> dict[str, Any]:
        config: dict[str, Any] = {"padding_encoding": self.padding_encoding}
        if self.first_bit is not None:
            config["first_bit"] = self.first_bit
        if self.last_bit is not None:
            config["last_bit"] = self.last_bit
        return {"name": self.name, "configuration": config}

    def validate(self, spec: ChunkSpec, loc: Loc) -> PackBitsCodec:
        layout = components(spec.dtype)
        if layout is None:
            raise config_error(loc, f"packbits cannot store data type {spec.dtype.name!r} (booleans, integers, "
                                    "floating-point and complex numbers only)")
        first, last = self._bits(layout)
        if last >= layout.bits:
            raise config_error((*loc, "configuration", "last_bit" if self.last_bit is not None else "first_bit"),
                               f"bit {last} is outside the {layout.bits}-bit components of {spec.dtype.name}")
        if last < first:
            raise config_error((*loc, "configuration", "first_bit"),
                               f"{first} is beyond the last bit {last} of {spec.dtype.name}")
        return self

    def _bits(self, layout: Components) -> tuple[int, int]:
        first = self.first_bit or 0
        return first, layout.bits - 1 if self.last_bit is None else self.last_bit

    def _sizes(self, spec: ChunkSpec) -> tuple[Components, int, int, int]:
        layout = components(spec.dtype)
        assert layout is not None  # validate() ran
        first, last = self._bits(layout)
        width = last - first + 1
        stream_bits = math.prod(spec.shape) * layout.count * width
        return layout, first, width, stream_bits

    def encode(self, array: np.ndarray, spec: ChunkSpec) -> bytes:
        layout, first, width, stream_bits = self._sizes(spec)
        values = np.ascontiguousarray(array, dtype=spec.dtype.dtype).reshape(-1).view(layout.unsigned)
        values = (values.astype(np.uint64) >> np.uint64(first)) & np.uint64((1 << width) - 1)
        bits = ((values[:, None] >> np.arange(width, dtype=np.uint64)) & np.uint64(1)).astype(np.uint8)
        packed = np.packbits(bits.reshape(-1), bitorder="little").tobytes()
        padding = bytes([-stream_bits % 8])
        if self.padding_encoding == "first_byte":
            return padding + packed
        if self.padding_encoding == "last_byte":
            return packed + padding
        return packed

    def decode(self, data: Buffer, spec: ChunkSpec) -> np.ndarray:
        layout, first, width, stream_bits = self._sizes(spec)
        expected = self.encoded_size(spec)
        if len(data) != expected:
            raise CorruptChunkError(f"packbits: chunk of shape {spec.shape} and data type {spec.dtype.name} needs "
                                    f"{expected} bytes, found {len(data)} (truncated or corrupt chunk)")
        raw = np.frombuffer(data, dtype=np.uint8)
        if self.padding_encoding != "none":
            pad, raw = (raw[0], raw[1:]) if self.padding_encoding == "first_byte" else (raw[-1], raw[:-1])
            if pad != -stream_bits % 8:
                raise CorruptChunkError(f"packbits: padding byte says {pad} bits, the chunk has "
                                        f"{-stream_bits % 8} (corrupt chunk)")
        bits = np.unpackbits(raw, bitorder="little", count=stream_bits).reshape(-1, width).astype(np.uint64)
        values = (bits << np.arange(width, dtype=np.uint64)).sum(axis=1, dtype=np.uint64)
        if layout.signed and width < layout.bits:
            negative = (values >> np.uint64(width - 1)) & np.uint64(1) == 1
            extension = np.uint64(((1 << (layout.bits - width)) - 1) << width)
            values = np.where(negative, values | extension, values)
        values = values << np.uint64(first)
        unpacked: np.ndarray = values.astype(layout.unsigned).view(spec.dtype.dtype).reshape(spec.shape)
        return unpacked

    def encoded_size(self, spec: ChunkSpec) -> int:
        stream_bits = self._sizes(spec)[3]
        return (stream_bits + 7) // 8 + (self.padding_encoding != "none")
