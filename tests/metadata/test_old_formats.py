"""Zarr v1 and the v3.0 draft: the fixtures written by zarr 1.1.0 and zarr-python 2.18
(tests/data/old_formats/make_fixtures.py) read bit-exact, write refused, migrated to v3.1
and read there by zarr-python 3 and TensorStore. And v2 arrays of structs of structs
zarr-python 2.18 wrote, read bit-exact."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import zarrdask
from zarrdask.codecs import decompress
from zarrdask.errors import CorruptChunkError, InvalidModeError, MetadataError, ReadOnlyError

DATA = Path(__file__).parents[1] / "data" / "old_formats"
V1 = json.loads((DATA / "v1" / "expected" / "manifest.json").read_text())
DRAFT = json.loads((DATA / "v3draft" / "expected" / "manifest.json").read_text())
DRAFT_STORE = DATA / "v3draft" / DRAFT["store"]
TS_CODECS = {"bytes", "transpose", "blosc", "gzip", "zstd"}
#: chunks zarr 1.1.0's c-blosc 1.10 compressed in formats numcodecs' c-blosc cannot decode: zstd 0.7
#: frames (magic 27 b5 2f fd) and snappy (numcodecs' blosc has none). They read through
#: imagecodecs' blosc_decode, an optional dependency (the ``legacy`` extra, in ``test`` too);
#: without it the error names the cause and the extra. (The small 2-d layout chunks, stored
#: uncompressed by blosc, read without it; a snappy array cannot migrate.)
#:
#: Measured 2026-12 on all 72 chunks of the four arrays (each decoded whole, compared with the
#: expected .npy bit for bit):
#:   numcodecs 0.16.6 (bundled c-blosc 1.21.7.dev: blosclz, lz4, lz4hc, zlib, zstd): zstd ones fail,
#:     "error during blosc decompression: -1"; snappy ones -5 (no snappy compiled in).
#:   python-blosc 1.11.4 (pip; the same bundled c-blosc 1.21.7.dev): the same -1 and -5.
#:   python-blosc2 4.14.1 (pip; c-blosc2 3.3.5, no snappy): the zstd ones decode exact, snappy
#:     "RuntimeError: Cannot decompress".
#:   imagecodecs 2026.3.6 (pip; c-blosc 1.21.6 with snappy and zstd's legacy decoders):
#:     blosc_decode decodes all 72 exact, in 2.7 ms for the 72 (one thread); 2024.6.1 (c-blosc
#:     1.21.5), the first release built for numpy 2, all 72 exact too; 2023.9.18 all 72 exact
#:     beside numpy 1.26, and does not import beside numpy 2 ("numpy.dtype size changed").
#:   Debian's libblosc1 1.21.3 (system libsnappy 1.1.9, libzstd 1.5.4; called through ctypes):
#:     all 72 exact.
#:   The zstd 0.7 frames alone: zstandard 0.25.0 and pyzstd 0.20.0 (libzstd 1.5.7) "Unknown frame
#:     descriptor", numcodecs' Zstd "invalid input data"; cramjam 2.14.0, imagecodecs and Debian's
#:     libzstd decode them.
#: So 4 of the arrays zarr 1.1.0 wrote were unreadable by anything in the dependency set, and
#: imagecodecs, the one Python package measured that decodes every chunk exact, is wired in as an
#: optional extra (``legacy = ["imagecodecs>=2024.6.1"]``), not a runtime dependency (80 MB
#: installed, 78 decoders, for 2016 data). Only these two formats go to it, after numcodecs refused.
LEGACY = {f"layout_blosc_{c}_{o}_3d": re.escape(why) for c, why in [
    ("zstd", "its zstd data is in zstd 0.7's pre-1.0 format (c-blosc 1.10, as zarr 1.1.0 bundled it), which "
             "numcodecs' c-blosc cannot decode"),
    ("snappy", "its blocks are snappy-compressed, which numcodecs' c-blosc was built without")] for o in "CF"}
V1_READ = V1["arrays"]
V2_STRUCTS = json.loads((DATA / "v2structs" / "expected" / "manifest.json").read_text())["arrays"]


def expected(fmt: str, entry: dict) -> np.ndarray:
    return np.load(DATA / fmt / "expected" / entry["expected"], allow_pickle=entry["expected"].endswith("utf8.npy"))


def user_attributes(entry: dict) -> dict:
    """The attributes the writer reported, without the draft's ``filters`` (its encoding)."""
    return {k: v for k, v in entry["attributes"].items() if k != "filters"}


def assert_same(got: np.ndarray, want: np.ndarray) -> None:
    """Equal bit for bit (in native byte order: zarrdask returns native arrays)."""
    assert got.shape == want.shape
    if want.dtype == object:
        assert got.dtype.kind in "OT" and got.tolist() == want.tolist()  # (zarr-python 3: StringDType)
        return
    native = want.dtype.newbyteorder("=") if want.dtype.fields is None else want.dtype
    assert got.dtype == native
    assert got.tobytes() == want.astype(native).tobytes()


@pytest.mark.parametrize("entry", V2_STRUCTS, ids=lambda e: e["path"])
def test_v2_structs_of_structs_read_bit_exact(entry):
    """zarr-python 2 stored numpy's ``descr`` as the dtype: a field's type may be a list of
    fields itself, or carry an item shape (zarr-python 3 refuses these: "No Zarr data type
    found"). Read whole and in parts, and the fill value where nothing was written."""
    want = expected("v2structs", entry)
    a = zarrdask.open_array(str(DATA / "v2structs" / entry["path"]))
    assert_same(a[...], want)
    assert_same(a[1:4], want[1:4])
    assert_same(a[3:], want[3:])


@pytest.mark.parametrize("entry", V1_READ, ids=lambda e: e["path"])
def test_v1_reads_bit_exact_with_attributes(entry):
    want = expected("v1", entry)
    a = zarrdask.open_array(DATA / "v1" / entry["path"])
    assert a.metadata.source_format == "Zarr v1"
    assert_same(a[...], want)
    assert dict(a.attrs) == user_attributes(entry)
    assert_same(zarrdask.from_zarr(str(DATA / "v1" / entry["path"])).compute(), want)
    assert_same(zarrdask.open(str(DATA / "v1" / entry["path"]))[...], want)


def test_v1_order_F_is_read_as_each_compressor_stored_it():
    """zarr 1.1.0 stored C-order bytes (``ndarray.tobytes()``) for ``order: "F"`` with every
    compressor but blosc, which stored the F-order memory: the transpose follows the bytes."""
    for entry in V1["arrays"]:
        if entry["path"].startswith("layout_"):
            a = zarrdask.open_array(DATA / "v1" / entry["path"])
            stored_f = entry["order"] == "F" and entry["compression"] == "blosc"
            assert a.metadata.order == ("F" if stored_f else "C"), entry["path"]


@pytest.mark.parametrize("path", sorted(LEGACY))
def test_v1_legacy_blosc_without_imagecodecs_names_the_extra(path, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "imagecodecs", None)  # ``import imagecodecs`` raises ImportError
    cause = r"blosc: cannot decompress \(error during blosc decompression: -[15]\): " + LEGACY[path]
    fix = r"; to read it, install imagecodecs: pip install 'zarrdask\[legacy\]'$"
    shutil.copytree(DATA / "v1" / path, tmp_path / "in" / "arr")  # (a new store: nothing cached)
    with pytest.raises(CorruptChunkError, match=r"chunk arr/0\.0\.0: .*" + cause + fix):
        zarrdask.open_array(tmp_path / "in", path="arr")[...]
    with pytest.raises(CorruptChunkError, match=r"chunk arr/1\.2\.1: .*" + cause + fix):
        zarrdask.open_array(tmp_path / "in", path="arr")[3:6, 4:5, 32:64]  # chunk (1, 2, 1) alone
    with pytest.raises(CorruptChunkError, match=cause + fix):
        zarrdask.from_zarr(str(tmp_path / "in"), component="arr").compute()


def _garbled(path: str) -> bytes:
    """Chunk 0.0.0 of a legacy array with its header and block offsets kept (and, for zstd,
    the first frame's size and 0.7 magic, so the buffer still reads as legacy) and every
    byte after them replaced."""
    data = (DATA / "v1" / path / "0.0.0").read_bytes()
    nblocks = -(-int.from_bytes(data[4:8], "little") // int.from_bytes(data[8:12], "little"))
    keep = 16 + 4 * nblocks + (8 if "zstd" in path else 0)
    return data[:keep] + bytes(np.random.default_rng(0).integers(0, 256, len(data) - keep, dtype=np.uint8))


@pytest.mark.parametrize("path", sorted(LEGACY))
def test_v1_legacy_blosc_decodes_to_the_header_size_or_is_refused(path, monkeypatch):
    """Both entry points (a chunk decoded alone, into its buffer) decode a legacy buffer
    exact; garbled blocks behind a valid header, or a decoder giving another size than the
    header claims, are a CorruptChunkError, never wrong data."""
    import imagecodecs
    data = (DATA / "v1" / path / "0.0.0").read_bytes()
    size = int.from_bytes(data[4:8], "little")
    out = bytearray(size)
    decompress.blosc_into([data], [memoryview(out)])
    assert bytes(decompress.blosc(data, size)) == bytes(decompress.blosc(data, None)) == out
    assert bytes(out) == imagecodecs.blosc_decode(data)
    refused = r"blosc: cannot decompress .*" + LEGACY[path] + "; "
    with pytest.raises(CorruptChunkError, match=refused + r"imagecodecs\.blosc_decode cannot decompress it either"):
        decompress.blosc(_garbled(path), size)
    with pytest.raises(CorruptChunkError, match="cannot decompress it either") as caught:
        decompress.blosc_into([data, _garbled(path)], [memoryview(bytearray(size)), memoryview(bytearray(size))])
    assert caught.value.item == 1
    monkeypatch.setattr(imagecodecs, "blosc_decode", lambda data: bytes(size - 8))
    with pytest.raises(CorruptChunkError, match=refused + f"imagecodecs.blosc_decode decodes it to {size - 8} "
                       f"bytes, the header claims {size}"):
        decompress.blosc(data, size)


@pytest.mark.parametrize("path", ["layout_blosc_snappy_C", "layout_blosc_snappy_F_3d"])
def test_a_v1_snappy_array_does_not_migrate_but_copies_re_encoded(path, tmp_path):
    """Migrate keeps the chunks, and a v3 blosc codec with cname snappy is one numcodecs (zarrdask's
    c-blosc and zarr-python's) can neither write nor read: the error names the copy that
    re-encodes the chunks (reading them through imagecodecs), and that copy reads bit-exact."""
    shutil.copytree(DATA / "v1" / path, tmp_path / "a")
    with pytest.raises(MetadataError, match=r"'snappy' is not compiled into this blosc; migrate keeps the chunks.*"
                       r"zarrdask\.copy\(source, new_store, compressors='zstd', zarr_format=3\).*"
                       r"imagecodecs \(pip install 'zarrdask\[legacy\]'\)$"):
        zarrdask.migrate(tmp_path / "a")
    assert (tmp_path / "a" / "meta").exists() and not (tmp_path / "a" / "zarr.json").exists()
    zarrdask.copy(tmp_path / "a", tmp_path / "b", compressors="zstd", zarr_format=3)
    want = expected("v1", next(e for e in V1["arrays"] if e["path"] == path))
    assert_same(zarrdask.open_array(tmp_path / "b")[...], want)
    _read_with_peers(tmp_path, "b", want)


@pytest.mark.parametrize("entry", DRAFT["arrays"], ids=lambda e: e["path"])
def test_draft_reads_bit_exact_by_hierarchy_path(entry):
    want = expected("v3draft", entry)
    a = zarrdask.open_array(DRAFT_STORE, path=entry["path"])
    assert a.path == entry["path"]
    assert_same(a[...], want)
    assert dict(a.attrs) == user_attributes(entry)
    assert_same(zarrdask.from_zarr(str(DRAFT_STORE), component=entry["path"]).compute(), want)


def test_draft_hierarchy_explicit_and_implicit_groups():
    g = zarrdask.open_group(DRAFT_STORE, mode="r")
    assert dict(g.attrs) == DRAFT["groups"][""]
    assert set(g.group_keys()) == {"compressors", "deep", "dtypes", "fill", "filters", "implicit", "layout"}
    assert dict(g["deep"].attrs) == DRAFT["groups"]["deep"]
    assert dict(g["implicit"].attrs) == {}  # no document: an implicit group
    assert g["deep"]["er"].array_keys() == ("nested",)
    assert zarrdask.open(DRAFT_STORE, path="deep/er").array_keys() == ("nested",)


def test_xarray_engine_reads_the_draft_with_gdal_style_dimensions():
    xr = pytest.importorskip("xarray")
    entry = next(e for e in DRAFT["arrays"] if e["path"] == "deep/er/nested")
    ds = xr.open_dataset(DRAFT_STORE, engine="zarrdask", group="deep/er", chunks={})
    assert ds["nested"].dims == ("y", "x")
    assert ds["nested"].attrs == {"units": "K"}
    assert_same(ds["nested"].values, expected("v3draft", entry))


def test_writes_are_refused_with_the_way_out(tmp_path):
    shutil.copytree(DATA / "v1" / "attributes", tmp_path / "v1")
    a = zarrdask.open_array(tmp_path / "v1", mode="r+")
    with pytest.raises(ReadOnlyError):
        a[0, 0] = 1
    with pytest.raises(ReadOnlyError, match="Zarr v1 is read-only.*migrate"):
        a.metadata.to_documents()
    g = zarrdask.open_group(DRAFT_STORE)  # mode "a", as zarr-python's default
    with pytest.raises(ReadOnlyError):
        g["fill/nan_partial"][0, 0] = 1.0


def test_unreadable_formats_are_named(tmp_path):
    (tmp_path / "future").mkdir()
    (tmp_path / "future" / "zarr.json").write_text(json.dumps({"zarr_format": 4, "node_type": "array"}))
    with pytest.raises(MetadataError, match="zarr_format 4, a format zarrdask cannot read"):
        zarrdask.open(tmp_path / "future")
    shutil.copytree(DATA / "v1" / "compression_zlib", tmp_path / "v1")
    meta = json.loads((tmp_path / "v1" / "meta").read_text())
    (tmp_path / "v1" / "meta").write_text(json.dumps(dict(meta, compression="snappy")))
    with pytest.raises(MetadataError, match="meta: .*unknown v1 compression 'snappy'"):
        zarrdask.open_array(tmp_path / "v1")
    with pytest.raises(InvalidModeError, match="Zarr v3.0 draft.*needs a copy.*target"):
        zarrdask.migrate(DRAFT_STORE)


def _read_with_peers(path: Path, component: str, want: np.ndarray) -> None:
    """zarr-python 3 and (for the codecs and types it has) TensorStore read it bit-exact."""
    zarr = pytest.importorskip("zarr")
    ts = pytest.importorskip("tensorstore")
    doc = json.loads((path / component / "zarr.json").read_text())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_same(zarr.open_array(str(path), path=component, mode="r")[...], want)
    if {c["name"] for c in doc["codecs"]} <= TS_CODECS and want.dtype.kind in "biufc" and want.dtype.fields is None:
        spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(path / component)}}
        assert_same(ts.open(spec).result().read().result(), want)


@pytest.mark.parametrize("entry", [e for e in V1_READ if e["path"] != "dtype_record" and "snappy" not in e["path"]
                                   and e["path"] not in LEGACY], ids=lambda e: e["path"])
def test_v1_migrates_in_place(tmp_path, entry):
    shutil.copytree(DATA / "v1" / entry["path"], tmp_path / "a")
    (node,) = zarrdask.migrate(tmp_path / "a", dry_run=True)
    assert node.removed == ("meta", "attrs") and (tmp_path / "a" / "meta").exists()
    zarrdask.migrate(tmp_path / "a")
    assert not (tmp_path / "a" / "meta").exists()
    assert json.loads((tmp_path / "a" / "zarr.json").read_text())["chunk_key_encoding"]["name"] == "v2"
    want = expected("v1", entry)
    a = zarrdask.open_array(tmp_path / "a")
    assert a.zarr_format == 3 and dict(a.attrs) == user_attributes(entry)
    assert_same(a[...], want)
    _read_with_peers(tmp_path, "a", want)


def test_structured_types_migrate_to_the_struct_data_type(tmp_path):
    """A record array becomes the registry's ``struct`` type (packed fields, one ``bytes``
    endian), its chunks kept: zarrdask reads it bit-exact; zarr-python 3.1 names only its own
    ``structured`` type and TensorStore has none, so they refuse it by name (never a value)."""
    entry = next(e for e in V1["arrays"] if e["path"] == "dtype_record")
    shutil.copytree(DATA / "v1" / "dtype_record", tmp_path / "a")
    zarrdask.migrate(tmp_path / "a")
    assert json.loads((tmp_path / "a" / "zarr.json").read_text())["data_type"]["name"] == "struct"
    want = expected("v1", entry)
    assert_same(zarrdask.open_array(tmp_path / "a")[...], want)
    zarr = pytest.importorskip("zarr")
    try:
        got = zarr.open_array(str(tmp_path), path="a", mode="r")[...]
    except Exception as exc:  # (its own error types)
        assert "struct" in str(exc), exc
    else:
        assert got.tobytes() == want.tobytes()


def test_fields_in_both_byte_orders_are_refused_by_migrate(tmp_path):
    """A v3 ``bytes`` codec stores every field in one byte order."""
    doc = {"zarr_format": 2, "shape": [3], "chunks": [3], "dtype": [["a", "<i4"], ["b", ">f8"]],
           "compressor": None, "fill_value": None, "order": "C", "filters": None}
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / ".zarray").write_text(json.dumps(doc))
    with pytest.raises(MetadataError, match="both byte orders"):
        zarrdask.migrate(tmp_path / "a")
    assert (tmp_path / "a" / ".zarray").exists() and not (tmp_path / "a" / "zarr.json").exists()


@pytest.mark.parametrize("group", ["compressors", "layout", "fill", "filters", "deep", "implicit"])
def test_draft_migrates_by_copy(tmp_path, group):
    nodes = zarrdask.migrate(DRAFT_STORE, path=group, target=tmp_path / "new", dry_run=True)
    assert not (tmp_path / "new").exists() or not any((tmp_path / "new").iterdir())
    assert nodes[0].path == "" and nodes[0].document["node_type"] == "group"
    zarrdask.migrate(DRAFT_STORE, path=group, target=tmp_path / "new")
    g = zarrdask.open_group(tmp_path / "new", mode="r")
    assert g.zarr_format == 3
    for entry in DRAFT["arrays"]:
        if entry["path"].startswith(group + "/"):
            rel = entry["path"][len(group) + 1:]
            want = expected("v3draft", entry)
            a = zarrdask.open_array(tmp_path / "new", path=rel)
            assert_same(a[...], want)
            assert dict(a.attrs) == user_attributes(entry) or a.dimension_names is not None
            _read_with_peers(tmp_path / "new", rel, want)


def test_cli_migrate_dry_run_prints_the_documents(tmp_path, capsys):
    from zarrdask.cli import main

    shutil.copytree(DATA / "v1" / "order_F_int32", tmp_path / "a")
    assert main(["migrate", str(tmp_path / "a"), "--dry-run"]) == 0
    out = json.loads(capsys.readouterr().out)
    (node,) = out["nodes"]
    assert node["document"]["codecs"][0]["name"] == "transpose" and node["removed"] == ["meta", "attrs"]
    assert main(["migrate", str(DRAFT_STORE), "--path", "implicit", "--target", str(tmp_path / "b")]) == 0
    assert zarrdask.open_array(tmp_path / "b", path="child")[...].tolist() == [0, 3, 6, 9, 12, 15]


_AFTER_NETCDF = """
import sys, json, tempfile
from pathlib import Path
import numpy as np
import netCDF4
import zarrdask
with netCDF4.Dataset("file://" + tempfile.mkdtemp() + "/n.zarr#mode=nczarr,file", "w") as ds:
    ds.createDimension("x", 600)
    v = ds.createVariable("v", "f4", ("x",), chunksizes=(300,), compression="zlib")  # (loads every filter plugin)
    v[...] = np.arange(600) % 13
path, expected = sys.argv[1:]
got = zarrdask.open_array(path)[...]
assert np.array_equal(got, np.load(expected), equal_nan=True), "values differ"
print("exact")
"""


@pytest.mark.parametrize("entry", [e for e in V1_READ if "blosc_snappy" in e["path"] and "3d" in e["path"]],
                         ids=lambda e: e["path"])
def test_legacy_blosc_reads_after_netcdf_c_loaded_its_filters(entry):
    """netCDF-C's filter plugins (the netCDF4 wheel) load a c-blosc built without snappy
    into the process's global scope, on the first use of any filter; imagecodecs, loaded
    after it, still decodes snappy chunks with its own c-blosc (a fresh process: the order
    of loading is the point)."""
    pytest.importorskip("netCDF4", reason="netCDF4 (the test extra) loads netCDF-C's filter plugins")
    pytest.importorskip("imagecodecs", reason="imagecodecs (the legacy extra) decodes snappy blosc")
    result = subprocess.run([sys.executable, "-c", _AFTER_NETCDF, str(DATA / "v1" / entry["path"]),
                             str(DATA / "v1" / "expected" / entry["expected"])],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and result.stdout.strip() == "exact", result.stderr[-2000:]
