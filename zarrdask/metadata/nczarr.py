"""NCZarr's dimension references (netCDF-C): the dimension names of arrays it writes.

netCDF-C names an array's dimensions by fully qualified references (``/grp/x``) in its
own metadata: ``_nczarr_array: {"dimension_references": [...]}`` in the attributes
(4.10), ``_nczarr_array: {"dimrefs": [...]}`` there (4.9), or ``_NCZARR_ARRAY: {"dimrefs":
[...]}`` in ``.zarray`` (4.8). A dimension's name is the last part of its reference.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from typing import Any

from .nodes import ArrayMetadata

__all__ = ["nczarr_dimension_names", "nczarr_names"]

_KEYS = ("dimension_references", "dimrefs")


def nczarr_dimension_names(attributes: Mapping[str, Any], ndim: int,
                           zarray: Mapping[str, Any] | None = None) -> tuple[str, ...] | None:
    """The names NCZarr gives the ``ndim`` axes (from the attributes, else ``.zarray``'s
    ``_NCZARR_ARRAY``), or None when it gives none or not one string per axis."""
    for doc, field in ((attributes, "_nczarr_array"), (zarray or {}, "_NCZARR_ARRAY")):
        nczarr = doc.get(field)
        if not isinstance(nczarr, Mapping):
            continue
        for key in _KEYS:
            refs = nczarr.get(key)
            if isinstance(refs, list) and len(refs) == ndim and all(isinstance(r, str) and r for r in refs):
                return tuple(posixpath.basename(r.rstrip("/")) or r for r in refs)
    return None


def nczarr_names(meta: ArrayMetadata) -> tuple[str, ...] | None:
    """The NCZarr dimension names of an array's metadata (either format): its attributes,
    else the ``_NCZARR_ARRAY`` entry a v2 ``.zarray`` kept."""
    nczarr = getattr(meta, "nczarr", None)
    return nczarr_dimension_names(meta.attributes, meta.ndim, {"_NCZARR_ARRAY": nczarr} if nczarr else None)
