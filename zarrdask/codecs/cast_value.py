"""``cast_value`` (array -> array): store numbers as another numeric data type, by value.

Spec: https://github.com/zarr-developers/zarr-extensions/tree/main/codecs/cast_value
Example: ``{"name": "cast_value", "configuration": {"data_type": "uint8", "rounding":
"towards-zero", "out_of_range": "wrap", "scalar_map": {"encode": [["NaN", 0]]}}}``.

``data_type`` is the stored type; ``rounding`` (default ``nearest-even``) and
``out_of_range`` (``clamp``, ``wrap`` for integer targets, or absent: an error) apply in
both directions, after ``scalar_map``'s explicit pairs (JSON-encoded like fill values of
the type they belong to; the spec's own example spells infinity ``"+Infinity"``, read as
``"Infinity"``). Integer and floating-point types of the spec's list are supported
except ``float8_e8m0fnu``. The fill value must survive the cast there and back, as the
spec requires. The arithmetic is in ``_casting.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..metadata.dtypes import DataType, parse_data_type_v3
from ..errors import MetadataError
from ..keywords import did_you_mean
from ._casting import OUT_OF_RANGE, ROUNDING, Numeric, cast, numeric, values_equal
from ._config import check_keys, config_error, get_choice
from .base import ArrayArrayCodec, ChunkSpec, Loc
from .registry import register_codec

Pairs = tuple[tuple[Any, Any], ...]


@dataclass(frozen=True, slots=True)
class _Bound:
    """The cast for one input type: both numeric types and ``scalar_map`` parsed each way."""

    source: Numeric
    target: Numeric
    encode: Pairs
    decode: Pairs


@register_codec
class CastValueCodec(ArrayArrayCodec):
    name = "cast_value"

    def __init__(self, data_type: DataType, rounding: str = "nearest-even", out_of_range: str | None = None,
                 scalar_map: Mapping[str, Any] | None = None, bound: _Bound | None = None) -> None:
        self.data_type = data_type
        self.rounding = rounding
        self.out_of_range = out_of_range
        self.scalar_map = scalar_map  # JSON, parsed against the input type in validate()
        self._bound = bound  # what validate() derives from the input type: needed to encode or decode

    @classmethod
    def from_config(cls, configuration: Mapping[str, Any], loc: Loc) -> CastValueCodec:
        check_keys(configuration, {"data_type", "rounding", "out_of_range", "scalar_map"}, loc)
        if "data_type" not in configuration:
            raise config_error((*loc, "configuration", "data_type"), "required setting is missing")
        try:
            target = parse_data_type_v3(configuration["data_type"], (*loc, "configuration", "data_type"))
        except MetadataError as exc:
            raise config_error((*loc, "configuration", "data_type"), exc.problems[0].message) from None
        if numeric(target) is None:
            raise config_error((*loc, "configuration", "data_type"),
                               f"expected an integer or floating-point data type, got {target.name!r}")
        rounding = get_choice(configuration, "rounding", ROUNDING, loc, default="nearest-even")
        out_of_range = get_choice(configuration, "out_of_range", (*OUT_OF_RANGE, None), loc, default=None)
        scalar_map = configuration.get("scalar_map")
        if scalar_map is not None:
            _check_scalar_map(scalar_map, (*loc, "configuration", "scalar_map"))
        return cls(target, rounding, out_of_range, scalar_map)

    def to_json(self) -> dict[str, Any]:
        config: dict[str, Any] = {"data_type": self.data_type.to_json()}
        if self.rounding != "nearest-even":
            config["rounding"] = self.rounding
        if self.out_of_range is not None:
            config["out_of_range"] = self.out_of_range
        if self.scalar_map is not None:
            config["scalar_map"] = self.scalar_map
        return {"name": self.name, "configuration": config}

    def validate(self, spec: ChunkSpec, loc: Loc) -> CastValueCodec:
        source, target = numeric(spec.dtype), numeric(self.data_type)
        if source is None:
            raise config_error(loc, f"cast_value is defined for integer and floating-point data, not "
                                    f"{spec.dtype.name}")
        assert target is not None  # from_config checked it
        if self.out_of_range == "wrap" and not target.integer:
            raise config_error((*loc, "configuration", "out_of_range"),
                               f"'wrap' needs an integer data_type, got {self.data_type.name}")
        where = (*loc, "configuration", "scalar_map")
        bound = _Bound(source, target, _pairs(self.scalar_map, "encode", spec.dtype, self.data_type, where),
                       _pairs(self.scalar_map, "decode", self.data_type, spec.dtype, where))
        prepared = CastValueCodec(self.data_type, self.rounding, self.out_of_range, self.scalar_map, bound)
        if spec.fill_value is not None:
            prepared._check_fill(spec, loc)
        return prepared

    def _check_fill(self, spec: ChunkSpec, loc: Loc) -> None:
        fill = np.asarray(spec.fill_value, dtype=spec.dtype.dtype)
        try:
            back = self.decode(self.encode(fill, spec), spec)
        except Exception as exc:  # noqa: BLE001 - a CodecError saying which value and why
            raise config_error(loc, f"the fill value {fill.item()!r} cannot be cast to {self.data_type.name} "
                                    f"and back: {exc}") from None
        if not values_equal(back[()], fill[()]):
            raise config_error(loc, f"the fill value {fill.item()!r} does not survive the cast to "
                                    f"{self.data_type.name} and back (it returns as {back.item()!r})")

    def resolve(self, spec: ChunkSpec) -> ChunkSpec:
        fill = spec.fill_value
        if fill is not None:
            fill = self.encode(np.asarray(fill, dtype=spec.dtype.dtype), spec)[()]
        return ChunkSpec(spec.shape, self.data_type, fill)

    def encode(self, array: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        b = self._bound
        assert b is not None, "cast_value used before validate()"
        return cast(array, b.source, b.target, self.rounding, self.out_of_range, b.encode)

    def decode(self, array: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        b = self._bound
        assert b is not None, "cast_value used before validate()"
        return cast(array, b.target, b.source, self.rounding, self.out_of_range, b.decode)


def _check_scalar_map(value: Any, loc: Loc) -> None:
    if not isinstance(value, Mapping):
        raise config_error(loc, f"expected an object with 'encode' and/or 'decode', got {value!r}")
    extra = set(value) - {"encode", "decode"}
    if extra:
        raise config_error(loc, f"unknown key {sorted(extra)[0]!r}{did_you_mean(sorted(extra)[0], ('encode', 'decode'))}; "
                                "allowed: 'decode', 'encode'")
    for direction, pairs in value.items():
        if not isinstance(pairs, list) or not all(isinstance(p, list) and len(p) == 2 for p in pairs):
            raise config_error((*loc, direction), f"expected a list of [input, output] pairs, got {pairs!r}")


def _pairs(scalar_map: Mapping[str, Any] | None, direction: str, source: DataType, target: DataType,
           loc: Loc) -> Pairs:
    """One direction of the map as parsed scalars, the first of repeated keys only."""
    pairs: list[tuple[Any, Any]] = []
    seen: list[Any] = []
    for i, (key, value) in enumerate((scalar_map or {}).get(direction, [])):
        parsed_key = _scalar(source, key, (*loc, direction, i, 0))
        if any(values_equal(parsed_key, k) for k in seen):
            continue
        seen.append(parsed_key)
        pairs.append((parsed_key, _scalar(target, value, (*loc, direction, i, 1))))
    return tuple(pairs)


def _scalar(dtype: DataType, value: Any, loc: Loc) -> Any:
    if value == "+Infinity":
        value = "Infinity"
    try:
        return dtype.fill_from_json(value, loc)
    except MetadataError as exc:
        raise config_error(loc, exc.problems[0].message) from None
