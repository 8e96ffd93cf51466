"""Checking the keywords a user passed: an unknown one is an error naming it, the function
called and the nearest accepted name; never silently dropped."""

from __future__ import annotations

import difflib
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from .errors import UnexpectedKeywordError

__all__ = ["did_you_mean", "check_keywords", "refuse"]


def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest candidate, or ``""`` when none is close."""
    close = difflib.get_close_matches(name, sorted(set(candidates)), n=1, cutoff=0.6)
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
