"""The v3 ``zarr.json`` of a Zarr v2 (or v1) array whose chunks stay where they are: what
``migrate`` writes in place and ``copy`` starts from for a v2 source (the v2 encoding as a
v3 codec chain; see :mod:`zarrdask.tools.migrate`)."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..codecs.numcodecs_adapter import BYTES_TO_BYTES
from ..errors import MetadataError, Problem
from ..metadata.dtypes import data_type_from_numpy, parse_data_type_v3, stored_dtype_v2
from ..metadata.v2 import ITEM_DATA_TYPES, OBJECT_CODEC_ITEMS, ArrayMetadataV2
from ..nodes.codec_input import codec_json_v3

__all__ = ["array_document", "xarray_fill_attribute"]


def _byte_orders(stored: np.dtype) -> set[str]:
    """The byte orders (``<``, ``>``) of a stored dtype's multi-byte values, field by field
    for a structured one (a v3 ``struct`` is stored with one ``bytes`` endian)."""
    if stored.fields is not None:
        return set().union(*(_byte_orders(stored.fields[name][0]) for name in stored.names or ()))
    if stored.itemsize == 1 or stored.byteorder == "|":
        return set()
    big = stored.byteorder == ">" or (stored.byteorder == "=" and sys.byteorder == "big")
    return {">" if big else "<"}


def array_document(meta: ArrayMetadataV2, key: str) -> dict[str, Any]:
    """The v3 ``zarr.json`` of a v2 array whose chunks stay where they are (``key``: its
    ``.zarray``, for errors)."""
    dims = meta.dimension_names
    attrs = dict(meta.attributes)
    if dims is not None:
        del attrs["_ARRAY_DIMENSIONS"]
    filters = [dict(f) for f in meta.filters or ()]
    if meta.data_type.family == "object":
        codec_id = filters[0]["id"] if filters else None
        if codec_id not in OBJECT_CODEC_ITEMS:
            raise MetadataError([Problem(("filters", 0, "id"), f"object codec {codec_id!r} has no Zarr v3 "
                                                               f"equivalent (expected one of {sorted(OBJECT_CODEC_ITEMS)})")],
                                key=key)
        data_type = parse_data_type_v3(ITEM_DATA_TYPES[OBJECT_CODEC_ITEMS[codec_id]])
        serializer: dict[str, Any] = {"name": codec_id}
        fill = meta.chunk_fill  # (what the v2 array's unwritten items read as)
        filters = filters[1:]
        typesize = None
    else:
        data_type = data_type_from_numpy(meta.data_type.dtype)
        stored = stored_dtype_v2(meta.data_type)
        orders = _byte_orders(stored)
        if len(orders) > 1:
            raise MetadataError([Problem(("dtype",), f"the fields of {stored} are stored in both byte orders; a "
                                                     "Zarr v3 bytes codec stores all fields in one")], key=key)
        serializer = {"name": "bytes"}
        if orders:
            serializer["configuration"] = {"endian": "big" if orders == {">"} else "little"}
        fill = data_type.cast_fill(meta.fill_value)
        typesize = stored.itemsize
    chain: list[Any] = []
    if meta.order == "F" and len(meta.shape) > 1:
        chain.append({"name": "transpose", "configuration": {"order": list(reversed(range(len(meta.shape))))}})
    after: list[Any] = []
    for i, f in enumerate(filters):
        codec = {"name": f"numcodecs.{f['id']}", "configuration": _native_order(f, serializer, key, i)}
        if f["id"] in BYTES_TO_BYTES:
            after.append(codec)
        elif after:
            raise MetadataError([Problem(("filters", i), f"filter {f['id']!r} follows a bytes filter; no v3 chain "
                                                         "runs an array filter after a bytes one")], key=key)
        else:
            chain.append(codec)
    chain.append(serializer)
    chain.extend(after)
    if meta.compressor is not None:
        compressor = codec_json_v3(meta.compressor, ("compressor",))
        if compressor.get("name") == "blosc" and typesize is not None and not filters:
            compressor["configuration"]["typesize"] = typesize
        chain.append(compressor)
    doc: dict[str, Any] = {
        "zarr_format": 3, "node_type": "array", "shape": list(meta.shape), "data_type": data_type.to_json(),
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(meta.chunk_shape)}},
        "chunk_key_encoding": {"name": "v2", "configuration": {"separator": meta.dimension_separator}},
        "fill_value": data_type.fill_to_json(fill), "codecs": chain,
        "attributes": xarray_fill_attribute(attrs, meta) if dims is not None else attrs,
    }
    if dims is not None:
        doc["dimension_names"] = list(dims)
    return doc


def _native_order(config: Mapping[str, Any], serializer: Mapping[str, Any], key: str, i: int) -> dict[str, Any]:
    """A filter's configuration for a v3 chain. In v2 a filter sees the chunk in the stored
    byte order; in v3 array filters see it in native order and the ``bytes`` codec swaps
    afterwards, so a big-endian ``dtype``/``astype`` of a big-endian array becomes
    little-endian (the encoded bytes are the same)."""
    out = {k: v for k, v in config.items() if k != "id"}
    big = serializer.get("configuration", {}).get("endian") == "big"
    for name in ("dtype", "astype"):
        value = out.get(name)
        if isinstance(value, str) and value.startswith(">"):
            if not big:
                raise MetadataError([Problem(("filters", i, name), f"big-endian {value!r} in a little-endian array "
                                                                   "has no v3 equivalent")], key=key)
            out[name] = "<" + value[1:]
    return out


def xarray_fill_attribute(attrs: dict[str, Any], meta: ArrayMetadataV2) -> dict[str, Any]:
    """``_FillValue`` as xarray keeps it in v3 attributes. Reading v2, xarray takes the
    array's ``fill_value`` as ``_FillValue`` (or the attribute when the fill value is null);
    v3 readers take the attribute, in xarray's v3 encoding (base64 for floats)."""
    from ..xarray_backend.encoding import encode_fill_value_attr

    value = meta.fill_value if meta.fill_value is not None else attrs.get("_FillValue")
    if value is None or meta.data_type.family == "object":
        return attrs
    try:
        attrs["_FillValue"] = encode_fill_value_attr(value, meta.data_type.dtype)
    except (TypeError, ValueError) as exc:
        raise MetadataError([Problem(("fill_value",), f"{value!r} cannot be written as xarray's v3 _FillValue "
                                                      f"attribute: {exc}")]) from None
    return attrs
