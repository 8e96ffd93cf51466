"""The package's layers point one way (issue 24).

Every import of a zarrdask module by another, read from the source with ``ast`` (module
top, function-local and ``TYPE_CHECKING`` imports alike), is checked against the layer
order in ``LAYERS``: a module imports only from its own layer or layers below it, and no
set of modules imports itself round a cycle. Outside ``compat/`` no module reads another
module's private name: neither ``from x import _name`` nor an attribute ``obj._name``
whose name the module itself does not define (as a function, class, module name or its
classes' own state ``self._name``); ``self._name``, ``cls._name``, ``super()._name`` (an
object's own state, inside its class) and dunder names are the object's own.
``docs/design.md`` draws the same order.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "zarrdask"

#: Layers from the bottom up; a module's layer is the first entry its dotted name starts
#: with (the longest prefix wins). Modules of one layer may import each other (no cycles).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("zarrdask.errors", "zarrdask.keywords", "zarrdask.compat"),
    ("zarrdask.compat.icechunk", "zarrdask.compat.fsspec", "zarrdask.compat.zarr_python", "zarrdask.storage"),
    ("zarrdask.metadata",),
    ("zarrdask.indexing",),
    ("zarrdask.codecs",),
    ("zarrdask.plan",),
    ("zarrdask.core",),
    ("zarrdask.compat.dask", "zarrdask.dask_io"),
    ("zarrdask.compat.xarray", "zarrdask.xarray_backend"),
    ("zarrdask.tools",),
    ("zarrdask", "zarrdask.demo"),  # the public API: what users (and the command) import
    ("zarrdask.cli",),
    ("zarrdask.__main__",),
)


class Import(NamedTuple):
    """One import statement's target, resolved to a module of the package."""

    importer: str
    imported: str
    names: tuple[str, ...]
    line: int


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


MODULES = _modules()


def _resolve(importer: str, path: Path, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = importer.split(".") if path.name == "__init__.py" else importer.split(".")[:-1]
    base = package[: len(package) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def _known(name: str) -> str | None:
    """``name`` or its longest prefix that is a module of the package."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str, path: Path, tree: ast.Module) -> Iterator[Import]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = _known(alias.name)
                if target:
                    yield Import(module, target, (), node.lineno)
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(module, path, node)
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                if submodule in MODULES:
                    yield Import(module, submodule, (), node.lineno)
                else:
                    target = _known(base)
                    if target:
                        yield Import(module, target, (alias.name,), node.lineno)


TREES = {module: ast.parse(path.read_text(), str(path)) for module, path in MODULES.items()}
IMPORTS = [imp for module, path in MODULES.items() for imp in _imports(module, path, TREES[module])]


def _layer(module: str) -> int:
    best, rank = -1, -1
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, rank = len(prefix), index
    assert rank >= 0, f"{module} is in no layer of LAYERS"
    return rank


def _where(module: str, line: int) -> str:
    return f"{MODULES[module].relative_to(PACKAGE.parent)}:{line}"


def test_every_module_has_a_layer():
    for module in MODULES:
        _layer(module)


def test_no_upward_import():
    upward = [f"{_where(imp.importer, imp.line)}: {imp.importer} imports {imp.imported}"
              for imp in IMPORTS if _layer(imp.imported) > _layer(imp.importer)]
    assert not upward, "imports that point up a layer:\n" + "\n".join(upward)


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(edges.get(node, ())):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def _package_parents(module: str) -> Iterator[str]:
    """The packages an import of ``module`` runs first (``a.b`` for ``a.b.c``)."""
    parts = module.split(".")
    for end in range(1, len(parts)):
        yield ".".join(parts[:end])


def test_no_import_cycle():
    edges: dict[str, set[str]] = {}
    for imp in IMPORTS:
        if imp.imported == imp.importer or imp.imported in _package_parents(imp.importer):
            continue  # a package's own modules run after its __init__, not an arrow back
        edges.setdefault(imp.importer, set()).add(imp.imported)
    cycles = _cycles(edges)
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _defined_here(tree: ast.Module) -> set[str]:
    """The private names a module defines: functions, classes, methods, assigned names
    and the state its classes set on their objects (``self._x = ...``)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and _own(node):
            names.add(node.attr)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return {name for name in names if _private(name)}


def _own(node: ast.Attribute) -> bool:
    """``self._x``, ``cls._x``, ``super()._x``: an object's own state, inside its class."""
    value = node.value
    if isinstance(value, ast.Name):
        return value.id in ("self", "cls")
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "super"


def _private_reads(module: str) -> Iterator[str]:
    tree = TREES[module]
    for imp in IMPORTS:
        if imp.importer == module:
            for name in imp.names:
                if _private(name):
                    yield f"{_where(module, imp.line)}: from {imp.imported} import {name}"
    here = _defined_here(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr) and not _own(node) and node.attr not in here:
            yield f"{_where(module, node.lineno)}: {ast.unparse(node)}"


@pytest.mark.parametrize("module", [m for m in MODULES if not m.startswith("zarrdask.compat")])
def test_no_private_name_of_another_module(module):
    reads = list(_private_reads(module))
    assert not reads, "private names of other modules read:\n" + "\n".join(reads)


def _store_classes_named(module: str) -> set[str]:
    """The names ``module`` imports from ``zarrdask.storage`` that are Store subclasses
    (the ABC itself excepted: "is it a store" is no fact of one store class)."""
    import importlib

    from zarrdask.storage.base import Store

    named = set()
    for imp in IMPORTS:
        if imp.importer != module or not imp.imported.startswith("zarrdask.storage"):
            continue
        source = importlib.import_module(imp.imported)
        for name in imp.names:
            obj = getattr(source, name, None)
            if isinstance(obj, type) and issubclass(obj, Store) and obj is not Store:
                named.add(name)
    return named


def test_no_store_class_is_asked_for_outside_storage():
    """A store answers for itself (``Store.guard``, ``held_in``, ``identity()``, ``file_of``,
    ``is_local``, ``read_only``): outside ``storage/`` no code asks which class a store is,
    so a new store class cannot be left out of a decision made elsewhere."""
    found = []
    for module, tree in TREES.items():
        if module.startswith("zarrdask.storage"):
            continue
        classes = _store_classes_named(module)
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in (
                    "isinstance", "issubclass") and len(node.args) == 2:
                asked = {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}
                if asked & classes:
                    found.append(f"{_where(module, node.lineno)}: isinstance of {sorted(asked & classes)}")
    assert not found, "store classes asked for outside storage/:\n" + "\n".join(found)
