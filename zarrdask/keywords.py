"""Checking the keywords a user passed: an unknown one is an error naming it, the function
called and the nearest accepted name; never silently dropped."""

from __future__ import annotations

import difflib
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any, Literal, SupportsIndex, Union

from .errors import UnexpectedKeywordError

__all__ = ["Mode", "ShapeLike", "did_you_mean", "check_keywords", "missing_name", "refuse"]

#: the modes of ``open`` and its kin (zarr-python's): read, read/write an existing node,
#: read/write creating, overwrite, create failing if present
Mode = Literal["r", "r+", "a", "w", "w-"]
#: a shape as the public API takes it: an int for one axis, or one int per axis
ShapeLike = Union[SupportsIndex, Sequence[SupportsIndex]]


#: names other libraries (or habit) give what zarrdask calls otherwise, where spelling alone
#: would point elsewhere (``cache_size`` is nearest ``index_cache_size``, a count of shard
#: indexes, not the decoded-chunk cache)
_MEANT = {
    "cache_size": "cache_bytes", "chunk_cache": "cache_bytes", "chunk_cache_size": "cache_bytes",
    "cache": "cache_bytes", "cache_pool": "cache_bytes", "max_size": "cache_bytes", "lru_cache": "cache_bytes",
    "cache_max_bytes": "cache_bytes",
}
_MEANING = {"cache_bytes": "the decoded-chunk cache's budget in bytes, e.g. '512 MiB'"}


def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the name meant (see ``_MEANT``) or the closest candidate,
    or ``""`` when none is close."""
    names = sorted(set(candidates))
    meant = _MEANT.get(name)
    if meant in names:
        return f" (did you mean {meant!r}: {_MEANING[meant]}?)"
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def check_keywords(function: str, given: Mapping[str, Any], allowed: Collection[str]) -> None:
    """Raise :class:`UnexpectedKeywordError` for the first keyword in ``given`` that is not
    in ``allowed``; ``function`` is the name the user called (``"zarrdask.open_array"``)."""
    for name in given:
        if name not in allowed:
            raise UnexpectedKeywordError(
                f"{function}() got an unexpected keyword argument {name!r}{did_you_mean(name, allowed)}")


def refuse(function: str, keyword: str, instead: str) -> UnexpectedKeywordError:
    """The error for a keyword that a peer library (zarr-python, dask, xarray) accepts but
    zarrdask does not take, saying what to use instead."""
    return UnexpectedKeywordError(f"{function}() does not take {keyword!r}: {instead}")


def missing_name(owner: str, name: str, instead: Mapping[str, str], plain: str) -> AttributeError:
    """The error for an attribute ``owner`` lacks: one that says what to use when ``name``
    is a peer library's (``instead``), else Python's own message ``plain``."""
    hint = instead.get(name)
    if hint is None:
        return AttributeError(plain)
    return AttributeError(f"{owner} has no {name!r} (a zarr-python name): {hint}")
