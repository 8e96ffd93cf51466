"""Consolidated metadata: every node's metadata gathered into the root, so opening a
hierarchy costs one read instead of a listing plus one read per node.

v2 writes ``.zmetadata`` (``{"zarr_consolidated_format": 1, "metadata": {"a/.zarray": ...}}``);
v3 writes the inline form zarr-python and xarray use: ``consolidated_metadata`` in the
root group's ``zarr.json`` with ``kind: "inline"`` and a flat ``{path: zarr.json}`` map.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["zmetadata_document", "v2_documents_for"]


def zmetadata_document(documents: Mapping[str, Any]) -> dict[str, Any]:
    """The v2 ``.zmetadata`` document from ``{relative key: decoded JSON}``."""
    return {"zarr_consolidated_format": 1, "metadata": dict(sorted(documents.items()))}


def v2_documents_for(consolidated: Mapping[str, Any], path: str) -> dict[str, Any]:
    """The decoded documents (``.zarray``/``.zgroup``/``.zattrs``) of ``path`` in a ``.zmetadata`` map."""
    prefix = f"{path}/" if path else ""
    out = {}
    for name in (".zarray", ".zgroup", ".zattrs"):
        doc = consolidated.get(prefix + name)
        if doc is not None:
            out[name] = doc
    return out
