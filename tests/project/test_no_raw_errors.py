"""No raw exception reaches a user: the public API and the command line, driven with
generated wrong types, wrong values and unreachable stores, fail only with zarrdask's
errors (each also the builtin a caller would catch), and no message names zarrdask's
internal classes or modules.

The calls keep Python's own signature binding out of it: every keyword drawn is one the
function takes (a wrong keyword name is ``test_no_silent_keywords.py``'s)."""

from __future__ import annotations

import contextlib
import io
import re
import socket
import warnings
from pathlib import Path
from typing import Any, Callable

import dask
import dask.array as da
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrdask
import zarrdask.cli
from zarrdask.errors import InvalidTypeError, ZarrdaskError


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


_NOWHERE = f"http://127.0.0.1:{_closed_port()}/x.zarr"  # connections refused
_ODD = [slice(None, None, -1), slice(1, "a"), object(), np.float32(2), np.int64(-3), True, Ellipsis, 2**70,
        float("nan"), float("inf"), "r", "w-", "rw", "auto", "keep", "f16", "", "/nonexistent/x.zarr", _NOWHERE,
        f"s3://bucket/x?endpoint_url={_NOWHERE}", "memory://", "::", "zip://", "a.zip", b"x", (1,), (-1, 5),
        (10, 10, 10), [1, "a"], {"a": 1}, {1: 2}, {}, [], ()]
WRONG = st.one_of(
    st.sampled_from(_ODD), st.none(), st.integers(-3, 40), st.floats(allow_nan=True, width=32), st.text(max_size=6),
    st.lists(st.one_of(st.integers(-2, 12), st.text(max_size=2), st.none()), max_size=4).map(tuple),
    st.dictionaries(st.text(max_size=3), st.one_of(st.integers(), st.text(max_size=3)), max_size=2),
)


@pytest.fixture(scope="module")
def nodes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("raw")
    plain = zarrdask.create_array(root / "a.zarr", shape=(10, 10), dtype="f4", chunks=(5, 5))
    sharded = zarrdask.create_array(root / "s.zarr", shape=(10, 10), dtype="i2", chunks=(2, 2), shards=(4, 4))
    group = zarrdask.open_group(root / "g.zarr", mode="w")
    text = zarrdask.create_array(root / "t.zarr", shape=(4,), dtype=str, chunks=(1,), shards=(2,))
    raw = zarrdask.create_array(root / "b.zarr", shape=(4,), dtype=bytes, chunks=(2,))
    return {"root": root, "a": plain, "s": sharded, "g": group, "t": text, "b": raw}


def _api(nodes: dict[str, Any]) -> dict[str, tuple[Callable[..., Any], tuple[str, ...]]]:
    """Each public call with the keywords the test draws values for (the others valid)."""
    a, s, g, t, b, root = nodes["a"], nodes["s"], nodes["g"], nodes["t"], nodes["b"], nodes["root"]
    return {
        "create_array": (lambda **k: zarrdask.create_array({}, **{"shape": (3,), "dtype": "i4", **k}),
                         ("shape", "dtype", "chunks", "shards", "fill_value", "compressors", "filters", "serializer",
                          "order", "zarr_format", "attributes", "dimension_names", "chunk_key_encoding", "codecs",
                          "name", "path", "storage_options", "overwrite")),
        "open_array": (lambda **k: zarrdask.open_array(**{"store": root / "a.zarr", **k}),
                       ("store", "mode", "path", "zarr_format", "storage_options")),
        "open_group": (lambda **k: zarrdask.open_group(**{"store": root / "g.zarr", **k}),
                       ("store", "mode", "path", "zarr_format", "attributes", "use_consolidated", "storage_options")),
        "open": (lambda **k: zarrdask.open(**{"store": root / "a.zarr", **k}), ("store", "mode", "path", "zarr_format")),
        "from_zarr": (lambda **k: zarrdask.from_zarr(**{"url": root / "s.zarr", **k}),
                      ("url", "component", "chunks", "name", "inline_array", "storage_options")),
        "to_zarr": (lambda **k: zarrdask.to_zarr(**{"arr": da.ones((4, 4), chunks=2), "url": {}, **k}),
                    ("arr", "url", "component", "region", "mode", "chunks", "shards", "overwrite", "append_axis",
                     "task_size", "staging", "fill_value", "zarr_format", "storage_options")),
        "plan_write": (lambda **k: zarrdask.plan_write(**{"x": da.ones((4, 4), chunks=2), "target": s, **k}),
                       ("x", "target", "region", "path", "task_size", "staging")),
        "verify": (lambda **k: zarrdask.verify(**{"store": root / "a.zarr", **k}), ("store", "path", "sample",
                                                                                    "progress")),
        "copy": (lambda **k: zarrdask.copy(**{"source": root / "a.zarr", "target": {}, **k}),
                 ("source", "target", "chunks", "shards", "compressors", "zarr_format", "path")),
        "consolidate_metadata": (lambda **k: zarrdask.consolidate_metadata(**{"store": {}, **k}), ("store", "path")),
        "a[key]": (lambda key: a[key], ("key",)),
        "a[key] = 1": (lambda key: a.__setitem__(key, 1), ("key",)),
        "a[:] = value": (lambda key: a.__setitem__(slice(None), key), ("key",)),
        "s[key]": (lambda key: s[key], ("key",)),
        "t[:] = value": (lambda key: t.__setitem__(slice(None), key), ("key",)),
        "b[:] = value": (lambda key: b.__setitem__(slice(None), key), ("key",)),
        "create_array(struct, fill_value=)": (
            lambda key: zarrdask.create_array({}, shape=(2,), dtype=[("i", "i4"), ("f", "f4")], fill_value=key),
            ("key",)),
        "t.vindex[[0, 3]] = value": (lambda key: t.vindex.__setitem__([0, 3], key), ("key",)),
        "a.oindex[key]": (lambda key: a.oindex[key], ("key",)),
        "a.vindex[key]": (lambda key: a.vindex[key], ("key",)),
        "a.resize(key)": (lambda key: a.resize(key), ("key",)),
        "s.append(key)": (lambda key: s.append(key), ("key",)),
        "a.attrs[k] = key": (lambda key: a.attrs.__setitem__("k", key), ("key",)),
        "g.create_array": (lambda **k: g.create_array("x", **{"shape": (3,), "dtype": "i4", "overwrite": True, **k}),
                           ("shape", "dtype", "chunks", "fill_value", "attributes")),
        "g[key]": (lambda key: g[key], ("key",)),
    }


_INTERNAL = re.compile(r"\bzarrdask\.(?:nodes|runtime|door|plan|display|indexing|dask_io|xarray_backend|api|tools)\.|"
                       r"\b(?:Span|Selection|ByteRange|SuffixRange|Resolved|ArrayLayout|StoredUnits|WritePlan)\(")


def _check(error: BaseException, call: str) -> None:
    if not isinstance(error, ZarrdaskError):
        raise AssertionError(f"{call}: raw {type(error).__name__}: {error}") from error
    assert not _INTERNAL.search(str(error)), f"{call}: the message names an internal: {error}"


@pytest.fixture(autouse=True)
def _one_try():
    with dask.config.set({"zarrdask.retry.attempts": 1}), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_the_api_given_wrong_values_raises_only_zarrdask_errors(nodes, data):
    calls = _api(nodes)
    name = data.draw(st.sampled_from(sorted(calls)), label="call")
    fn, keys = calls[name]
    drawn = data.draw(st.lists(st.sampled_from(keys), min_size=1, max_size=min(3, len(keys)), unique=True))
    values = {k: data.draw(WRONG, label=k) for k in drawn}
    try:
        with contextlib.chdir(nodes["root"]):  # (a drawn relative path is created there, not in the checkout)
            if keys == ("key",):
                fn(values["key"])
            else:
                fn(**values)
    except BaseException as error:  # noqa: BLE001 (what is checked is exactly what escapes)
        _check(error, f"{name}({values!r:.200})")


_CLI_WORDS = ["info", "tree", "verify", "migrate", "copy", "--path", "--json", "--depth", "--sample", "--fix",
              "--target", "--dry-run", "--chunks", "--shards", "--codecs", "--zarr-format", "--overwrite",
              "--storage-option", "--no-progress", "--keep-old", "-1", "0", "3", "x", "a=b", "badformat", "1,2",
              "zstd:3", "a.zarr", "s.zarr", "g.zarr", "missing.zarr", _NOWHERE, "memory://", "::", "--help"]


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(argv=st.lists(st.sampled_from(_CLI_WORDS), min_size=1, max_size=6))
def test_the_command_line_given_wrong_arguments_prints_one_line(nodes, argv):
    with contextlib.chdir(nodes["root"]):
        err, out = io.StringIO(), io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            try:
                code = zarrdask.cli.main(argv)
            except BaseException as error:  # noqa: BLE001
                raise AssertionError(f"zarrdask {' '.join(argv)}: raw {type(error).__name__}: {error}") from error
    assert code in (0, 1, 2), (argv, code, err.getvalue())
    text = err.getvalue()
    assert "Traceback" not in text and not _INTERNAL.search(text), (argv, text)
    if code == 2 and not text.startswith("usage:"):
        assert text.startswith("zarrdask ") and "error:" in text, (argv, text)
        assert not re.search(r"mode='(?:a|w|w-|r\+)'", text), (argv, text)  # (no mode= keyword to offer there)


def test_the_generated_values_reach_the_stores_they_name(nodes):
    """The pool holds what users type wrong, including stores nobody answers for."""
    assert any(isinstance(v, str) and v.startswith("http://127.0.0.1:") for v in _ODD)
    with pytest.raises(ZarrdaskError):
        zarrdask.open_array(_NOWHERE)
    assert Path(nodes["root"] / "a.zarr" / "zarr.json").exists()


def test_create_array_given_both_paths_wrong_names_the_first():
    """Found by the generated test: name= and path= both of a wrong type raised a raw AttributeError."""
    with pytest.raises(InvalidTypeError, match=r"name= expects a string"):
        zarrdask.create_array({}, shape=(3,), dtype="i4", name=slice(1), path=slice(1))
