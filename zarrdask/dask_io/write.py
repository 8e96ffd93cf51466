"""``to_zarr`` and ``plan_write``: race-free writes of dask (or numpy) arrays.

The write planner (:mod:`zarrdask.plan.write_plan`) gives every storage unit (shard when
sharded, else chunk) exactly one owner task; :mod:`.write_graph` turns the plan into
lazy layers of ``zarrdask-write`` tasks that depend directly on the source blocks they
need (no rechunk, no locks), gathered into one final key of a ``dask.delayed.Delayed``.
Metadata (creating or resizing the array) is written eagerly, before any chunk task exists;
the call's record (:mod:`zarrdask.storage.records`) by the graph's first task, and deleted by
its last, so a write that never finishes stays visible to ``verify`` and ``open``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import dask.array as da
import numpy as np
from dask.array.utils import meta_from_array
from dask.delayed import Delayed

from ..api.openers import open as open_node
from ..nodes.array import Array
from ..nodes.block_reader import BlockReader
from ..nodes.create import create_array
from ..door import Resolved, opened_node
from .. import arguments
from ..errors import (ContainsNodeError, InvalidModeError, InvalidTypeError, NodeNotFoundError, ShapeMismatchError,
                      ZarrdaskError)
from ..metadata.grid import cut_at_lines
from ..plan import WritePlanSummary, make_write_plan, normalize_region
from ..storage.records import WriteRecord, keeps_records
from .transactions import Writes, check_read_after_write, check_travels, run_writes
from .dask_keywords import (ReadKeywords, WriteKeywords, merged, read_keywords, staging_choice, task_bytes,
                            write_keywords)
from .read import from_zarr, open_location, open_source
from .staging import staging_refusal
from .sources import group_arrays, locate, node_path
from .write_graph import write_graph

if TYPE_CHECKING:
    from ..storage import StoreLike

__all__ = ["plan_write", "planned", "to_zarr", "write_into"]

MODES = ("w-", "w", "r+", "a")
_EXPECTED = ("shape", "dtype", "chunks", "zarr_format")  # array keywords checked against an existing target
FUNCTION = "zarrdask.to_zarr"
_NAMED = ("arr", "url", "component", "storage_options", "region", "compute", "return_stored", "mode", "path",
          "append_axis", "progress", "task_size", "staging", "zarr_array_kwargs", "zarr_read_kwargs")


def to_zarr(
    arr: da.Array | np.ndarray,
    url: StoreLike | Array | Any,
    component: str | None = None,
    storage_options: dict[str, Any] | None = None,
    region: Sequence[slice] | None = None,
    compute: bool = True,
    return_stored: bool = False,
    mode: str | None = None,
    *,
    path: str | None = None,
    overwrite: bool | None = None,
    chunks: Any = None,
    shards: Any = None,
    compressors: Any = "auto",
    dimension_names: Sequence[str | None] | None = None,
    attributes: dict[str, Any] | None = None,
    fill_value: Any = None,
    zarr_format: int | None = None,
    write_empty_chunks: bool | None = None,
    append_axis: int = 0,
    progress: bool = False,
    task_size: int | str | None = None,
    staging: bool | None = None,
    zarr_array_kwargs: dict[str, Any] | None = None,
    zarr_read_kwargs: dict[str, Any] | None = None,
    **kwargs: Any,
) -> Array | da.Array | Delayed:
    """Write ``arr`` to a Zarr array, one task per owned group of shards; never two writers per key.

    Called as ``dask.array.to_zarr`` is (same positions and keywords), so a script changes
    only its import. ``url``: a path, URL, Store (zarrdask's or zarr-python's), a group
    (zarrdask's or zarr-python's; ``component`` goes below it) or an existing array
    (zarrdask's or zarr-python's: written into, as dask does). ``component`` (or
    zarrdask's ``path=``, or dask's ``name=``): the array's path in the store.

    ``mode`` (dask's default ``"a"`` is zarrdask's append; with ``mode`` left out the
    behaviour is dask's): ``"w-"`` creates a new array and fails if one exists (the
    default for a path, URL, store or group, where dask also fails, as its ``create_array``
    does not overwrite), ``"w"`` or ``overwrite=True`` replaces it, ``"r+"`` writes into an
    existing array (``region=`` a tuple of slices, default the whole array; the default
    when ``url`` is an array or ``region`` is given), ``"a"`` appends ``arr`` along
    ``append_axis`` (resizing first; creates the array when absent; dask's ``"a"`` fails on
    an existing array instead). ``overwrite=False`` is ``"w-"``. Every keyword is checked
    before anything is deleted.

    Array keywords (dask passes them to ``zarr.create_array``; also accepted in a
    ``zarr_array_kwargs`` dict): ``chunks``, ``shards``, ``compressors``, ``filters``,
    ``serializer``, ``codecs``, ``fill_value``, ``dimension_names``, ``attributes``,
    ``chunk_key_encoding``, ``order``, ``zarr_format`` (default 3, as zarr-python's), ``dtype``, ``shape`` (must be
    ``arr``'s), ``allow_reserved_names``, ``config={"write_empty_chunks": ...}`` and the
    :class:`~zarrdask.ArrayOptions` fields (``threads``, ``lock``, ...). They apply when an
    array is created; writing into an existing one, ``shape``/``dtype``/``chunks``/
    ``zarr_format`` are checked against it and the others refused. Any other keyword is an
    UnexpectedKeywordError naming it. ``zarr_read_kwargs`` (``zarr_format``, ``shape``,
    ``dtype``, ArrayOptions) apply when an existing array is opened.

    Without ``chunks`` the chunks are the largest dask block along each axis (as dask's,
    which rechunks irregular blocks to that size; zarrdask writes them as they are) when
    they divide ``shards``, else the shards. ``chunks="dask"`` (or chunks given dask-style,
    a tuple of extents per dimension) stores irregular chunks as they are, as a
    ``rectilinear`` grid: one task per chunk, no rechunk. ``shards`` given dask-style makes
    rectilinear shards of regular inner ``chunks``.

    ``progress=True`` shows a progress bar while the graph runs (distributed's when a
    client is active, else dask's). Returns the target ``Array`` once written (dask:
    ``None``), or with ``compute=False`` what dask returns: a dask array of ``arr``'s shape
    that writes when computed and computes to None (the metadata is already written; with
    dask's array query planning on, a ``Delayed``). ``return_stored=True`` returns a dask array of the
    stored data instead: read back from the target after the write (with ``compute=False``
    computing it writes first; not with dask's array query planning, which has no
    ``to_zarr`` itself). Until the last task ends the array holds the call's record
    (``.zarrdask-writes/``): ``verify`` reports it and ``open`` warns of it if the write is
    killed or fails; the same call run again completes the write and deletes it.

    ``task_size``: how much one write task covers. ``None`` (default): one task per run
    of whole shards inside one dask block, or per shard that dask blocks cut (a big block
    writes all its shards in one task). ``"auto"`` (dask's ``array.chunk-size``), a number
    of bytes or a size string (``"64 MiB"``): tasks group whole shards (every axis grown by
    the same factor) up to that size, each still the only writer of its shards; a shard
    bigger than the size is one task, and a block bigger than it is split between shards.
    Group when shards are tiny and the graph runs on a cluster, where each task costs
    milliseconds of scheduling: a million 16 KiB shards are a million tasks ungrouped,
    about 120 grouped to 128 MiB (the source's own blocks are still
    tasks: give it big blocks too, or read with ``from_zarr(chunks="auto")``). On the
    threaded scheduler per-task costs are small and grouping changes little.

    ``staging``: where the pieces of dask blocks that cut shards wait for the rest of
    their shard. A shard that straddles two rows of blocks can be written only once both
    are computed, so without staging the pieces of one block row wait in worker memory
    for the next: about one row of shards across the array (4,096 rows of a 32,768-column
    float32 array: 512 MiB). ``True``: each piece is written below the array's own
    ``.zarrdask-staging/`` key prefix and read back by its shard's write task, which then
    deletes it (a second write and read of those bytes; the prefix is gone when the write
    completes, and :func:`~zarrdask.remove_temporary_files` removes what a killed job
    left). ``False``: pieces wait in memory. ``None`` (default): staged when that row
    would hold more than twice one thread's work (largest block + largest shard task),
    never into a transactional session (refused with ``True``) or for object dtypes. A
    staged write's graph is fused with a blockwise source when it is built, so computing
    it together with another use of the source (``dask.compute(write, x.sum())``)
    computes the source twice: persist the source first, or pass ``staging=False``.

    Into an Icechunk session (a writable session's ``store``) on worker processes (a
    distributed client, or dask's processes) the store travels as a fork of the session,
    each write task returns its fork's changes and the graph merges them; with
    ``compute=True`` they are merged into your session before ``to_zarr`` returns, so
    ``session.commit(...)`` then holds every byte. With ``compute=False`` the returned array
    computes to those merged changes: pass them to your session,
    ``changes = dask.compute(written)[0]`` then ``session.merge(changes)`` when not None,
    before committing (on the threaded scheduler it computes to None: the writes went into
    the session itself). ``return_stored=True`` with ``compute=False`` is refused there
    (the reads would see forks taken before the writes): compute, then ``from_zarr``. A
    session holding uncommitted chunks of the target array is refused on workers (commit
    first), and so is any store worker processes cannot receive, before anything is
    written. The graph (see
    :func:`~zarrdask.dask_io.write_graph.write_graph`) is generated from the plan when it
    is materialised, so it builds in the time of the per-axis plan::

        ("zarrdask-write-<id>", i, j) -> write_region(array, region, layout, [(x, k, l), ...])
        "zarrdask-write-done-<id>"   -> the changes merged (None but into a session's fork), after every
                                        write task (through a tree)

    When dask blocks of 16 MiB or more cut shards (misaligned), each write task reads
    ``("zarrdask-piece-<id>", i, j, k, l)`` tasks instead of those blocks: one per piece,
    so a block is freed once it is cut and only pieces move between workers, and the
    pieces and writes run before further source blocks on a distributed cluster
    (pieces at priority 2, writes 1, or yours from ``dask.annotate(priority=...)`` around
    the call). With ``staging`` one ``("zarrdask-stage-<id>", k, l)`` task per block stages
    its pieces instead (fused with a blockwise source: the task that computes a block
    stages it) and the pieces wait in the store, so peak worker memory stays near one
    block and shard per thread (see ``staging`` above).
    """
    explicit = {k: v for k, v in dict(
        chunks=chunks, shards=shards, compressors=compressors, dimension_names=dimension_names,
        attributes=attributes, fill_value=fill_value, zarr_format=zarr_format, overwrite=overwrite,
        write_empty_chunks=write_empty_chunks,
    ).items() if not (isinstance(v, str) and v == "auto" if k == "compressors" else v is None)}  # given ones
    given = write_keywords(FUNCTION, merged(FUNCTION, explicit, kwargs, zarr_array_kwargs), _NAMED)
    target_bytes = task_bytes(FUNCTION, task_size)
    staging_choice(FUNCTION, staging)
    reading = read_keywords(FUNCTION, merged(FUNCTION, zarr_read_kwargs), _NAMED, allow_mode=False)
    node = opened_node(url)
    mode = write_mode(mode, region, overwrite=given.overwrite, into_array=node is not None and node[2])
    location = locate(FUNCTION, url, node_path(FUNCTION, component=component, path=path, name=given.name),
                      storage_options, mode="r+" if mode in ("r+", "a") else "a", read=mode in ("r+", "a"))
    check_travels(FUNCTION, location.store)
    if return_stored and not compute and da.array_expr_enabled():
        # dask's array expressions lose a Delayed's graph in map_blocks (and have no to_zarr of their own)
        raise InvalidModeError(f"{FUNCTION}(): return_stored=True with compute=False needs dask's "
                               "array.query-planning off; with compute=True the stored data is returned")
    if not isinstance(progress, (bool, np.bool_)):
        raise InvalidModeError(f"{FUNCTION}(): progress={progress!r}: pass True or False (True: a bar while the "
                               "write computes)")
    if progress and not compute:
        raise InvalidModeError(f"{FUNCTION}(): progress=True draws a bar while to_zarr computes; with "
                               "compute=False compute the result under dask.diagnostics.ProgressBar()")
    if return_stored and not compute:
        check_read_after_write(FUNCTION, location.store)
    arr = _known_sizes(FUNCTION, arr)  # before anything is created
    target, region = _prepare_target(arr, location, mode, region, append_axis, given, reading)
    delayed = write_into(arr, target.with_options(**{"threads": 1, **given.options}), region,
                         task_bytes=target_bytes, staging=staging, call=FUNCTION)
    if compute:
        run_writes([delayed], progress)
        return stored(target, region) if return_stored else target
    return stored(target, region, delayed) if return_stored else pending(delayed, arr)


def write_into(x: da.Array | np.ndarray, target: Array, region: tuple[slice, ...], *, task_bytes: int | None = None,
               staging: bool | None = None, call: str | None = None, shared: WriteRecord | None = None) -> Writes:
    """The graph writing ``x`` into ``region`` (step-1 slices, checked) of ``target`` (its
    options as the writes should use them). ``call``: the public call it is, whose record
    the graph stores before its first write and deletes after its last (see
    :mod:`zarrdask.storage.records`); None for writes that are part of a call recorded
    by its caller (a Dataset's variables, a copy's arrays). ``shared``: the caller's record
    of a deferred call, which this graph stores before its first write (one task of the
    same name in every graph of the call) and the caller deletes after the last."""
    source = _as_dask(x, target, region)
    target.units.check_region(region)  # a store that cannot guard a shard cut by the region: refused now
    plan = make_write_plan(target.shape, source.chunks, target.unit_grid, region,
                           task_bytes=task_bytes, itemsize=target.dtype.itemsize)
    record = None
    if call is not None and keeps_records(target.store):
        record = WriteRecord(call, target.path, [[s.start, s.stop] for s in region], *planned(target, region))
    return write_graph(source, target, plan, staging=staging, record=record, shared=shared)


def planned(target: Array, region: tuple[slice, ...]) -> tuple[int, int]:
    """The storage units a write of ``region`` (step-1 slices) of ``target`` touches, and
    its bytes before encoding (what a write's record says it planned)."""
    units = math.prod(len(axis.overlapping(s.start, s.stop)) if s.stop > s.start else 0
                      for s, axis in zip(region, target.unit_grid))
    return units, math.prod(s.stop - s.start for s in region) * target.dtype.itemsize


def write_mode(mode: str | None, region: Any, *, overwrite: bool | None, into_array: bool) -> str:
    """The mode ``to_zarr`` runs in: ``mode``, or dask's behaviour when it is left out;
    ``overwrite`` that contradicts ``mode`` is an error (never a guess at deleting)."""
    if mode == "r":  # (dask's words, which its tests match)
        raise InvalidModeError(f"{FUNCTION}(): Cannot use mode 'r' (read-only) when writing to zarr; pass one of "
                               f"{MODES}")
    if mode is not None and mode not in MODES:
        raise InvalidModeError(f"{FUNCTION}(): mode must be one of {MODES}, got {mode!r}")
    if overwrite is not None:
        wanted = "w" if overwrite else "w-"
        if mode is not None and mode != wanted and (overwrite or mode == "w"):
            raise InvalidModeError(
                f"{FUNCTION}(): overwrite={overwrite} contradicts mode={mode!r}: pass mode={wanted!r} "
                f"(or overwrite={overwrite} alone)")
        mode = mode or (wanted if overwrite or not into_array else "r+")
    if mode is None:
        mode = "r+" if into_array or region is not None else "w-"
    if region is not None and mode != "r+":
        raise InvalidModeError(f"{FUNCTION}(): region= writes into an existing array: it needs mode='r+' "
                               f"(got mode={mode!r})")
    return mode


def stored(target: Array, region: tuple[slice, ...], delayed: Delayed | None = None) -> da.Array:
    """``return_stored``: ``region`` of the target read back, in its storage units. With
    ``delayed`` (not yet computed) each block is read by a task that runs after the write."""
    back = from_zarr(target, name=False)[region]
    if delayed is None:
        return back
    template = da.zeros(back.shape, chunks=back.chunks, dtype=bool)  # block positions (broadcast: no memory)
    return da.map_blocks(_read_after_write, template, delayed, reader=BlockReader(target),
                         offset=tuple(s.start for s in region), dtype=back.dtype, meta=meta_from_array(back))


def _read_after_write(_template: np.ndarray, _written: None, reader: BlockReader, offset: tuple[int, ...],
                      block_info: dict[Any, Any] | None = None) -> np.ndarray:
    """The stored block at the output block's place in the region that starts at ``offset``
    (``_written``: the write is done)."""
    assert block_info is not None
    where = block_info[None]["array-location"]
    return np.asarray(reader[tuple(slice(o + a, o + b) for o, (a, b) in zip(offset, where))])


def pending(writes: Delayed, source: da.Array | np.ndarray) -> da.Array | Delayed:
    """``compute=False``'s result, as dask's: a dask array of the source's shape and dtype
    that writes when computed. One block, the write's last task: it computes to None, or
    (writes into a transactional store from worker processes) to the changes to merge.
    With dask's array query planning on, which has no ``from_delayed`` (nor a ``to_zarr``
    of its own), the write's ``Delayed`` itself."""
    if da.array_expr_enabled():
        return writes
    return da.from_delayed(writes, shape=source.shape, dtype=source.dtype,
                           meta=np.empty((0,) * source.ndim, dtype=source.dtype))


def plan_write(
    x: da.Array | np.ndarray,
    target: StoreLike | Array,
    region: Sequence[slice] | None = None,
    *,
    path: str | None = None,
    storage_options: dict[str, Any] | None = None,
    task_size: int | str | None = None,
    staging: bool | None = None,
) -> WritePlanSummary:
    """Dry run of writing ``x`` into ``region`` of the existing array ``target``.

    Returns the plan's summary: write tasks, shards fully written, read-modify-writes,
    source blocks per task, shards per task (most and median), the largest task and its
    target ``task_size`` (as :func:`to_zarr`'s), how blocks that cut shards reach the
    write tasks (with ``staging`` as :func:`to_zarr`'s: staged in the store, or waiting in
    memory, and how much would wait), and estimated bytes written and read.
    Nothing is written.
    """
    target_bytes = task_bytes("zarrdask.plan_write", task_size)
    staging_choice("zarrdask.plan_write", staging)
    x = _known_sizes("zarrdask.plan_write", x)
    array = open_source(target, path=path, storage_options=storage_options, function="zarrdask.plan_write")
    slices = _checked_region(x, array, region)
    source = _as_dask(x, array, slices)
    plan = make_write_plan(array.shape, source.chunks, array.unit_grid, slices,
                           task_bytes=target_bytes, itemsize=array.dtype.itemsize)
    return plan.summary(array.dtype.itemsize, staging,
                        can_stage=staging_refusal(source.dtype, array.store) is None)


def _known_sizes(function: str, x: da.Array | np.ndarray) -> da.Array | np.ndarray:
    """``x`` as a dask or numpy array whose every block has a known size (a write places
    every block), else the error dask gives such arrays, with its fix."""
    if not isinstance(x, da.Array):
        values = np.asarray(x)
        if values.dtype == object and values.ndim == 0 and not isinstance(x, np.ndarray):
            raise InvalidTypeError(f"{function}(): expected a dask or numpy array (or a nested list of values) "
                                   f"to write, got {type(x).__name__} {x!r:.80}")
        return values
    if any(math.isnan(n) for n in x.shape):
        raise ShapeMismatchError(
            f"{function}(): the dask array has unknown chunk sizes (shape {x.shape}), as after a boolean mask "
            "like x[x > 0.5]; writing places every block, so its size must be known: call "
            "x.compute_chunk_sizes() first (https://docs.dask.org/en/latest/array-chunks.html#unknown-chunks)")
    return x


class Target(NamedTuple):
    """The array a write goes into and the region of it the data covers (step-1 slices)."""

    array: Array
    region: tuple[slice, ...]


def _prepare_target(
    x: da.Array | np.ndarray,
    location: Resolved,
    mode: str,
    region: Sequence[slice] | None,
    append_axis: int,
    given: WriteKeywords,
    reading: ReadKeywords,
) -> Target:
    """Create, open or resize the target (its metadata is written here) and the region."""
    if mode in ("r+", "a"):
        try:
            target = _open_existing(x, location, mode, given, reading)
        except NodeNotFoundError:
            if mode == "r+":
                raise
        else:
            if mode == "r+":
                return Target(target, _checked_region(x, target, region))
            return _append(x, target, append_axis)
    if reading.expect or reading.options:
        raise InvalidModeError(f"{FUNCTION}(): zarr_read_kwargs apply when an existing array is opened; "
                               f"mode={mode!r} creates one: pass them as array keywords")
    create = dict(given.create)
    shape = arguments.shape(FUNCTION, "shape", create.pop("shape", x.shape))
    if shape != tuple(x.shape):
        raise ShapeMismatchError(f"{FUNCTION}(): shape={shape} given for data of shape {tuple(x.shape)}")
    chunks = create.pop("chunks", None)
    if chunks is None:
        chunks = _default_chunks(x, create.get("shards"))
    elif isinstance(chunks, str) and chunks == "dask":
        if not isinstance(x, da.Array):
            raise InvalidModeError('chunks="dask" needs a dask array')
        chunks = x.chunks  # stored as they are: a rectilinear grid, no rechunk
    create.setdefault("dtype", x.dtype)
    create.setdefault("zarr_format", 3)
    try:
        target = create_array(location, shape=shape, chunks=chunks,
                              overwrite=mode == "w", **create, **given.options)
    except ContainsNodeError as exc:
        raise _exists_error(location) or exc from None
    return Target(target, tuple(slice(0, n) for n in target.shape))


def _exists_error(location: Resolved) -> ContainsNodeError | None:
    """The error for a node already at the target, with the fixes that work for to_zarr
    (a group's arrays are named: replacing a group deletes them all); None if none is there."""
    arrays = group_arrays(location.store, location.path)
    if arrays is not None:
        names = ", ".join(repr(a) for a in arrays[:5]) + (" ..." if len(arrays) > 5 else "")
        return ContainsNodeError(
            f"{FUNCTION}(): a group is at {location.describe()} (arrays: {names or 'none'}): pass "
            "component='<name>' to write an array inside it, or overwrite=True (or mode='w') to replace the "
            "whole group")
    if not _node_exists(location):
        return None
    return ContainsNodeError(
        f"{FUNCTION}(): an array already exists at {location.describe()}: pass overwrite=True (or mode='w') "
        "to replace it, mode='r+' to write into it or mode='a' to append to it")


def _open_existing(x: da.Array | np.ndarray, location: Resolved, mode: str, given: WriteKeywords,
                   reading: ReadKeywords) -> Array:
    """The existing target for ``"r+"``/``"a"``: the array keywords that describe it are
    checked against it (NodeNotFoundError when absent); those that only create are refused."""
    expect: dict[str, Any] = {}
    creating_only = []
    for key, value in given.create.items():
        if key in _EXPECTED and not (key == "chunks" and isinstance(value, str)):
            expect[key] = value
        else:
            creating_only.append(key)
    if creating_only and mode == "r+":
        raise InvalidModeError(
            f"{FUNCTION}(): {', '.join(f'{k}=' for k in creating_only)} apply when an array is created; "
            f"mode='r+' writes into an existing one: leave them out (or pass mode='w' to replace it)")
    expect = merged(FUNCTION, expect, reading.expect)
    target = open_location(FUNCTION, location, ReadKeywords("r+", expect, reading.options))
    if creating_only:  # mode "a", and the array exists
        raise InvalidModeError(
            f"{FUNCTION}(): {', '.join(f'{k}=' for k in creating_only)} apply when an array is created; "
            f"mode='a' appends to the existing array at {location.describe()}: leave them out")
    return target


def _node_exists(location: Resolved) -> bool:
    try:
        open_node(location.store, mode="r", path=location.path)
    except ZarrdaskError:
        return False
    return True


def _default_chunks(x: da.Array | np.ndarray, shards: Sequence[int] | None) -> tuple[int, ...] | None:
    """Chunks for a new array: the largest dask block (dask's choice) when it divides the shards, else
    the shards themselves; ``None`` (the core's default) for in-memory data without shards."""
    if shards is not None and not (isinstance(shards, (tuple, list)) and all(isinstance(s, int) for s in shards)):
        shards = None  # (not a shard shape: create_array says what it takes)
    if not isinstance(x, da.Array):
        return None if shards is None else tuple(shards)
    block = tuple(max(1, *c) for c in x.chunks)
    if shards is None or all(s % b == 0 for s, b in zip(shards, block)):
        return block
    return tuple(shards)


def _append(x: da.Array | np.ndarray, target: Array, axis: int) -> Target:
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
    return Target(target, tuple(slice(old, n) if d == axis else slice(0, n) for d, n in enumerate(new_shape)))


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
