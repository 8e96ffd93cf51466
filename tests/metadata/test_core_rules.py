"""The core rules merged into the Zarr v3 spec on 2026-07-23, and NCZarr's dimension names.

* zarr-specs #373: ``consolidated_metadata`` is ``{"must_understand": false, "kind":
  "inline", "metadata": {...}}``, an object without ``name``;
* #375: no node is named ``zarr.json``;
* #377: a float fill value given as a JSON number rounds "half to even" to the type;
* #379: regular-grid chunk sizes are greater than zero.

NCZarr: netCDF-C names dimensions in ``_nczarr_array`` (``dimension_references``, 4.10;
``dimrefs``, 4.9) or ``.zarray``'s ``_NCZARR_ARRAY`` (4.8), without ``_ARRAY_DIMENSIONS``
when written with ``noxarray``; the fixtures follow the ecosystem notes' description.
"""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest
import xarray as xr
import zarr
from hypothesis import given, settings
from hypothesis import strategies as st

import zarrdask
from zarrdask.errors import MetadataError
from zarrdask.metadata.dtypes import parse_data_type_v3
from zarrdask.metadata.v3 import ArrayMetadataV3, GroupMetadataV3

FAST = settings(max_examples=200, deadline=None)


def _array_doc(dtype="float32", fill_value=0, chunk_grid=None, codecs=None, shape=(8,)):
    return {"zarr_format": 3, "node_type": "array", "shape": list(shape), "data_type": dtype,
            "chunk_grid": chunk_grid or {"name": "regular", "configuration": {"chunk_shape": [4] * len(shape)}},
            "chunk_key_encoding": {"name": "default"}, "fill_value": fill_value,
            "codecs": codecs or [{"name": "bytes", "configuration": {"endian": "little"}}]}


def _group_doc(consolidated):
    return {"zarr_format": 3, "node_type": "group", "attributes": {}, "consolidated_metadata": consolidated}


# -- #373 consolidated metadata without name -----------------------------------------------

@pytest.mark.filterwarnings("ignore:Consolidated metadata")
def test_consolidated_metadata_of_zarr_python_is_read(tmp_path):
    """zarr-python's inline form (no ``name``) opens, and its entries are used."""
    root = zarr.open_group(str(tmp_path), mode="w", zarr_format=3)
    root.create_array("a", shape=(4,), dtype="int32", chunks=(2,))
    root.create_group("g").create_array("b", shape=(3,), dtype="float32", chunks=(3,))
    zarr.consolidate_metadata(str(tmp_path))
    cm = json.loads((tmp_path / "zarr.json").read_text())["consolidated_metadata"]
    assert "name" not in cm and cm["kind"] == "inline" and cm["must_understand"] is False
    group = zarrdask.open_group(str(tmp_path), mode="r")
    assert set(group.metadata.consolidated) == {"a", "g", "g/b"}
    assert group["g/b"].shape == (3,)


def test_consolidated_metadata_null_means_none():
    """zarr-python writes ``"consolidated_metadata": null`` in groups it did not consolidate."""
    assert GroupMetadataV3.from_json(_group_doc(None)).consolidated is None


@pytest.mark.parametrize("consolidated, field, expected", [
    ({"kind": "other", "must_understand": False, "metadata": {}}, "consolidated_metadata/kind", "expected 'inline'"),
    ({"kind": "inline", "must_understand": True, "metadata": {}}, "consolidated_metadata/must_understand",
     "expected false"),
    ({"kind": "inline", "must_understand": False}, "consolidated_metadata/metadata", "expected an object"),
    ({"kind": "inline", "must_understand": False, "metadata": []}, "consolidated_metadata/metadata",
     "expected an object"),
    ("inline", "consolidated_metadata", "expected {\"kind\": \"inline\""),
])
def test_consolidated_metadata_of_another_form_is_refused(tmp_path, consolidated, field, expected):
    """The error names the document's key, the field and what was expected."""
    (tmp_path / "zarr.json").write_text(json.dumps(_group_doc(consolidated)))
    with pytest.raises(MetadataError) as info:
        zarrdask.open_group(str(tmp_path), mode="r")
    message = str(info.value)
    assert "zarr.json" in message and field in message and expected in message


# -- #375 no node named zarr.json --------------------------------------------------------------

@pytest.mark.parametrize("path", ["zarr.json", "a/zarr.json", "zarr.json/b"])
def test_consolidated_entry_named_zarr_json_is_refused(tmp_path, path):
    metadata = {path: _array_doc(), "a": {"zarr_format": 3, "node_type": "group", "attributes": {}}}
    (tmp_path / "zarr.json").write_text(json.dumps(
        _group_doc({"kind": "inline", "must_understand": False, "metadata": metadata})))
    with pytest.raises(MetadataError, match=f"consolidated_metadata/metadata/{path}: a node must not be named "
                                            "'zarr.json'"):
        zarrdask.open_group(str(tmp_path), mode="r")


def test_names_containing_zarr_json_are_fine():
    metadata = {"zarr.json.bak": _array_doc(), "my_zarr.json": _array_doc()}
    group = GroupMetadataV3.from_json(_group_doc({"kind": "inline", "must_understand": False, "metadata": metadata}))
    assert set(group.consolidated) == set(metadata)


# -- #377 float fill values rounded half to even ----------------------------------------------

FORMATS = {"float32": (np.float32, 23, -126, 127), "float16": (np.float16, 10, -14, 15)}


def _reference(value, dtype):
    """``value``'s decimal rounded half to even to ``dtype``, by scaling to the format's
    quantum (not by way of float64); None when it rounds beyond the largest finite value."""
    _, mantissa, emin, emax = FORMATS[dtype]
    exact = Fraction(repr(value)) if isinstance(value, float) else Fraction(value)
    if exact == 0:
        return exact
    a = abs(exact)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    while Fraction(2) ** e > a:
        e -= 1
    while Fraction(2) ** (e + 1) <= a:
        e += 1
    quantum = Fraction(2) ** (max(e, emin) - mantissa)
    rounded = round(a / quantum) * quantum  # Fraction rounds half to even
    if rounded >= Fraction(2) ** (emax + 1):
        return None
    return rounded if exact > 0 else -rounded


def _near_midpoints(dtype):
    """float64 numbers on, and one step either side of, a midpoint between two values of ``dtype``:
    where rounding through float64 first goes wrong."""
    native = FORMATS[dtype][0]
    bits = st.integers(0, 2 ** (8 * np.dtype(native).itemsize) - 1).map(
        lambda b: np.array(b, dtype=f"u{np.dtype(native).itemsize}").view(native)[()])
    finite = bits.filter(lambda v: np.isfinite(v) and np.isfinite(np.nextafter(v, native(np.inf))))

    def around(v):
        mid = (float(v) + float(np.nextafter(v, native(np.inf)))) / 2
        return st.sampled_from([mid, np.nextafter(mid, np.inf), np.nextafter(mid, -np.inf)]).map(float)

    return finite.flatmap(around)


@FAST
@given(st.sampled_from(sorted(FORMATS)), st.data())
def test_fill_value_numbers_round_half_to_even(dtype, data):
    value = data.draw(st.one_of(_near_midpoints(dtype), st.floats(allow_nan=False, allow_infinity=False),
                                st.integers(-(2 ** 70), 2 ** 70)))
    expected = _reference(value, dtype)
    doc = _array_doc(dtype, value)
    if expected is None:
        with pytest.raises(MetadataError, match="outside the range"):
            ArrayMetadataV3.from_json(doc)
        return
    fill = ArrayMetadataV3.from_json(doc).fill_value
    assert Fraction(float(fill)) == expected
    assert np.signbit(fill) == (str(value).startswith("-"))


def test_fill_value_midpoint_example():
    """1.0000000596046448 lies just above the float32 midpoint 1 + 2**-24 that float64
    rounds it to; half to even from the number itself gives 1 + 2**-23."""
    fill = ArrayMetadataV3.from_json(_array_doc("float32", 1.0000000596046448)).fill_value
    assert fill == np.float32(1 + 2 ** -23)
    complex_fill = ArrayMetadataV3.from_json(_array_doc("complex64", [1.0000000596046448, 0.5])).fill_value
    assert complex_fill == np.complex64(complex(1 + 2 ** -23, 0.5))


@FAST
@given(st.sampled_from(["float16", "float32", "float64", "complex64"]), st.data())
def test_fill_values_written_read_back_bit_exactly(dtype, data):
    """Whatever zarrdask writes for a fill value reads back to the same bits (NaN payloads
    and signed zeros included)."""
    itemsize = np.dtype(dtype).itemsize
    raw = data.draw(st.binary(min_size=itemsize, max_size=itemsize))
    value = np.frombuffer(raw, dtype=dtype)[0]
    meta = ArrayMetadataV3.from_json(_array_doc(dtype, parse_data_type_v3(dtype).fill_to_json(value)))
    written = json.loads(json.dumps(meta.to_json()))
    again = ArrayMetadataV3.from_json(written).fill_value
    assert np.array(again, dtype=dtype).tobytes() == raw


# -- #379 chunk sizes greater than zero ---------------------------------------------------------

@FAST
@given(st.lists(st.integers(0, 4), min_size=1, max_size=4).filter(lambda c: 0 in c))
def test_zero_chunk_sizes_are_refused(chunks):
    doc = _array_doc(chunk_grid={"name": "regular", "configuration": {"chunk_shape": chunks}}, shape=[4] * len(chunks))
    with pytest.raises(MetadataError, match="chunk_grid/configuration/chunk_shape: expected integers from 1"):
        ArrayMetadataV3.from_json(doc)


@pytest.mark.parametrize("grid, codecs, match", [
    ({"name": "rectilinear", "configuration": {"kind": "inline", "chunk_shapes": [[0, 8]]}}, None,
     "chunk_grid/configuration/chunk_shapes/0: expected a positive integer"),
    (None, [{"name": "sharding_indexed", "configuration": {"chunk_shape": [0], "codecs": [{"name": "bytes"}]}}],
     "chunk_shape: expected a list of positive integers"),
])
def test_zero_chunk_sizes_of_other_grids_and_shards_are_refused(tmp_path, grid, codecs, match):
    (tmp_path / "zarr.json").write_text(json.dumps(_array_doc(chunk_grid=grid, codecs=codecs)))
    with pytest.raises(MetadataError, match=match):
        zarrdask.open_array(str(tmp_path))


def test_chunk_size_one_is_fine():
    assert ArrayMetadataV3.from_json(
        _array_doc(chunk_grid={"name": "regular", "configuration": {"chunk_shape": [1]}})).chunk_shape == (1,)


# -- NCZarr dimension names ----------------------------------------------------------------------

def _write(path, documents):
    for key, doc in documents.items():
        (path / key).parent.mkdir(parents=True, exist_ok=True)
        (path / key).write_text(json.dumps(doc))


def _nczarr_store(path, style):
    """A netCDF-C (``mode=nczarr,noxarray``) store: ``v(y, x)`` and its coordinate ``y(y)``,
    the names only in NCZarr's metadata, in the form of each netCDF-C generation."""
    version = {"4.10": "4.10.1", "4.9": "4.9.0", "4.8": "4.8.1"}[style]
    root_attrs = {"_NCProperties": f"version=2,netcdf={version},nczarr=2.0.0",
                  "_nczarr_superblock": {"version": "2.0.0"},
                  "_nczarr_group": {"dimensions": {"y": 6, "x": 8}, "arrays": ["v", "y"], "groups": []}}
    docs = {".zgroup": {"zarr_format": 2}, ".zattrs": root_attrs}
    for name, shape, refs, attrs in (("v", [6, 8], ["/y", "/x"], {"units": "K"}), ("y", [6], ["/y"], {"units": "m"})):
        zarray = {"zarr_format": 2, "shape": shape, "dtype": "<f4", "chunks": shape, "fill_value": -9, "order": "C",
                  "compressor": None, "filters": None, "dimension_separator": "."}
        if style == "4.10":
            attrs = {**attrs, "_nczarr_array": {"dimension_references": refs, "storage": "chunked"}}
        elif style == "4.9":
            attrs = {**attrs, "_nczarr_array": {"dimrefs": refs, "storage": "chunked"}}
        else:
            zarray["_NCZARR_ARRAY"] = {"dimrefs": refs, "storage": "chunked"}
        docs[f"{name}/.zarray"] = zarray
        docs[f"{name}/.zattrs"] = {**attrs, "_nczarr_attr": {"types": {"units": ">S1"}}}
    _write(path, docs)
    (path / "v" / "0.0").write_bytes(np.arange(48, dtype="<f4").tobytes())
    (path / "y" / "0").write_bytes(np.arange(6, dtype="<f4").tobytes())


@pytest.mark.parametrize("style", ["4.10", "4.9", "4.8"])
def test_nczarr_dimension_names_through_the_xarray_engine(tmp_path, style):
    _nczarr_store(tmp_path, style)
    ds = xr.open_dataset(str(tmp_path), engine="zarrdask", consolidated=False)
    assert ds["v"].dims == ("y", "x") and ds["y"].dims == ("y",)
    assert ds["v"].attrs == {"units": "K"}
    np.testing.assert_array_equal(ds["v"].values, np.arange(48, dtype="f4").reshape(6, 8))


@pytest.mark.parametrize("style", ["4.10", "4.9"])
def test_nczarr_dimension_names_on_the_array(tmp_path, style):
    _nczarr_store(tmp_path, style)
    assert zarrdask.open_array(str(tmp_path), path="v").dimension_names == ("y", "x")
    assert zarrdask.open_array(str(tmp_path), path="y").dimension_names == ("y",)


def test_array_without_any_names_has_none(tmp_path):
    _write(tmp_path, {".zarray": {"zarr_format": 2, "shape": [2], "dtype": "<i4", "chunks": [2], "fill_value": 0,
                                  "order": "C", "compressor": None, "filters": None},
                      ".zattrs": {"_nczarr_array": {"dimension_references": ["/a", "/b"]}}})
    assert zarrdask.open_array(str(tmp_path)).dimension_names is None  # two names for one axis: not names


def test_nczarr_names_of_a_v3_array_without_dimension_names(tmp_path):
    doc = _array_doc(shape=(2, 3))
    doc["attributes"] = {"_nczarr_array": {"dimension_references": ["/grp/t", "/grp/z"]}, "units": "s"}
    _write(tmp_path, {"zarr.json": {"zarr_format": 3, "node_type": "group", "attributes": {}}, "v/zarr.json": doc})
    assert zarrdask.open_array(str(tmp_path), path="v").dimension_names == ("t", "z")
    ds = xr.open_dataset(str(tmp_path), engine="zarrdask", consolidated=False)
    assert ds["v"].dims == ("t", "z") and ds["v"].attrs == {"units": "s"}


def test_nczarr_48_names_in_zarray_reach_the_array_and_survive_a_rewrite(tmp_path):
    """netCDF-C 4.8 keeps dimension references in ``.zarray``'s ``_NCZARR_ARRAY``: the v2
    metadata keeps the entry, ``Array.dimension_names`` reads it, and a metadata rewrite
    (resize) writes it back."""
    import json

    import zarrdask

    a = zarrdask.create_array(tmp_path / "v", shape=(2, 3), dtype="i2", zarr_format=2)
    doc = json.loads((tmp_path / "v" / ".zarray").read_text())
    doc["_NCZARR_ARRAY"] = {"dimrefs": ["/y", "/x"], "storage": "chunked"}
    (tmp_path / "v" / ".zarray").write_text(json.dumps(doc))
    a = zarrdask.open_array(tmp_path / "v", mode="r+")
    assert a.dimension_names == ("y", "x")
    a.resize((4, 3))
    assert json.loads((tmp_path / "v" / ".zarray").read_text())["_NCZARR_ARRAY"]["dimrefs"] == ["/y", "/x"]
