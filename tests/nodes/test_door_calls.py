"""One front door (issue 42): the ways in stay short and go through the door once.

Each entry point's path (``_door_calls.py``: the user's store argument followed through
zarrdask's calls) reaches the first stored key in at most 25 / 25 / 45 calls, opens the
store once (a record the door made passes through it again unopened), and enters
the core (nodes/, api/, runtime/, display/) once. And only the door opens stores: no module
outside ``storage/`` and ``door/`` calls ``open_store`` (the package's public name for it
re-exports ``storage.open_store``)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from _door_calls import entry_paths

BOUNDS = {"from_zarr": 25, "to_zarr": 25, "open_dataset": 45}
PACKAGE = Path(__file__).resolve().parents[2] / "zarrdask"


@pytest.fixture(scope="module")
def paths(tmp_path_factory: pytest.TempPathFactory):
    return entry_paths(str(tmp_path_factory.mktemp("door")))


@pytest.mark.parametrize("entry", sorted(BOUNDS))
def test_the_way_in_is_short(paths, entry: str) -> None:
    path = paths[entry]
    shown = "\n".join(f"  {c.module}:{c.function}" for c in path.to_first_read)
    assert path.to_first_read[-1].function.startswith("Store.get"), shown  # (it does reach a read)
    assert len(path.to_first_read) <= BOUNDS[entry], f"{entry}: {len(path.to_first_read)} calls:\n{shown}"


@pytest.mark.parametrize("entry", sorted(BOUNDS))
def test_opened_once_and_the_core_entered_once(paths, entry: str) -> None:
    path = paths[entry]
    shown = "\n".join(f"  {c.module}:{c.function} (from {c.caller})" for c in path.whole)
    opened = [c for c in path.whole if c.function == "open_store" and c.caller == "door/resolve.py"]
    assert len(opened) == 1, f"{entry} opened the store {len(opened)} times:\n{shown}"
    assert path.entries() <= 1, shown


def test_only_the_door_opens_stores() -> None:
    found = []
    for file in sorted(PACKAGE.rglob("*.py")):
        rel = file.relative_to(PACKAGE).as_posix()
        if rel.startswith(("storage/", "door/")):
            continue
        for node in ast.walk(ast.parse(file.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "open_store":
                found.append(f"zarrdask/{rel}:{node.lineno}")
    assert not found, ("open_store called outside the door (use zarrdask.door.resolve, which opens the store "
                       f"and reads the node once): {found}")
