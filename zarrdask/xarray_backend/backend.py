"""``engine="zarrdask"``: xarray's entry point for opening Zarr v2/v3 with zarrdask.

Opening is entrypoint -> ``ZarrdaskDataStore`` -> the steps of xarray's
``StoreBackendEntrypoint`` (CF decoding, coordinates split, Dataset), as xarray's own
zarr engine does; decoding is xarray's, with a proven-identical fast path for
variables it would leave unchanged (``decode.py``).
Variables are lazy and their ``preferred_chunks`` are the shard shape, so
``chunks={}`` gives one dask task per shard.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Literal

from xarray import Coordinates, Dataset, Variable
from xarray.backends.common import AbstractDataStore, BackendEntrypoint

from zarrdask.compat.xarray import close_on_error, construct_dataset, datatree_from_dict_with_io_cleanup, normalize_path
from zarrdask.api.openers import array_at, group_at, without_create_hint
from zarrdask.runtime.executor import run_waiting
from zarrdask.nodes.group import Group
from zarrdask.door import resolve
from zarrdask.errors import GroupNotFoundError, InvalidStoreError
from zarrdask.xarray_backend.decode import decode_cf_variables
from zarrdask.xarray_backend.public import public
from zarrdask.xarray_backend.store import LoneArray, ZarrdaskDataStore

if TYPE_CHECKING:
    from xarray import DataTree

__all__ = ["ZarrdaskBackendEntrypoint"]

_METADATA_KEYS = ("zarr.json", ".zgroup", ".zarray")
#: the opener the engine's messages name (its modes and keywords are open_group's)
_OPENER = "zarrdask.open_group"


def _open_store(
    filename_or_obj: Any,
    *,
    group: str | None,
    mode: str = "r",
    consolidated: bool | None,
    storage_options: dict[str, Any] | None,
    zarr_format: int | None,
    store: Any = None,
    use_zarr_fill_value_as_mask: bool | None = None,
    cache_members: bool = True,
    cache_bytes: int | str | None = None,
) -> ZarrdaskDataStore:
    """The data store to read: ``store`` when given (as xarray's zarr engine takes an
    opened ``ZarrStore``: here a ``ZarrdaskDataStore`` or a zarrdask ``Group``), else the
    group at ``group`` opened with ``mode``."""
    source = filename_or_obj if store is None else store
    if isinstance(source, ZarrdaskDataStore):
        return source
    options = {"fill_value_as_mask": use_zarr_fill_value_as_mask, "cache_members": cache_members,
               "cache_bytes": cache_bytes}
    if isinstance(source, Group):
        return ZarrdaskDataStore(source, **options)
    if store is not None:
        raise InvalidStoreError(
            f"store= must be a zarrdask Group or ZarrdaskDataStore, got {type(store).__name__}")
    found = resolve(_OPENER, normalize_path(filename_or_obj), path=group, mode=mode, storage_options=storage_options,
                    zarr_format=zarr_format, consolidated=consolidated is not False, missing=GroupNotFoundError)
    meta = found.metadata
    if meta is not None and meta.node_type == "array" and meta.stands_alone:
        # a Zarr v1 array or an N5 container that is one dataset: a dataset of one variable
        return ZarrdaskDataStore(LoneArray(array_at("zarrdask.open_array", found, "r", None, {}, {})),  # type: ignore[arg-type]
                                 **options)
    try:
        root = group_at(_OPENER, found, mode, zarr_format, None, consolidated, None)
    except GroupNotFoundError as exc:  # (open_group's hint of its mode= is no advice for opening a dataset)
        raise GroupNotFoundError(without_create_hint(str(exc))) from None
    return ZarrdaskDataStore(root, **options)


def _preload_index_coordinates(stores: list[ZarrdaskDataStore], drop_variables: Any) -> None:
    """Read the index coordinates of every store now, all at the same time: xarray reads
    them one node after another as soon as it has the datasets (a round trip each on an
    object store). On local stores a read costs microseconds and they stay lazy."""
    stores = [store for store in stores if not store.group.store.is_local]
    dropped = {drop_variables} if isinstance(drop_variables, str) else set(drop_variables or ())
    loads = [(store, name) for store in stores for name in store.index_coordinates() if name not in dropped]
    run_waiting(lambda load: load[0].preload(load[1]), loads)


def _store_dataset(store: ZarrdaskDataStore, *, set_indexes: bool = True, **decoders: Any) -> Dataset:
    """xarray's ``StoreBackendEntrypoint.open_dataset`` with zarrdask's CF decoding
    (xarray's, with a fast path for variables it leaves as they are). ``decoders`` are
    ``decode_cf_variables``' keywords (``mask_and_scale``, ``decode_times``, ...);
    ``set_indexes`` is accepted (and unused) as by StoreBackendEntrypoint."""
    variables, attrs = store.load()
    encoding = store.get_encoding()
    variables, attrs, coord_names = decode_cf_variables(
        variables, attrs, **decoders, in_place=True  # the variables are this open's own
    )
    # split data and coordinate variables (promote dimension coordinates)
    data_vars = {}
    coord_vars = {}
    for name, var in variables.items():
        if name in coord_names or var.dims == (name,):
            coord_vars[name] = var
        else:
            data_vars[name] = var
    ds = _dataset(data_vars, coord_vars, attrs)
    ds.set_close(store.close)
    ds.encoding = encoding
    return ds


def _dataset(
    data_vars: dict[Any, Variable], coord_vars: dict[Any, Variable], attrs: Any
) -> Dataset:
    """``Dataset(data_vars, coords=Coordinates(coord_vars, indexes={}), attrs=attrs)``.

    For the common case (every dimension has one length, no data variable is named
    like a dimension, a coordinate named like one is its 1-d coordinate) the result is
    assembled directly: the constructor's merge would
    only make shallow copies of the variables (it has nothing to align, no index to
    build and no name to reconcile). Anything else goes through the constructor and
    its checks and errors. ``tests/xarray/test_xarray_fast_decode.py`` compares both.
    """
    dims: dict[Any, int] = {}
    for var in (*data_vars.values(), *coord_vars.values()):
        for dim, size in zip(var.dims, var.shape, strict=True):
            if dims.setdefault(dim, size) != size:
                dims = {}
                break
        else:
            continue
        break
    simple = (
        bool(dims)
        and not any(name in dims for name in data_vars)
        # a coordinate named like a dimension must be that dimension's 1-d coordinate
        and all(var.dims == (name,) for name, var in coord_vars.items() if name in dims)
    )
    if simple:
        # (the variables are this open's own objects: no shallow copies needed)
        ds = construct_dataset(
            {**data_vars, **coord_vars}, set(coord_vars), dims, dict(attrs) if attrs else None  # as the constructor
        )
        if ds is not None:
            return ds
    return Dataset(data_vars, coords=Coordinates(coord_vars, indexes={}), attrs=attrs)


class ZarrdaskBackendEntrypoint(BackendEntrypoint):
    """Open Zarr v2/v3 stores (local, ``memory://``, zip, fsspec URLs) with zarrdask.

    Backend keywords are those of xarray's ``engine="zarr"``, with its meanings:
    ``group`` (path of the group to open), ``mode`` (how the store is opened, ``"r"``
    by default), ``consolidated`` (None: use consolidated metadata when present; True:
    require it; False: ignore it), ``storage_options`` (for fsspec URLs),
    ``zarr_format`` (2 or 3; None detects), ``store`` (an already opened zarrdask
    ``Group`` or ``ZarrdaskDataStore`` to read instead), ``engine`` (accepted and
    unused, as by xarray's engine), ``use_zarr_fill_value_as_mask`` (the Zarr
    ``fill_value`` masks data as ``_FillValue``; None: for v2 only) and
    ``cache_members`` (list the group's members once at open; False: on every use) and
    ``cache_bytes`` (read through the process's decoded-chunk cache with this budget: int
    bytes or a string such as ``"1 GiB"``; 0: off; None: the ``zarrdask.cache-bytes`` dask
    config default, else off; see ``zarrdask.cache_clear``; a tree's every node).
    v3 arrays without ``dimension_names`` open with ``dim_0, dim_1, ...``.
    """

    description = "Open Zarr v2/v3 stores with zarrdask (lazy, shard-chunked)"
    url = "https://github.com/zarrdask/zarrdask"
    supports_groups = True
    # xarray fills this in only for backends it loads by name; with the class passed as
    # ``engine=`` it is needed for ``decode_cf=False`` (kept equal to open_dataset's by a test).
    open_dataset_parameters = (
        "filename_or_obj", "mask_and_scale", "decode_times", "concat_characters", "decode_coords",
        "drop_variables", "use_cftime", "decode_timedelta", "group", "mode", "consolidated", "storage_options",
        "zarr_format", "store", "engine", "use_zarr_fill_value_as_mask", "cache_members", "cache_bytes",
    )

    def guess_can_open(self, filename_or_obj: Any) -> bool:
        """True only for a local directory holding Zarr metadata (never for URLs:
        xarray's ``zarr`` engine sorts first, so users pass ``engine="zarrdask"``)."""
        if not isinstance(filename_or_obj, str | os.PathLike):
            return False
        path = os.fspath(filename_or_obj)
        return os.path.isdir(path) and any(
            os.path.isfile(os.path.join(path, key)) for key in _METADATA_KEYS
        )

    @public("xr.open_dataset(engine='zarrdask')")
    def open_dataset(
        self,
        filename_or_obj: str | os.PathLike[Any] | Group | AbstractDataStore,
        *,
        mask_and_scale: bool = True,
        decode_times: bool = True,
        concat_characters: bool = True,
        decode_coords: bool | Literal["coordinates", "all"] = True,
        drop_variables: str | Iterable[str] | None = None,
        use_cftime: bool | None = None,
        decode_timedelta: bool | None = None,
        group: str | None = None,
        mode: str = "r",
        consolidated: bool | None = None,
        storage_options: dict[str, Any] | None = None,
        zarr_format: Literal[2, 3] | None = None,
        store: Any = None,
        engine: Any = None,
        use_zarr_fill_value_as_mask: bool | None = None,
        cache_members: bool = True,
        cache_bytes: int | str | None = None,
    ) -> Dataset:
        """Open one group as a lazy, CF-decoded Dataset."""
        store = _open_store(
            filename_or_obj,
            group=group,
            mode=mode,
            consolidated=consolidated,
            storage_options=storage_options,
            zarr_format=zarr_format,
            store=store,
            use_zarr_fill_value_as_mask=use_zarr_fill_value_as_mask,
            cache_members=cache_members,
            cache_bytes=cache_bytes,
        )
        with close_on_error(store):
            _preload_index_coordinates([store], drop_variables)
            return _store_dataset(
                store,
                mask_and_scale=mask_and_scale,
                decode_times=decode_times,
                concat_characters=concat_characters,
                decode_coords=decode_coords,
                drop_variables=drop_variables,
                use_cftime=use_cftime,
                decode_timedelta=decode_timedelta,
            )

    @public("xr.open_groups(engine='zarrdask')")
    def open_groups_as_dict(
        self,
        filename_or_obj: str | os.PathLike[Any] | Group | AbstractDataStore,
        *,
        mask_and_scale: bool = True,
        decode_times: bool = True,
        concat_characters: bool = True,
        decode_coords: bool | Literal["coordinates", "all"] = True,
        drop_variables: str | Iterable[str] | None = None,
        use_cftime: bool | None = None,
        decode_timedelta: bool | None = None,
        group: str | None = None,
        mode: str = "r",
        consolidated: bool | None = None,
        storage_options: dict[str, Any] | None = None,
        zarr_format: Literal[2, 3] | None = None,
        cache_bytes: int | str | None = None,
    ) -> dict[str, Dataset]:
        """Every group under ``group`` (or the root) as a Dataset, keyed by tree path."""
        root = _open_store(
            filename_or_obj,
            group=group,
            mode=mode,
            consolidated=consolidated,
            storage_options=storage_options,
            zarr_format=zarr_format,
            cache_bytes=cache_bytes,
        )
        decoders = dict(mask_and_scale=mask_and_scale, decode_times=decode_times, concat_characters=concat_characters,
                        decode_coords=decode_coords, drop_variables=drop_variables, use_cftime=use_cftime,
                        decode_timedelta=decode_timedelta)

        def dataset(store: ZarrdaskDataStore) -> Dataset:
            with close_on_error(store):
                return _store_dataset(store, **decoders)

        nodes = list(root.walk())
        _preload_index_coordinates([store for _, store in nodes], drop_variables)
        return {path: dataset(store) for path, store in nodes}

    @public("xr.open_datatree(engine='zarrdask')")
    def open_datatree(
        self,
        filename_or_obj: str | os.PathLike[Any] | Group | AbstractDataStore,
        *,
        mask_and_scale: bool = True,
        decode_times: bool = True,
        concat_characters: bool = True,
        decode_coords: bool | Literal["coordinates", "all"] = True,
        drop_variables: str | Iterable[str] | None = None,
        use_cftime: bool | None = None,
        decode_timedelta: bool | None = None,
        group: str | None = None,
        mode: str = "r",
        consolidated: bool | None = None,
        storage_options: dict[str, Any] | None = None,
        zarr_format: Literal[2, 3] | None = None,
        cache_bytes: int | str | None = None,
    ) -> DataTree:
        """The group hierarchy under ``group`` (or the root) as a DataTree."""
        return datatree_from_dict_with_io_cleanup(
            self.open_groups_as_dict(
                filename_or_obj,
                mask_and_scale=mask_and_scale,
                decode_times=decode_times,
                concat_characters=concat_characters,
                decode_coords=decode_coords,
                drop_variables=drop_variables,
                use_cftime=use_cftime,
                decode_timedelta=decode_timedelta,
                group=group,
                mode=mode,
                consolidated=consolidated,
                storage_options=storage_options,
                zarr_format=zarr_format,
                cache_bytes=cache_bytes,
            )
        )
