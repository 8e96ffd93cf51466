"""Private xarray API, in one place (checked on xarray 2026.9.0).

Each name is xarray's own when the installed release has it, so the writer's checks and
messages stay xarray's; otherwise a fallback of zarrdask's with the same behaviour
(``tests/project/test_compat.py`` checks that xarray's are the ones in use, and that each
fallback agrees with xarray's on generated inputs, so a release that moves one fails
there first).

* ``normalize_path``, ``encode_variable_name``, ``validate_dataset_names``,
  ``choose_default_mode``, ``validate_and_transpose_existing_dims``,
  ``validate_datatypes_for_zarr_append``: what ``Dataset.to_zarr`` checks;
* ``construct_dataset``: ``Dataset._construct_direct`` (a Dataset without the
  constructor's merge), or None when it is gone (callers use the constructor);
* ``lazy_data``: a Variable's lazily indexed data without loading it (``Variable._data``),
  or None when unavailable (callers take xarray's general path).

The last two serve engine="zarrdask"'s open shortcuts (``xarray_backend/decode.py``,
``backend._dataset``); without them the open runs xarray's own ``decode_cf_variables``
and ``Dataset`` constructor. ``benchmarks/probes/xarray_fast_paths.py`` measures what they save
(benchmarks/README.md) and ``tests/project/test_compat.py`` checks that they are taken and agree
with xarray's own on the installed release.

xarray's internals (outside its public and backend API) the engine builds on, also only
here:

* with a fallback of zarrdask's: ``close_on_error``, ``Frozen``, ``check_vlen_dtype``,
  ``is_chunked_array`` and the names ``DIMENSION_KEY``, ``DATAARRAY_NAME``,
  ``DATAARRAY_VARIABLE`` (``INTERNAL`` says which are xarray's own);
* without one, because the fallback would be a second copy of xarray's CF encoding for
  Zarr, which the writer must share with xarray's own engine: ``AbstractWritableDataStore``,
  ``dump_to_store``, ``encode_zarr_variable``, ``encode_zarr_attr_value``,
  ``FillValueCoder``; and ``datatree_from_dict_with_io_cleanup`` (it reaches into each
  Dataset's private closer). A release that moves one fails the import of the xarray engine here,
  naming it, and ``tests/project/test_compat.py`` first.
"""

from __future__ import annotations

import contextlib
import os
import types
from collections.abc import Hashable, Iterator, Mapping
from typing import Any, NamedTuple

import numpy as np
from xarray.backends.common import NONE_VAR_NAME

__all__ = [
    "CHECKED_ON",
    "DATAARRAY_NAME",
    "DATAARRAY_VARIABLE",
    "DIMENSION_KEY",
    "INTERNAL",
    "PRIVATE",
    "AbstractWritableDataStore",
    "FillValueCoder",
    "Frozen",
    "check_vlen_dtype",
    "close_on_error",
    "datatree_from_dict_with_io_cleanup",
    "dump_to_store",
    "encode_zarr_attr_value",
    "encode_zarr_variable",
    "is_chunked_array",
    "choose_default_mode",
    "construct_dataset",
    "encode_variable_name",
    "lazy_data",
    "normalize_path",
    "validate_and_transpose_existing_dims",
    "validate_dataset_names",
    "validate_datatypes_for_zarr_append",
]

CHECKED_ON = "2026.9.0"


# -- fallbacks (used only when xarray no longer has its own) -----------------------------
def _normalize_path(path: Any) -> Any:
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    if isinstance(path, str) and "://" not in path:
        path = os.path.abspath(os.path.expanduser(path))
    return path


def _encode_variable_name(name: Any) -> Any:
    return NONE_VAR_NAME if name is None else name


def _validate_dataset_names(dataset: Any) -> None:
    for name in dataset.variables:
        if isinstance(name, str):
            if not name:
                raise ValueError(f"Invalid name {name!r} for DataArray or Dataset key: string must be length 1 "
                                 "or greater for serialization to netCDF or zarr files")
        elif name is not None:
            raise TypeError(f"Invalid name {name!r} for DataArray or Dataset key: must be either a string or "
                            "None for serialization to netCDF or zarr files")


def _choose_default_mode(*, mode: Any, append_dim: Any, region: Any) -> Any:
    if mode is None:
        mode = "a" if append_dim is not None else "r+" if region is not None else "w-"
    if mode not in ("a", "a-") and append_dim is not None:
        raise ValueError("cannot set append_dim unless mode='a' or mode=None")
    if mode not in ("a", "a-", "r+") and region is not None:
        raise ValueError("cannot set region unless mode='a', mode='a-', mode='r+' or mode=None")
    if mode not in ("w", "w-", "a", "a-", "r+"):
        raise ValueError(f"The only supported options for mode are 'w', 'w-', 'a', 'a-', and 'r+', but mode={mode!r}")
    return mode


def _validate_and_transpose_existing_dims(var_name: Any, new_var: Any, existing_var: Any, region: Any,
                                          append_dim: Any) -> Any:
    if new_var.dims != existing_var.dims:
        if set(existing_var.dims) != set(new_var.dims):
            raise ValueError(f"variable {var_name!r} already exists with different dimension names "
                             f"{existing_var.dims} != {new_var.dims}, but changing variable dimensions is not "
                             f"supported by to_zarr().")
        new_var = new_var.transpose(*existing_var.dims)
    existing_sizes = {}
    for dim, size in existing_var.sizes.items():
        if region is not None and dim in region:
            start, stop, _ = region[dim].indices(size)
            size = stop - start
        if dim != append_dim:
            existing_sizes[dim] = size
    new_sizes = {dim: size for dim, size in new_var.sizes.items() if dim != append_dim}
    if existing_sizes != new_sizes:
        raise ValueError(f"variable {var_name!r} already exists with different dimension sizes: "
                         f"{existing_sizes} != {new_sizes}. to_zarr() only supports changing dimension sizes "
                         f"when explicitly appending, but append_dim={append_dim!r}.")
    return new_var


def _validate_datatypes_for_zarr_append(vname: Any, existing_var: Any, new_var: Any) -> None:
    dtype = new_var.dtype
    easy = (np.issubdtype(dtype, np.number) or np.issubdtype(dtype, np.datetime64)
            or np.issubdtype(dtype, np.bool_) or dtype == object
            or (dtype.kind in ("S", "U") and existing_var.dtype == object))
    if not easy and dtype != existing_var.dtype:
        raise ValueError(f"Mismatched dtypes for variable {vname} between Zarr store on disk and dataset to "
                         f"append. Store has dtype {existing_var.dtype} but dataset to append has dtype {dtype}.")


# -- xarray's own, where present -------------------------------------------------------
class _Resolved(NamedTuple):
    """What a name stands for (a function, class or constant), and whether it is xarray's own."""

    value: Any
    private: bool


def _private(module: str, name: str, fallback: Any) -> _Resolved:
    try:
        found = getattr(__import__(module, fromlist=[name]), name)
    except (ImportError, AttributeError):
        return _Resolved(fallback, private=False)
    return _Resolved(found, private=True)


_TABLE = {
    "normalize_path": ("xarray.backends.common", "_normalize_path", _normalize_path),
    "encode_variable_name": ("xarray.backends.common", "_encode_variable_name", _encode_variable_name),
    "validate_dataset_names": ("xarray.backends.writers", "_validate_dataset_names", _validate_dataset_names),
    "choose_default_mode": ("xarray.backends.zarr", "_choose_default_mode", _choose_default_mode),
    "validate_and_transpose_existing_dims": ("xarray.backends.zarr", "_validate_and_transpose_existing_dims",
                                             _validate_and_transpose_existing_dims),
    "validate_datatypes_for_zarr_append": ("xarray.backends.zarr", "_validate_datatypes_for_zarr_append",
                                           _validate_datatypes_for_zarr_append),
}


def _resolve(table: Mapping[str, tuple[str, str, Any]]) -> tuple[dict[str, Any], dict[str, bool]]:
    """Each name of ``table`` resolved (xarray's own, else the fallback), and which are xarray's."""
    found = {name: _private(module, attr, fallback) for name, (module, attr, fallback) in table.items()}
    return {n: r.value for n, r in found.items()}, {n: r.private for n, r in found.items()}


_RESOLVED, PRIVATE = _resolve(_TABLE)  # PRIVATE: which of the names above are xarray's own here

normalize_path = _RESOLVED["normalize_path"]
encode_variable_name = _RESOLVED["encode_variable_name"]
validate_dataset_names = _RESOLVED["validate_dataset_names"]
choose_default_mode = _RESOLVED["choose_default_mode"]
validate_and_transpose_existing_dims = _RESOLVED["validate_and_transpose_existing_dims"]
validate_datatypes_for_zarr_append = _RESOLVED["validate_datatypes_for_zarr_append"]


def construct_dataset(variables: Mapping[Hashable, Any], coord_names: set[Hashable], dims: dict[Hashable, int],
                      attrs: Any) -> Any:
    """``Dataset._construct_direct(...)``, or None when this xarray has no such method."""
    from xarray import Dataset

    construct = getattr(Dataset, "_construct_direct", None)
    PRIVATE["construct_dataset"] = construct is not None
    if construct is None:
        return None
    return construct(variables, coord_names, dims, attrs=attrs)


def lazy_data(variable: Any) -> Any:
    """The lazily indexed array a Variable wraps, not loaded (``Variable._data`` when it is
    one of xarray's explicitly indexed wrappers, as a backend's variables are); None
    otherwise, or when this xarray keeps it elsewhere (callers take xarray's general path)."""
    from xarray.core.indexing import ExplicitlyIndexedNDArrayMixin

    data = getattr(variable, "_data", None)
    PRIVATE["lazy_data"] = hasattr(variable, "_data")
    return data if isinstance(data, ExplicitlyIndexedNDArrayMixin) else None


# -- xarray's internals ------------------------------------------------------------------
@contextlib.contextmanager
def _close_on_error(f: Any) -> Iterator[None]:
    try:
        yield
    except Exception:
        f.close()
        raise


def _check_vlen_dtype(dtype: np.dtype) -> Any:
    if dtype.kind != "O" or dtype.metadata is None:
        return None
    return dtype.metadata.get("element_type", dtype.metadata.get("vlen"))


def _is_chunked_array(x: Any) -> bool:
    duck = isinstance(x, np.ndarray) or (
        hasattr(x, "ndim") and hasattr(x, "shape") and hasattr(x, "dtype")
        and ((hasattr(x, "__array_function__") and hasattr(x, "__array_ufunc__")) or hasattr(x, "__array_namespace__")))
    return duck and hasattr(x, "chunks")


_INTERNAL_TABLE: dict[str, tuple[str, str, Any]] = {
    "close_on_error": ("xarray.core.utils", "close_on_error", _close_on_error),
    "Frozen": ("xarray.core.utils", "Frozen", types.MappingProxyType),
    "check_vlen_dtype": ("xarray.coding.strings", "check_vlen_dtype", _check_vlen_dtype),
    "is_chunked_array": ("xarray.namedarray.pycompat", "is_chunked_array", _is_chunked_array),
    "DIMENSION_KEY": ("xarray.backends.zarr", "DIMENSION_KEY", "_ARRAY_DIMENSIONS"),
    "DATAARRAY_NAME": ("xarray.backends.api", "DATAARRAY_NAME", "__xarray_dataarray_name__"),
    "DATAARRAY_VARIABLE": ("xarray.backends.api", "DATAARRAY_VARIABLE", "__xarray_dataarray_variable__"),
}
_INTERNAL, INTERNAL = _resolve(_INTERNAL_TABLE)  # INTERNAL: which of them are xarray's own here

close_on_error = _INTERNAL["close_on_error"]
Frozen = _INTERNAL["Frozen"]
check_vlen_dtype = _INTERNAL["check_vlen_dtype"]
is_chunked_array = _INTERNAL["is_chunked_array"]
DIMENSION_KEY: str = _INTERNAL["DIMENSION_KEY"]
DATAARRAY_NAME: str = _INTERNAL["DATAARRAY_NAME"]
DATAARRAY_VARIABLE: str = _INTERNAL["DATAARRAY_VARIABLE"]

# xarray's CF encoding for Zarr, its writable-store base, its DataTree assembly (no fallback: see the module doc)
from xarray.backends.common import AbstractWritableDataStore, datatree_from_dict_with_io_cleanup  # noqa: E402
from xarray.backends.writers import dump_to_store  # noqa: E402
from xarray.backends.zarr import FillValueCoder, encode_zarr_attr_value, encode_zarr_variable  # noqa: E402
