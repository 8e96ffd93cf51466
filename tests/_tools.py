"""Other Zarr implementations driven from tests: GDAL's Zarr driver (its command-line
tools, as Debian's ``gdal-bin`` installs them) and netCDF-C's NCZarr (the ``netCDF4``
wheel's bundled library, and Debian's ``netcdf-bin`` ``ncgen``/``ncdump``).

Each finder returns a ``Tool`` (its version) or None with the reason it is absent, found
once per session by running the tool, so the tests skip with that reason on a machine
without it. GDAL is reached by subprocess: no Python binding has to match its version.
"""

from __future__ import annotations

import functools
import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np


class Tool(NamedTuple):
    """An installed implementation: its name and version (None fields when absent)."""

    name: str
    version: tuple[int, ...] | None
    absent: str = ""

    @property
    def label(self) -> str:
        return f"{self.name} {'.'.join(map(str, self.version or ()))}"


def _run(*args: str) -> str:
    """The tool's output; its ``ERROR`` messages fail the call (GDAL 3.6's tools exit with
    status 0 after them, having written part of a store)."""
    done = subprocess.run(args, check=True, capture_output=True, text=True, timeout=60)
    if "ERROR" in done.stderr:
        raise RuntimeError(f"{args[0]}: {done.stderr.strip()}")
    return done.stdout


def _version(text: str) -> tuple[int, ...]:
    match = re.search(r"(\d+)\.(\d+)\.(\d+)", text)
    assert match, text
    return tuple(int(g) for g in match.groups())


@functools.cache
def gdal() -> Tool:
    """GDAL's command-line tools with the Zarr driver."""
    if not all(shutil.which(t) for t in ("gdalinfo", "gdalmdiminfo", "gdalmdimtranslate")):
        return Tool("GDAL", None, "GDAL's command-line tools are not installed (Debian: gdal-bin)")
    if "Zarr -" not in _run("gdalinfo", "--formats"):
        return Tool("GDAL", None, "this GDAL has no Zarr driver")
    return Tool("GDAL", _version(_run("gdalinfo", "--version")))


@functools.cache
def netcdf4() -> Tool:
    """The netCDF4 wheel's netCDF-C, if it was built with NCZarr (tried by writing a store)."""
    try:
        import netCDF4
    except ImportError:
        return Tool("netCDF-C (netCDF4 wheel)", None, "the netCDF4 package is not installed")
    with tempfile.TemporaryDirectory() as tmp:
        try:
            netCDF4.Dataset(nczarr_url(Path(tmp) / "probe.zarr", "nczarr"), "w").close()
        except OSError as exc:
            return Tool("netCDF-C (netCDF4 wheel)", None, f"netCDF4's netCDF-C has no NCZarr: {exc}")
    return Tool("netCDF-C (netCDF4 wheel)", _version(netCDF4.__netcdf4libversion__))


@functools.cache
def ncgen() -> Tool:
    """A netCDF-C installed as a system package (``ncgen``/``ncdump``) that has NCZarr."""
    if not (shutil.which("ncgen") and shutil.which("ncdump")):
        return Tool("netCDF-C (ncgen/ncdump)", None, "ncgen/ncdump are not installed (Debian: netcdf-bin)")
    with tempfile.TemporaryDirectory() as tmp:
        cdl = Path(tmp) / "p.cdl"
        cdl.write_text("netcdf p {\ndimensions: x = 1 ;\nvariables: int v(x) ;\ndata: v = 1 ;\n}\n")
        done = subprocess.run(["ncgen", "-4", "-o", nczarr_url(Path(tmp) / "p.zarr", "nczarr"), str(cdl)],
                              capture_output=True, text=True, timeout=60)
        if done.returncode or not (Path(tmp) / "p.zarr" / "v").is_dir():
            return Tool("netCDF-C (ncgen/ncdump)", None, f"this netCDF-C has no NCZarr: {done.stderr.strip()}")
    banner = subprocess.run(["ncdump"], capture_output=True, text=True, timeout=60)
    return Tool("netCDF-C (ncgen/ncdump)", _version(banner.stdout + banner.stderr))


def nczarr_url(path: Path, mode: str) -> str:
    """netCDF-C's URL for a local Zarr store (``mode``: ``nczarr``, ``zarr``, ``nczarr,noxarray``)."""
    return f"file://{Path(path).resolve()}#mode={mode},file"


# ------------------------------------------------------------------------------------
# GDAL

_ENVI_TYPES = {"u1": 1, "i2": 2, "i4": 3, "f4": 4, "f8": 5, "c8": 6, "c16": 9, "u2": 12, "u4": 13}
GDAL_TYPES = {"u1": "Byte", "i2": "Int16", "u2": "UInt16", "i4": "Int32", "u4": "UInt32",
              "i8": "Int64", "u8": "UInt64", "f4": "Float32", "f8": "Float64",
              "c8": "CFloat32", "c16": "CFloat64"}


def gdal_source(directory: Path, values: np.ndarray, dims: tuple[str, str],
                attributes: dict[str, str | float]) -> Path:
    """A multidimensional VRT holding ``values`` (inline decimals for integers, else a raw
    ENVI file beside it): array ``v`` with named dimensions, each with its indexing variable
    (GDAL 3.6 writes ``_ARRAY_DIMENSIONS`` only then), and string / float attributes.
    Nothing here goes through zarrdask."""
    code = values.dtype.str[1:]
    raw = directory / "src.bin"
    values.astype(values.dtype.newbyteorder("<")).tofile(raw)
    if code in _ENVI_TYPES:
        (directory / "src.hdr").write_text(
            f"ENVI\nsamples = {values.shape[1]}\nlines = {values.shape[0]}\nbands = 1\nheader offset = 0\n"
            f"file type = ENVI Standard\ndata type = {_ENVI_TYPES[code]}\ninterleave = bsq\nbyte order = 0\n")
    dim_xml = "".join(
        f'<Dimension name="{d}" size="{n}" indexingVariable="{d}"/>'
        f'<Array name="{d}"><DataType>Float64</DataType><DimensionRef ref="{d}"/>'
        f'<RegularlySpacedValues start="0" increment="1"/></Array>' for d, n in zip(dims, values.shape))
    attr_xml = "".join(
        f'<Attribute name="{k}"><DataType>{"String" if isinstance(v, str) else "Float64"}</DataType>'
        f"<Value>{v!r}</Value></Attribute>".replace("'", "") for k, v in attributes.items())
    if values.dtype.kind in "iu":  # exact decimals (GDAL 3.6's ENVI has no 64-bit integers)
        source = (f'<InlineValues offset="{",".join("0" * values.ndim)}" count="{",".join(map(str, values.shape))}">'
                  + " ".join(str(int(v)) for v in values.ravel()) + "</InlineValues>")
    else:
        source = f"<Source><SourceFilename>{raw.resolve()}</SourceFilename><SourceBand>1</SourceBand></Source>"
    vrt = directory / "src.vrt"
    vrt.write_text(
        f'<VRTDataset><Group name="/">{dim_xml}<Array name="v"><DataType>{GDAL_TYPES[code]}</DataType>'
        + "".join(f'<DimensionRef ref="{d}"/>' for d in dims) + attr_xml
        + source + "</Array></Group></VRTDataset>")
    return vrt


def gdal_translate_md(source: Path, target: Path, dataset_options: dict[str, str],
                      array_options: dict[str, str]) -> None:
    """``gdalmdimtranslate`` ``source`` into a Zarr store with these creation options."""
    opts = [f"{k}={v}" for k, v in dataset_options.items()] + [f"ARRAY:{k}={v}" for k, v in array_options.items()]
    _run("gdalmdimtranslate", "-q", "-of", "Zarr", *[a for o in opts for a in ("-co", o)], str(source), str(target))


def gdal_translate_raster(source: Path, target: Path, options: dict[str, str]) -> None:
    """``gdal_translate`` the raw file beside ``source`` (a 2-D raster) into a Zarr array
    ``v``: the way to chunk it, as GDAL 3.6's ``gdalmdimtranslate`` applies ``BLOCKSIZE``
    to the 1-D coordinate arrays too and fails there."""
    opts = [f"{k}={v}" for k, v in {**options, "ARRAY_NAME": "v"}.items()]
    _run("gdal_translate", "-q", "-of", "Zarr", *[a for o in opts for a in ("-co", o)],
         str(source.with_suffix(".bin")), str(target))


class GdalArray(NamedTuple):
    """What ``gdalmdiminfo -detailed`` reports for one array."""

    values: np.ndarray
    dimensions: tuple[str, ...]
    attributes: dict[str, Any]


def gdal_read(store: Path, name: str, dtype: np.dtype) -> GdalArray:
    """GDAL's view of array ``name``: its values (parsed as ``dtype``: GDAL prints floats
    with the digits that round-trip), dimension names and attributes."""
    info = json.loads(_run("gdalmdiminfo", "-detailed", str(store)))
    arr = info["arrays"][name]
    dims = tuple(d.rsplit("/", 1)[-1] if isinstance(d, str) else d["name"] for d in arr["dimensions"])
    raw = arr["values"]
    if dtype.kind == "c":  # printed as {"real": r, "imag": i}
        flat = [complex(float(v["real"]), float(v["imag"])) for v in np.ravel(np.array(raw, dtype=object))]
        values = np.array(flat, dtype=dtype.newbyteorder("=")).reshape(np.shape(raw)[:2])
    elif dtype.kind in "iu":
        values = np.array(raw, dtype=object).astype(dtype.newbyteorder("="))
    else:
        values = np.array([float(v) for v in np.ravel(np.array(raw, dtype=object))],
                          dtype=np.float64).astype(dtype.newbyteorder("=")).reshape(np.shape(raw))
    attributes = dict(arr.get("attributes", {}))
    if "unit" in arr:  # GDAL reports the ``units`` attribute as the array's unit
        attributes["units"] = arr["unit"]
    return GdalArray(values, dims, attributes)


# ------------------------------------------------------------------------------------
# netCDF-C command-line tools

_CDL_TYPES = {"i1": "byte", "u1": "ubyte", "i2": "short", "u2": "ushort", "i4": "int", "u4": "uint",
              "i8": "int64", "u8": "uint64", "f4": "float", "f8": "double"}


def ncgen_write(directory: Path, values: np.ndarray, dims: tuple[str, str], units: str) -> Path:
    """A store ``ncgen`` writes (NCZarr, with both kinds of dimension names): ``v(dims)``."""
    code = values.dtype.str[1:]
    text = ", ".join(repr(float(v)) if values.dtype.kind == "f" else str(int(v)) for v in values.ravel())
    cdl = directory / "v.cdl"
    cdl.write_text(
        "netcdf v {\ndimensions: " + " ".join(f"{d} = {n} ;" for d, n in zip(dims, values.shape))
        + f"\nvariables: {_CDL_TYPES[code]} v({', '.join(dims)}) ; v:units = \"{units}\" ;"
        + f"\ndata: v = {text} ;\n}}\n")
    store = directory / "nc.zarr"
    _run("ncgen", "-4", "-o", nczarr_url(store, "nczarr"), str(cdl))
    return store


def ncdump_values(store: Path, name: str, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    """The values ``ncdump`` prints for ``name`` (floats with 9 / 17 digits, which round-trip)."""
    text = _run("ncdump", "-v", name, "-p", "9,17", nczarr_url(store, "zarr"))
    body = text.split("data:", 1)[1].split(f"{name} =", 1)[1].split(";", 1)[0]
    items = [t.strip() for t in body.replace("\n", " ").split(",")]
    native = dtype.newbyteorder("=")
    if native.kind == "f":
        return np.array([float(t.rstrip("f")) for t in items], dtype=np.float64).astype(native).reshape(shape)
    return np.array([int(t.rstrip("UBSLl")) for t in items], dtype=object).astype(native).reshape(shape)
