"""``migrate``: every v2 case of the corpus becomes v3 in place, chunks untouched, and reads
bit-exact with zarrdask, zarr-python and TensorStore; the cases xarray opens open
identically with ``engine="zarrdask"`` and ``engine="zarr"`` before and after."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest
import tensorstore as ts
import xarray as xr
import zarr

import zarrdask
from zarrdask.errors import InvalidModeError, MetadataError

from _cli import CliProcess
from _util import assert_same, corpus_dir, load_manifest

MANIFEST = load_manifest()
cli = CliProcess()
V2_CASES = [c for c in (MANIFEST["cases"] if MANIFEST else []) if c["zarr_format"] == 2]


def _arrays(case: dict) -> dict[str, dict]:
    expect = case["expect"]
    return {"": expect} if "npy" in expect else expect["arrays"]


def _migrated(case: dict, tmp_path: Path) -> Path:
    path = tmp_path / "data.zarr"
    shutil.copytree(corpus_dir() / case["path"], path)
    zarrdask.migrate(path)
    return path


def _chunk_files(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*"))
            if p.is_file() and not p.name.startswith((".z", "zarr.json"))}


def _tensorstore_lacks(doc: dict) -> bool:
    """Codecs and data types of the migrated chain outside what TensorStore implements."""
    names = [c["name"] for c in doc["codecs"]]
    dtype = doc["data_type"] if isinstance(doc["data_type"], str) else doc["data_type"]["name"]
    return any(n.startswith("numcodecs.") for n in names) or dtype in (
        "string", "variable_length_bytes", "fixed_length_utf32", "null_terminated_bytes", "numpy.datetime64",
        "numpy.timedelta64")


def test_there_are_v2_cases() -> None:
    assert len(V2_CASES) == 43


@pytest.mark.parametrize("case", V2_CASES, ids=[c["id"] for c in V2_CASES])
def test_migrate_corpus_case(case: dict, tmp_path: Path) -> None:
    before = _chunk_files(corpus_dir() / case["path"])
    path = _migrated(case, tmp_path)
    assert _chunk_files(path) == before  # no chunk read or rewritten
    assert not list(path.rglob(".z*")) and zarrdask.verify(path).ok
    for rel, expect in _arrays(case).items():
        expected = np.load(corpus_dir() / expect["npy"], allow_pickle=True)
        array = zarrdask.open_array(path, path=rel or None)
        assert array.zarr_format == 3
        assert array.dimension_names == (tuple(expect["dimension_names"]) if expect["dimension_names"] else None)
        assert "_ARRAY_DIMENSIONS" not in array.attrs
        assert_same(array[...], expected, f"zarrdask {rel}")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # zarr-python warns about numcodecs.* codecs
            assert_same(zarr.open_array(path / rel, mode="r")[...], expected, f"zarr-python {rel}")
        doc = json.loads((path / rel / "zarr.json").read_text())
        if _tensorstore_lacks(doc):  # TensorStore refuses to open (it never returns other data)
            with pytest.raises(ValueError, match="is not registered|data_type"):
                ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": str(path / rel)}}).result()
        elif "tensorstore" in expect["verified_readers"]:
            store = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": str(path / rel)}}).result()
            assert_same(store.read().result(), expected, f"tensorstore {rel}")


def _xarray_cases() -> list[dict]:
    """The v2 cases xarray opens as a dataset (its engine is the judge)."""
    out = []
    for case in V2_CASES:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # (no consolidated metadata)
                xr.open_dataset(corpus_dir() / case["path"], engine="zarr").close()
        except Exception:
            continue
        out.append(case)
    return out


XARRAY_CASES = _xarray_cases()


def test_xarray_cases_found() -> None:
    assert {c["id"] for c in XARRAY_CASES} == {"xarray-climate-v2", "v2-netcdf-c-zp-float32", "v2-group-hierarchy-zp",
                                               "v2-group-consolidated-zp"}


@pytest.mark.parametrize("case", XARRAY_CASES, ids=[c["id"] for c in XARRAY_CASES])
def test_migrate_xarray_identical(case: dict, tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (no consolidated metadata)
        original = xr.open_dataset(corpus_dir() / case["path"], engine="zarr").load()
        path = _migrated(case, tmp_path)
        for engine in ("zarrdask", "zarr"):
            with xr.open_dataset(path, engine=engine) as ds:
                xr.testing.assert_identical(ds.load(), original)


def test_cli_dry_run_then_migrate(tmp_path: Path) -> None:
    case = next(c for c in V2_CASES if c["id"] == "xarray-climate-v2")
    path = tmp_path / "data.zarr"
    shutil.copytree(corpus_dir() / case["path"], path)
    run = ["migrate", str(path), "--to", "3"]
    dry = cli(*run, "--dry-run")  # (the command line in a process of its own: tests/_cli.py)
    assert dry.returncode == 0, dry.stderr
    doc = json.loads(dry.stdout)
    keys = [n["key"] for n in doc["nodes"]]
    assert keys == ["zarr.json", "lat/zarr.json", "lon/zarr.json", "temperature/zarr.json", "time/zarr.json"]
    root = doc["nodes"][0]["document"]
    assert root["consolidated_metadata"]["metadata"]["temperature"]["dimension_names"] == ["time", "lat", "lon"]
    temperature = doc["nodes"][3]["document"]
    assert temperature["chunk_key_encoding"] == {"name": "v2", "configuration": {"separator": "."}}
    assert temperature["attributes"]["_FillValue"] == -32768
    assert not (path / "zarr.json").exists() and (path / ".zmetadata").exists()  # nothing written
    done = cli(*run)
    assert done.returncode == 0 and "migrated 5 node(s)" in done.stdout
    assert zarrdask.open_group(path).consolidated and not (path / ".zmetadata").exists()
    again = cli(*run)
    assert again.returncode == 2 and "already Zarr v3" in again.stderr


def test_null_fill_values_become_defaults(tmp_path: Path) -> None:
    zarrdask.create_array(tmp_path / "a.zarr", shape=(3,), dtype="<i4", chunks=(2,), zarr_format=2)
    zarrdask.create_array(tmp_path / "s.zarr", shape=(3,), dtype=str, chunks=(2,), zarr_format=2)
    zarrdask.migrate(tmp_path / "a.zarr")
    zarrdask.migrate(tmp_path / "s.zarr")
    assert json.loads((tmp_path / "a.zarr" / "zarr.json").read_text())["fill_value"] == 0
    assert json.loads((tmp_path / "s.zarr" / "zarr.json").read_text())["fill_value"] == ""
    assert list(zarrdask.open_array(tmp_path / "s.zarr")[...]) == ["", "", ""]


def test_unconvertible_leaves_the_store_alone(tmp_path: Path) -> None:
    root = zarrdask.create_group(tmp_path / "g.zarr", zarr_format=2)
    root.create_array("ok", shape=(2,), dtype="i2", chunks=(2,))
    root.create_array("rec", shape=(2,), dtype=[("a", "<i4"), ("b", "<f4")], chunks=(2,))
    (tmp_path / "g.zarr" / "rec" / ".zarray").write_text((tmp_path / "g.zarr" / "rec" / ".zarray").read_text()
                                                        .replace('"<f4"', '">f4"'))  # fields in both byte orders
    with pytest.raises(MetadataError, match=r"rec/\.zarray.*both byte orders"):
        zarrdask.migrate(tmp_path / "g.zarr")
    assert not list((tmp_path / "g.zarr").rglob("zarr.json"))
    with pytest.raises(InvalidModeError):
        zarrdask.migrate(tmp_path / "g.zarr", to=2)
