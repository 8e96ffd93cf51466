"""``region=`` for Dataset writes: validation and ``"auto"`` detection from indexes.

Same rules and messages as ``Dataset.to_zarr``: a region is a dict of dimension ->
slice (step 1), or ``"auto"`` for every dimension; ``"auto"`` looks up the new
coordinate values in the stored index variable, which must match a contiguous run.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from typing import Any, Literal, NamedTuple

import numpy as np
import pandas as pd
from xarray import Dataset, Variable, conventions

from zarrdask.errors import DatasetError, DatasetKeyError, DatasetTypeError

__all__ = ["RegionArg", "ResolvedRegion", "resolve_region"]

RegionArg = Mapping[str, slice | Literal["auto"]] | Literal["auto"] | None


def _detect(
    ds: Dataset, region: dict[str, Any], read_index: Callable[[str], Variable]
) -> dict[str, slice]:
    """Replace every ``"auto"`` entry by the slice its coordinate occupies on disk."""
    for dim, value in region.items():
        if value != "auto":
            continue
        if dim not in ds.variables:
            region[dim] = slice(0, ds.sizes[dim])
            continue
        stored = conventions.decode_cf_variable(dim, read_index(dim).compute())
        idxs = pd.Index(stored.data).get_indexer(ds[dim].data)
        if (idxs == -1).any():
            raise DatasetKeyError(
                f"Not all values of coordinate '{dim}' in the new array were"
                " found in the original store. Writing to a zarr region slice"
                " requires that no dimensions or metadata are changed by the write."
            )
        if (np.diff(idxs) != 1).any():
            raise DatasetError(
                f"The auto-detected region of coordinate '{dim}' for writing new data"
                " to the original store had non-contiguous indices. Writing to a zarr"
                " region slice requires that the new data constitute a contiguous subset"
                " of the original store."
            )
        region[dim] = slice(int(idxs[0]), int(idxs[-1]) + 1)
    return region


class ResolvedRegion(NamedTuple):
    """The dataset a region write stores (without the indexes it may not modify) and the
    region as slices per dimension (None: the whole arrays)."""

    dataset: Dataset
    region: dict[str, slice] | None


def resolve_region(
    ds: Dataset,
    region: RegionArg,
    *,
    mode: str,
    append_dim: Hashable | None,
    read_index: Callable[[str], Variable],
) -> ResolvedRegion:
    """Validate ``region`` (detecting ``"auto"`` entries) and drop the indexes it
    may not modify. Returns the dataset to write and the region as slices."""
    if region is None:
        return ResolvedRegion(ds, None)
    if region == "auto":
        region = dict.fromkeys(ds.dims, "auto")
    if not isinstance(region, Mapping):
        raise DatasetTypeError(f"``region`` must be a dict, got {type(region)}")
    resolved: dict[str, Any] = dict(region)
    if any(v == "auto" for v in resolved.values()):
        if mode not in ("r+", "a"):
            raise DatasetError(
                f"``mode`` must be 'r+' or 'a' when using ``region='auto'``, got {mode!r}"
            )
        resolved = _detect(ds, resolved, read_index)
    for dim, value in resolved.items():
        if dim not in ds.dims:
            raise DatasetError(
                "all keys in ``region`` are not in Dataset dimensions, got "
                f"{list(resolved)} and {list(ds.dims)}"
            )
        if not isinstance(value, slice):
            raise DatasetTypeError(
                f"all values in ``region`` must be slice objects, got region={resolved}"
            )
        if value.step not in (1, None):
            raise DatasetError(
                f"step on all slices in ``region`` must be 1 or None, got region={resolved}"
            )
    outside = [k for k, v in ds.variables.items() if not set(resolved).intersection(v.dims)]
    if resolved and outside:
        raise DatasetError(
            "when setting `region` explicitly in to_zarr(), all variables in the dataset "
            "to write must have at least one dimension in common with the region's "
            f"dimensions {list(resolved)}, but that is not the case for some variables "
            "here. To drop these variables from this dataset before exporting to zarr, "
            f"write: .drop_vars({outside!r})"
        )
    if append_dim is not None and append_dim in resolved:
        raise DatasetError(
            "cannot list the same dimension in both ``append_dim`` and ``region`` with "
            f"to_zarr(), got {append_dim} in both"
        )
    return ResolvedRegion(ds.drop_vars(ds.indexes), resolved)
