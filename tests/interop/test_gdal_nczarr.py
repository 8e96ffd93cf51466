"""Interop with independent implementations: GDAL's Zarr driver and netCDF-C's NCZarr, both
directions, as far as each supports a feature.

* tool writes -> zarrdask reads bit-exact: values, dimension names (``Array.dimension_names``
  and the xarray engine's dims, from ``_ARRAY_DIMENSIONS``, NCZarr's ``dimension_references``
  (4.10) or ``dimrefs`` (4.9)) and attributes;
* zarrdask writes -> the tool reads: the values (and dimension names) it reports.

Cases are generated (dtypes x compressors x order x format / dimension-name form). A case a
tool gets wrong or cannot do is a strict expected failure naming the tool's defect, never a
pass. A tool that is not installed skips its cases with the reason; test ids carry the
versions that ran (``-v`` shows them). The README's "Other implementations" lists the matrix.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pytest
import xarray as xr

import _tools
import zarrdask
from zarrdask.errors import MetadataError

GDAL = _tools.gdal()
NC4 = _tools.netcdf4()
NCGEN = _tools.ncgen()
SHAPE = (20, 30)
CHUNKS = (8, 16)  # edge chunks are partial in both axes
DIMS = ("y", "x")


def _needs(tool: _tools.Tool) -> pytest.MarkDecorator:
    return pytest.mark.skipif(tool.version is None, reason=tool.absent)


def _ids(tool: _tools.Tool, cases: list[Any]) -> list[str]:
    return [f"{tool.label.replace(' ', '')}-{c.id}" if tool.version else c.id for c in cases]


def sample(dtype: np.dtype) -> np.ndarray:
    """Compressible values covering the type: its extremes, negatives, fractions."""
    base = np.arange(np.prod(SHAPE)) % 13
    native = dtype.newbyteorder("=")
    if native.kind in "iu":
        info = np.iinfo(native)
        out = (base * (1 if native.itemsize == 1 else 1000) + (-3 if native.kind == "i" else 0)).astype(native)
        out[:2] = info.min, info.max
    elif native.kind == "f":
        out = ((base - 3) / 3).astype(native)
    else:
        out = ((base - 3) / 3 + 1j * (base / 7)).astype(native)
    return out.reshape(SHAPE).astype(dtype)


def assert_bits(got: np.ndarray, want: np.ndarray) -> None:
    """The same values, bit for bit (in native byte order). A mismatch names how many values
    differ and the first one: pytest's own explanation of two unequal byte strings this long
    (a diff) takes up to a minute, and every strict expected failure here computes one."""
    native = want.dtype.newbyteorder("=")
    assert got.shape == want.shape
    g = np.ascontiguousarray(np.asarray(got).astype(native))
    w = np.ascontiguousarray(want.astype(native))
    if g.tobytes() != w.tobytes():
        bad = np.flatnonzero((g.reshape(-1).view(np.uint8).reshape(g.size, -1)
                              != w.reshape(-1).view(np.uint8).reshape(w.size, -1)).any(axis=1))
        first = np.unravel_index(bad[0], want.shape)
        raise AssertionError(f"{bad.size} of {w.size} values differ; the first at {tuple(map(int, first))}: "
                             f"{g[first]!r}, not {w[first]!r}")


def user_attrs(attrs: Any) -> dict[str, Any]:
    return {k: v for k, v in dict(attrs).items() if not k.startswith("_")}


def check_zarrdask_reads(store: Path, values: np.ndarray, attrs: dict[str, Any],
                         dims: tuple[str, ...] | None = DIMS, on_array: bool = True) -> None:
    """zarrdask's view of array ``v``: bits, dimension names in xarray and (``on_array``) on
    the array (``dims`` None: the writer stored none), attributes."""
    arr = zarrdask.open_array(store, path="v")
    assert_bits(arr[...], values)
    if on_array:
        assert arr.dimension_names == dims
    assert user_attrs(arr.attrs) == attrs
    if dims is not None:
        with xr.open_dataset(store, engine="zarrdask", decode_cf=False) as ds:
            assert ds["v"].dims == dims
            assert user_attrs(ds["v"].attrs) == attrs


def drop_array_dimensions(store: Path) -> None:
    """Remove xarray's ``_ARRAY_DIMENSIONS`` from a tool's ``v/.zattrs``, so that the names
    can come only from NCZarr's own references."""
    path = store / "v" / ".zattrs"
    doc = json.loads(path.read_text())
    assert doc.pop("_ARRAY_DIMENSIONS") == list(DIMS)
    path.write_text(json.dumps(doc))


class Case(NamedTuple):
    id: str
    dtype: np.dtype
    options: dict[str, Any]
    defect: str = ""  # why the tool gets this case wrong (a strict expected failure)
    refused: str = ""  # the tool writes what no Zarr reader understands: zarrdask's error says


def _params(tool: _tools.Tool, cases: list[Case]) -> list[Any]:
    return [pytest.param(c, id=i, marks=[pytest.mark.xfail(strict=True, reason=c.defect)] if c.defect else [])
            for c, i in zip(cases, _ids(tool, cases))]


# ------------------------------------------------------------------------------------
# GDAL writes, zarrdask reads

GDAL_DTYPES = list(_tools.GDAL_TYPES)
GDAL_COMPRESS = ["NONE", "BLOSC", "ZLIB", "GZIP", "LZMA", "ZSTD", "LZ4"]


def _gdal_write_cases() -> list[Case]:
    cases = []
    for i, (fmt, code) in enumerate(itertools.product(["ZARR_V2", "ZARR_V3"], GDAL_DTYPES)):
        comp, order = GDAL_COMPRESS[i % len(GDAL_COMPRESS)], "CF"[i // len(GDAL_COMPRESS) % 2]
        chunked = i % 3 == 1 and code not in ("i8", "u8")  # the raster route reads ENVI files
        refused = "lzma.*delta" if comp == "LZMA" else ""
        defect = "GDAL 3.6 writes no complex types in its v3 (draft) format" if fmt == "ZARR_V3" and code[0] == "c" else ""
        cases.append(Case(f"{fmt}-{code}-{comp}-{order}{'-chunked' if chunked else ''}", np.dtype(code),
                          {"format": fmt, "COMPRESS": comp, "CHUNK_MEMORY_LAYOUT": order, "chunked": chunked},
                          defect, refused))
    return cases


@_needs(GDAL)
@pytest.mark.parametrize("case", _params(GDAL, _gdal_write_cases()))
def test_gdal_writes_zarrdask_reads(tmp_path: Path, case: Case) -> None:
    values = sample(case.dtype)
    attrs = {"units": "m", "scale": 0.5}
    source = _tools.gdal_source(tmp_path, values, DIMS, attrs)
    store = tmp_path / "g.zarr"
    opts = dict(case.options)
    fmt, chunked = opts.pop("format"), opts.pop("chunked")
    if chunked:  # partial edge chunks, through GDAL's raster API: no dimension names, no attributes
        _tools.gdal_translate_raster(source, store, {"FORMAT": fmt, **opts, "BLOCKSIZE": ",".join(map(str, CHUNKS))})
    else:
        _tools.gdal_translate_md(source, store, {"FORMAT": fmt}, opts)
    if case.refused:
        with pytest.raises(MetadataError, match=case.refused):
            zarrdask.open_array(store, path="v")[...]
        return
    if chunked:
        assert zarrdask.open_array(store, path="v").chunks == CHUNKS
    check_zarrdask_reads(store, values, {} if chunked else attrs, None if chunked else DIMS)


# ------------------------------------------------------------------------------------
# zarrdask writes, GDAL reads

V2_COMPRESSORS: list[dict[str, Any] | None] = [
    None, {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1}, {"id": "zlib", "level": 1},
    {"id": "gzip", "level": 1}, {"id": "zstd", "level": 3}, {"id": "lz4", "acceleration": 1},
    {"id": "lzma", "preset": 1}]
V2_DTYPES = ["|u1", "|i1", "<i2", "<u2", "<i4", "<u4", "<i8", "<u8", "<f4", "<f8", ">i4", ">f8", "<c8"]


def _gdal_cannot(dtype: np.dtype, fmt: int, shards: bool) -> str:
    v = GDAL.version or ()
    if fmt == 3 and v < (3, 8):
        return f"GDAL {GDAL.label[5:]} reads only the v3.0 draft (final v3 opens as an empty group)"
    if shards and v < (3, 13):
        return "GDAL reads sharding from 3.13"
    if dtype.kind == "c" and fmt == 2:
        return "GDAL refuses the [real, imag] fill value of complex v2 arrays ('Invalid fill_value', seen on 3.6.2)"
    return ""


def _gdal_read_cases() -> list[Case]:
    cases = []
    for i, dt in enumerate(V2_DTYPES):
        comp, order = V2_COMPRESSORS[i % len(V2_COMPRESSORS)], "CF"[i % 2]
        dtype = np.dtype(dt)
        filters = [{"id": "delta", "dtype": dt}] if dt == "<i4" else None
        cases.append(Case(f"v2-{dt}-{(comp or {'id': 'none'})['id']}-{order}{'-delta' if filters else ''}", dtype,
                          {"zarr_format": 2, "compressors": comp, "order": order, "filters": filters},
                          _gdal_cannot(dtype, 2, False)))
    for dt, shards in [("<f4", None), ("<i8", None), ("<f8", (16, 16))]:
        dtype = np.dtype(dt)
        cases.append(Case(f"v3-{dt}{'-sharded' if shards else ''}", dtype,
                          {"zarr_format": 3, "shards": shards, "compressors": {"name": "zstd"}},
                          _gdal_cannot(dtype, 3, bool(shards))))
    return cases


def _zarrdask_write(store: Path, values: np.ndarray, options: dict[str, Any]) -> None:
    opts = {k: v for k, v in options.items() if v is not None or k == "compressors"}
    arr = zarrdask.create_array(store, name="v", shape=SHAPE, dtype=values.dtype, chunks=CHUNKS,
                                dimension_names=DIMS, overwrite=True, **opts)
    arr[...] = values
    arr.attrs["units"] = "m"


@_needs(GDAL)
@pytest.mark.parametrize("case", _params(GDAL, _gdal_read_cases()))
def test_zarrdask_writes_gdal_reads(tmp_path: Path, case: Case) -> None:
    values = sample(case.dtype)
    store = tmp_path / "z.zarr"
    _zarrdask_write(store, values, case.options)
    got = _tools.gdal_read(store, "v", case.dtype)
    assert_bits(got.values, values)
    assert got.dimensions == DIMS
    assert got.attributes.get("units") == "m"


# ------------------------------------------------------------------------------------
# netCDF-C (the netCDF4 wheel) writes, zarrdask reads

NC_DTYPES = ["i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "f4", "f8"]
NC_COMPRESSION = [None, "zlib", "zstd", "bzip2", "blosc_lz4", "blosc_zstd"]
# id -> (netCDF-C's mode, drop ``_ARRAY_DIMENSIONS`` afterwards, the names zarrdask should find)
NC_MODES: dict[str, tuple[str, bool, tuple[str, ...] | None]] = {
    "nczarr": ("nczarr", False, DIMS),                        # dimension_references + _ARRAY_DIMENSIONS
    "nczarr-refs-only": ("nczarr", True, DIMS),               # dimension_references alone
    "zarr": ("zarr", False, DIMS),                            # _ARRAY_DIMENSIONS alone
    # netCDF-C 4.10.1's noxarray writes no NCZarr metadata either: the names are lost (it
    # reads its own store back as _Anonymous_Dim_*), so there are none to find
    "nczarr,noxarray": ("nczarr,noxarray", False, None),
}
#: netCDF-C writes {'id': 'shuffle', 'elementsize': 0} but shuffles by the element size, where
#: numcodecs reads elementsize 0 as no shuffle: zarrdask refuses the ambiguous document
SHUFFLE_REFUSED = r"filters/\d+/elementsize.*ambiguous.*netCDF-C"


def _nc4_write_cases() -> list[Case]:
    cases = []
    for i, (mode, code) in enumerate(itertools.product(NC_MODES, NC_DTYPES)):
        comp, shuffle = NC_COMPRESSION[i % len(NC_COMPRESSION)], bool(i // len(NC_COMPRESSION) % 2)
        endian = "big" if i % 7 == 3 else "native"
        dtype = np.dtype(code)
        refused = SHUFFLE_REFUSED if shuffle and comp == "zlib" and dtype.itemsize > 1 else ""
        cases.append(Case(f"{mode}-{code}-{comp}{'-shuffle' if shuffle else ''}-{endian}", dtype,
                          {"mode": mode, "compression": comp, "shuffle": shuffle, "endian": endian}, refused=refused))
    return cases


@_needs(NC4)
@pytest.mark.parametrize("case", _params(NC4, _nc4_write_cases()))
def test_netcdf4_writes_zarrdask_reads(tmp_path: Path, case: Case) -> None:
    import netCDF4

    values = sample(case.dtype)
    store = tmp_path / "n.zarr"
    opts = dict(case.options)
    mode, drop, dims = NC_MODES[opts.pop("mode")]
    with netCDF4.Dataset(_tools.nczarr_url(store, mode), "w") as ds:
        for d, n in zip(DIMS, SHAPE):
            ds.createDimension(d, n)
        dtype = case.dtype.newbyteorder(">" if opts["endian"] == "big" else "=")
        var = ds.createVariable("v", dtype, DIMS, chunksizes=CHUNKS, **opts)
        var.set_auto_maskandscale(False)
        var[...] = values
        var.units = "m"
    if drop:
        drop_array_dimensions(store)
    if case.refused:
        with pytest.raises(MetadataError, match=case.refused):
            zarrdask.open_array(store, path="v")
        return
    check_zarrdask_reads(store, values, {"units": "m"}, dims)


# ------------------------------------------------------------------------------------
# zarrdask writes, netCDF-C (the netCDF4 wheel) reads

NC_V2_COMPRESSORS: list[dict[str, Any] | None] = [
    None, {"id": "zlib", "level": 1}, {"id": "zstd", "level": 3}, {"id": "bz2", "level": 1},
    {"id": "blosc", "cname": "zstd", "clevel": 3, "shuffle": 2}, {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1}]


NO_FILTERS = ("this netCDF-C (Debian's 4.9.0) has no filter plugins for NCZarr and reads compressed chunks "
              "as raw values, without an error")


def _nc_cannot(tool: _tools.Tool, dtype: np.dtype, order: str, fmt: int, filters: bool = True) -> str:
    v = tool.version or ()
    if not filters:
        return NO_FILTERS
    if fmt == 3:
        return f"netCDF-C {'.'.join(map(str, v))} as built here reads no Zarr v3 (the 4.10.1 wheel's mode=zarr,v3 writes v2)"
    if dtype.byteorder == ">" and dtype.itemsize > 1 and v < (4, 10):
        return "netCDF-C 4.9 reads big-endian arrays byte-swapped"
    if order == "F" and v <= (4, 10, 1):
        return "netCDF-C (4.9.0, 4.10.1) ignores order F: it reads the chunks as C order"
    return ""


def _nc_read_cases(tool: _tools.Tool, compressors: list[dict[str, Any] | None], filters: bool) -> list[Case]:
    """zarrdask-written cases for a netCDF-C (``filters``: it has its compressor plugins)."""
    cases = []
    for i, code in enumerate(NC_DTYPES + [">i4", ">f8"]):
        dtype = np.dtype(code)
        comp, order = compressors[i % len(compressors)], "CF"[i % 2]
        cases.append(Case(f"v2-{dtype.str}-{(comp or {'id': 'none'})['id']}-{order}", dtype,
                          {"zarr_format": 2, "compressors": comp, "order": order},
                          _nc_cannot(tool, dtype, order, 2, filters or comp is None)))
    cases.append(Case("v3-<f4", np.dtype("<f4"), {"zarr_format": 3}, _nc_cannot(tool, np.dtype("f4"), "C", 3)))
    return cases


@_needs(NC4)
@pytest.mark.parametrize("case", _params(NC4, _nc_read_cases(NC4, NC_V2_COMPRESSORS, True)))
def test_zarrdask_writes_netcdf4_reads(tmp_path: Path, case: Case) -> None:
    import netCDF4

    values = sample(case.dtype)
    store = tmp_path / "z.zarr"
    _zarrdask_write(store, values, case.options)
    with netCDF4.Dataset(_tools.nczarr_url(store, "zarr"), "r") as ds:
        var = ds["v"]
        var.set_auto_maskandscale(False)
        assert_bits(var[...], values)
        assert var.dimensions == DIMS
        assert var.units == "m"


# ------------------------------------------------------------------------------------
# Debian's netCDF-C (ncgen writes NCZarr with ``_NCZARR_ARRAY: {"dimrefs": ...}``; ncdump reads)


NCGEN_CASES = [Case(f"{code}{'-dimrefs-only' if drop else ''}", np.dtype(code), {"drop": drop})
               for i, code in enumerate(NC_DTYPES) for drop in [i % 2 == 0]]


@_needs(NCGEN)
@pytest.mark.parametrize("case", _params(NCGEN, NCGEN_CASES))
def test_ncgen_writes_zarrdask_reads(tmp_path: Path, case: Case) -> None:
    values = sample(case.dtype)
    store = _tools.ncgen_write(tmp_path, values, DIMS, "m")
    if case.options["drop"]:  # the names from ``.zarray``'s ``_NCZARR_ARRAY: {"dimrefs": ...}`` alone
        drop_array_dimensions(store)
    check_zarrdask_reads(store, values, {"units": "m"}, on_array=not case.options["drop"])


@_needs(NCGEN)
def test_ncgen_dimrefs_on_the_array(tmp_path: Path) -> None:
    store = _tools.ncgen_write(tmp_path, sample(np.dtype("i4")), DIMS, "m")
    drop_array_dimensions(store)
    assert zarrdask.open_array(store, path="v").dimension_names == DIMS


@_needs(NCGEN)
@pytest.mark.parametrize("case", _params(NCGEN, _nc_read_cases(NCGEN, [None, None, None, *NC_V2_COMPRESSORS[1:3]], False)))
def test_zarrdask_writes_ncdump_reads(tmp_path: Path, case: Case) -> None:
    values = sample(case.dtype)
    store = tmp_path / "z.zarr"
    _zarrdask_write(store, values, case.options)
    assert_bits(_tools.ncdump_values(store, "v", case.dtype, SHAPE), values)
