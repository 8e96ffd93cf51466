"""zarr-python's convenience calls over zarrdask's own: ``zeros``/``ones``/``full``/
``empty`` (and ``*_like``), ``create``, ``array``, ``from_array``, ``open_like``,
``open_consolidated``, ``group``, ``save``/``save_array``/``save_group`` and ``load``.

Each takes its zarr-python namesake's arguments and means the same by them: the array
keywords are ``zarr.create``'s (``chunks=True``/``False``, ``compressor``,
``chunk_shape``, ``dimension_separator``, ``config``, besides :func:`create_array`'s;
float64 unless ``dtype`` is given), checked like every zarrdask call (an unknown name is
an error, one zarrdask cannot honour is refused naming what to use instead), and
``store=None`` is a new in-memory store. Where zarr-python 3 itself stops, these go on as zarr-python 2 did: ``load`` of a
group is a mapping that reads each array when asked for it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any, Literal

import numpy as np

from ..errors import InvalidModeError, InvalidValueError, UnexpectedKeywordError
from ..keywords import check_keywords, refuse
from ..storage.base import join_path
from .openers import open as open_node
from .openers import open_array, open_group
from ..nodes.array import Array
from ..nodes.array_keywords import DEFAULT_FILL
from ..nodes.create import OVERWRITE_HINT, create_array, create_legacy
from ..nodes.group import Group
from ..nodes.like import array_like, is_array_like, is_array_node, like_keywords, regular_chunks

__all__ = ["LoadedGroup", "array", "create", "empty", "empty_like", "from_array", "full", "full_like", "group", "load",
           "ones", "ones_like", "open_consolidated", "open_like", "save", "save_array", "save_group", "zeros",
           "zeros_like"]

#: how to replace what a save finds in its place
_SAVE_HINT = "zarrdask.save_array(store, value, path=..., mode='w') replaces it"
#: what ``from_array``'s "keep" means where the source has nothing to keep (not a Zarr
#: array, or one of another format)
_FROM_ARRAY_DEFAULTS: dict[str, Any] = {"chunks": "auto", "shards": None, "filters": "auto", "compressors": "auto",
                                        "serializer": "auto"}
#: bytes of the source read per step when ``from_array`` copies values
_COPY_STEP_BYTES = 256 << 20


def create(shape: Any, **kwargs: Any) -> Array:
    """Create an array, as ``zarr.create`` does: its keywords, ``store`` (None: a new
    in-memory store), ``path``, ``overwrite=True`` to replace a node there."""
    return _created("zarrdask.create", {"shape": shape, **kwargs})


def _created(function: str, keywords: dict[str, Any], exists_hint: str = OVERWRITE_HINT, data: Any = None) -> Array:
    """``create_legacy`` with ``zarr.create``'s placement keywords (``store``, ``path``,
    ``overwrite``, ``zarr_format``, ``storage_options``) taken out of ``keywords``."""
    place = {name: keywords.pop(name, None) for name in ("store", "path", "zarr_format", "storage_options")}
    return create_legacy(function, place["store"], place["path"], keywords,
                         overwrite=bool(keywords.pop("overwrite", False)), zarr_format=place["zarr_format"],
                         storage_options=place["storage_options"], exists_hint=exists_hint, data=data)


def _filled(function: str, shape: Any, fill_value: Any, kwargs: dict[str, Any]) -> Array:
    """A new array of ``shape`` whose fill value is ``fill_value`` (nothing stored)."""
    return _created(function, {"shape": shape, "fill_value": fill_value, **kwargs})


def zeros(shape: Any, **kwargs: Any) -> Array:
    """An array of zeros (fill value 0; nothing stored until written), as ``zarr.zeros``."""
    return _filled("zarrdask.zeros", shape, kwargs.pop("fill_value", 0), kwargs)


def ones(shape: Any, **kwargs: Any) -> Array:
    """An array of ones (fill value 1), as ``zarr.ones``."""
    return _filled("zarrdask.ones", shape, kwargs.pop("fill_value", 1), kwargs)


def full(shape: Any, fill_value: Any, **kwargs: Any) -> Array:
    """An array of ``fill_value``, as ``zarr.full``."""
    return _filled("zarrdask.full", shape, fill_value, kwargs)


def empty(shape: Any, **kwargs: Any) -> Array:
    """An array with no values written (the data type's default fill value unless given), as
    ``zarr.empty``."""
    return _filled("zarrdask.empty", shape, kwargs.pop("fill_value", DEFAULT_FILL), kwargs)


def zeros_like(a: Any, **kwargs: Any) -> Array:
    """An array of zeros like ``a`` (shape, chunks, dtype; codecs of a Zarr array), as ``zarr.zeros_like``."""
    return zeros(**like_keywords(a, kwargs, keep_fill=False))


def ones_like(a: Any, **kwargs: Any) -> Array:
    """An array of ones like ``a``, as ``zarr.ones_like``."""
    return ones(**like_keywords(a, kwargs, keep_fill=False))


def full_like(a: Any, **kwargs: Any) -> Array:
    """An array like ``a`` filled with ``fill_value`` (a Zarr array's own by default), as ``zarr.full_like``."""
    like = like_keywords(a, kwargs, keep_fill=True)
    if "fill_value" not in like:
        raise InvalidValueError("zarrdask.full_like() needs fill_value= when the array it copies has none")
    return full(like.pop("shape"), like.pop("fill_value"), **like)


def empty_like(a: Any, **kwargs: Any) -> Array:
    """An array like ``a`` with no values written (a Zarr array's fill value), as ``zarr.empty_like``."""
    return empty(**like_keywords(a, kwargs, keep_fill=True))


def open_like(a: Any, path: Any, **kwargs: Any) -> Array:
    """The array at ``path`` (a store, path or URL), created like ``a`` when nothing is
    there (``mode`` default "a"), as zarr-python's ``open_like`` meant it: a persistent array."""
    kwargs.setdefault("mode", "a")
    return open_array(path, **like_keywords(a, kwargs, keep_fill=True))


def array(data: Any, **kwargs: Any) -> Array:
    """An array holding ``data`` (shape and dtype from it; chunks from it when it has
    them), as ``zarr.array``; a Zarr array's layout and codecs are kept (``from_array``)."""
    if is_array_node(data):
        store = kwargs.pop("store", None)
        return from_array(store, data=data, name=kwargs.pop("path", None), **kwargs)
    return _holding("zarrdask.array", data, kwargs, OVERWRITE_HINT)


def _holding(function: str, data: Any, kwargs: dict[str, Any], exists_hint: str) -> Array:
    """A new array of ``data`` (``zarr.create``'s keywords besides), its values written."""
    data = array_like(data)
    if kwargs.get("dtype") is None:
        kwargs["dtype"] = data.dtype
    if kwargs.get("chunks") is None:
        kwargs["chunks"] = regular_chunks(data)
    return _created(function, {"shape": data.shape, **kwargs}, exists_hint, data=data)


def from_array(store: Any, *, data: Any, write_data: bool = True, name: str | None = None, chunks: Any = "keep",
               shards: Any = "keep", filters: Any = "keep", compressors: Any = "keep", serializer: Any = "keep",
               fill_value: Any = DEFAULT_FILL, attributes: Mapping[str, Any] | None = None,
               dimension_names: Any = None, zarr_format: Literal[2, 3] | None = None, **kwargs: Any) -> Array:
    """A new array at ``name`` in ``store`` from ``data``, as ``zarr.from_array``: from a
    Zarr array (zarrdask's or zarr-python's) ``"keep"`` keeps its chunks, shards, filters,
    compressors and serializer (those of another format than ``zarr_format`` are replaced
    by the defaults), and its fill value, attributes and dimension names are kept unless
    given; from anything else ``"keep"`` means the defaults. The values are copied (read and
    written a step of whole stored units at a time) unless ``write_data=False``. The other
    keywords are :func:`create_array`'s."""
    source = is_array_node(data)
    data = array_like(data)
    if source and zarr_format is None:
        zarr_format = data.metadata.zarr_format
    like = like_keywords(data, {} if zarr_format is None else {"zarr_format": zarr_format}, keep_fill=False)
    given = {"chunks": chunks, "shards": shards, "filters": filters, "compressors": compressors,
             "serializer": serializer}
    settings: dict[str, Any] = {name: like.get(name, _FROM_ARRAY_DEFAULTS[name])
                                if isinstance(value, str) and value == "keep" else value
                                for name, value in given.items()}
    if source:
        if fill_value is DEFAULT_FILL or fill_value is None:
            fill_value = data.fill_value
        if attributes is None:
            attributes = dict(data.attrs)
        if dimension_names is None and data.metadata.zarr_format == 3:
            dimension_names = getattr(data.metadata, "dimension_names", None)
    result = create_array(store, name=name, shape=data.shape, dtype=data.dtype, fill_value=fill_value,
                          attributes=attributes, dimension_names=dimension_names,
                          zarr_format=3 if zarr_format is None else zarr_format, **settings, **kwargs)
    if write_data and result.size:
        _copy_values(data, result)
    return result


def _copy_values(source: Any, target: Array) -> None:
    """``target[...] = source[...]`` in steps along the first axis of whole stored units of
    ``target`` (so no unit is written twice), each of about :data:`_COPY_STEP_BYTES`."""
    if target.ndim == 0:
        target[...] = np.asarray(source[...])
        return
    unit = (target.shards or target.chunks)[0]
    if not isinstance(unit, int):  # (a rectilinear grid: one step)
        unit = target.shape[0]
    row_bytes = math.prod(target.shape[1:]) * target.dtype.itemsize
    step = max(unit, unit * (_COPY_STEP_BYTES // max(row_bytes * unit, 1)))
    for start in range(0, target.shape[0], step):
        region = slice(start, min(start + step, target.shape[0]))
        target[region] = np.asarray(source[region])


def open_consolidated(store: Any, *, use_consolidated: bool = True, **kwargs: Any) -> Group:
    """The group at ``store`` (and ``path=``) read through its consolidated metadata, which
    it must have, as ``zarr.open_consolidated``; the keywords are :func:`open_group`'s."""
    if use_consolidated is not True:
        raise refuse("zarrdask.open_consolidated", f"use_consolidated={use_consolidated!r}",
                     "it always reads consolidated metadata; use zarrdask.open_group(use_consolidated=...)")
    return open_group(store, use_consolidated=True, **kwargs)


def group(store: Any = None, *, overwrite: bool = False, path: str | None = None, zarr_format: int | None = None,
          attributes: Mapping[str, Any] | None = None, storage_options: dict[str, Any] | None = None,
          **kwargs: Any) -> Group:
    """The group at ``path`` of ``store`` (a new in-memory store by default), created when
    nothing is there, replaced with ``overwrite=True``, as ``zarr.group``."""
    return open_group(store, mode="w" if overwrite else "a", path=path, zarr_format=zarr_format,
                      attributes=dict(attributes) if attributes is not None else None,
                      storage_options=storage_options, **kwargs)


def _save_mode(function: str, kwargs: dict[str, Any]) -> bool:
    """zarr-python's ``mode`` of a save (default "a") as the ``overwrite`` it means."""
    mode = kwargs.pop("mode", "a")
    if mode not in ("a", "w", "w-"):
        raise InvalidModeError(f"{function}(mode={mode!r}): a save creates an array; mode is 'a' or 'w-' (fail "
                               "when something is there) or 'w' (replace it)")
    return bool(kwargs.pop("overwrite", False)) or mode == "w"


def save_array(store: Any, arr: Any, *, zarr_format: int | None = None, path: str | None = None,
               storage_options: dict[str, Any] | None = None, **kwargs: Any) -> Array:
    """Save ``arr`` as an array at ``path`` of ``store``, as ``zarr.save_array``: an array
    already there is an error unless ``mode="w"`` (or ``overwrite=True``) replaces it;
    other keywords are ``zarr.create``'s."""
    overwrite = _save_mode("zarrdask.save_array", kwargs)
    if not is_array_like(arr):
        raise InvalidValueError(f"zarrdask.save_array(): expected an array, got {type(arr).__name__}; "
                                "pass numpy.asarray(value)")
    return _holding("zarrdask.save_array", arr, {"store": store, "path": path, "zarr_format": zarr_format,
                                                 "storage_options": storage_options, "overwrite": overwrite,
                                                 **kwargs}, _SAVE_HINT)


def save_group(store: Any, *args: Any, zarr_format: int | None = None, path: str | None = None,
               storage_options: dict[str, Any] | None = None, **kwargs: Any) -> Group:
    """Save arrays into a new group at ``path`` (replacing what is there, as
    ``zarr.save_group``): positional ones as ``arr_0``, ``arr_1``, ..., keyword ones under
    their names."""
    arrays = {**{f"arr_{i}": a for i, a in enumerate(args)}, **kwargs}
    if not arrays:
        raise InvalidValueError("zarrdask.save_group(): at least one array must be provided")
    for key, value in arrays.items():
        if not is_array_like(value):
            if key in kwargs:
                raise UnexpectedKeywordError(
                    f"zarrdask.save_group() got keyword {key!r}={type(value).__name__}: its keywords are the arrays "
                    f"to save, by name (pass numpy.asarray(value))")
            raise InvalidValueError(f"zarrdask.save_group(): argument {key} is a {type(value).__name__}, not an "
                                    "array; pass numpy.asarray(value)")
    saved = open_group(store, mode="w", path=path, zarr_format=zarr_format, storage_options=storage_options)
    for key, value in arrays.items():
        save_array(saved.store, value, path=join_path(saved.path, key), zarr_format=saved.zarr_format)
    return saved


def save(store: Any, *args: Any, zarr_format: int | None = None, path: str | None = None,
         **kwargs: Any) -> Array | Group:
    """``save_array`` for one positional array, else ``save_group``, as ``zarr.save``."""
    if len(args) == 1 and not kwargs:
        return save_array(store, args[0], zarr_format=zarr_format, path=path)
    return save_group(store, *args, zarr_format=zarr_format, path=path, **kwargs)


class LoadedGroup(Mapping[str, np.ndarray]):
    """``load`` of a group: its arrays by name, each read when asked for (as zarr-python 2's
    ``LazyLoader``)."""

    def __init__(self, group: Group) -> None:
        self._group = group
        self._names = group.array_keys()

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self._names:
            raise KeyError(name)
        member = self._group[name]
        assert isinstance(member, Array)
        values: np.ndarray = member[...]
        return values

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def __repr__(self) -> str:
        return f"<LoadedGroup {self._group.name!r}: {', '.join(self._names) or 'no arrays'}>"


def load(store: Any, path: str | None = None, zarr_format: int | None = None,
         **kwargs: Any) -> np.ndarray | LoadedGroup:
    """The values of the array at ``path`` of ``store`` as a NumPy array, or for a group a
    mapping of its arrays that reads each one when asked for, as ``zarr.load``."""
    if "zarr_version" in kwargs:
        raise refuse("zarrdask.load", "zarr_version", "use zarr_format=")
    check_keywords("zarrdask.load", kwargs, ("storage_options",))
    node = open_node(store, mode="r", path=path, zarr_format=zarr_format, **kwargs)
    if isinstance(node, Array):
        values: np.ndarray = node[...]
        return values
    return LoadedGroup(node)
