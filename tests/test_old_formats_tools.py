"""``copy`` refuses a v3.0 draft store, naming ``migrate(target=...)``, which copies it
(the draft keeps chunks apart from its documents, a layout copy does not walk)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import zarrdask
from zarrdask.errors import InvalidModeError

DATA = Path(__file__).parent / "data" / "old_formats"
DRAFT = json.loads((DATA / "v3draft" / "expected" / "manifest.json").read_text())
DRAFT_STORE = DATA / "v3draft" / DRAFT["store"]


def test_copy_refuses_a_draft_store_and_names_migrate(tmp_path):
    with pytest.raises(InvalidModeError, match=r"v3\.0 draft.*migrate\(source, target="):
        zarrdask.copy(DRAFT_STORE, tmp_path / "out.zarr")
    assert not any((tmp_path / "out.zarr").rglob("*.json"))
