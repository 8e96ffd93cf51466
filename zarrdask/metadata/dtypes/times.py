"""The time data types: ``numpy.datetime64`` and ``numpy.timedelta64`` with a unit and scale."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ...errors import MetadataError, Problem
from .model import FILL_PARSERS, FILL_WRITERS, JSON, DataType, Loc, V3Factory
from .numeric import parse_int

__all__ = ["fill_time", "time_type"]

_TIME_UNITS = ("Y", "M", "W", "D", "h", "m", "s", "ms", "us", "μs", "ns", "ps", "fs", "as", "generic")


def time_type(kind: str) -> V3Factory:
    def make(config: Mapping[str, Any] | None, loc: Loc) -> DataType:
        config = dict(config or {})
        unit = config.get("unit")
        scale = config.get("scale_factor", 1)
        if unit not in _TIME_UNITS:
            raise MetadataError([Problem((*loc, "configuration", "unit"), f"expected a numpy time unit, got {unit!r}")])
        if isinstance(scale, bool) or not isinstance(scale, int) or not 1 <= scale < 2**31:
            raise MetadataError([Problem((*loc, "configuration", "scale_factor"),
                                         f"expected a positive integer below 2**31 (numpy's limit), got {scale!r}")])
        code = "M8" if kind == "datetime" else "m8"
        unit_str = "" if unit == "generic" else (f"{scale}{unit}" if scale != 1 else unit)
        dt = np.dtype(f"<{code}[{unit_str}]") if unit_str else np.dtype(f"<{code}")
        return DataType(f"numpy.{kind}64", dt, kind, {"unit": unit, "scale_factor": scale})

    return make


def fill_time(t: DataType, v: JSON, loc: Loc) -> Any:
    if isinstance(v, str) and v == "NaT":
        return t.dtype.type("NaT")
    return np.array(parse_int(np.dtype("i8"), v), dtype="i8").view(t.dtype)[()]


def _w_time(t: DataType, v: Any) -> JSON:
    return int(np.asarray(v, dtype=t.dtype).view("i8"))


FILL_PARSERS.update(datetime=fill_time, timedelta=fill_time)
FILL_WRITERS.update(datetime=_w_time, timedelta=_w_time)
