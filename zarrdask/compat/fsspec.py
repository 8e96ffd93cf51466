"""fsspec's async file methods (checked on fsspec 2026.9.0).

An ``AsyncFileSystem`` implements its coroutines as ``_cat_file`` / ``_pipe_file``: fsspec's
documented async interface, named with a leading underscore by its convention. zarrdask
runs them on fsspec's event loop, one request each. ``tests/test_compat.py`` fails when a
release renames them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["async_cat_file", "async_pipe_file"]


def async_cat_file(fs: Any) -> Callable[..., Any]:
    """``fs._cat_file(path, start=, end=)``: a coroutine reading one key or byte range."""
    return fs._cat_file  # type: ignore[no-any-return]


def async_pipe_file(fs: Any) -> Callable[..., Any]:
    """``fs._pipe_file(path, value)``: a coroutine writing one key."""
    return fs._pipe_file  # type: ignore[no-any-return]
