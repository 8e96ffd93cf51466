"""fsspec's async file methods and the parts of s3fs and fsspec's memory filesystem that
conditional writes need (checked on fsspec 2026.9.0, s3fs 2026.9.0, botocore 1.43).

An ``AsyncFileSystem`` implements its coroutines as ``_cat_file`` / ``_pipe_file``: fsspec's
documented async interface, named with a leading underscore by its convention. zarrdask
runs them on fsspec's event loop, one request each. A conditional write on S3 needs what
those two hide: the ETag of the object read, and ``If-Match`` on the write (``_pipe_file``
forwards keywords only below 100 MiB, where it sends one PUT). ``tests/project/test_compat.py``
fails when a release renames any of these; the fallbacks leave the store unguarded.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

__all__ = ["async_cat_file", "async_pipe_file", "canonical_path", "memory_files", "s3_call", "single_try"]


def async_cat_file(fs: Any) -> Callable[..., Any]:
    """``fs._cat_file(path, start=, end=)``: a coroutine reading one key or byte range."""
    return fs._cat_file  # type: ignore[no-any-return]


def async_pipe_file(fs: Any) -> Callable[..., Any]:
    """``fs._pipe_file(path, value)``: a coroutine writing one key."""
    return fs._pipe_file  # type: ignore[no-any-return]


def canonical_path(fs: Any, path: str) -> str:
    """``path`` as the filesystem writes its own paths (``fs._strip_protocol``, which
    fsspec's mappers use too: memory paths start with ``/``, local ones are absolute), so
    that what ``find`` lists starts with it; ``path`` itself where there is none."""
    strip = getattr(fs, "_strip_protocol", None)
    return path if strip is None else str(strip(path))


def s3_call(fs: Any) -> Callable[..., Any] | None:
    """``fs._call_s3(method, **keywords)`` of an s3fs filesystem: a coroutine making one S3
    API request with botocore's keywords (retried by s3fs, errors translated with the
    botocore error as their cause) and answering botocore's response, ETag included. None
    for other filesystems, for an s3fs without it, and where the installed botocore's model
    lacks ``IfMatch`` / ``IfNoneMatch``: s3fs drops keywords the model does not know, which
    would make a conditional write a plain one."""
    call = getattr(fs, "_call_s3", None)
    if call is None or "s3" not in ((fs.protocol,) if isinstance(fs.protocol, str) else fs.protocol):
        return None
    return call if _conditional_s3_model() else None  # type: ignore[no-any-return]


@functools.cache
def _conditional_s3_model() -> bool:
    """Whether botocore's S3 model (aiobotocore's too) has the conditional keywords."""
    import botocore.session

    model = botocore.session.get_session().get_service_model("s3")
    members = {op: set(model.operation_model(op).input_shape.members) for op in ("PutObject", "DeleteObject")}
    return {"IfMatch", "IfNoneMatch"} <= members["PutObject"] and "IfMatch" in members["DeleteObject"]


def single_try(fs: Any) -> None:
    """Make s3fs try each request once (its ``retries`` attribute, 5 by default, counts the
    tries of every call), leaving the retrying to the store's policy. Only for filesystems
    zarrdask made from a URL with its own options (fsspec caches instances by their
    options, so a user's filesystem with other options is never this one)."""
    if isinstance(getattr(fs, "retries", None), int):
        fs.retries = 1


def memory_files(fs: Any) -> object | None:
    """The dict fsspec's ``MemoryFileSystem`` keeps its files in (``fs.store``: shared by
    every instance with ``global_store=True``), identifying the filesystem's contents in
    this process; None for other filesystems."""
    if "memory" not in ((fs.protocol,) if isinstance(fs.protocol, str) else fs.protocol):
        return None
    store = getattr(fs, "store", None)
    return store if isinstance(store, dict) else None
