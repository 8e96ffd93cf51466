"""Sequences of changes to a hierarchy, held to a model and read back by zarr-python (hypothesis stateful).

A generated sequence of the calls users make on groups: create groups and arrays (nested
paths too), delete nodes, set and delete attributes, resize arrays, consolidate the
metadata, and open the root again (with and without its consolidated metadata), in Zarr
v3 or v2. After every step zarrdask's view of the whole tree (``members(max_depth=None)``:
paths, kinds, attributes, shapes) is the model's, through the open group and through a
fresh open; every few steps zarr-python sees the same tree and ``verify`` finds nothing
wrong (so the consolidated metadata zarrdask keeps never goes stale).
"""

from __future__ import annotations

import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

import zarrdask

zarr = pytest.importorskip("zarr")

NAMES = st.sampled_from(["a", "b", "t2m", "x_1"])
VALUES = st.one_of(st.integers(-5, 5), st.text(max_size=3), st.lists(st.integers(0, 3), max_size=2), st.none())


def _tree(group: Any) -> dict[str, tuple[str, dict[str, Any], tuple[int, ...] | None]]:
    out = {}
    for path, node in group.members(max_depth=None):
        is_array = hasattr(node, "shape")
        out[path] = ("array" if is_array else "group", dict(node.attrs),
                     tuple(node.shape) if is_array else None)
    return out


class HierarchySequences(RuleBasedStateMachine):
    """A zarrdask hierarchy and its model: path -> [kind, attributes, shape]."""

    @initialize(zarr_format=st.sampled_from([2, 3]), consolidated=st.booleans())
    def create(self, zarr_format: int, consolidated: bool) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="zarrdask-tree-"))
        self.path = str(self.root / "g.zarr")
        self.group = zarrdask.open_group(self.path, mode="w", zarr_format=zarr_format)
        if consolidated:
            zarrdask.consolidate_metadata(self.path)
            self.group = zarrdask.open_group(self.path, mode="r+")
        self.consolidated = consolidated
        self.model: dict[str, list[Any]] = {}
        self.root_attrs: dict[str, Any] = {}
        self.steps = 0

    def teardown(self) -> None:
        shutil.rmtree(getattr(self, "root", "/nonexistent"), ignore_errors=True)

    def _groups(self) -> list[str]:
        return [""] + sorted(p for p, (kind, *_) in self.model.items() if kind == "group")

    def _free(self, parent: str, name: str) -> str | None:
        path = f"{parent}/{name}" if parent else name
        return None if path in self.model else path

    def _node(self, path: str) -> Any:
        return self.group[path] if path else self.group

    @rule(data=st.data(), name=NAMES)
    def create_group(self, data: st.DataObject, name: str) -> None:
        parent = data.draw(st.sampled_from(self._groups()))
        path = self._free(parent, name)
        if path is None:
            return
        self._node(parent).create_group(name)
        self.model[path] = ["group", {}, None]

    @rule(data=st.data(), name=NAMES, shape=st.lists(st.integers(0, 6), min_size=1, max_size=2))
    def create_array(self, data: st.DataObject, name: str, shape: list[int]) -> None:
        parent = data.draw(st.sampled_from(self._groups()))
        path = self._free(parent, name)
        if path is None:
            return
        dims = {"dimension_names": [f"d{i}" for i in range(len(shape))]} if self.group.metadata.zarr_format == 3 \
            else {}
        self._node(parent).create_array(name, shape=tuple(shape), dtype="int16", chunks=(2,) * len(shape), **dims)
        self.model[path] = ["array", {}, tuple(shape)]

    @precondition(lambda self: bool(self.model))
    @rule(data=st.data())
    def delete(self, data: st.DataObject) -> None:
        path = data.draw(st.sampled_from(sorted(self.model)))
        parent, _, name = path.rpartition("/")
        del self._node(parent)[name]
        for p in [p for p in self.model if p == path or p.startswith(path + "/")]:
            del self.model[p]

    @rule(data=st.data(), key=NAMES, value=VALUES)
    def set_attribute(self, data: st.DataObject, key: str, value: Any) -> None:
        path = data.draw(st.sampled_from([""] + sorted(self.model)))
        self._node(path).attrs[key] = value
        (self.root_attrs if not path else self.model[path][1])[key] = value

    @rule(data=st.data())
    def delete_attribute(self, data: st.DataObject) -> None:
        path = data.draw(st.sampled_from([""] + sorted(self.model)))
        attrs = self.root_attrs if not path else self.model[path][1]
        if not attrs:
            return
        key = data.draw(st.sampled_from(sorted(attrs)))
        del self._node(path).attrs[key]
        del attrs[key]

    @rule(data=st.data(), grow=st.integers(-3, 3))
    def resize(self, data: st.DataObject, grow: int) -> None:
        arrays = sorted(p for p, (kind, *_) in self.model.items() if kind == "array")
        if not arrays:
            return
        path = data.draw(st.sampled_from(arrays))
        shape = tuple(max(0, n + grow) for n in self.model[path][2])
        self.group[path].resize(shape)
        self.model[path][2] = shape

    @rule()
    def consolidate(self) -> None:
        zarrdask.consolidate_metadata(self.path)
        self.consolidated = True

    @rule(consolidated=st.booleans())
    def reopen(self, consolidated: bool) -> None:
        """With its consolidated metadata where there is some (zarrdask keeps it current), or listing the store."""
        use = consolidated and self.consolidated
        self.group = zarrdask.open_group(self.path, mode="r+", use_consolidated=use)
        assert self.group.consolidated == use

    def _expected(self) -> dict[str, tuple[str, dict[str, Any], tuple[int, ...] | None]]:
        return {p: (kind, attrs, shape) for p, (kind, attrs, shape) in self.model.items()}

    @invariant()
    def trees_agree(self) -> None:
        if not hasattr(self, "model"):
            return
        self.steps += 1
        expected = self._expected()
        assert _tree(self.group) == expected
        fresh = zarrdask.open_group(self.path)
        assert _tree(fresh) == expected and dict(fresh.attrs) == self.root_attrs
        if self.steps % 4 == 0:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                peer = zarr.open_group(self.path, mode="r")
                assert _tree(peer) == expected and dict(peer.attrs) == self.root_attrs
            assert zarrdask.verify(self.path).findings == []


HierarchySequences.TestCase.settings = settings(max_examples=30, stateful_step_count=12, deadline=None,
                                                derandomize=True, database=None,
                                                suppress_health_check=list(HealthCheck))
test_hierarchy_sequences = HierarchySequences.TestCase
