"""Follow the user's store argument through zarrdask's calls (issue 42).

A call is on the argument's path when one of its arguments is the argument itself, the
same path string, a Store, or the door's record (``zarrdask.door.Resolved``): what the
argument becomes on its way in. Counted from the public call to the first read of a
stored key, and, over the whole public call, the times the path enters the core (the node
model, the public API, the runtime and the displays: ``CORE``) from another package (a
call whose caller is outside it). Comprehensions are not calls.

Run ``python tests/_door_calls.py`` to print the three paths call by call;
``tests/nodes/test_door_calls.py`` holds them to their bounds.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable
from types import FrameType
from typing import Any, NamedTuple

import zarrdask
from zarrdask.door import Resolved
from zarrdask.storage.base import Store

PACKAGE = os.path.dirname(zarrdask.__file__)
#: the packages of the core (what core/ held before it was split by job)
CORE = frozenset({"nodes", "api", "runtime", "display"})
#: the Store members that read stored keys
READS = frozenset({"get", "get_many", "get_ranges"})


class Call(NamedTuple):
    """One call on the argument's path: where its function is, and where its caller is."""

    module: str
    function: str
    caller: str

    @property
    def package(self) -> str:
        return self.module.split("/")[0]


class Path(NamedTuple):
    """The calls up to the first read of a stored key, and all of the public call's."""

    to_first_read: list[Call]
    whole: list[Call]

    def entries(self, packages: frozenset[str] = CORE) -> int:
        """How often the whole call's path enters ``packages`` from another one."""
        return sum(1 for c in self.whole if c.package in packages and c.caller.split("/")[0] not in packages)


def _module(frame: FrameType | None) -> str:
    while frame is not None and frame.f_code.co_name.startswith("<"):
        frame = frame.f_back
    if frame is None or not frame.f_code.co_filename.startswith(PACKAGE):
        return "-"
    return os.path.relpath(frame.f_code.co_filename, PACKAGE)


def follow(function: Callable[..., Any], argument: Any, *args: Any, **kwargs: Any) -> Path:
    """Call ``function(*args, **kwargs)`` and follow ``argument`` (one of them) through it."""
    carried: dict[int, Any] = {id(argument): argument}
    text = os.fspath(argument) if isinstance(argument, str | os.PathLike) else None
    calls: list[Call] = []
    first_read: list[int] = []
    counted: set[int] = set()

    def carries(value: Any) -> bool:
        return (id(value) in carried or isinstance(value, Store | Resolved)
                or (text is not None and isinstance(value, str) and value == text))

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        code = frame.f_code
        if not code.co_filename.startswith(PACKAGE) or code.co_name.startswith("<"):
            return
        if event == "return":
            if id(frame) in counted and isinstance(arg, Store | Resolved):
                carried[id(arg)] = arg
            counted.discard(id(frame))
            return
        if event != "call":
            return
        n = code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & 4) + bool(code.co_flags & 8)
        values = [frame.f_locals.get(name) for name in code.co_varnames[:n]]
        inside = [v for value in values for v in (value, *(
            value if isinstance(value, tuple | list) else value.values() if isinstance(value, dict) else ()))]
        if not any(carries(v) for v in inside):
            return
        counted.add(id(frame))
        calls.append(Call(os.path.relpath(code.co_filename, PACKAGE), code.co_qualname, _module(frame.f_back)))
        if not first_read and code.co_name in READS and values and isinstance(values[0], Store):
            first_read.append(len(calls))

    sys.setprofile(profile)
    try:
        function(*args, **kwargs)
    finally:
        sys.setprofile(None)
    return Path(calls[:first_read[0]] if first_read else calls, calls)


def entry_paths(where: str) -> dict[str, Path]:
    """The three entry points' paths, on local files under ``where``: ``from_zarr(url)``,
    ``to_zarr(x, url)`` of a new array, ``xr.open_dataset(path, engine="zarrdask")``."""
    import dask.array as da
    import numpy as np
    import xarray as xr

    array, dataset, new = (os.path.join(where, name) for name in ("a.zarr", "ds.zarr", "new.zarr"))
    zarrdask.create_array(array, shape=(8, 8), chunks=(4, 4), dtype="f4")[...] = 1
    xr.Dataset({"v": (("y", "x"), np.ones((4, 4)))}).zarrdask.to_zarr(dataset)
    x = da.ones((8, 8), chunks=4)
    zarrdask.to_zarr(x, os.path.join(where, "warm.zarr"))  # (imports and first-use caches out of the count)
    xr.open_dataset(dataset, engine="zarrdask").close()
    opened = {}
    paths = {"from_zarr": follow(zarrdask.from_zarr, array, array),
             "to_zarr": follow(zarrdask.to_zarr, new, x, new),
             "open_dataset": follow(lambda p: opened.setdefault("ds", xr.open_dataset(p, engine="zarrdask")),
                                    dataset, dataset)}
    opened["ds"].close()
    return paths


def main() -> None:
    with tempfile.TemporaryDirectory() as where:
        for name, path in entry_paths(where).items():
            print(f"{name}: {len(path.to_first_read)} calls to the first read of a stored key; "
                  f"{len(path.whole)} in the whole call, entering the core {path.entries()} time(s)")
            for i, call in enumerate(path.whole, 1):
                mark = "  " if i <= len(path.to_first_read) else "  (after the first read) "
                print(f"{mark}{i:3d} {call.module}:{call.function}")


if __name__ == "__main__":
    main()
