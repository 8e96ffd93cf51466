"""Private dask API, in one place (checked on dask 2026.8.0).

``lazy_layer``: a graph layer that generates its tasks on demand, from a small
:class:`TaskSource` (a write plan), so a graph of a million tasks is built and pickled
as the few objects that describe it and is materialised only where it runs (the local
scheduler, or the distributed scheduler after the client shipped the compact form).
It subclasses dask's ``Layer`` and relies on its culling and materialisation protocol.
Once per process the path is checked on a small graph; when that fails (another dask
release) the layer is materialised into dask's public ``MaterializedLayer`` instead.

``block_layer`` and ``fuse_blockwise``: a ``Blockwise`` layer of one task per block of a
collection, with a per-block argument generated on demand (a ``BlockwiseDep``), and
dask's blockwise fusion (``optimize_blockwise``) applied to a graph ahead of time, so
such a layer fuses with a blockwise source into one task per block (dask fuses only array
collections' graphs, not a ``Delayed``'s). Without fusion the graph is the same tasks,
unfused: ``fuse_blockwise`` falls back to it when dask's fusion fails, and
``tests/dask/test_write_staging.py`` checks that the installed dask fuses.

``named_from_array``: with dask's array query planning on, ``da.from_array`` ignores
``name=`` and keys its blocks ``fromarray-<token>``, which hides zarrdask's reads from
progress bars and the dashboard. There dask's own ``FromArray`` expression (the same
lazily materialised ``graph_from_arraylike`` layer, one task per block) is built through
a subclass that only changes its name. Any failure falls back to ``da.from_array``;
``tests/project/test_compat.py`` checks that the private path, not the fallback, serves the
installed dask.

``whole_expression``: an expression of one task, ``read(source)``, that a collection
hands ``dask.compute`` through its ``expr`` attribute (since dask 2025 ``compute`` builds
its graph from a collection's expression where it has one, and ``finalize_compute`` of a
plain expression is the expression itself). ``from_zarr``'s array computed on its own is
so read straight into its result, not read in blocks and then copied by dask's
``concatenate3``. None where dask has no expressions; ``tests/dask/test_whole_read.py``
checks that the installed dask runs that one task.
"""

from __future__ import annotations

import functools
from collections.abc import Hashable, Iterator
from typing import Any, Protocol

import dask
import dask.array as da
from dask.blockwise import BlockwiseDep, blockwise, optimize_blockwise
from dask.highlevelgraph import HighLevelGraph, Layer, MaterializedLayer
from dask.task_spec import List, Task, TaskRef

__all__ = ["CHECKED_ON", "BlockArgs", "TaskSource", "block_layer", "fuse_blockwise", "lazy_layer", "named_from_array",
           "private_fuse_blockwise", "private_from_array", "private_lazy_layer", "whole_expression"]

CHECKED_ON = "2026.8.0"
_NAMED_FROM_ARRAY = "_NamedFromArray"
_WHOLE_READ = "_WholeRead"


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


def whole_expression(read: Any, source: Any, name: str) -> Any:
    """An expression whose one task, keyed ``name``, computes ``read(source)``; None where
    the installed dask has no expressions (its collections then compute as they always did)."""
    try:
        return _whole_read_class()(read, source, name)
    except Exception:  # another dask release: the caller keeps dask's own graph
        return None


@functools.cache
def _whole_read_class() -> type:
    """A leaf of dask's expression system, defined on first use and reachable as
    ``zarrdask.compat.dask._WholeRead`` (a distributed scheduler unpickles it)."""
    from dask._expr import Expr

    class _WholeRead(Expr):
        _parameters = ["read", "source", "key_name"]

        @functools.cached_property
        def _name(self) -> str:
            return self.operand("key_name")

        def _layer(self) -> dict:
            return {self._name: Task(self._name, self.operand("read"), self.operand("source"))}

        def __dask_keys__(self) -> list[str]:
            return [self._name]

        def __str__(self) -> str:
            return f"WholeRead({self._name})"

    _WholeRead.__module__ = __name__
    _WholeRead.__qualname__ = _WHOLE_READ
    return _WholeRead


class BlockArgs(Protocol):
    """What a block layer's per-block argument comes from."""

    def block_arg(self, index: tuple[int, ...]) -> Any: ...


class _PerBlock(BlockwiseDep):
    """A ``BlockwiseDep`` whose value at a block is ``args.block_arg(index)``."""

    produces_tasks = False

    def __init__(self, args: BlockArgs, numblocks: tuple[int, ...]) -> None:
        self.args = args
        self.numblocks = numblocks

    def __getitem__(self, index: tuple[int, ...]) -> Any:
        return self.args.block_arg(tuple(index))


def block_layer(func: Any, name: str, source: Any, args: BlockArgs, *constants: Any) -> Layer:
    """``(name, *index) -> func(block, args.block_arg(index), *constants)`` for every block
    (``index``) of the dask collection ``source``: a ``Blockwise`` layer (public
    ``dask.blockwise.blockwise``), which ``fuse_blockwise`` can fuse with a blockwise source."""
    ind = tuple(f"i{k}" for k in range(source.ndim))
    pairs: list[Any] = [source.name, ind, _PerBlock(args, source.numblocks), ind]
    for value in constants:
        pairs += [value, None]
    return blockwise(func, name, ind, *pairs, numblocks={source.name: source.numblocks})


def fuse_blockwise(graph: HighLevelGraph, keys: list[Hashable]) -> HighLevelGraph:
    """``graph`` with its blockwise layers fused where dask would fuse an array's (a source
    layer used only by the next one becomes part of its tasks); ``graph`` itself when that
    fails."""
    try:
        return private_fuse_blockwise(graph, keys)
    except Exception:  # another dask release: the unfused graph computes the same
        return graph


def private_fuse_blockwise(graph: HighLevelGraph, keys: list[Hashable]) -> HighLevelGraph:
    """The private path alone."""
    return optimize_blockwise(graph, keys=keys)


class TaskSource(Protocol):
    """What a lazy layer generates its tasks from: its keys, and the task of each key."""

    def __len__(self) -> int: ...

    def __contains__(self, key: object) -> bool: ...

    def keys(self) -> Iterator[Hashable]: ...

    def task(self, key: Hashable) -> Task: ...


def lazy_layer(source: TaskSource) -> Layer:
    """A layer whose tasks are ``source``'s, generated when the graph is materialised;
    a materialised layer of the same tasks when dask's layer protocol does not hold."""
    if _lazy_layers_work():
        return private_lazy_layer(source)
    return MaterializedLayer({key: source.task(key) for key in source.keys()})


def private_lazy_layer(source: TaskSource) -> Layer:
    """The private path alone."""
    return _LazyLayer(source)


class _LazyLayer(Layer):
    """A dask ``Layer`` over a :class:`TaskSource`. Nothing is generated until the graph is
    materialised: culling (dask's default, which materialises) and ``dict(graph)`` do that
    where the graph runs. ``has_legacy_tasks`` would scan every task; they are all Tasks."""

    has_legacy_tasks = False

    def __init__(self, source: TaskSource) -> None:
        super().__init__()
        self.source = source

    def __getitem__(self, key: Hashable) -> Task:
        if key not in self.source:
            raise KeyError(key)
        return self.source.task(key)

    def __contains__(self, key: object) -> bool:
        return key in self.source

    def __iter__(self) -> Iterator[Hashable]:
        return iter(self.source.keys())

    def __len__(self) -> int:
        return len(self.source)

    def is_materialized(self) -> bool:
        return False

    def get_output_keys(self) -> set[Hashable]:
        return set(self.source.keys())


class _ProbeSource:
    """Three tasks summing a value of another layer: the self-check's graph."""

    def __len__(self) -> int:
        return 3

    def __contains__(self, key: object) -> bool:
        return key in (("probe", 0), ("probe", 1), "probe")

    def keys(self) -> Iterator[Hashable]:
        return iter((("probe", 0), ("probe", 1), "probe"))

    def task(self, key: Hashable) -> Task:
        if key == "probe":
            return Task(key, sum, List(TaskRef(("probe", 0)), TaskRef(("probe", 1))))
        return Task(key, int.__add__, TaskRef("probe-input"), key[1])  # type: ignore[index]


@functools.cache
def _lazy_layers_work() -> bool:
    """Whether a lazy layer culls, materialises and computes as a dict of its tasks would."""
    try:
        graph = HighLevelGraph(
            {"probe-input": MaterializedLayer({"probe-input": 20}), "probe": _LazyLayer(_ProbeSource())},
            {"probe-input": set(), "probe": {"probe-input"}},
        )
        culled = graph.cull({"probe"})
        return dask.get(culled, "probe") == 41 and len(dict(culled)) == 4
    except Exception:  # another dask release: materialise instead
        return False


def __getattr__(attr: str) -> Any:
    if attr == _NAMED_FROM_ARRAY:
        return _named_from_array_class()
    if attr == _WHOLE_READ:
        return _whole_read_class()
    raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")
