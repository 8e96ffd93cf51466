"""zarr-python's named selection methods (``get_basic_selection``, ``set_mask_selection``,
``blocks``, ...) on :class:`~zarrdask.nodes.array.Array`.

Each normalises its selection with :mod:`zarrdask.indexing` and reads or writes through
the array's one read path and one write path; ``fields=`` (structured dtypes) and ``out=``
(a numpy array, or a zarr-python ``NDBuffer``, to read into) work as in zarr-python.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import BoundsError, InvalidValueError, SelectionError, ShapeMismatchError
from ..metadata.dtypes.casting import held_values
from ..metadata.grid import AxisGrid
from ..indexing import (
    PointSelection,
    Selection,
    expand_ellipsis,
    basic_selection,
    orthogonal_selection,
    point_selection,
)
from ..keywords import refuse

if TYPE_CHECKING:
    from ..metadata.nodes import ArrayMetadata
    from .units import StoredUnits

__all__ = ["SelectionMethods", "block_slices", "point_values"]

_PROTOTYPE = "zarrdask reads into numpy arrays in host memory; leave prototype out"


def block_slices(selection: Any, grid: tuple[AxisGrid, ...]) -> tuple[slice, ...]:
    """A block selection (ints and step-1 slices of block indices, as ``dask.Array.blocks``)
    as the array slices it covers. Blocks are the storage units of ``grid`` (the shards of a
    sharded array), as zarr-python's ``blocks``; an int keeps its dimension."""
    items = expand_ellipsis(selection if isinstance(selection, tuple) else (selection,), len(grid))
    out = []
    for d, (item, axis) in enumerate(zip(items, grid)):
        n = axis.count
        if isinstance(item, (int, np.integer)) and not isinstance(item, (bool, np.bool_)):
            k = int(item) + n if item < 0 else int(item)
            if not 0 <= k < n:
                raise BoundsError(f"block index {int(item)} is out of bounds for dimension {d} with {n} blocks")
            out.append(slice(*axis.bounds(k)))
        elif isinstance(item, slice):
            if item.step not in (None, 1):
                raise SelectionError(f"block selection slices take step 1, got {item!r} in dimension {d}")
            start, stop, _ = item.indices(n)
            if stop <= start:
                lo = axis.bounds(start)[0] if start < n else axis.size
                out.append(slice(lo, lo))
            else:
                out.append(slice(axis.bounds(start)[0], axis.bounds(stop - 1)[1]))
        else:
            raise SelectionError(f"block selection takes ints and slices per dimension, got {item!r} in dimension "
                                 f"{d}; use get_orthogonal_selection for index arrays")
    return tuple(out)


def point_values(value: Any, dtype: np.dtype, family: str, shape: tuple[int, ...], sel: PointSelection) -> np.ndarray:
    """Values for a coordinate selection of result ``shape``, flattened to its points
    (``family``: the data type's, see ``held_values``)."""
    values = held_values(value, dtype, family)
    try:
        return np.broadcast_to(values, shape).reshape(sel.shape)
    except ValueError:
        raise SelectionError(f"cannot assign values of shape {values.shape} to {shape} points") from None


def _field_dtype(dtype: np.dtype, fields: Any, method: str) -> np.dtype:
    """The dtype ``fields`` (a name or a list of names) selects from a structured dtype."""
    names = [fields] if isinstance(fields, str) else list(fields)
    if dtype.names is None:
        raise SelectionError(f"Array.{method}(fields={fields!r}): the array's dtype {dtype} has no fields; "
                             "leave fields out")
    missing = [n for n in names if not isinstance(n, str) or n not in dtype.names]
    if missing:
        raise SelectionError(f"Array.{method}(fields={fields!r}): no field {missing[0]!r} in dtype {dtype} "
                             f"(fields: {list(dtype.names)})")
    if isinstance(fields, str):
        return dtype[fields]
    return np.dtype([(n, dtype[n]) for n in names])


def _select_fields(values: Any, fields: Any, dtype: np.dtype) -> Any:
    """``values[fields]``, several fields packed into one structured array (as zarr-python)."""
    if isinstance(fields, str):
        return values[fields]
    out = np.empty(np.shape(values), dtype=dtype)
    for name in dtype.names or ():
        out[name] = values[name]
    return out if out.shape else out[()]


def _out_target(out: Any, shape: tuple[int, ...], method: str) -> np.ndarray:
    """The numpy array behind ``out``, checked against the result's shape."""
    target = out.as_ndarray_like() if hasattr(out, "as_ndarray_like") else out
    if not isinstance(target, np.ndarray):
        raise SelectionError(f"Array.{method}(out=...) takes a numpy array (or a zarr NDBuffer), "
                             f"got {type(out).__name__}")
    if target.shape != shape:
        raise ShapeMismatchError(f"Array.{method}(out=...): out has shape {target.shape}, the selection "
                                 f"{shape}; pass an array of shape {shape}")
    if not target.flags.writeable:
        raise SelectionError(f"Array.{method}(out=...): out is read-only; pass a writeable array")
    return target


class SelectionMethods:
    """The named selection methods of zarr-python's ``Array``; mixed into :class:`Array`."""

    if TYPE_CHECKING:  # what the Array provides
        _metadata: ArrayMetadata
        @property
        def shape(self) -> tuple[int, ...]: ...
        @property
        def dtype(self) -> np.dtype: ...
        @property
        def unit_grid(self) -> tuple[AxisGrid, ...]: ...
        @property
        def units(self) -> StoredUnits: ...
        def _read(self, selection: Selection, out_shape: tuple[int, ...]) -> Any: ...
        def _write(self, selection: Selection, value: Any) -> None: ...
        def _too_large(self, exc: MemoryError, shape: tuple[int, ...], write: bool = ...) -> Exception: ...

    # -- the two shared steps ---------------------------------------------------------
    def _get(self, sel: Selection, shape: tuple[int, ...], out: Any, fields: Any,
             prototype: Any, method: str) -> Any:
        if prototype is not None:
            raise refuse(f"Array.{method}", "prototype", _PROTOTYPE)
        if fields is None and out is None:
            return self._read(sel, shape)
        if fields is None:
            return self._read_into(sel, _out_target(out, shape, method), method)
        dtype = _field_dtype(self.dtype, fields, method)
        values = _select_fields(self._read(sel, shape), fields, dtype)
        if out is None:
            return values
        target = _out_target(out, shape, method)
        target[...] = values
        return target

    def _read_into(self, sel: Selection, target: np.ndarray, method: str) -> np.ndarray:
        """Read straight into ``target`` when it is C-contiguous (the layout reads write),
        else through a result array copied into it."""
        if target.dtype != self.dtype:
            raise InvalidValueError(f"Array.{method}(out=...): out has dtype {target.dtype}, the array "
                                     f"{self.dtype}; pass an array of dtype {self.dtype}")
        if not target.flags.c_contiguous:
            target[...] = self._read(sel, target.shape)
            return target
        view = target.reshape(sel.shape)  # a view: C-contiguous
        try:
            self.units.read(sel, view)
        except MemoryError as exc:
            raise self._too_large(exc, sel.shape) from None
        return target

    def _set(self, sel: Selection, shape: tuple[int, ...], value: Any, fields: Any, prototype: Any,
             method: str) -> None:
        if prototype is not None:
            raise refuse(f"Array.{method}", "prototype", _PROTOTYPE)
        if fields is not None:  # the other fields keep their stored values
            field = _field_dtype(self.dtype, fields, method)
            current = np.array(self._read(sel, shape), dtype=self.dtype)
            # (one plain field's values checked as any write's; numpy's assignment would wrap them)
            current[fields] = held_values(value, field) if field.names is None and field.subdtype is None else value
            value = current
        if isinstance(sel, PointSelection):
            value = point_values(value, self.dtype, self._metadata.item_family, shape, sel)
        self._write(sel, value)

    # -- basic ------------------------------------------------------------------------------
    def get_basic_selection(self, selection: Any = Ellipsis, *, out: Any = None, prototype: Any = None,
                            fields: Any = None) -> Any:
        """``a[selection]`` for ints, slices and Ellipsis."""
        sel, shape = basic_selection(selection, self.shape)
        return self._get(sel, shape, out, fields, prototype, "get_basic_selection")

    def set_basic_selection(self, selection: Any, value: Any, *, fields: Any = None,
                            prototype: Any = None) -> None:
        """``a[selection] = value`` for ints, slices and Ellipsis."""
        sel, shape = basic_selection(selection, self.shape)
        self._set(sel, shape, value, fields, prototype, "set_basic_selection")

    # -- orthogonal ----------------------------------------------------------------------------
    def get_orthogonal_selection(self, selection: Any, *, out: Any = None, fields: Any = None,
                                 prototype: Any = None) -> Any:
        """``a.oindex[selection]``: int or bool arrays index each dimension independently."""
        sel, shape = orthogonal_selection(selection, self.shape)
        return self._get(sel, shape, out, fields, prototype, "get_orthogonal_selection")

    def set_orthogonal_selection(self, selection: Any, value: Any, *, fields: Any = None,
                                 prototype: Any = None) -> None:
        """``a.oindex[selection] = value``."""
        sel, shape = orthogonal_selection(selection, self.shape)
        self._set(sel, shape, value, fields, prototype, "set_orthogonal_selection")

    # -- coordinates and masks ---------------------------------------------------------------------
    def get_coordinate_selection(self, selection: Any, *, out: Any = None, fields: Any = None,
                                 prototype: Any = None) -> Any:
        """``a.vindex[selection]``: points given by broadcast integer coordinate arrays."""
        sel, shape = point_selection(selection, self.shape)
        return self._get(sel, shape, out, fields, prototype, "get_coordinate_selection")

    def set_coordinate_selection(self, selection: Any, value: Any, *, fields: Any = None,
                                 prototype: Any = None) -> None:
        """``a.vindex[selection] = value``."""
        sel, shape = point_selection(selection, self.shape)
        self._set(sel, shape, value, fields, prototype, "set_coordinate_selection")

    def _mask(self, mask: Any, method: str) -> tuple[PointSelection, tuple[int, ...]]:
        m = np.asarray(mask)
        if m.dtype != bool or m.shape != self.shape:
            raise SelectionError(f"Array.{method} takes a boolean array of the array's shape {self.shape}, "
                                 f"got {m.dtype}{m.shape}; use get_coordinate_selection for coordinates")
        return point_selection((m,), self.shape)

    def get_mask_selection(self, mask: Any, *, out: Any = None, fields: Any = None,
                           prototype: Any = None) -> Any:
        """The values where ``mask`` (a boolean array of the array's shape) is True, in C order."""
        sel, shape = self._mask(mask, "get_mask_selection")
        return self._get(sel, shape, out, fields, prototype, "get_mask_selection")

    def set_mask_selection(self, mask: Any, value: Any, *, fields: Any = None,
                           prototype: Any = None) -> None:
        """Write ``value`` where ``mask`` is True."""
        sel, shape = self._mask(mask, "set_mask_selection")
        self._set(sel, shape, value, fields, prototype, "set_mask_selection")

    # -- blocks ----------------------------------------------------------------------------------------
    def get_block_selection(self, selection: Any, *, out: Any = None, fields: Any = None,
                            prototype: Any = None) -> Any:
        """Whole blocks by block index (``a.blocks[i, j]``); see :func:`block_slices`."""
        sel, shape = basic_selection(block_slices(selection, self.unit_grid), self.shape)
        return self._get(sel, shape, out, fields, prototype, "get_block_selection")

    def set_block_selection(self, selection: Any, value: Any, *, fields: Any = None,
                            prototype: Any = None) -> None:
        """Write whole blocks by block index (``a.blocks[i, j] = value``)."""
        sel, shape = basic_selection(block_slices(selection, self.unit_grid), self.shape)
        self._set(sel, shape, value, fields, prototype, "set_block_selection")

    @property
    def blocks(self) -> _Blocks:
        """Block indexing: ``a.blocks[i, j]`` reads (or writes) the block at block index
        ``(i, j)``; blocks are the storage units (shards when sharded), as in zarr-python."""
        return _Blocks(self)


class _Blocks:
    """``a.blocks[...]``: :meth:`SelectionMethods.get_block_selection` by subscript."""

    def __init__(self, array: SelectionMethods) -> None:
        self._array = array

    def __getitem__(self, selection: Any) -> Any:
        return self._array.get_block_selection(selection)

    def __setitem__(self, selection: Any, value: Any) -> None:
        self._array.set_block_selection(selection, value)
