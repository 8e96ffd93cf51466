"""No keyword is ever silently dropped.

Every function and method of the package is introspected: one that takes ``**kwargs``
must be listed here with the documented destination its keywords go to, and calling it
with a keyword nobody takes must raise a ``TypeError`` naming that keyword. A new
``**kwargs`` anywhere fails the first test until it is accounted for here.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from typing import Any, Callable, Protocol

import numpy as np
import pytest

import zarrdask

BOGUS = "zz_no_such_keyword"
#: private names are skipped, except these ways in
_DUNDER_ENTRIES = ("__init__", "__new__", "__call__", "__getitem__", "__setitem__")


def _callables() -> dict[str, Any]:
    """Every public function and method defined in the package (and constructors), by
    ``module:qualname``."""
    found: dict[str, Any] = {}
    for info in pkgutil.walk_packages(zarrdask.__path__, "zarrdask."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if getattr(obj, "__module__", None) != module.__name__:
                continue
            if name.startswith("_"):
                continue
            if inspect.isfunction(obj):
                found[f"{module.__name__}:{name}"] = obj
            elif inspect.isclass(obj) and Protocol not in obj.__mro__[1:]:
                for attr, member in vars(obj).items():
                    if attr.startswith("_") and attr not in _DUNDER_ENTRIES:
                        continue
                    member = getattr(member, "__func__", member)
                    if inspect.isfunction(member):
                        found[f"{module.__name__}:{name}.{attr}"] = member
    return found


def _takes_var_keyword(function: Any) -> bool:
    return any(p.kind is p.VAR_KEYWORD for p in inspect.signature(function).parameters.values())


def _array(tmp_path: Any) -> zarrdask.Array:
    return zarrdask.create_array(str(tmp_path / "a.zarr"), shape=(4,), dtype="i2", chunks=(2,), overwrite=True)


def _group(tmp_path: Any) -> zarrdask.Group:
    return zarrdask.create_group(str(tmp_path / "g.zarr"), overwrite=True)


#: ``module:qualname`` -> (where its keywords go, a call passing ``**kw`` with valid arguments otherwise)
ACCOUNTED: dict[str, tuple[str, Callable[[Any, dict[str, Any]], Any]]] = {
    "zarrdask.dask_io.whole:ReadArray.compute": (
        "dask.array.Array.compute's keywords, passed to it unchanged (dask's scheduler options)", None),
    "zarrdask.api.openers:open": (
        "array keywords of zarr-python's open, checked by nodes/array_keywords.py",
        lambda t, kw: zarrdask.open(str(t / "a.zarr"), mode="a", **kw)),
    "zarrdask.api.openers:open_array": (
        "array keywords of zarr-python's open_array, checked by nodes/array_keywords.py",
        lambda t, kw: zarrdask.open_array(str(t / "a.zarr"), mode="w", shape=(2,), dtype="i1", **kw)),
    "zarrdask.api.openers:open_group": (
        "zarr-python's open_group keywords, each accepted or refused by name",
        lambda t, kw: zarrdask.open_group(str(t / "g.zarr"), **kw)),
    "zarrdask.nodes.create:create_array": (
        "ArrayOptions (runtime options), checked against its fields",
        lambda t, kw: zarrdask.create_array(str(t / "a.zarr"), shape=(2,), dtype="i1", **kw)),
    "zarrdask.nodes.group:Group.create_array": (
        "create_array's keywords, checked against its signature",
        lambda t, kw: _group(t).create_array("x", shape=(2,), dtype="i1", **kw)),
    "zarrdask.nodes.group:Group.create": (
        "Group.create_array",
        lambda t, kw: _group(t).create("x", shape=(2,), dtype="i1", **kw)),
    "zarrdask.nodes.group:Group.require_array": (
        "create_array's keywords, checked against its signature",
        lambda t, kw: _group(t).require_array("x", shape=(2,), dtype="i1", **kw)),
    "zarrdask.nodes.group:Group.zeros": (
        "zarr.create's keywords, checked by nodes/array_keywords.py",
        lambda t, kw: _group(t).zeros("x", shape=(2,), **kw)),
    "zarrdask.nodes.group:Group.ones": (
        "zarr.create's keywords, checked by nodes/array_keywords.py",
        lambda t, kw: _group(t).ones("x", shape=(2,), **kw)),
    "zarrdask.nodes.group:Group.full": (
        "zarr.create's keywords, checked by nodes/array_keywords.py",
        lambda t, kw: _group(t).full("x", shape=(2,), fill_value=3, **kw)),
    "zarrdask.nodes.group:Group.empty": (
        "zarr.create's keywords, checked by nodes/array_keywords.py",
        lambda t, kw: _group(t).empty("x", shape=(2,), **kw)),
    "zarrdask.nodes.group:Group.zeros_like": (
        "zarr.create's keywords, checked by nodes/array_keywords.py",
        lambda t, kw: _group(t).zeros_like("x", np.ones(2), **kw)),
    "zarrdask.nodes.group:Group.ones_like": (
        "zarr.create's keywords, checked by nodes/array_keywords.py",
        lambda t, kw: _group(t).ones_like("x", np.ones(2), **kw)),
    "zarrdask.nodes.group:Group.full_like": (
        "zarr.create's keywords, checked by nodes/array_keywords.py",
        lambda t, kw: _group(t).full_like("x", np.ones(2), fill_value=2, **kw)),
    "zarrdask.nodes.group:Group.empty_like": (
        "zarr.create's keywords, checked by nodes/array_keywords.py",
        lambda t, kw: _group(t).empty_like("x", np.ones(2), **kw)),
    "zarrdask.nodes.group:Group.create_dataset": (
        "zarr.create's keywords, checked by nodes/array_keywords.py",
        lambda t, kw: _group(t).create_dataset("x", shape=(2,), **kw)),
    "zarrdask.nodes.group:Group.require_dataset": (
        "Group.require_array",
        lambda t, kw: _group(t).require_dataset("x", shape=(2,), dtype="i1", **kw)),
    "zarrdask.nodes.group:Group.array": (
        "Group.create_array",
        lambda t, kw: _group(t).array("x", shape=(2,), dtype="i1", **kw)),
    "zarrdask.api.convenience:create": (
        "zarr.create's keywords, checked by nodes/array_keywords.py",
        lambda t, kw: zarrdask.create((2,), store=str(t / "a.zarr"), **kw)),
    "zarrdask.api.convenience:zeros": (
        "zarrdask.create", lambda t, kw: zarrdask.zeros((2,), store=str(t / "a.zarr"), **kw)),
    "zarrdask.api.convenience:ones": (
        "zarrdask.create", lambda t, kw: zarrdask.ones((2,), store=str(t / "a.zarr"), **kw)),
    "zarrdask.api.convenience:full": (
        "zarrdask.create", lambda t, kw: zarrdask.full((2,), 5, store=str(t / "a.zarr"), **kw)),
    "zarrdask.api.convenience:empty": (
        "zarrdask.create", lambda t, kw: zarrdask.empty((2,), store=str(t / "a.zarr"), **kw)),
    "zarrdask.api.convenience:zeros_like": (
        "zarrdask.zeros", lambda t, kw: zarrdask.zeros_like(np.ones(2), **kw)),
    "zarrdask.api.convenience:ones_like": (
        "zarrdask.ones", lambda t, kw: zarrdask.ones_like(np.ones(2), **kw)),
    "zarrdask.api.convenience:full_like": (
        "zarrdask.full", lambda t, kw: zarrdask.full_like(np.ones(2), fill_value=1, **kw)),
    "zarrdask.api.convenience:empty_like": (
        "zarrdask.empty", lambda t, kw: zarrdask.empty_like(np.ones(2), **kw)),
    "zarrdask.api.convenience:open_like": (
        "zarrdask.open_array", lambda t, kw: zarrdask.open_like(np.ones(2), str(t / "a.zarr"), **kw)),
    "zarrdask.api.convenience:array": (
        "zarrdask.create (or zarrdask.from_array for a Zarr array)", lambda t, kw: zarrdask.array(np.ones(2), **kw)),
    "zarrdask.api.convenience:from_array": (
        "create_array's keywords, checked against its signature",
        lambda t, kw: zarrdask.from_array(str(t / "a.zarr"), data=np.ones(2), **kw)),
    "zarrdask.api.convenience:open_consolidated": (
        "zarrdask.open_group",
        lambda t, kw: zarrdask.open_consolidated(str(t / "g.zarr"), **kw)),
    "zarrdask.api.convenience:group": (
        "zarrdask.open_group", lambda t, kw: zarrdask.group(str(t / "g.zarr"), **kw)),
    "zarrdask.api.convenience:save_array": (
        "zarr.create's keywords (and zarr-python's mode), checked by nodes/array_keywords.py",
        lambda t, kw: zarrdask.save_array(str(t / "a.zarr"), np.ones(2), **kw)),
    "zarrdask.api.convenience:save_group": (
        "the arrays to save, by name (each one checked to be an array)",
        lambda t, kw: zarrdask.save_group(str(t / "g.zarr"), np.ones(2), **kw)),
    "zarrdask.api.convenience:save": (
        "zarrdask.save_group's arrays by name",
        lambda t, kw: zarrdask.save(str(t / "g.zarr"), np.ones(2), **kw)),
    "zarrdask.api.convenience:load": (
        "storage_options (and a refused zarr_version), checked by name",
        lambda t, kw: zarrdask.load(str(t / "g.zarr"), **kw)),
    "zarrdask.nodes.array:Array.with_options": (
        "ArrayOptions fields, through dataclasses.replace",
        lambda t, kw: _array(t).with_options(**kw)),
    "zarrdask.nodes.attributes:Attributes.update": (
        "dict.update: every keyword is an attribute by that name (zarr-python's attrs.update)",
        None),
    "zarrdask.dask_io.read:from_zarr": (
        "dask's from_zarr **kwargs (zarr.open_array's keywords), checked by dask_io/dask_keywords.py",
        lambda t, kw: zarrdask.from_zarr(_array(t), **kw)),
    "zarrdask.dask_io.write:to_zarr": (
        "dask's to_zarr **kwargs (array-creation keywords), checked by dask_io/dask_keywords.py",
        lambda t, kw: zarrdask.to_zarr(np.zeros(4), str(t / "w.zarr"), **kw)),
    "zarrdask.dask_io.sources:node_path": (
        "internal: the node path under each of its aliases, passed by name by the callers",
        None),
    "zarrdask.metadata.v2:ArrayMetadataV2.evolve": ("dataclasses.replace (TypeError on unknown fields)", None),
    "zarrdask.metadata.v2:GroupMetadataV2.evolve": ("dataclasses.replace (TypeError on unknown fields)", None),
    "zarrdask.metadata.v3:ArrayMetadataV3.evolve": ("dataclasses.replace (TypeError on unknown fields)", None),
    "zarrdask.metadata.v3:GroupMetadataV3.evolve": ("dataclasses.replace (TypeError on unknown fields)", None),
    "zarrdask.compat.dask:named_from_array": ("internal: dask.array.from_array's keywords", None),
    "zarrdask.compat.dask:private_from_array": ("internal: dask's FromArray expression's keywords", None),
    "zarrdask.xarray_backend.array_writes:ArrayWrites.sync": ("dask.compute's keywords", None),
    "zarrdask.dask_io.transactions:run_writes": (
        "internal: dask.compute's keywords (xarray's chunkmanager_store_kwargs, passed on as xarray does)", None),
}


def test_every_var_keyword_is_accounted_for() -> None:
    found = {name for name, f in _callables().items() if _takes_var_keyword(f)}
    assert found - ACCOUNTED.keys() == set(), "new **kwargs: forward them to a checked destination and list them here"
    assert ACCOUNTED.keys() - found == set(), "listed here but no longer taking **kwargs: remove the entry"


@pytest.mark.parametrize("name", sorted(k for k, (_, call) in ACCOUNTED.items() if call is not None))
def test_unknown_keyword_is_named(name: str, tmp_path: Any) -> None:
    _, call = ACCOUNTED[name]
    with pytest.raises(TypeError, match=BOGUS):
        call(tmp_path, {BOGUS: 1})


def test_metadata_evolve_refuses_unknown_fields(tmp_path: Any) -> None:
    meta = _array(tmp_path).metadata
    with pytest.raises(TypeError, match=BOGUS):
        meta.evolve(**{BOGUS: 1})


def test_attributes_update_stores_every_keyword(tmp_path: Any) -> None:
    a = _array(tmp_path)
    a.attrs.update({"x": 1}, units="K")
    assert dict(zarrdask.open_array(str(tmp_path / "a.zarr")).attrs) == {"x": 1, "units": "K"}


def test_internal_forwarders_reach_checked_signatures(tmp_path: Any) -> None:
    """The internal ``**kwargs`` forward to signatures that have no ``**kwargs`` themselves,
    or to the documented third-party call."""
    from zarrdask.nodes.units.base import ChunkSource
    from zarrdask.dask_io.sources import node_path

    assert not _takes_var_keyword(ChunkSource.__init__)
    assert node_path("zarrdask.from_zarr", component="a/", path="a") == "a"
    with pytest.raises(zarrdask.ZarrdaskError, match="two node paths"):
        node_path("zarrdask.from_zarr", component="a", path="b")
