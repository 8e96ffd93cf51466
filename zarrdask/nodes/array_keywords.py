"""The array keywords users pass to ``open``/``open_array`` in zarr-python's words -> one
validated :class:`ArraySpec` (what to create) and :class:`ArrayOptions` (how to access).

zarr-python's ``open``/``open_array`` forward their extra keywords to ``zarr.create``;
those names are accepted here with the same meaning (``chunk_shape``, ``compressor``,
``dimension_separator``, ``config`` ...), or refused with what to use instead. Nothing is
dropped: an unknown name is an :class:`~zarrdask.errors.UnexpectedKeywordError`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidModeError, UnexpectedKeywordError
from ..keywords import check_keywords, did_you_mean, refuse
from .units import ArrayOptions

__all__ = ["DEFAULT_FILL", "ArraySpec", "OPTION_NAMES", "REFUSED", "array_config", "split_array_keywords"]

#: runtime options (ArrayOptions fields): how an opened array reads and writes
OPTION_NAMES = tuple(f.name for f in dataclasses.fields(ArrayOptions))

#: zarr-python keywords zarrdask cannot honour, and what to use instead
REFUSED = {
    "synchronizer": "zarrdask has no synchronizers; for writes from several processes to the same chunks "
                    "pass lock=zarrdask.FileLock(path) (or a distributed.Lock)",
    "chunk_store": "zarrdask keeps chunks in the same store as the metadata; open the store that holds both",
    "cache_metadata": "zarrdask reads the metadata once, when opening; drop the keyword (reopen to see changes "
                      "made elsewhere)",
    "cache_attrs": "zarrdask reads the attributes once, when opening; drop the keyword (reopen to see changes "
                   "made elsewhere)",
    "meta_array": "zarrdask reads into NumPy arrays; convert the result yourself (e.g. cupy.asarray(a[...]))",
    "object_codec": "pass dtype=str (or bytes) for variable-length strings, or filters=[numcodecs.VLenUTF8()]",
    "read_only": "use mode='r'",
    "zarr_version": "use zarr_format=",
}


#: ``fill_value`` not given: the data type's default (0, "", ...), as zarr-python; for Zarr v2
#: an explicit ``None`` stores null (no fill value)
DEFAULT_FILL: Any = type("DefaultFill", (), {"__repr__": lambda self: "<default>"})()


@dataclass
class ArraySpec:
    """What to create: the keywords of :func:`zarrdask.create_array`, not yet validated."""

    shape: Any = None
    dtype: Any = None
    data: Any = None
    chunks: Any = "auto"
    shards: Any = None
    filters: Any = "auto"
    compressors: Any = "auto"
    serializer: Any = "auto"
    codecs: Any = None
    fill_value: Any = DEFAULT_FILL
    order: Any = None
    attributes: Any = None
    chunk_key_encoding: Any = None
    dimension_names: Any = None
    write_data: bool = True
    allow_reserved_names: bool = False


_SPEC_NAMES = tuple(f.name for f in dataclasses.fields(ArraySpec))
#: zarr.create's names for create_array's keywords
_ALIASES = {"chunk_shape": "chunks", "compressor": "compressors"}


def array_config(function: str, config: Any, order: Any, options: dict[str, Any]) -> Any:
    """Apply zarr-python's ``config`` (an ``ArrayConfig`` or a dict of ``order`` and
    ``write_empty_chunks``): ``write_empty_chunks`` goes into ``options``; returns the order."""
    if config is None:
        return order
    if isinstance(config, Mapping):
        items = dict(config)
    elif hasattr(config, "order") and hasattr(config, "write_empty_chunks"):
        items = {"order": config.order, "write_empty_chunks": config.write_empty_chunks}
    else:
        raise InvalidModeError(f"{function}(): config must be a dict or zarr.config ArrayConfig, got {config!r}")
    for name in items:
        if name not in ("order", "write_empty_chunks"):
            raise UnexpectedKeywordError(f"{function}(): config has no key {name!r}"
                                         f"{did_you_mean(name, ('order', 'write_empty_chunks'))}; "
                                         "zarr-python's ArrayConfig holds 'order' and 'write_empty_chunks'")
    for name, value in items.items():
        if name == "order":
            if order is not None and order != value:
                raise InvalidModeError(f"{function}(): order={order!r} and config order {value!r} disagree")
            order = value
        elif "write_empty_chunks" in options and options["write_empty_chunks"] != value:
            raise InvalidModeError(f"{function}(): write_empty_chunks={options['write_empty_chunks']!r} and "
                                   f"config write_empty_chunks {value!r} disagree")
        else:
            options["write_empty_chunks"] = bool(value)
    return order


def split_array_keywords(function: str, given: Mapping[str, Any],
                         extra: tuple[str, ...] = ()) -> tuple[dict[str, Any], dict[str, Any]]:
    """The array keywords of an ``open``-style call -> (ArraySpec fields that were given,
    ArrayOptions fields). ``extra``: further names the caller handles itself (left out).
    Refused and unknown names raise :class:`UnexpectedKeywordError` naming ``function``."""
    for name in given:
        if name in REFUSED:
            raise refuse(function, name, REFUSED[name])
        if name == "overwrite":
            raise refuse(function, name, "use mode='w' to replace what is there (mode='w-' fails if something is)")
        if name in ("data", "write_data"):
            raise refuse(function, name, "use zarrdask.create_array(store, data=...) to create an array from data")
    allowed = (*_SPEC_NAMES, *_ALIASES, "dimension_separator", "config", *OPTION_NAMES, *extra)
    check_keywords(function, given, [n for n in allowed if n not in ("data", "write_data", "allow_reserved_names")])
    spec: dict[str, Any] = {}
    options = {k: v for k, v in given.items() if k in OPTION_NAMES}
    for name, value in given.items():
        target = _ALIASES.get(name, name)
        if target not in _SPEC_NAMES:
            continue
        if target in spec:
            raise InvalidModeError(f"{function}(): pass {target}= or {name}=, not both")
        spec[target] = [value] if name == "compressor" and value is not None else value
    if "dimension_separator" in given:
        if "chunk_key_encoding" in spec:
            raise InvalidModeError(f"{function}(): pass chunk_key_encoding= or dimension_separator=, not both")
        spec["chunk_key_encoding"] = given["dimension_separator"]
    order = array_config(function, given.get("config"), spec.get("order"), options)
    if order is not None:
        spec["order"] = order
    return spec, options
