"""``zfp`` (array -> bytes): zfp compression of the chunk, without zfp's own header.

Spec: zarr-extensions ``codecs/zfp`` (registered; originated in zarrs). Example:
``{"name": "zfp", "configuration": {"mode": "fixed_accuracy", "tolerance": 0.05}}``.
Modes ``reversible``, ``fixed_accuracy``, ``fixed_rate``, ``fixed_precision`` through the
``zfpy`` binding (``pip install zarrdask[zfp]``); ``expert`` is parsed but refused when an
array uses it, as zfpy does not expose zfp's expert parameters. Chunks of 1 to 4
dimensions map to zfp fields (``[nw, nz, ny, nx]`` = the chunk shape), a 0-d chunk to a
1-d field of one value. Data types: ``int32``, ``int64``, ``float32``, ``float64``
directly; ``int8``/``int16``/``uint8``/``uint16`` promoted to int32 and ``float16`` cast to
float32 as the document prescribes. ``uint32``/``uint64`` are refused: the document lists
them but does not say how they map to zfp's signed types.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

from ..errors import CodecError, CorruptChunkError
from ..storage.base import Buffer
from ._config import check_keys, config_error, get_choice, get_int
from .base import ArrayBytesCodec, ChunkSpec, Loc
from .registry import register_codec

_MODES = {
    "reversible": (),
    "expert": ("minbits", "maxbits", "maxprec", "minexp"),
    "fixed_accuracy": ("tolerance",),
    "fixed_rate": ("rate",),
    "fixed_precision": ("precision",),
}
#: zfp_stream_set_rate's lower bound on bits per block (1 sign + exponent bits), by zfp type
_MIN_RATE_BITS = {"float32": 9, "float64": 12}


class _Header(NamedTuple):
    """zfp's header for one field and mode: its bits, as an int read little-endian."""

    value: int
    bits: int


class _Field(NamedTuple):
    """How one data type reaches zfp: the native dtype zfp sees and the promotion shift."""

    native: np.dtype[Any]
    bits: int  # the source's width for integer promotion (0: none)
    unsigned: bool


def _field_for(dtype: np.dtype[Any]) -> _Field | None:
    if dtype in (np.dtype("int32"), np.dtype("int64"), np.dtype("float32"), np.dtype("float64")):
        return _Field(dtype.newbyteorder("="), 0, False)
    if dtype == np.dtype("float16"):
        return _Field(np.dtype("float32"), 0, False)
    if dtype.kind in "iu" and dtype.itemsize in (1, 2):
        return _Field(np.dtype("int32"), dtype.itemsize * 8, dtype.kind == "u")
    return None


def _zfpy() -> Any:
    try:
        return importlib.import_module("zfpy")  # optional (an extra): imported on first use
    except ImportError:
        raise CodecError("the zfp codec needs the zfpy package: pip install 'zarrdask[zfp]'") from None


@register_codec
class ZfpCodec(ArrayBytesCodec):
    name = "zfp"

    def __init__(self, mode: str, params: Mapping[str, Any]) -> None:
        self.mode = mode
        self.params = dict(params)
        self._headers: dict[tuple[tuple[int, ...], str], _Header] = {}

    @classmethod
    def from_config(cls, configuration: Mapping[str, Any], loc: Loc) -> ZfpCodec:
        mode = get_choice(configuration, "mode", tuple(_MODES), loc)
        check_keys(configuration, {"mode", *_MODES[mode]}, loc)
        params: dict[str, Any] = {}
        for key in _MODES[mode]:
            if key in ("tolerance", "rate"):
                value = configuration.get(key)
                if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                    raise config_error((*loc, "configuration", key),
                                       f"expected a non-negative number, got {value!r}")
                params[key] = value
            else:
                params[key] = get_int(configuration, key, loc, low=None if key == "minexp" else 0)
        return cls(mode, params)

    def to_json(self) -> dict[str, Any]:
        return {"name": "zfp", "configuration": {"mode": self.mode, **self.params}}

    def validate(self, spec: ChunkSpec, loc: Loc) -> ZfpCodec:
        if self.mode == "expert":
            raise config_error((*loc, "configuration", "mode"),
                               "mode 'expert' is not supported: the zfpy binding does not expose zfp's expert "
                               "parameters (minbits, maxbits, maxprec, minexp)")
        if len(spec.shape) > 4:
            raise config_error(loc, f"zfp compresses chunks of at most 4 dimensions, got {len(spec.shape)} "
                                    f"(chunk shape {spec.shape})")
        field = None if spec.dtype.fields else _field_for(spec.dtype.dtype)
        if field is None:
            raise config_error(loc, f"zfp does not take data type {spec.dtype.name!r}; it takes int32, int64, "
                                    "float32, float64 and, promoted, int8, int16, uint8, uint16, float16")
        least = _MIN_RATE_BITS.get(field.native.name)
        ndim = max(len(spec.shape), 1)
        if self.mode == "fixed_rate" and least is not None and math.floor((1 << (2 * ndim)) * self.params["rate"] + 0.5) < least:
            # zfp keeps at least this many bits per float block; zfpy sets the rate without the
            # type, so it would write and read such streams with smaller blocks than zfp does
            raise config_error((*loc, "configuration", "rate"),
                               f"{self.params['rate']} is below zfp's minimum of {least} bits per {ndim}-d block "
                               f"of {field.native.name}, which the zfpy binding does not apply")
        return self

    def _kwargs(self) -> dict[str, Any]:
        if self.mode == "fixed_accuracy":
            return {"tolerance": float(self.params["tolerance"])}
        if self.mode == "fixed_rate":
            return {"rate": float(self.params["rate"])}
        if self.mode == "fixed_precision":
            return {"precision": int(self.params["precision"])}
        return {}

    def _stream_bound(self, shape: tuple[int, ...], native: np.dtype[Any]) -> int:
        """The most bytes a zfp stream of this field can take (or a decoder read), padded to
        zfp's 64-bit words: per block at most two bits per value and bit plane plus the
        exponent (capped at zfp's ZFP_MAX_BITS), or the fixed rate's block size."""
        values = 1 << (2 * len(shape))
        blocks = math.prod(-(-n // 4) for n in shape)
        per_block = min(16658, 2 * values * (native.itemsize * 8 + 1) + 64)
        if self.mode == "fixed_rate":
            per_block = max(per_block, math.floor(values * self.params["rate"] + 0.5) + 64)
        return (blocks * per_block // 64 + 2) * 8

    def encode(self, array: np.ndarray, spec: ChunkSpec) -> bytes:
        field = _field_for(spec.dtype.dtype)
        assert field is not None  # validate() refused the others
        data = np.asarray(array, dtype=spec.dtype.dtype)
        if field.bits:  # zfp_promote_*: the value's bits moved to the top of an int32
            wide = data.astype(np.int32)
            if field.unsigned:
                wide -= 1 << (field.bits - 1)
            data = wide << (31 - field.bits)
        native = np.ascontiguousarray(data, dtype=field.native).reshape(spec.shape or (1,))
        zfpy = _zfpy()
        try:
            return bytes(zfpy.compress_numpy(native, write_header=False, **self._kwargs()))
        except (RuntimeError, ValueError, TypeError) as exc:
            raise CodecError(f"zfp: cannot encode ({exc})") from exc

    def _header(self, shape: tuple[int, ...], native: np.dtype[Any]) -> _Header:
        """zfp's full header for a field of ``shape`` in this mode (what zfpy's public
        decoder needs; the stored stream has none): taken from a stream zfpy writes with and
        without it, as 96 or 148 bits (the short or long mode field)."""
        key = (shape, native.str)
        header = self._headers.get(key)
        if header is None:
            zfpy = _zfpy()
            sample = np.arange(math.prod(shape), dtype=native).reshape(shape)
            full = int.from_bytes(zfpy.compress_numpy(sample, **self._kwargs()), "little")
            bare = int.from_bytes(zfpy.compress_numpy(sample, write_header=False, **self._kwargs()), "little")
            bits = next((b for b in (96, 148) if full >> b == bare), None)
            if bits is None:
                raise CodecError(f"zfp: cannot find the header of a {shape} {native.name} field in mode {self.mode}")
            header = _Header(full & ((1 << bits) - 1), bits)
            if len(self._headers) < 64:
                self._headers[key] = header
        return header

    def decode(self, data: Buffer, spec: ChunkSpec) -> np.ndarray:
        field = _field_for(spec.dtype.dtype)
        assert field is not None
        shape = spec.shape or (1,)
        stored = memoryview(data).cast("B")
        bound = self._stream_bound(shape, field.native)
        if stored.nbytes == 0 or stored.nbytes > bound:
            raise CorruptChunkError(f"zfp: a chunk of shape {spec.shape} takes 1 to {bound} bytes, found {stored.nbytes}")
        header = self._header(shape, field.native)
        # zfp reads its bit stream without bounds checks: a truncated or corrupt chunk must
        # find zeros, not foreign memory, up to the most a stream of this field can take
        size = bound + 32
        if header.bits % 8 == 0:
            stream = bytearray(size)
            stream[: header.bits // 8] = header.value.to_bytes(header.bits // 8, "little")
            stream[header.bits // 8: header.bits // 8 + stored.nbytes] = stored
        else:
            stream = bytearray((header.value | int.from_bytes(stored, "little") << header.bits).to_bytes(size, "little"))
        try:
            out = np.asarray(_zfpy().decompress_numpy(stream)).reshape(shape)
        except (RuntimeError, ValueError) as exc:
            raise CorruptChunkError(f"zfp: cannot decode ({exc})") from exc
        if field.bits:  # zfp_demote_*: back down, clamped to the type's range
            low, high = (0, (1 << field.bits) - 1) if field.unsigned else (-(1 << (field.bits - 1)), (1 << (field.bits - 1)) - 1)
            narrow = out >> (31 - field.bits)
            if field.unsigned:
                narrow += 1 << (field.bits - 1)
            out = np.clip(narrow, low, high)
        return out.astype(spec.dtype.dtype, copy=False).reshape(spec.shape)
