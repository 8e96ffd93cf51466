"""Read side of the xarray backend: a zarrdask group seen as xarray variables.

``ZarrdaskDataStore`` maps every array of one group to a lazy ``xarray.Variable``
(dimensions, raw attributes, storage encoding); CF decoding is left to
``xarray.conventions`` exactly as xarray's own zarr engine does.
``ZarrdaskBackendArray`` maps xarray's explicit indexers onto ``a[...]``,
``a.oindex[...]`` and ``a.vindex[...]``.
"""

from __future__ import annotations

import asyncio
import posixpath
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
from xarray import Variable, coding
from xarray.backends.common import NONE_VAR_NAME, AbstractDataStore, BackendArray
from xarray.core import indexing

from zarrdask.compat.xarray import DIMENSION_KEY, Frozen
from zarrdask.errors import DatasetError, DatasetKeyError, warn
from zarrdask.nodes.array import Array
from zarrdask.nodes.block_reader import BlockReader
from zarrdask.runtime.cache import check_budget
from zarrdask.runtime.executor import run_waiting
from zarrdask.nodes.group import Group
from zarrdask.errors import MetadataError
from zarrdask.metadata.nczarr import nczarr_dimension_names
from zarrdask.xarray_backend.encoding import (
    decode_fill_value_attr,
    read_encoding,
    string_kind,
)

if TYPE_CHECKING:
    from typing import Self

__all__ = ["DimsAndAttrs", "ZarrdaskBackendArray", "ZarrdaskDataStore", "array_dims_and_attrs"]


_FULL_KEYS: dict[int, indexing.BasicIndexer] = {}


def _full_key(ndim: int) -> indexing.BasicIndexer:
    """The key ``LazilyIndexedArray`` starts from (all of the array); indexers are
    immutable, so one per dimensionality is shared."""
    key = _FULL_KEYS.get(ndim)
    if key is None:
        key = _FULL_KEYS[ndim] = indexing.BasicIndexer((slice(None),) * ndim)
    return key


#: arrays of one chunk and at most this many bytes are read once per open (see below)
SMALL_ARRAY_BYTES = 1 << 16


class ZarrdaskBackendArray(BackendArray):
    """A zarrdask ``Array`` behind xarray's lazy indexing (vectorized support). Basic
    indexing (what dask tasks do with ``chunks=``) goes through a ``BlockReader``.

    A small array stored as one chunk (a coordinate, typically) is read whole on its
    first basic read and later basic reads are served from that copy: while opening a
    dataset, xarray reads a time coordinate's first and last values and then all of it,
    which would otherwise fetch and decode the same chunk three times (three requests
    on an object store)."""

    __slots__ = ("_array", "_reader", "_whole", "dtype", "shape")

    def __init__(self, array: Array, whole: np.ndarray | None = None) -> None:
        self._array = array
        self._reader = BlockReader(array)
        self._whole = whole  # (already read: see ZarrdaskDataStore.preload)
        self.shape = array.shape
        kind = string_kind(array)
        # Keep the vlen element type on object arrays, as xarray's engine does (GH 7328).
        self.dtype = coding.strings.create_vlen_dtype(kind) if kind else array.dtype

    def get_array(self) -> Array:
        """The wrapped zarrdask array."""
        return self._array

    def __getitem__(self, key: indexing.ExplicitIndexer) -> np.ndarray:
        if isinstance(key, indexing.VectorizedIndexer):
            method = self._vindex
        elif isinstance(key, indexing.OuterIndexer):
            method = self._oindex
        else:
            method = self._getitem
        return indexing.explicit_indexing_adapter(
            key, self.shape, indexing.IndexingSupport.VECTORIZED, method
        )

    async def async_getitem(self, key: indexing.ExplicitIndexer) -> np.ndarray:
        """``__getitem__`` in a worker thread (for ``Dataset.load_async``)."""
        return await asyncio.to_thread(self.__getitem__, key)

    def _getitem(self, key: tuple[Any, ...]) -> np.ndarray:
        whole = self._whole
        if whole is None and is_small(self._array):
            whole = self._whole = self.read_whole(self._array)
        if whole is not None:
            # a copy (callers may write to what they get), an array even for one element
            return np.array(whole[key], dtype=whole.dtype, copy=True)
        return self._result(self._reader[key])

    def _result(self, value: Any) -> np.ndarray:
        """A read's result as an array of the stored dtype: a read of one element gives a
        scalar, and a string scalar would otherwise become a fixed-width ``<U`` array."""
        return np.asarray(value, dtype=self._array.dtype)

    @staticmethod
    def read_whole(array: Array) -> np.ndarray:
        return np.asarray(BlockReader(array)[...], dtype=array.dtype)

    def _oindex(self, key: tuple[Any, ...]) -> np.ndarray:
        return self._result(self._array.oindex[key])

    def _vindex(self, key: tuple[Any, ...]) -> np.ndarray:
        return self._result(self._array.vindex[key])


def is_small(array: Array) -> bool:
    """Stored as one chunk of at most ``SMALL_ARRAY_BYTES``: read whole, once per open."""
    return array.nbytes <= SMALL_ARRAY_BYTES and all(axis.count <= 1 for axis in array.unit_grid)


class DimsAndAttrs(NamedTuple):
    """An array as xarray sees it before decoding: its dimension names and user attributes."""

    dims: tuple[str, ...]
    attrs: dict[str, Any]


def array_dims_and_attrs(array: Array) -> DimsAndAttrs:
    """Dimension names and user attributes of one array.

    v3: ``dimension_names``; v2: the ``_ARRAY_DIMENSIONS`` attribute (hidden from
    the attributes), else NCZarr's dimension references (v3 too, without ``dimension_names``). A v2 array with neither is refused, as
    by xarray's own engine (names made up per array would conflict between arrays);
    v3 arrays without names get ``dim_0, dim_1, ...`` with a warning (xarray refuses them).
    """
    meta = array.metadata
    # Straight from the (immutable) metadata: ``array.attrs`` re-reads it per key.
    attrs = dict(meta.attributes)
    names: Sequence[str | None] | None
    if not meta.dimensions_attribute:
        names = meta.dimension_names
        if names is None and array.ndim:
            names = _nczarr_dims_maybe(array, attrs)
            if names is not None:
                attrs = {k: v for k, v in attrs.items() if not k.lower().startswith("_nc")}
    else:
        names = attrs.pop(DIMENSION_KEY, None)
        if names is None:
            names = _nczarr_dims_maybe(array, attrs)
        if names is None and array.ndim:
            raise _missing_v2_dimensions(array)
        attrs = {k: v for k, v in attrs.items() if not k.lower().startswith("_nc")}
    if names is None and array.ndim == 0:
        names = ()
    if names is not None and len(names) != array.ndim:
        raise MetadataError(
            f"{len(names)} dimension names {names!r} for an array of {array.ndim} "
            "dimensions",
            key=array.path,
        )
    if names is None or any(name is None for name in names):
        names = [f"dim_{i}" if n is None else n for i, n in enumerate(names or [None] * array.ndim)]
        warn(f"array {array.path!r} has no dimension names; opening it with dimensions {tuple(names)}")
    return DimsAndAttrs(tuple(str(name) for name in names), attrs)


def _missing_v2_dimensions(array: Array) -> DatasetKeyError:
    """xarray's refusal of a v2 array without dimension names, with the fix."""
    path = array.path
    example = [f"{array.basename}_dim_{i}" for i in range(array.ndim)]
    return DatasetKeyError(
        f"Zarr v2 array {path!r} is missing the attribute `{DIMENSION_KEY}` (and NCZarr "
        "dimension references), which xarray needs to give its variable dimensions. Name "
        f"them (one per axis; arrays sharing a dimension use the same name): "
        f"zarrdask.open_array(store, path={path!r}, mode='r+').attrs[{DIMENSION_KEY!r}] = "
        f"{example!r}; or read the array without xarray: zarrdask.open_array(store, path={path!r})"
    )


def _nczarr_dims_maybe(array: Array, attrs: Mapping[str, Any]) -> tuple[str, ...] | None:
    """NCZarr's dimension names (``dimension_references`` or ``dimrefs``), if the array has
    them: in the attributes (as given), else (netCDF-C 4.8) in ``.zarray``'s ``_NCZARR_ARRAY``."""
    nczarr = getattr(array.metadata, "nczarr", None)
    return nczarr_dimension_names(attrs, array.ndim, {"_NCZARR_ARRAY": nczarr} if nczarr else None)


class LoneArray:
    """A Zarr v1 array seen as a group holding it alone (v1 has no groups, no attributes
    above its arrays), the variable named by its directory."""

    def __init__(self, array: Array) -> None:
        self.array = array
        self.name = posixpath.basename((array.path or array.store.url).rstrip("/")) or "data"
        self.store = array.store
        self.zarr_format = array.zarr_format
        self.attrs: dict[str, Any] = {}

    def members(self) -> list[tuple[str, Array]]:
        return [(self.name, self.array)]


class ZarrdaskDataStore(AbstractDataStore):
    """One zarrdask group as an xarray data store (read side).

    ``fill_value_as_mask`` follows xarray's zarr engine: by default True for v2
    (the Zarr ``fill_value`` becomes the CF ``_FillValue``) and False for v3 (the
    ``fill_value`` goes to ``encoding`` and a ``_FillValue`` attribute is decoded
    from xarray's base64 form). ``cache_members``: the group's members are listed once,
    here (False: on every use, so members added meanwhile are seen). ``cache_bytes``:
    the arrays read through the process's decoded-chunk cache with this budget (int
    bytes or a string such as ``"1 GiB"``; 0: not; None: the ``zarrdask.cache-bytes``
    dask config default).
    """

    __slots__ = ("_cache_bytes", "_cached", "_fill_value_as_mask", "_preloaded", "group")

    def __init__(self, group: Group, *, fill_value_as_mask: bool | None = None, cache_members: bool = True,
                 cache_bytes: int | str | None = None) -> None:
        self.group = group
        self._cache_bytes = check_budget(cache_bytes)
        self._cached: dict[str, Array | Group] | None = self._listed() if cache_members else None
        self._preloaded: dict[str, np.ndarray] = {}
        if fill_value_as_mask is None:
            fill_value_as_mask = group.zarr_format == 2
        self._fill_value_as_mask = fill_value_as_mask

    def _listed(self) -> dict[str, Array | Group]:
        """The group's members, its arrays with this store's cache budget when one is given."""
        members = dict(self.group.members())
        if self._cache_bytes is None:
            return members
        return {name: m.with_options(cache_bytes=self._cache_bytes) if isinstance(m, Array) else m
                for name, m in members.items()}

    @property
    def _members(self) -> dict[str, Array | Group]:
        return self._cached if self._cached is not None else self._listed()

    def arrays(self) -> dict[str, Array]:
        """The arrays directly in this group, by name."""
        return {k: v for k, v in self._members.items() if isinstance(v, Array)}

    def groups(self) -> dict[str, Group]:
        """The subgroups directly in this group, by name."""
        return {k: v for k, v in self._members.items() if isinstance(v, Group)}

    def walk(self, prefix: str = "/") -> Iterator[tuple[str, Self]]:
        """This store and the stores of all subgroups, with their tree paths, level by
        level; the groups of one level list their members at the same time."""
        level = [(prefix, self)]
        while level:
            yield from level
            children = [(posixpath.join(path, name), child)
                        for path, store in level for name, child in sorted(store.groups().items())]
            stores = run_waiting(lambda item: type(self)(item[1], fill_value_as_mask=self._fill_value_as_mask,
                                                         cache_members=self._cached is not None,
                                                         cache_bytes=self._cache_bytes), children)
            level = [(path, store) for (path, _), store in zip(children, stores)]

    def index_coordinates(self) -> list[str]:
        """The small one-dimensional arrays named like their dimension: xarray reads them
        whole to build indexes as soon as it has the dataset."""
        names = []
        for name, array in self.arrays().items():
            dims, _ = array_dims_and_attrs(array)
            if dims == (name,) and is_small(array):
                names.append(name)
        return names

    def preload(self, name: str) -> None:
        """Read array ``name`` whole now; its variable will be served from that copy."""
        self._preloaded[name] = ZarrdaskBackendArray.read_whole(self.arrays()[name])

    def open_store_variable(self, name: str) -> Variable:
        """One array as a lazy, still CF-encoded ``Variable``."""
        array = self._members[name]
        if not isinstance(array, Array):
            raise KeyError(name)
        return self._store_variable(array)

    def _store_variable(self, array: Array) -> Variable:
        dims, attrs = array_dims_and_attrs(array)
        encoding = read_encoding(array, dims)
        if self._fill_value_as_mask:
            if array.fill_value is not None:
                attrs["_FillValue"] = array.fill_value
        else:
            if array.zarr_format == 3:
                encoding["fill_value"] = array.fill_value
            if "_FillValue" in attrs:
                attrs["_FillValue"] = decode_fill_value_attr(attrs["_FillValue"], array)
        whole = self._preloaded.get(array.basename)
        data = indexing.LazilyIndexedArray(ZarrdaskBackendArray(array, whole), _full_key(array.ndim))
        return Variable(dims, data, attrs, encoding, fastpath=True)

    def get_variables(self) -> Frozen[str, Variable]:
        return Frozen(
            {
                name: self._store_variable(member)
                for name, member in self._members.items()
                if isinstance(member, Array)
            }
        )

    def load(self) -> tuple[Frozen[str, Variable], Frozen[str, Any]]:
        """``AbstractDataStore.load`` without copying both mappings once more. An array
        named ``__values__`` (xarray's name for an unnamed DataArray) goes through the
        base class, which maps the name back to None."""
        variables = self.get_variables()
        if NONE_VAR_NAME in variables:
            return super().load()
        return variables, Frozen(self.get_attrs())

    def get_attrs(self) -> dict[str, Any]:
        return {k: v for k, v in self.group.attrs.items() if not k.lower().startswith("_nc")}

    def get_dimensions(self) -> dict[str, int]:
        sizes: dict[str, int] = {}
        for array in self.arrays().values():
            dims, _ = array_dims_and_attrs(array)
            for dim, size in zip(dims, array.shape, strict=True):
                if sizes.setdefault(dim, size) != size:
                    raise DatasetError(
                        f"found conflicting lengths for dimension {dim} "
                        f"({size} != {sizes[dim]})"
                    )
        return sizes

    def close(self) -> None:
        """Nothing to release: zarrdask holds no open handles."""
