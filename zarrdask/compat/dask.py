"""Private dask API, in one place (checked on dask 2026.8.0).

``named_from_array``: with dask's array query planning on, ``da.from_array`` ignores
``name=`` and keys its blocks ``fromarray-<token>``, which hides zarrdask's reads from
progress bars and the dashboard. There dask's own ``FromArray`` expression (the same
lazily materialised ``graph_from_arraylike`` layer, one task per block) is built through
a subclass that only changes its name. Any failure falls back to ``da.from_array``;
``tests/test_compat.py`` checks that the private path, not the fallback, serves the
installed dask.
"""

from __future__ import annotations

import functools
from typing import Any

import dask.array as da

__all__ = ["CHECKED_ON", "named_from_array", "private_from_array"]

CHECKED_ON = "2026.8.0"
_NAMED_FROM_ARRAY = "_NamedFromArray"


def named_from_array(reader: Any, chunks: tuple[tuple[int, ...], ...], name: str, **options: Any) -> da.Array:
    """``da.from_array(reader, chunks, name=name, **options)``, keyed ``name`` in both dask modes."""
    if da.array_expr_enabled():
        try:
            return private_from_array(reader, chunks, name, **options)
        except Exception:  # another dask release: the public call still reads correctly
            pass
    return da.from_array(reader, chunks=chunks, name=name, **options)


def private_from_array(reader: Any, chunks: tuple[tuple[int, ...], ...], name: str, **options: Any) -> da.Array:
    """The private path alone (query planning on), raising when it no longer works."""
    from dask._collections import new_collection

    return new_collection(_named_from_array_class()(reader, chunks, key_name=name, **options))


@functools.cache
def _named_from_array_class() -> type:
    """dask's ``FromArray`` expression keyed by its ``key_name`` operand.

    Defined on first use, so legacy mode never imports ``dask.array._array_expr``, and
    reachable as ``zarrdask.compat.dask._NamedFromArray`` (module ``__getattr__``) so a
    distributed scheduler or worker can unpickle the expression whatever its own mode.
    """
    from dask.array._array_expr._io import FromArray

    class _NamedFromArray(FromArray):
        _parameters = [*FromArray._parameters, "key_name"]
        _defaults = {**FromArray._defaults, "key_name": None}

        @functools.cached_property
        def _name(self) -> str:
            # The key name already tokenises the reader (store, path, metadata) and the
            # chunks; no dask rewrite substitutes FromArray operands in dask 2026.8.0.
            name = self.operand("key_name")
            return name if name is not None else f"{self._funcname}-{self.deterministic_token}"

        def __str__(self) -> str:
            return f"FromArray({self.operand('key_name')})"

    _NamedFromArray.__module__ = __name__
    _NamedFromArray.__qualname__ = _NAMED_FROM_ARRAY
    return _NamedFromArray


def __getattr__(attr: str) -> Any:
    if attr == _NAMED_FROM_ARRAY:
        return _named_from_array_class()
    raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")
