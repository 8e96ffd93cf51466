"""CF decoding of a store's variables, with a fast path for variables it cannot change.

``decode_cf_variables`` is xarray's ``conventions.decode_cf_variables`` with the same
signature and result. Most variables of a typical dataset are plain numbers whose
attributes carry nothing a CF coder acts on (``units="K"``, ``long_name``, a NaN
``_FillValue`` on float data). For those, xarray's coder chain only moves
``_FillValue`` to ``encoding`` (when masking) and records ``encoding["dtype"]``; this
module does exactly that directly (``_decode_plain``). Everything else, and every
cross-variable rule (``coordinates``, bounds, character stacking, ``drop_variables``),
goes through xarray: the plain variables are passed to xarray's function as
``drop_variables`` so that it still sees the whole set of variables.

The fast path is deliberately narrow: any doubt (an unknown leading-underscore
attribute, time-like ``units``, a non-NaN fill value, a per-call ``use_cftime``, ...)
sends the variable to xarray. ``tests/xarray/test_xarray_fast_decode.py`` checks identity
(values, attrs, encoding, dtype, data wrapper) against xarray for a matrix of cases.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from typing import Any

import numpy as np
from xarray import Variable, conventions

from zarrdask.compat.xarray import lazy_data

__all__ = ["decode_cf_variables", "is_plain"]

#: Attributes some CF coder or a cross-variable rule of ``decode_cf_variables`` reads.
_ACTIVE_ATTRS = frozenset(
    {
        "missing_value",
        "scale_factor",
        "add_offset",
        "calendar",
        "dtype",
        "coordinates",
        *conventions.CF_RELATED_DATA,
    }
)
#: Substrings that make ``units`` possibly time-like (``"days since ..."``, ``"hours"``).
_TIME_WORDS = ("since", "day", "hour", "minute", "second")
_PLAIN_KINDS = frozenset("iuf")


def _item_or_default(obj: Any, key: Hashable, default: Any) -> Any:
    # as xarray's ``conventions._item_or_default``: per-variable mappings or one value
    return obj.get(key, default) if isinstance(obj, Mapping) else obj


def _plain_units(units: Any) -> bool:
    if not isinstance(units, str):
        return False
    lowered = units.lower()
    return not any(word in lowered for word in _TIME_WORDS)


def _nan_fill(value: Any) -> bool:
    return isinstance(value, float | np.floating) and bool(np.isnan(value))


def is_plain(variable: Variable, *, use_cftime: Any = None) -> bool:
    """Whether xarray's CF decoding of ``variable`` is only bookkeeping (no data
    transform, no attribute other than a NaN ``_FillValue`` moved), whatever the
    decoding flags."""
    if use_cftime is not None:  # xarray warns or raises for every variable then
        return False
    dtype = variable.dtype
    if dtype.kind not in _PLAIN_KINDS or not dtype.isnative:
        return False
    if lazy_data(variable) is None:
        return False
    if "_FillValue" in variable.encoding:  # xarray would refuse to overwrite it
        return False
    for key, value in variable.attrs.items():
        if not isinstance(key, str):
            return False
        if key == "_FillValue":
            if dtype.kind != "f" or not _nan_fill(value):
                return False
        elif key.startswith("_") or key in _ACTIVE_ATTRS:
            return False
        elif key == "units" and not _plain_units(value):
            return False
    return True


def _decode_plain(variable: Variable, *, mask_and_scale: bool, in_place: bool) -> Variable:
    """What ``conventions.decode_cf_variable`` returns for a variable ``is_plain``
    accepts: ``_FillValue`` (NaN) moved to ``encoding`` when masking, and
    ``encoding["dtype"]`` recorded; the data is untouched. ``in_place``: change and
    return ``variable`` itself instead of a new one."""
    attrs = variable.attrs if in_place else dict(variable.attrs)
    encoding = variable.encoding if in_place else dict(variable.encoding)
    if mask_and_scale and "_FillValue" in attrs:
        encoding["_FillValue"] = attrs.pop("_FillValue")
    encoding.setdefault("dtype", variable.dtype)
    if in_place:
        return variable
    return Variable(variable.dims, lazy_data(variable), attrs, encoding, fastpath=True)


def _bounds_targets(variables: Mapping[Hashable, Variable]) -> set[Any]:
    """Names some variable's ``bounds`` attribute refers to (xarray may copy time
    ``units``/``calendar`` onto those before decoding)."""
    targets: set[Any] = set()
    for variable in variables.values():
        bounds = variable.attrs.get("bounds")
        if bounds is not None:
            try:
                targets.add(bounds)
            except TypeError:  # unhashable: xarray's ``in variables`` would raise too
                pass
    return targets


def decode_cf_variables(
    variables: Mapping[Hashable, Variable],
    attributes: Mapping[Hashable, Any],
    concat_characters: Any = True,
    mask_and_scale: Any = True,
    decode_times: Any = True,
    decode_coords: Any = True,
    drop_variables: str | Iterable[Hashable] | None = None,
    use_cftime: Any = None,
    decode_timedelta: Any = None,
    *,
    in_place: bool = False,
) -> tuple[dict[Hashable, Variable], Any, set[Hashable]]:
    """``xarray.conventions.decode_cf_variables``, with plain variables decoded
    directly (same results; see the module docstring). ``in_place=True`` (for a caller
    that owns ``variables``, as the backend does with a fresh store's) decodes plain
    variables by changing them rather than copying them."""
    if isinstance(drop_variables, str):
        drop = {drop_variables}
    else:
        drop = set(drop_variables) if drop_variables is not None else set()
    bounds_targets = _bounds_targets(variables)
    plain: dict[Hashable, Variable] = {}
    for name, variable in variables.items():
        if name in drop or name in bounds_targets:
            continue
        if is_plain(variable, use_cftime=_item_or_default(use_cftime, name, None)):
            plain[name] = _decode_plain(
                variable,
                mask_and_scale=bool(_item_or_default(mask_and_scale, name, True)),
                in_place=in_place,
            )
    decoded, attrs, coord_names = conventions.decode_cf_variables(
        variables,
        attributes,
        concat_characters=concat_characters,
        mask_and_scale=mask_and_scale,
        decode_times=decode_times,
        decode_coords=decode_coords,
        drop_variables=drop | plain.keys(),
        use_cftime=use_cftime,
        decode_timedelta=decode_timedelta,
    )
    if not plain:
        return decoded, attrs, coord_names
    merged = {
        name: plain[name] if name in plain else decoded[name]
        for name in variables
        if name in plain or name in decoded
    }
    return merged, attrs, coord_names
