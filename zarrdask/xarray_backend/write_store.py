"""Write side of the xarray backend: a writable data store over one zarrdask group.

``ZarrdaskWritableStore.store`` follows ``xarray.backends.ZarrStore.store`` step by
step (existing variables keep their on-disk encoding, append resizes, ``mode="a-"``
only touches appended variables, ``r+`` refuses new variables), so a Dataset write
has ``Dataset.to_zarr``'s semantics. The differences are deliberate: metadata is
written by zarrdask, data goes through ``ArrayWrites`` (shard-safe dask writes), and
there is no ``safe_chunks`` check because misaligned dask chunks cannot race.
"""

from __future__ import annotations

import os
from collections.abc import Hashable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
from xarray import Dataset, Variable, conventions

from zarrdask.compat.xarray import (
    AbstractWritableDataStore,
    check_vlen_dtype,
    encode_variable_name,
    encode_zarr_attr_value,
    encode_zarr_variable,
    validate_and_transpose_existing_dims,
    validate_datatypes_for_zarr_append,
)
from zarrdask.api.openers import open_group
from zarrdask.nodes.array import Array
from zarrdask.nodes.group import create_group
from zarrdask.dask_io.transactions import check_travels
from zarrdask.door import resolve
from zarrdask.storage.base import join_path
from zarrdask.storage.records import WriteRecord, read_records, region_bounds
from zarrdask.storage.write_behind import WriteBehindStore
from zarrdask.nodes.group import Group
from zarrdask.errors import (ContainsNodeError, DatasetError, DatasetTypeError, MetadataError, NodeNotFoundError,
                             WriteConflictError)
from zarrdask.xarray_backend.array_writes import ArrayWrites
from zarrdask.xarray_backend.encoding import encode_fill_value_attr, write_layout
from zarrdask.xarray_backend.stored_encoding import as_stored, without_cast
from zarrdask.xarray_backend.region import RegionArg, resolve_region
from zarrdask.xarray_backend.store import ZarrdaskDataStore, array_dims_and_attrs

if TYPE_CHECKING:
    from typing import Self

__all__ = ["ZarrdaskWritableStore", "open_group_for_write"]


def open_group_for_write(
    store: Any,
    *,
    mode: str,
    path: str | None,
    zarr_format: int | None,
    storage_options: dict[str, Any] | None,
    function: str = "to_zarr",
) -> Group:
    """The group a write goes into: created (``w``, ``w-``, and ``a``/``a-`` when
    missing) or opened for update (``a``, ``a-``, ``r+``), over a
    :class:`~zarrdask.storage.write_behind.WriteBehindStore`: the writer sends what it
    wrote with ``group.store.flush()``, a few concurrent batches whatever the node count.
    A store Dask's worker processes could not share is refused first. Errors name
    ``function`` (the one the user called), the user's ``store`` and the ``mode`` that works."""
    found = resolve(function, store, path=path, mode="a", storage_options=storage_options, read=False)
    check_travels(function, found.store)  # (before anything is written)
    held, path = WriteBehindStore(found.store), found.path or None
    where = f"{'group ' + repr(path) + ' of ' if path else ''}{_describe(store)}"
    if mode == "w":  # everything below is replaced: one listing tells what is there
        held.survey(path or "")
    if mode in ("w", "w-"):
        try:
            group = create_group(held, path=path, zarr_format=zarr_format or 3, overwrite=mode == "w")
        except ContainsNodeError:
            raise ContainsNodeError(
                f"{function}(mode={mode!r}): {where} already holds Zarr data; pass mode='w' to "
                "replace it, or mode='a' to add or overwrite variables in it") from None
        held.survey(path or "")  # "w-": nothing was there, or only keys of no node
        return group
    try:
        group = open_group(held, mode="r+", path=path, use_consolidated=False)
    except NodeNotFoundError:
        if mode == "r+":
            raise NodeNotFoundError(
                f"{function}(mode='r+'): there is no Zarr group at {where} to write into; pass "
                "mode='a' (or mode='w-') to create it") from None
        return create_group(held, path=path, zarr_format=zarr_format or 3)
    if zarr_format is not None and group.zarr_format != zarr_format:
        raise MetadataError(
            f"{function}(mode={mode!r}, zarr_format={zarr_format}): {where} is Zarr "
            f"v{group.zarr_format}; leave zarr_format out (or pass zarr_format={group.zarr_format}) to "
            f"write into it, or pass mode='w' to replace it with a Zarr v{zarr_format} group",
            key=path,
        )
    return group


def _describe(store: Any) -> str:
    """The user's ``store`` argument as messages show it (a path or URL as given)."""
    if isinstance(store, str | os.PathLike):
        return repr(os.fspath(store))
    return f"the {type(store).__name__} passed as store"


class StoredAttributes(NamedTuple):
    """A variable's attributes as stored and the Zarr ``fill_value`` taken out of them."""

    attrs: dict[str, Any]
    fill_value: Any


class _Appended(NamedTuple):
    """The stored arrays along an append's dimension, by name: their axis of it, shapes
    and store paths, and the length they share along it."""

    axis: dict[str, int]
    shapes: dict[str, tuple[int, ...]]
    paths: dict[str, str]
    length: int


class ZarrdaskWritableStore(ZarrdaskDataStore, AbstractWritableDataStore):
    """One zarrdask group as a writable xarray data store."""

    __slots__ = ("_append_dim", "_appended", "_mode", "_region", "_resume", "_safe_chunks", "_write_empty")

    def __init__(
        self,
        group: Group,
        *,
        mode: str,
        append_dim: Hashable | None = None,
        region: RegionArg = None,
        write_empty: bool | None = None,
        safe_chunks: bool = True,
    ) -> None:
        super().__init__(group)
        self._mode = mode
        self._append_dim = append_dim
        self._region: Any = region
        self._write_empty = write_empty
        self._safe_chunks = safe_chunks  # False: partial-shard writes go ahead where the store cannot guard them
        self._appended: _Appended | None = None  # the stored arrays along append_dim (an append to existing data)
        self._resume: int | None = None  # an interrupted append this one completes: the first of its rows

    def get_child_store(self, group: str) -> Self:
        """The store of subgroup ``group`` (a relative path; created when missing)."""
        try:
            child = self.group[group]
        except (KeyError, NodeNotFoundError):
            child = self.group.create_group(group)
        return type(self)(
            child,
            mode=self._mode,
            append_dim=self._append_dim,
            region=self._region,
            write_empty=self._write_empty,
            safe_chunks=self._safe_chunks,
        )

    # -- validation before encoding (called by the Dataset writer) ------------------

    def prepare(self, ds: Dataset, encoding: Mapping[Hashable, Any]) -> Dataset:
        """Resolve ``region`` and refuse ``encoding`` for variables that already exist."""
        ds, self._region = resolve_region(
            ds,
            self._region,
            mode=self._mode,
            append_dim=self._append_dim,
            read_index=self.open_store_variable,
        )
        if encoding and self._mode in ("a", "a-", "r+"):
            for name in self.arrays():
                if name in encoding:
                    raise DatasetError(
                        f"variable {name!r} already exists, but encoding was provided; "
                        "drop its encoding (an existing variable keeps the encoding it is "
                        "stored with), or pass mode='w' to rewrite the store"
                    )
        return ds

    # -- AbstractWritableDataStore ------------------------------------------------------

    def encode_variable(self, variable: Variable, name: Hashable | None = None) -> Variable:
        return encode_zarr_variable(variable, name=name, zarr_format=self.group.zarr_format)

    def encode_attribute(self, a: Any) -> Any:
        return encode_zarr_attr_value(a)

    def set_attributes(self, attributes: Mapping[str, Any]) -> None:
        try:
            self.group.attrs.put(dict(attributes))
        except TypeError as err:
            raise DatasetTypeError("Invalid attribute in Dataset.attrs.") from err

    def set_dimensions(self, variables: Any, unlimited_dims: Any = None) -> None:
        if unlimited_dims is not None:
            raise NotImplementedError(
                "Zarr backend doesn't know how to handle unlimited dimensions"
            )

    def store(
        self,
        variables: Mapping[Hashable, Variable],
        attributes: Mapping[str, Any],
        check_encoding_set: Iterable[Hashable] = frozenset(),
        writer: Any = None,
        unlimited_dims: Any = None,
    ) -> None:
        """Encode and write ``variables`` and ``attributes`` (``Dataset.to_zarr`` rules).

        Data goes to ``writer`` (``add(source, target, region)``); without one, it is
        written before returning.
        """
        own_writer = writer is None
        writer = ArrayWrites() if own_writer else writer
        existing = set() if self._mode == "w" else set(self.arrays())
        if self._append_dim is not None and existing:
            self._appended = self._check_append_lengths()
        old_names = {vn for vn in variables if encode_variable_name(vn) in existing}
        if self._mode == "r+" and (new := [k for k in variables if k not in existing]):
            raise DatasetError(
                f"dataset contains non-pre-existing variables {new!r}, which is not "
                "allowed in ``xarray.Dataset.to_zarr()`` with ``mode='r+'``. To allow "
                "writing new variables, set ``mode='a'``."
            )
        if self._append_dim is not None and self._append_dim not in existing:
            dims = self.get_dimensions()
            if self._append_dim not in dims:
                raise DatasetError(
                    f"append_dim={self._append_dim!r} does not match any existing "
                    f"dataset dimensions {dims}"
                )
        encoded, attributes = self.encode(
            {vn: v for vn, v in variables.items() if vn not in old_names}, attributes
        )
        if old_names:
            encoded.update(self._encode_like_stored(variables, old_names))
        if self._appended is not None:
            self._resume = self._check_unfinished_writes(self._appended, encoded)
        if self._mode not in ("r", "r+"):
            self.set_attributes(attributes)
            self.set_dimensions(encoded, unlimited_dims=unlimited_dims)
        if self._mode == "a-" and self._append_dim is not None:
            encoded = {
                k: v
                for k, v in encoded.items()
                if k not in old_names or self._append_dim in v.dims
            }
        self.set_variables(encoded, check_encoding_set, writer)
        self._cached = dict(self.group.members())
        if own_writer:
            writer.sync()

    def _check_append_lengths(self) -> _Appended | None:
        """The stored arrays along ``append_dim`` are all as long: else another writer is
        appending now (it grows them one by one), or one stopped midway, and growing them
        from their lengths would put this append's rows at different places. The error
        gives the calls that shrink the longer arrays back (an append only grows them, so
        the shortest length is where a stopped one began)."""
        axis: dict[str, int] = {}
        shapes: dict[str, tuple[int, ...]] = {}
        paths: dict[str, str] = {}
        for name, array in self.arrays().items():
            dims, _ = array_dims_and_attrs(array)
            if self._append_dim in dims:
                axis[name], shapes[name], paths[name] = list(dims).index(self._append_dim), tuple(array.shape), array.path
        lengths = {n: shape[axis[n]] for n, shape in shapes.items()}
        if not lengths:
            return None
        appended = _Appended(axis, shapes, paths, min(lengths.values()))
        if len(set(lengths.values())) > 1:
            found = ", ".join(f"{n} {size}" for n, size in lengths.items())
            raise WriteConflictError(
                f"cannot append along {self._append_dim!r}: the stored arrays have different lengths along it "
                f"({found}), as while another writer appends or after an append stopped midway; nothing was "
                f"changed. Append again once the other writer has finished; if an append stopped midway, shrink "
                f"the longer arrays back to {appended.length} and append again: "
                f"{self._shrink_calls(appended, appended.length)}")
        return appended

    def _check_unfinished_writes(self, appended: _Appended, encoded: Mapping[Hashable, Variable]) -> int | None:
        """An append over the rows of a write recorded at this group as unfinished
        (``storage/records.py``: still running, or killed) that ends at the arrays' end.
        An append after them would leave rows it did not finish in the middle of the data,
        so it is refused, unless it is that append run again (an interrupted job retried):
        the same arrays, as many rows as that one added, and the same ``append_dim``
        coordinate values as it stored. That one is completed: its rows written again, none
        added (the first of them is returned)."""
        dim, length = self._append_dim, appended.length
        for record in read_records(self.group.store, self.group.path):
            if not isinstance(record.region, dict):
                continue
            rows = {name: bounds[appended.axis[name]] for name, path in appended.paths.items()
                    if (bounds := region_bounds(record.region.get(path))) and len(bounds) == len(appended.shapes[name])}
            if not any(lo < length <= hi for lo, hi in rows.values()):
                continue
            start = self._same_append(record, rows, appended, encoded)
            if start is not None:
                return start
            first = min(lo for lo, hi in rows.values() if lo < length <= hi)
            raise WriteConflictError(
                f"cannot append along {dim!r}: an earlier write into this group has not finished, or was "
                f"interrupted: {record.call} started {record.started} on {record.host} (pid {record.pid}) wrote "
                f"rows {first}:{length} along {dim!r}, the last ones ({record.key}). Appending after rows it may "
                f"have left partly written would keep them in the middle; nothing was changed. If it is still "
                f"running, append again once it has finished. If it was interrupted, run it again as it was "
                f"called (an append of the same {dim!r} values completes its rows, adding none), or drop its rows, "
                f"{self._shrink_calls(appended, first)}, then zarrdask.verify({self.group.store.url!r}, "
                f"fix=True) removes its record (rows that no longer exist)")
        return None

    def _same_append(self, record: WriteRecord, rows: Mapping[str, tuple[int, int]], appended: _Appended,
                     encoded: Mapping[Hashable, Variable]) -> int | None:
        """The first row of ``record``'s rows when this append is that write run again (see
        :meth:`_check_unfinished_writes`), else None. Not when the record's process still
        runs here, nor when any of its ``append_dim`` values is not stored: a row not yet
        written reads as the fill value, which the values of another append can equal."""
        if record.running_here():
            return None
        dim = self._append_dim
        added = {encode_variable_name(vn): v.shape[v.dims.index(dim)] for vn, v in encoded.items() if dim in v.dims}
        counts = set(added.values())
        name = encode_variable_name(dim) if dim is not None else ""
        if len(counts) != 1 or name not in added or name not in appended.paths:
            return None  # (no coordinate along append_dim: nothing tells the two appends apart)
        (count,) = counts
        start = appended.length - count
        written = {join_path(self.group.path, encode_variable_name(vn)) for vn in encoded}
        if set(record.region) != written or set(rows) != set(added) \
                or any(r != (start, appended.length) for r in rows.values()):
            return None
        coordinate = self.arrays()[name]
        if not coordinate.storage_statistics(slice(start, appended.length)).fully_stored:
            return None
        stored = coordinate[start: appended.length]
        return start if np.array_equal(stored, np.asarray(encoded[dim].values)) else None

    def _shrink_calls(self, appended: _Appended, length: int) -> str:
        """The calls that shrink the arrays longer than ``length`` along ``append_dim`` to it."""
        url = self.group.store.url
        return "; ".join(
            f"zarrdask.open_array({url!r}, path={appended.paths[n]!r}, mode='r+').resize("
            f"{shape[:appended.axis[n]] + (length,) + shape[appended.axis[n] + 1:]})"
            for n, shape in appended.shapes.items() if shape[appended.axis[n]] > length)

    def _encode_like_stored(
        self, variables: Mapping[Hashable, Variable], names: set[Hashable]
    ) -> dict[Hashable, Variable]:
        """Encode variables that already exist *exactly* as the stored ones are, refused where
        that would change a value (:mod:`zarrdask.xarray_backend.stored_encoding`)."""
        stored, _, _ = conventions.decode_cf_variables(
            {k: self.open_store_variable(str(k)) for k in names}, {}
        )
        like_stored, casts = {}, {}
        for vn in names:
            validate_datatypes_for_zarr_append(vn, stored[vn], variables[vn])
            like_stored[vn] = variables[vn].copy(deep=False)
            like_stored[vn].encoding, casts[vn] = without_cast(stored[vn].encoding, stored[vn].dtype)
        encoded, _ = self.encode(like_stored, {})
        verb = "append to" if self._append_dim is not None else "write to"
        return {
            vn: validate_and_transpose_existing_dims(
                vn, as_stored(vn, verb, encoded[vn], stored[vn], casts[vn]), stored[vn], self._region,
                self._append_dim,
            )
            for vn in names
        }

    def set_variables(
        self,
        variables: Mapping[Hashable, Variable],
        check_encoding_set: Iterable[Hashable],
        writer: Any,
        unlimited_dims: Any = None,
    ) -> None:
        """Create or extend one array per variable and queue its data write."""
        existing = self.arrays()
        check = set(check_encoding_set)
        for vn, v in variables.items():
            name = encode_variable_name(vn)
            attrs, fill_value = self._split_fill_value(v)
            layout = write_layout(
                v, name=vn, raise_on_invalid=vn in check, zarr_format=self.group.zarr_format
            )
            self._apply_write_empty(layout)
            region = {dim: (self._region or {}).get(dim, slice(None)) for dim in v.dims}
            if self._mode != "w" and name in existing:
                array = self._existing_array(existing[name], v, region)
            else:
                array = self._create_array(name, v, attrs, fill_value, layout)
            if not self._safe_chunks:
                array = array.with_options(safe_chunks=False)
            writer.add(v.data, array, tuple(region[dim] for dim in v.dims))

    def _split_fill_value(self, v: Variable) -> StoredAttributes:
        """The attributes to store and the Zarr ``fill_value`` (xarray's rules: v2 uses
        ``_FillValue``; v3 keeps it as an encoded attribute and defaults floats to NaN)."""
        attrs = dict(v.attrs)
        if self._fill_value_as_mask:
            fill_value = attrs.pop("_FillValue", None)
        else:
            fill_value = v.encoding.pop("fill_value", None)
            if fill_value is None and v.dtype.kind == "f":
                fill_value = np.nan
            if "_FillValue" in attrs:
                fv = attrs.pop("_FillValue")
                if fv is not None:
                    attrs["_FillValue"] = encode_fill_value_attr(fv, v.dtype)
        if "_FillValue" in v.encoding:
            if v.encoding["_FillValue"] is not None:
                raise DatasetError("Zarr does not support _FillValue in encoding.")
            del v.encoding["_FillValue"]
        return StoredAttributes(attrs, fill_value)

    def _apply_write_empty(self, layout: dict[str, Any]) -> None:
        if self._write_empty is None:
            return
        if layout.get("write_empty_chunks", self._write_empty) != self._write_empty:
            raise DatasetError(
                'Differing "write_empty_chunks" values in encoding and parameters'
                f'Got {layout["write_empty_chunks"] = } and {self._write_empty = }'
            )
        layout["write_empty_chunks"] = self._write_empty

    def _existing_array(
        self, array: Array, v: Variable, region: dict[Hashable, slice]
    ) -> Array:
        """An existing array, resized first when appending along one of its dims."""
        if self._write_empty is not None:
            array = array.with_options(write_empty_chunks=self._write_empty)
        if self._append_dim is not None and self._append_dim in v.dims:
            axis = v.dims.index(self._append_dim)
            if self._resume is not None:  # (an interrupted append run again: its rows, none added)
                region[self._append_dim] = slice(self._resume, self._resume + v.shape[axis])
                return array
            old = array.shape[axis]
            region[self._append_dim] = slice(old, None)
            # (from the shape this write read: another job's append since is refused, not overwritten)
            array.resize(array.shape[:axis] + (old + v.shape[axis],) + array.shape[axis + 1 :], from_shape=array.shape)
        return array

    def _create_array(
        self,
        name: str,
        v: Variable,
        attrs: dict[str, Any],
        fill_value: Any,
        layout: dict[str, Any],
    ) -> Array:
        """A new array for ``v``; zarrdask stores its dimension names as v3
        ``dimension_names`` or as the v2 ``_ARRAY_DIMENSIONS`` attribute."""
        array = self.group.create_array(
            name,
            shape=v.shape,
            dtype=check_vlen_dtype(v.dtype) or v.dtype,
            fill_value=fill_value,
            attributes={k: self.encode_attribute(a) for k, a in attrs.items()},
            dimension_names=[str(d) for d in v.dims],
            overwrite=self._mode == "w",
            allow_reserved_names=True,  # xarray's names as they are (an unnamed variable is "__values__")
            **layout,
        )
        return array
