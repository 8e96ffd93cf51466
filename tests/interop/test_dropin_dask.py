"""zarrdask.from_zarr / zarrdask.to_zarr as drop-ins for dask.array's: the same script runs
with either import, and the values and the stores written are the same (or zarrdask
refuses, naming the keyword). dask runs over zarr-python 3 here."""

from __future__ import annotations

import itertools
import json
import pathlib
import textwrap
import warnings

import dask
import dask.array as da
import numpy as np
import pytest
import zarr
import zarr.storage
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _util import run_with_query_planning

import zarrdask
from zarrdask.errors import ContainsNodeError, InvalidModeError, UnexpectedKeywordError, ZarrdaskError

LIBS = {"dask": da, "zarrdask": zarrdask}
METADATA = ("zarr.json", ".zarray", ".zattrs", ".zgroup")
_counter = itertools.count()


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr-python's v2 and dask's rechunk notes
        with dask.config.set(scheduler="threads"):
            yield


def _fresh(root: pathlib.Path, name: str) -> pathlib.Path:
    return root / f"{name}-{next(_counter)}.zarr"


def contents(root: pathlib.Path) -> dict[str, object]:
    """What matters in a store: every metadata document (parsed) and the chunk keys."""
    found: dict[str, object] = {}
    for p in sorted(root.rglob("*")):
        if not p.is_file():
            continue
        rel = p.relative_to(root).as_posix()
        if rel.rsplit("/", 1)[-1] in METADATA:
            doc = json.loads(p.read_text())
            if rel.endswith(".zattrs") and doc == {}:
                continue  # zarr-python writes the empty attributes that a missing .zattrs means
            if doc.get("storage_transformers") == []:
                del doc["storage_transformers"]  # zarr-python writes the empty default
            found[rel] = doc
        else:
            found[rel] = "chunk"
    return found


def _data(shape, dtype="i4"):
    return (np.arange(int(np.prod(shape)), dtype="i8") % 97 - 13).astype(dtype).reshape(shape)


def _source(tmp_path, shape=(6, 8), chunks=(3, 4), component=None, zarr_format=3):
    """An array written by zarr-python, returned with its data."""
    where = _fresh(tmp_path, "src")
    data = _data(shape)
    if component:
        group = zarr.open_group(where, mode="w", zarr_format=zarr_format)
        group.create_array(component, shape=shape, chunks=chunks, dtype=data.dtype)[...] = data
    else:
        zarr.create_array(where, shape=shape, chunks=chunks, dtype=data.dtype, zarr_format=zarr_format)[...] = data
    return where, data


# -- from_zarr: sources --------------------------------------------------------------------

SOURCES = {
    "str": lambda p, c: (str(p), {}),
    "pathlib": lambda p, c: (p, {}),
    "file-url": lambda p, c: (p.as_uri(), {}),
    "zarr-array": lambda p, c: (zarr.open_array(p, path=c or "", mode="r"), {"in_array": True}),
    "zarr-store": lambda p, c: (zarr.storage.LocalStore(p, read_only=True), {}),
    "zarr-group": lambda p, c: (zarr.open_group(p, mode="r"), {}),
}


@pytest.mark.parametrize("kind, component", [
    (kind, component) for kind in SOURCES for component in (None, "g/a") if kind != "zarr-group" or component
])
def test_from_zarr_sources(tmp_path, kind, component):
    where, data = _source(tmp_path, component=component)
    url, how = SOURCES[kind](where, component)
    if how.get("in_array"):
        component = None  # the opened array is the node itself
    results = {}
    for lib_name, lib in LIBS.items():
        try:
            results[lib_name] = lib.from_zarr(url, component).compute()
        except Exception as exc:  # noqa: BLE001 - what each library does with the source
            results[lib_name] = exc
    zd = results["zarrdask"]
    if isinstance(results["dask"], np.ndarray):
        np.testing.assert_array_equal(zd, results["dask"])
    else:  # dask cannot read it (a zarr-python group as url): zarrdask reads it all the same
        assert kind == "zarr-group"
        np.testing.assert_array_equal(zd, data)
    np.testing.assert_array_equal(zd, data)


def test_from_zarr_zarrdask_array_and_store(tmp_path):
    where, data = _source(tmp_path, component="g/a")
    array = zarrdask.open_array(where, path="g/a")
    np.testing.assert_array_equal(zarrdask.from_zarr(array).compute(), data)
    np.testing.assert_array_equal(zarrdask.from_zarr(zarrdask.open_store(where), "g/a").compute(), data)
    np.testing.assert_array_equal(zarrdask.from_zarr(zarrdask.open_group(where), "g/a").compute(), data)
    with pytest.raises(InvalidModeError, match="component='x'"):
        zarrdask.from_zarr(array, component="x")
    with pytest.raises(InvalidModeError, match="storage_options"):
        zarrdask.from_zarr(zarr.open_array(where, path="g/a"), storage_options={"auto_mkdir": True})


def test_group_where_an_array_is_expected(tmp_path):
    where, _ = _source(tmp_path, component="g/a")
    zarr.open_group(where, mode="a").create_array("b", shape=(2,), dtype="i4")
    for url in (str(where), zarr.open_group(where, mode="r")):
        with pytest.raises(zarrdask.errors.ArrayNotFoundError) as info:
            zarrdask.from_zarr(url)
        assert "'b'" in str(info.value) and "'g/a'" in str(info.value) and "component=" in str(info.value)
    with pytest.raises(zarrdask.errors.ArrayNotFoundError, match="'g/a'"):
        zarrdask.from_zarr(where, component="g")


# -- from_zarr: keywords -------------------------------------------------------------------

@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    shape=st.tuples(st.integers(1, 9), st.integers(1, 9)),
    stored=st.tuples(st.integers(1, 4), st.integers(1, 4)),
    read=st.one_of(st.none(), st.integers(1, 5), st.tuples(st.integers(1, 5), st.integers(1, 5))),
    inline=st.booleans(),
    zarr_format=st.sampled_from([2, 3]),
)
def test_from_zarr_keywords(tmp_path, shape, stored, read, inline, zarr_format):
    where, data = _source(tmp_path, shape=shape, chunks=stored, zarr_format=zarr_format)
    kwargs = dict(storage_options={}, chunks=read, name=f"drop-in-{next(_counter)}", inline_array=inline,
                  zarr_format=zarr_format)
    out = {name: lib.from_zarr(where.as_uri(), **kwargs) for name, lib in LIBS.items()}
    for x in out.values():
        np.testing.assert_array_equal(x.compute(), data)
        assert x.name == kwargs["name"]
        keys = {k if isinstance(k, str) else k[0] for k in dict(x.__dask_graph__())}
        assert any(str(k).startswith("original-") for k in keys) is not inline  # inline_array has its effect
    if read is not None:  # the blocks asked for (None: zarr's chunks for dask, shards/chunks for zarrdask)
        assert out["zarrdask"].chunks == out["dask"].chunks


def test_from_zarr_read_kwargs(tmp_path):
    where, data = _source(tmp_path)
    x = zarrdask.from_zarr(where, zarr_read_kwargs={"missing_chunks": "raise", "dtype": "i4"}, mode="r+")
    np.testing.assert_array_equal(x.compute(), data)
    with pytest.raises(ZarrdaskError, match="dtype"):
        zarrdask.from_zarr(where, dtype="f8")
    with pytest.raises(ZarrdaskError, match="zarr_format"):
        zarrdask.from_zarr(zarrdask.open_array(where), zarr_format=2)
    with pytest.raises(InvalidModeError, match="mode='w'"):
        zarrdask.from_zarr(where, mode="w")
    with pytest.raises(InvalidModeError, match="missing_chunks"):
        zarrdask.from_zarr(where, missing_chunks="fill", zarr_read_kwargs={"missing_chunks": "raise"})


@pytest.mark.parametrize("function", ["from_zarr", "to_zarr"])
@pytest.mark.parametrize("keyword, fragment", [
    ("chunk", "did you mean 'chunks'"), ("compresor", ""), ("compressor", "compressors=[codec]"),
    ("zarr_version", "zarr_format="), ("storage_option", "did you mean 'storage_options'"),
])
def test_unknown_keywords_are_named(tmp_path, function, keyword, fragment):
    where, data = _source(tmp_path)
    target = _fresh(tmp_path, "t")
    call = (lambda **kw: zarrdask.from_zarr(where, **kw)) if function == "from_zarr" else (
        lambda **kw: zarrdask.to_zarr(da.from_array(data), target, **kw))
    for how in ({keyword: 1}, {"zarr_read_kwargs" if function == "from_zarr" else "zarr_array_kwargs": {keyword: 1}}):
        with pytest.raises(UnexpectedKeywordError) as info:
            call(**how)
        message = str(info.value)
        assert f"zarrdask.{function}()" in message and repr(keyword) in message and fragment in message
    assert not target.exists()


# -- to_zarr --------------------------------------------------------------------------------

def _write(lib, x, url, **kwargs):
    """``lib.to_zarr`` and what it returned, computed when lazy."""
    result = lib.to_zarr(x, url, **kwargs)
    if kwargs.get("return_stored"):
        return np.asarray(result.compute())
    if kwargs.get("compute") is False:
        dask.compute(result)
    return None


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    shape=st.tuples(st.integers(1, 9), st.integers(1, 9)),
    blocks=st.tuples(st.integers(1, 4), st.integers(1, 4)),
    component=st.sampled_from([None, "a", "g/b"]),
    compute=st.booleans(),
    return_stored=st.booleans(),
    zarr_format=st.sampled_from([None, 2, 3]),
    extra=st.sampled_from([
        {}, {"fill_value": 7}, {"attributes": {"units": "m"}}, {"compressors": None},
        {"chunks": (2, 3)}, {"dimension_names": ["y", "x"]}, {"dtype": "f8"},
    ]),
    how=st.sampled_from(["str", "pathlib", "zarr-store", "storage_options"]),  # (dask's file:// needs auto_mkdir)
)
def test_to_zarr_same_store(tmp_path, shape, blocks, component, compute, return_stored, zarr_format, extra, how):
    if zarr_format == 2 and "dimension_names" in extra:
        extra = {}  # zarr-python refuses dimension names for v2
    data = _data(shape)
    x = da.from_array(data, chunks=blocks)
    stores, returned = {}, {}
    for name, lib in LIBS.items():
        where = _fresh(tmp_path, name)
        url, kwargs = {
            "str": (str(where), {}), "pathlib": (where, {}),
            "zarr-store": (zarr.storage.LocalStore(where), {}),
            "storage_options": (where.as_uri(), {"storage_options": {"auto_mkdir": True}}),
        }[how]
        if zarr_format is not None:
            kwargs["zarr_format"] = zarr_format
        source = x
        if lib is da and "chunks" in extra:
            # dask's tasks would share zarr chunks and lose writes (it does not lock); zarrdask keeps x's blocks
            source = x.rechunk(extra["chunks"])
        returned[name] = _write(lib, source, url, component=component, compute=compute, return_stored=return_stored,
                                **kwargs, **extra)
        stores[name] = where
    assert contents(stores["zarrdask"]) == contents(stores["dask"])
    expected = data.astype(extra.get("dtype", data.dtype))
    for where in stores.values():
        np.testing.assert_array_equal(zarr.open_array(where, path=component or "")[...], expected)
    if return_stored:
        np.testing.assert_array_equal(returned["zarrdask"], returned["dask"])
        np.testing.assert_array_equal(returned["zarrdask"], expected)


@pytest.mark.parametrize("overwrite", [None, True, False])
@pytest.mark.parametrize("mode", [None, "w", "w-"])
def test_to_zarr_existing_target(tmp_path, overwrite, mode):
    x = da.from_array(_data((4, 6)), chunks=(2, 3))
    outcome = {}
    for name, lib in LIBS.items():
        where = _fresh(tmp_path, name)
        lib.to_zarr(x, where)
        kwargs = {k: v for k, v in dict(overwrite=overwrite, mode=mode).items() if v is not None}
        try:
            lib.to_zarr(x + 1, where, **kwargs)
            outcome[name] = ("replaced", contents(where), zarr.open_array(where)[...].tolist())
        except Exception as exc:  # noqa: BLE001 - compared below
            outcome[name] = ("refused", contents(where), zarr.open_array(where)[...].tolist(), exc)
    if outcome["zarrdask"][0] == "refused" and outcome["dask"][0] == "replaced":
        # only a contradiction is refused where dask picks one: mode="w-" with overwrite=True (dask
        # replaces), mode="w" with overwrite=False (dask replaces)
        assert (mode, overwrite) in (("w-", True), ("w", False))
        error = outcome["zarrdask"][3]
        assert isinstance(error, InvalidModeError) and f"overwrite={overwrite} contradicts" in str(error)
        return
    if outcome["zarrdask"][0] == "replaced" and outcome["dask"][0] == "refused":
        assert False, outcome
    assert outcome["zarrdask"][:3] == outcome["dask"][:3]
    if outcome["zarrdask"][0] == "refused":
        error = outcome["zarrdask"][3]
        assert isinstance(error, (ContainsNodeError, InvalidModeError)) and isinstance(error, ZarrdaskError)
        message = str(error)
        assert "zarrdask.to_zarr" in message and ("overwrite=True" in message or "mode='w'" in message)
        assert "WriteBehind" not in message and "LocalStore" not in message


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    start=st.tuples(st.integers(0, 5), st.integers(0, 7)),
    size=st.tuples(st.integers(1, 4), st.integers(1, 4)),
    compute=st.booleans(),
    return_stored=st.booleans(),
    zarrdask_target=st.booleans(),
)
def test_to_zarr_region_into_an_array(tmp_path, start, size, compute, return_stored, zarrdask_target):
    shape = (6, 8)
    stop = tuple(min(s + n, m) for s, n, m in zip(start, size, shape))
    region = tuple(slice(a, b) for a, b in zip(start, stop))
    part = _data(tuple(b - a for a, b in zip(start, stop))) * 10
    stores, returned = {}, {}
    for name, lib in LIBS.items():
        where, _ = _source(tmp_path, shape=shape, chunks=(3, 4))
        target = zarr.open_array(where, mode="r+")
        if name == "zarrdask" and zarrdask_target:
            target = zarrdask.open_array(where, mode="r+")
        returned[name] = _write(lib, da.from_array(part, chunks=2), target, region=region, compute=compute,
                                return_stored=return_stored)
        stores[name] = where
    assert contents(stores["zarrdask"]) == contents(stores["dask"])
    np.testing.assert_array_equal(zarr.open_array(stores["zarrdask"])[...], zarr.open_array(stores["dask"])[...])
    if return_stored:  # dask gives the whole target back, as zarrdask does
        np.testing.assert_array_equal(returned["zarrdask"], returned["dask"])


def test_to_zarr_memory_store_and_groups(tmp_path):
    x = da.from_array(_data((5, 5)), chunks=(2, 5))
    store = zarr.storage.MemoryStore()
    zarrdask.to_zarr(x, store, "g/v", chunks=(2, 5), attributes={"a": 1})
    np.testing.assert_array_equal(zarr.open_array(store, path="g/v")[...], x.compute())
    group = zarr.open_group(store, mode="a")
    zarrdask.to_zarr(x * 2, group, component="w")
    np.testing.assert_array_equal(zarr.open_array(store, path="w")[...], x.compute() * 2)
    np.testing.assert_array_equal(zarrdask.from_zarr(group, "g/v").compute(), x.compute())


def test_to_zarr_onto_a_group_names_its_arrays(tmp_path):
    where, data = _source(tmp_path, component="g/a")
    for url in (where, zarr.open_group(where, mode="r+")):
        with pytest.raises(ContainsNodeError) as info:
            zarrdask.to_zarr(da.from_array(data), url)
        assert "'g/a'" in str(info.value) and "component=" in str(info.value)
        with pytest.raises(zarrdask.errors.ArrayNotFoundError, match="'g/a'"):
            zarrdask.to_zarr(da.from_array(data), url, mode="r+")
    np.testing.assert_array_equal(zarr.open_array(where, path="g/a")[...], data)


def test_to_zarr_refusals_delete_nothing(tmp_path):
    x = da.from_array(_data((4, 4)), chunks=2)
    where = _fresh(tmp_path, "keep")
    zarrdask.to_zarr(x, where)
    before = contents(where)
    cases = [
        (dict(mode="w", chunkz=2), UnexpectedKeywordError, "'chunkz'"),
        (dict(mode="w", zarr_array_kwargs={"shard": (4, 4)}), UnexpectedKeywordError, "'shards'"),
        (dict(overwrite=True, config={"order": "F"}), UnexpectedKeywordError, "config['order']"),
        (dict(mode="w", overwrite=False), InvalidModeError, "contradicts"),
        (dict(mode="w", component="a", name="b"), InvalidModeError, "component="),
        (dict(mode="w", shape=(3, 3)), ZarrdaskError, "shape="),
        (dict(mode="w", chunks=(2, 2), zarr_array_kwargs={"chunks": (4, 4)}), InvalidModeError, "chunks="),
        (dict(mode="r+", shards=(4, 4)), InvalidModeError, "shards="),
        (dict(mode="a", fill_value=3), InvalidModeError, "fill_value="),
        (dict(mode="w", zarr_read_kwargs={"threads": 1}), InvalidModeError, "zarr_read_kwargs"),
        (dict(overwrite=True, region=(slice(0, 4), slice(0, 4))), InvalidModeError, "region="),
        (dict(mode="w", progress=True, compute=False), InvalidModeError, "progress=True"),
        (dict(mode="r"), InvalidModeError, "mode='r'"),
    ]
    for kwargs, error, fragment in cases:
        with pytest.raises(error) as info:
            zarrdask.to_zarr(x + 1, where, **kwargs)
        assert fragment.replace("mode='r'", "'r'") in str(info.value), (kwargs, str(info.value))
        assert contents(where) == before
        np.testing.assert_array_equal(zarr.open_array(where)[...], x.compute())


def test_to_zarr_zarrdask_keywords_still_work(tmp_path, capsys):
    x = da.from_array(_data((4, 6)), chunks=(2, 3))
    where = _fresh(tmp_path, "own")
    array = zarrdask.to_zarr(x, where, path="v", shards=(4, 6), chunks=(2, 3), progress=True,
                             zarr_array_kwargs={"threads": 2}, write_empty_chunks=True)
    assert array.shards == (4, 6) and array.options.threads == 2
    assert capsys.readouterr().out == ""  # progress goes to a bar where one can be drawn, not into captured output
    zarrdask.to_zarr(x, where, path="v", mode="a", zarr_read_kwargs={"missing_chunks": "raise"})
    np.testing.assert_array_equal(zarrdask.open_array(where, path="v")[...], np.concatenate([x, x]))
    # config={"write_empty_chunks": ...} is zarr-python's spelling of write_empty_chunks=
    empty = _fresh(tmp_path, "empty")
    zarrdask.to_zarr(da.zeros((4, 4), chunks=2), empty, config={"write_empty_chunks": True})
    zarr_keys = [k for k in contents(empty) if k != "zarr.json"]
    assert len(zarr_keys) == 4


def test_to_zarr_file_url_and_numpy(tmp_path):
    data = _data((5, 7))
    where = _fresh(tmp_path, "url")
    zarrdask.to_zarr(data, where.as_uri(), "v", chunks=(2, 7))  # numpy in, file:// without storage_options
    np.testing.assert_array_equal(zarr.open_array(where, path="v")[...], data)
    np.testing.assert_array_equal(zarrdask.from_zarr(where.as_uri(), "v").compute(), data)


def test_query_planning_on(tmp_path):
    """With dask's array expressions: the read keywords and return_stored (computed) work;
    return_stored with compute=False is refused by name."""
    script = textwrap.dedent(f"""
        import dask.array as da, numpy as np, zarrdask
        from zarrdask.errors import InvalidModeError
        assert da.array_expr_enabled()
        x = da.arange(12, chunks=5)
        where = {str(tmp_path / "q.zarr")!r}
        back = zarrdask.to_zarr(x * 2, where, return_stored=True, chunks=(4,))
        assert np.array_equal(back.compute(), np.arange(12) * 2)
        for inline in (True, False):
            y = zarrdask.from_zarr(where, None, None, (6,), None, inline)
            keys = {{k if isinstance(k, str) else k[0] for k in dict(y.__dask_graph__())}}
            assert any(k.startswith("original-") for k in keys) is not inline, keys
            assert y.chunks == ((6, 6),) and np.array_equal(y.compute(), np.arange(12) * 2)
        try:
            zarrdask.to_zarr(x, where, overwrite=True, return_stored=True, compute=False)
        except InvalidModeError as exc:
            assert "return_stored=True with compute=False" in str(exc)
        else:
            raise AssertionError("not refused")
        print("ok")
    """)
    run_with_query_planning(script)
