"""``to_zarr`` and ``plan_write``: race-free writes of dask (or numpy) arrays.

The write planner (:mod:`zarrdask.plan.write_plan`) gives every storage unit (shard when
sharded, else chunk) exactly one owner task; :mod:`.write_graph` turns the plan into
lazy layers of ``zarrdask-write`` tasks that depend directly on the source blocks they
need (no rechunk, no locks), gathered into one final key of a ``dask.delayed.Delayed``.
Metadata (creating or resizing the array) is written eagerly, before any chunk task exists.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import dask.array as da
import numpy as np
from dask.delayed import Delayed

from ..core.create import create_array
from ..core.array import Array
from ..errors import InvalidModeError, NodeNotFoundError, ShapeMismatchError
from ..grid import cut_at_lines
from ..plan import WritePlanSummary, make_write_plan, normalize_region
from .progress import compute as run_graphs
from .read import open_source
from .write_graph import write_graph

if TYPE_CHECKING:
    from ..storage import StoreLike

__all__ = ["plan_write", "to_zarr"]

MODES = ("w-", "w", "r+", "a")


def to_zarr(
    x: da.Array | np.ndarray,
    store: StoreLike | Array,
    *,
    path: str | None = None,
    chunks: Any = None,
    shards: Any = None,
    compressors: Any = "auto",
    dimension_names: Sequence[str | None] | None = None,
    attributes: dict[str, Any] | None = None,
    fill_value: Any = None,
    zarr_format: int = 3,
    mode: str = "w-",
    region: Sequence[slice] | None = None,
    compute: bool = True,
    storage_options: dict[str, Any] | None = None,
    write_empty_chunks: bool = False,
    append_axis: int = 0,
    progress: bool = False,
) -> Array | Delayed:
    """Write ``x`` to a Zarr array, one task per owned group of shards; never two writers per key.

    ``mode``: ``"w-"`` creates a new array (error if one exists), ``"w"`` overwrites,
    ``"r+"`` writes into an existing array (``region=`` a tuple of slices, default the whole
    array), ``"a"`` appends ``x`` along ``append_axis`` (resizing first; creates the array
    when absent). ``chunks``, ``shards``, ``compressors``, ``dimension_names``,
    ``attributes``, ``fill_value`` and ``zarr_format`` apply when an array is created;
    without ``chunks`` the chunks are the first dask block's shape (when it divides ``shards``).
    ``chunks="dask"`` (or chunks given dask-style, a tuple of extents per dimension) stores
    irregular chunks as they are, as a ``rectilinear`` grid: one task per chunk, no rechunk.
    ``shards`` given dask-style makes rectilinear shards of regular inner ``chunks``.

    ``progress=True`` shows a progress bar while the graph runs (distributed's when a
    client is active, else dask's). Returns the target ``Array`` once written, or with
    ``compute=False`` a ``Delayed`` that writes when computed (the metadata is already
    written). The graph (see :func:`~zarrdask.dask_io.write_graph.write_graph`) is
    generated from the plan when it is materialised, so it builds in the time of the
    per-axis plan::

        ("zarrdask-write-<id>", i, j) -> write_region(array, region, layout, [(x, k, l), ...])
        "zarrdask-write-done-<id>"   -> None, after every write task (through a tree)
    """
    if not isinstance(x, da.Array):
        x = np.asarray(x)
    target, region = _prepare_target(
        x, store, path=path, mode=mode, region=region, append_axis=append_axis,
        storage_options=storage_options,
        create_kwargs=dict(
            chunks=chunks, shards=shards, compressors=compressors, dimension_names=dimension_names,
            attributes=attributes, fill_value=fill_value, zarr_format=zarr_format,
        ),
    )
    writer = target.with_options(threads=1, write_empty_chunks=write_empty_chunks)
    source = _as_dask(x, target, region)
    plan = make_write_plan(target.shape, source.chunks, target.unit_grid, region)
    delayed = write_graph(source, writer, plan)
    if not compute:
        return delayed
    run_graphs([delayed], progress)
    return target


def plan_write(
    x: da.Array | np.ndarray,
    target: StoreLike | Array,
    region: Sequence[slice] | None = None,
    *,
    path: str | None = None,
    storage_options: dict[str, Any] | None = None,
) -> WritePlanSummary:
    """Dry run of writing ``x`` into ``region`` of the existing array ``target``.

    Returns the plan's summary: write tasks, shards fully written, read-modify-writes,
    source blocks per task and estimated bytes written and read. Nothing is written.
    """
    array = open_source(target, path=path, storage_options=storage_options)
    if not isinstance(x, da.Array):
        x = np.asarray(x)
    slices = _checked_region(x, array, region)
    source = _as_dask(x, array, slices)
    plan = make_write_plan(array.shape, source.chunks, array.unit_grid, slices)
    return plan.summary(array.dtype.itemsize)


def _prepare_target(
    x: da.Array | np.ndarray,
    store: StoreLike | Array,
    *,
    path: str | None,
    mode: str,
    region: Sequence[slice] | None,
    append_axis: int,
    storage_options: dict[str, Any] | None,
    create_kwargs: dict[str, Any],
) -> tuple[Array, tuple[slice, ...]]:
    """Create, open or resize the target (its metadata is written here) and the region."""
    if mode not in MODES:
        raise InvalidModeError(f"mode must be one of {MODES}, got {mode!r}")
    if region is not None and mode != "r+":
        raise InvalidModeError(f"region= needs mode='r+' (got mode={mode!r})")
    if mode in ("r+", "a"):
        try:
            target = open_source(store, path=path, storage_options=storage_options, mode="r+")
        except NodeNotFoundError:
            if mode == "r+":
                raise
        else:
            if mode == "r+":
                return target, _checked_region(x, target, region)
            return _append(x, target, append_axis)
    if isinstance(store, Array):
        raise InvalidModeError(f"mode={mode!r} creates an array: pass a store, path or URL, not an Array")
    if create_kwargs["chunks"] is None:
        create_kwargs["chunks"] = _default_chunks(x, create_kwargs["shards"])
    elif isinstance(create_kwargs["chunks"], str) and create_kwargs["chunks"] == "dask":
        if not isinstance(x, da.Array):
            raise InvalidModeError('chunks="dask" needs a dask array')
        create_kwargs["chunks"] = x.chunks  # stored as they are: a rectilinear grid, no rechunk
    target = create_array(
        store,
        path=path,
        shape=x.shape,
        dtype=x.dtype,
        overwrite=mode == "w",
        storage_options=storage_options,
        **create_kwargs,
    )
    return target, tuple(slice(0, n) for n in target.shape)


def _default_chunks(x: da.Array | np.ndarray, shards: Sequence[int] | None) -> tuple[int, ...] | None:
    """Chunks for a new array: the first dask block when it fits (divides the shards), else
    the shards themselves; ``None`` (the core's default) for in-memory data without shards."""
    if not isinstance(x, da.Array):
        return None if shards is None else tuple(shards)
    block = tuple(max(1, c[0]) for c in x.chunks)
    if shards is None or all(s % b == 0 for s, b in zip(shards, block)):
        return block
    return tuple(shards)


def _append(x: da.Array | np.ndarray, target: Array, axis: int) -> tuple[Array, tuple[slice, ...]]:
    """Grow ``target`` along ``axis`` by ``x``'s length; the region is the new rows."""
    if x.ndim != target.ndim:
        raise ShapeMismatchError(f"cannot append {x.ndim}-d data to a {target.ndim}-d array")
    axis = axis + target.ndim if axis < 0 else axis
    if not 0 <= axis < target.ndim:
        raise InvalidModeError(f"append_axis {axis} is out of range for a {target.ndim}-d array")
    others = [d for d in range(target.ndim) if d != axis]
    if any(x.shape[d] != target.shape[d] for d in others):
        raise ShapeMismatchError(
            f"cannot append data of shape {x.shape} to an array of shape {target.shape} "
            f"along axis {axis}: the other axes differ"
        )
    old = target.shape[axis]
    new_shape = tuple(n + x.shape[axis] if d == axis else n for d, n in enumerate(target.shape))
    target.resize(new_shape)
    return target, tuple(slice(old, n) if d == axis else slice(0, n) for d, n in enumerate(new_shape))


def _checked_region(x: da.Array | np.ndarray, target: Array, region: Sequence[slice] | None) -> tuple[slice, ...]:
    """``region`` as step-1 slices within ``target``, checked against ``x``'s shape."""
    bounds = normalize_region(region, target.shape)
    extents = tuple(stop - start for start, stop in bounds)
    if tuple(x.shape) != extents:
        raise ShapeMismatchError(f"data of shape {tuple(x.shape)} does not fit region {bounds} of shape {extents}")
    return tuple(slice(start, stop) for start, stop in bounds)


def _as_dask(x: da.Array | np.ndarray, target: Array, region: tuple[slice, ...]) -> da.Array:
    """``x`` as a dask array; in-memory data gets blocks aligned to the target's units."""
    if isinstance(x, da.Array):
        return x
    data = np.asarray(x)
    chunks = tuple(cut_at_lines(axis, s.start, s.stop) for s, axis in zip(region, target.unit_grid))
    return da.from_array(data, chunks=chunks)
