"""``reshape`` (array -> array): give the chunk another shape, keeping its C-order element order.

Spec: https://github.com/zarr-developers/zarr-extensions/tree/main/codecs/reshape
Example: ``{"name": "reshape", "configuration": {"shape": [[0, 1], [2], 3]}}`` turns a
``(100, 50, 64, 3)`` chunk into ``(5000, 64, 3)``. Each entry of ``shape`` is a size, a list
of input dimensions whose sizes multiply, or ``-1`` (at most once: whatever is left). The
output shape is resolved against each chunk shape the codec receives (a rectilinear grid
gives it several), and every rule of the spec is checked there.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from ._config import check_keys, config_error
from .base import ArrayArrayCodec, ChunkSpec, Loc
from .registry import register_codec

Entry = int | tuple[int, ...]


@register_codec
class ReshapeCodec(ArrayArrayCodec):
    name = "reshape"

    def __init__(self, shape: tuple[Entry, ...]) -> None:
        self.shape = shape

    @classmethod
    def from_config(cls, configuration: Mapping[str, Any], loc: Loc) -> ReshapeCodec:
        check_keys(configuration, {"shape"}, loc)
        where = (*loc, "configuration", "shape")
        value = configuration.get("shape")
        if not isinstance(value, list):
            raise config_error(where, f"expected a list of sizes, input-dimension lists or -1, got {value!r}")
        entries: list[Entry] = []
        for i, item in enumerate(value):
            if _is_int(item) and (item >= 1 or item == -1):
                entries.append(item)
            elif isinstance(item, list) and all(_is_int(d) and d >= 0 for d in item):
                entries.append(tuple(item))
            else:
                raise config_error((*where, i), f"expected a positive size, a list of input dimensions or -1, "
                                                f"got {item!r}")
        if sum(1 for e in entries if e == -1) > 1:
            raise config_error(where, "-1 may occur at most once")
        flat = [d for e in entries if isinstance(e, tuple) for d in e]
        if any(b <= a for a, b in zip(flat, flat[1:])):
            raise config_error(where, f"input dimensions must be strictly increasing over all entries, got {flat}")
        return cls(tuple(entries))

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name,
                "configuration": {"shape": [list(e) if isinstance(e, tuple) else e for e in self.shape]}}

    def output_shape(self, shape: tuple[int, ...], loc: Loc) -> tuple[int, ...]:
        """The encoded shape for a decoded chunk of ``shape``; a CodecError when the spec's
        invariants do not hold for it."""
        where = (*loc, "configuration", "shape")
        out: list[int | None] = []
        for e in self.shape:
            if isinstance(e, tuple):
                if any(d >= len(shape) for d in e):
                    raise config_error(where, f"input dimension {max(e)} does not exist: the chunk has "
                                              f"{len(shape)} dimensions")
                out.append(math.prod(shape[d] for d in e))
            else:
                out.append(None if e == -1 else e)
        total = math.prod(shape)
        known = math.prod(n for n in out if n is not None)
        if None in out:
            if known == 0 or total % known:
                raise config_error(where, f"no size for -1 makes {self.shape} hold the {total} elements of a "
                                          f"chunk of shape {shape}")
            out[out.index(None)] = total // known
        sizes = tuple(n for n in out if n is not None)
        if math.prod(sizes) != total:
            raise config_error(where, f"gives shape {sizes} with {math.prod(sizes)} elements, but the chunk "
                                      f"{shape} has {total}")
        for i, e in enumerate(self.shape):
            if isinstance(e, tuple) and e:
                if (math.prod(sizes[:i]) != math.prod(shape[:e[0]])
                        or math.prod(sizes[i + 1:]) != math.prod(shape[e[-1] + 1:])):
                    raise config_error((*where, i), f"input dimensions {list(e)} do not line up with output "
                                                    f"dimension {i} for a chunk of shape {shape}")
        return sizes

    def validate(self, spec: ChunkSpec, loc: Loc) -> ReshapeCodec:
        self.output_shape(spec.shape, loc)
        return self

    def resolve(self, spec: ChunkSpec) -> ChunkSpec:
        return ChunkSpec(self.output_shape(spec.shape, ("reshape",)), spec.dtype, spec.fill_value)

    def encode(self, array: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        return array.reshape(self.output_shape(spec.shape, ("reshape",)))

    def decode(self, array: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        return array.reshape(spec.shape)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
