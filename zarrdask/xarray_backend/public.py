"""Public entry points of the xarray layer check the arguments they are given.

An unknown keyword is an :class:`~zarrdask.errors.UnexpectedKeywordError` naming the
function the user called (``"Dataset.zarrdask.to_zarr"``,
``"xr.open_dataset(engine='zarrdask')"``) and the nearest keyword it takes, instead of
Python's message naming an internal class. The wrapped function keeps its signature
(``inspect.signature`` follows ``__wrapped__``), which xarray reads for backends.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

from zarrdask.errors import UnexpectedKeywordError
from zarrdask.keywords import did_you_mean

__all__ = ["public"]

F = TypeVar("F", bound=Callable[..., Any])


def public(name: str) -> Callable[[F], F]:
    """Check the keywords (and the number of positional arguments) of calls to the
    decorated function against its own signature; errors say ``name`` (called as
    ``name()``, or as written when it already shows a call, like
    ``"xr.open_dataset(engine='zarrdask')"``)."""
    call = name if name.endswith(")") else f"{name}()"

    def decorate(func: F) -> F:
        signature = inspect.signature(func).parameters
        params = [p for p in signature.values() if p.name != "self"]
        allowed = frozenset(p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))
        positional = [p.name for p in params if p.kind is p.POSITIONAL_OR_KEYWORD]
        bound = 1 if "self" in signature else 0

        @functools.wraps(func)
        def checked(*args: Any, **kwargs: Any) -> Any:
            for keyword in kwargs:
                if keyword not in allowed:
                    raise UnexpectedKeywordError(f"{call} got an unexpected keyword argument "
                                                 f"{keyword!r}{did_you_mean(keyword, allowed)}")
            if len(args) - bound > len(positional):
                raise UnexpectedKeywordError(
                    f"{call} takes at most {len(positional)} positional arguments "
                    f"({', '.join(positional)}) but {len(args) - bound} were given: "
                    "pass the others by keyword")
            return func(*args, **kwargs)

        return checked  # type: ignore[return-value]

    return decorate
