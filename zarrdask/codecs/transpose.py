"""``transpose`` (array -> array): permute the chunk's axes before serialising.

Spec: https://zarr-specs.readthedocs.io/en/latest/v3/codecs/transpose/index.html
Example: ``{"name": "transpose", "configuration": {"order": [2, 0, 1]}}``; the legacy
``"C"`` / ``"F"`` orders mean identity / reversed axes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ._config import check_keys, config_error
from .base import ArrayArrayCodec, ChunkSpec, Loc
from .registry import register_codec


@register_codec
class TransposeCodec(ArrayArrayCodec):
    name = "transpose"

    def __init__(self, order: tuple[int, ...] | str) -> None:
        self.order = order

    @classmethod
    def from_config(cls, configuration: Mapping[str, Any], loc: Loc) -> TransposeCodec:
        check_keys(configuration, {"order"}, loc)
        order = configuration.get("order")
        if order in ("C", "F"):
            return cls(order)
        if not isinstance(order, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in order):
            raise config_error((*loc, "configuration", "order"), f"expected a permutation list, got {order!r}")
        if sorted(order) != list(range(len(order))):
            raise config_error((*loc, "configuration", "order"), f"{order} is not a permutation of 0..{len(order) - 1}")
        return cls(tuple(order))

    def to_json(self) -> dict[str, Any]:
        order = self.order if isinstance(self.order, str) else list(self.order)
        return {"name": "transpose", "configuration": {"order": order}}

    def _perm(self, ndim: int) -> tuple[int, ...]:
        if self.order == "C":
            return tuple(range(ndim))
        if self.order == "F":
            return tuple(reversed(range(ndim)))
        return self.order  # type: ignore[return-value]

    def validate(self, spec: ChunkSpec, loc: Loc) -> TransposeCodec:
        if len(self._perm(len(spec.shape))) != len(spec.shape):
            raise config_error((*loc, "configuration", "order"),
                               f"has {len(self.order)} entries but the chunk has {len(spec.shape)} dimensions")
        return self

    def axis_permutation(self, ndim: int) -> tuple[int, ...]:
        return self._perm(ndim)

    def resolve(self, spec: ChunkSpec) -> ChunkSpec:
        perm = self._perm(len(spec.shape))
        return ChunkSpec(tuple(spec.shape[i] for i in perm), spec.dtype, spec.fill_value)

    def encode(self, array: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        return array.transpose(self._perm(array.ndim))

    def decode(self, array: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        return array.transpose(np.argsort(self._perm(array.ndim)))
