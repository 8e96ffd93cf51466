"""The keywords dask's ``from_zarr``/``to_zarr`` pass on to zarr-python, checked against
what zarrdask does with them: each is used, or refused naming what to pass instead.

dask sends ``from_zarr``'s extra keywords to ``zarr.open_array`` and ``to_zarr``'s to
``zarr.create_array``; newer dask also takes them as ``zarr_read_kwargs`` /
``zarr_array_kwargs`` dicts. All of these are merged here (one name given twice with
two values is an error) and validated before anything is opened, created or deleted.
"""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Mapping
from typing import Any

import dask
from dask.utils import parse_bytes

from ..nodes.array import ArrayOptions
from ..nodes.units import array_options
from ..errors import InvalidModeError, InvalidValueError, UnexpectedKeywordError
from ..keywords import did_you_mean, refuse

__all__ = [
    "CREATE_KEYWORDS", "OPTION_KEYWORDS", "READ_KEYWORDS", "WRITE_KEYWORDS", "ReadKeywords", "WriteKeywords",
    "read_keywords", "task_bytes", "write_keywords",
]

#: :class:`~zarrdask.ArrayOptions` fields, accepted by both functions for the opened array
OPTION_KEYWORDS = tuple(f.name for f in dataclasses.fields(ArrayOptions))
#: ``from_zarr``'s extra keywords (dask: ``zarr.open_array``'s)
READ_KEYWORDS = ("zarr_format", "mode", "shape", "dtype", *OPTION_KEYWORDS)
#: the keywords that describe a new array (``zarrdask.create_array``'s)
CREATE_KEYWORDS = (
    "chunks", "shards", "compressors", "filters", "serializer", "codecs", "fill_value", "dimension_names",
    "attributes", "chunk_key_encoding", "order", "zarr_format", "dtype", "shape", "allow_reserved_names",
)
#: ``to_zarr``'s extra keywords (dask: ``zarr.create_array``'s); its own ``progress`` is a bar
WRITE_KEYWORDS = (*CREATE_KEYWORDS, "name", "overwrite", "config", *(k for k in OPTION_KEYWORDS if k != "progress"))
#: the keys of zarr-python's ``config=`` that zarrdask has
CONFIG_KEYWORDS = ("write_empty_chunks",)

_INSTEAD = {
    "compressor": "pass compressors=[codec] (a list; zarr-python's v2 spelling)",
    "zarr_version": "pass zarr_format=",
    "dimension_separator": 'pass chunk_key_encoding={"name": "default", "separator": "/"} (v2: "name": "v2")',
    "chunk_shape": "pass chunks=",
    "read_only": "zarrdask.from_zarr only reads; zarrdask.to_zarr writes (its mode= says how)",
    "data": "the data to write is to_zarr's first argument",
    "write_data": "to_zarr always writes its first argument",
    "use_consolidated": "the array's own metadata is read; open a group with zarrdask.open_group(use_consolidated=...)",
    "synchronizer": "dask's tasks never share a chunk; outside dask pass lock= (a zarrdask.FileLock or distributed.Lock)",
}
_READ_MODES = ("r", "r+", "a")


@dataclasses.dataclass(frozen=True)
class ReadKeywords:
    """How to open the array that is read: ``open_array`` keywords and ArrayOptions."""

    mode: str = "r"
    expect: dict[str, Any] = dataclasses.field(default_factory=dict)  # zarr_format, shape, dtype
    options: dict[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class WriteKeywords:
    """What ``to_zarr`` was told about the target beyond its data and mode."""

    create: dict[str, Any]  # create_array keywords given (only these; defaults are the core's)
    options: dict[str, Any]  # ArrayOptions for the target
    overwrite: bool | None
    name: str | None  # dask's array path spelling (zarr.create_array(name=...))


def merged(function: str, *sources: Mapping[str, Any] | None) -> dict[str, Any]:
    """The keywords of ``sources`` together; one given twice with different values is an error."""
    out: dict[str, Any] = {}
    for source in sources:
        if source is None:
            continue
        if not isinstance(source, Mapping):
            raise InvalidModeError(f"{function}(): expected a dict of keywords, got {type(source).__name__}")
        for key, value in source.items():
            if key in out and not _same(out[key], value):
                raise InvalidModeError(
                    f"{function}() got {key}= twice with different values ({out[key]!r} and {value!r}): pass it once")
            out[key] = value
    return out


def read_keywords(function: str, given: Mapping[str, Any], named: tuple[str, ...], *,
                  allow_mode: bool = True) -> ReadKeywords:
    """``given`` (extra keywords and ``zarr_read_kwargs`` merged) checked and sorted;
    ``named``: the calling function's own parameters, for the did-you-mean."""
    allowed = READ_KEYWORDS if allow_mode else tuple(k for k in READ_KEYWORDS if k != "mode")
    _check(function, given, allowed, named)
    mode = given.get("mode", "r")
    if mode not in _READ_MODES:
        raise InvalidModeError(
            f"{function}() reads an existing array: mode={mode!r} would create or replace one; "
            f"pass one of {_READ_MODES} (write with zarrdask.to_zarr or zarrdask.create_array)")
    expect = {k: given[k] for k in ("zarr_format", "shape", "dtype") if given.get(k) is not None}
    options = {k: v for k, v in given.items() if k in OPTION_KEYWORDS}
    array_options(function, options)  # (checked here, before anything is opened)
    return ReadKeywords("r" if mode == "r" else "r+", expect, options)


def write_keywords(function: str, given: Mapping[str, Any], named: tuple[str, ...]) -> WriteKeywords:
    """``given`` (to_zarr's array keywords, ``**kwargs`` and ``zarr_array_kwargs`` merged)
    checked and sorted; zarr-python's ``config=`` becomes its ArrayOptions."""
    _check(function, given, WRITE_KEYWORDS, named)
    options = {k: v for k, v in given.items() if k in OPTION_KEYWORDS}
    config = given.get("config")
    if config is not None:
        if not isinstance(config, Mapping):
            raise InvalidModeError(f"{function}(): config= must be a dict, got {type(config).__name__}")
        for key in config:
            if key not in CONFIG_KEYWORDS:
                raise refuse(function, f"config[{key!r}]",
                             f"zarrdask's config keys are {CONFIG_KEYWORDS}; reads return C-order arrays")
        options = merged(function, options, dict(config))
    array_options(function, options)  # (checked here, before anything is created)
    create = {k: v for k, v in given.items() if k in CREATE_KEYWORDS}
    overwrite = given.get("overwrite")
    if overwrite is not None and not isinstance(overwrite, bool):
        raise InvalidModeError(f"{function}(): overwrite= must be True or False, got {overwrite!r}")
    return WriteKeywords(create, options, overwrite, given.get("name"))


def staging_choice(function: str, staging: Any) -> bool | None:
    """``staging=`` checked: True, False or None (chosen per write)."""
    if staging is not None and not isinstance(staging, bool):
        raise InvalidModeError(f"{function}(): staging must be True, False or None (chosen), got {staging!r}")
    return staging


def task_bytes(function: str, task_size: Any) -> int | None:
    """``task_size=`` as a number of bytes: None (one task per owned run of units),
    ``"auto"`` (dask's ``array.chunk-size``), a positive int or a size string ("64 MiB")."""
    accepted = 'None, "auto" (dask\'s array.chunk-size), a positive int of bytes or a size string such as "64 MiB"'
    if task_size is None:
        return None
    if isinstance(task_size, str):
        text = dask.config.get("array.chunk-size") if task_size == "auto" else task_size
        try:
            if isinstance(text, str) and not any(c.isdigit() for c in text):
                raise ValueError(text)  # parse_bytes reads "" and "kB" as one unit
            size = parse_bytes(text)
        except (ValueError, TypeError):
            raise InvalidValueError(f"{function}(): task_size={task_size!r} is not a size: pass {accepted}") from None
    elif isinstance(task_size, numbers.Integral) and not isinstance(task_size, bool):
        size = int(task_size)
    else:
        raise InvalidValueError(f"{function}(): task_size={task_size!r} ({type(task_size).__name__}) is not "
                                f"accepted: pass {accepted}")
    if size <= 0:
        raise InvalidValueError(f"{function}(): task_size={task_size!r} is {size} bytes: pass {accepted}")
    return size


def _check(function: str, given: Mapping[str, Any], allowed: tuple[str, ...], named: tuple[str, ...]) -> None:
    """Refuse the first keyword of ``given`` not in ``allowed``; the did-you-mean also
    looks at the function's ``named`` parameters (``chunks``, ``storage_options`` ...)."""
    for key in given:
        if key in allowed:
            continue
        if key in _INSTEAD:
            raise refuse(function, key, _INSTEAD[key])
        raise UnexpectedKeywordError(
            f"{function}() got an unexpected keyword argument {key!r}{did_you_mean(key, (*allowed, *named))}")


def _same(a: Any, b: Any) -> bool:
    if a is b:
        return True
    try:
        return type(a) is type(b) and bool(a == b)
    except (TypeError, ValueError):  # arrays and such: compared as different
        return False
