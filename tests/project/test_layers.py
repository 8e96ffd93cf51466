"""The package's layers point one way (issue 24).

Every import of a zarrdask module by another, read from the source with ``ast`` (module
top, function-local and ``TYPE_CHECKING`` imports alike), is checked against the layer
order in ``LAYERS``: a module imports only from its own layer or layers below it, and no
set of modules imports itself round a cycle. Outside ``compat/`` no module reads another
module's private name: neither ``from x import _name`` nor an attribute ``obj._name``
whose name the module itself does not define (as a function, class, module name or its
classes' own state ``self._name``); ``self._name``, ``cls._name``, ``super()._name`` (an
object's own state, inside its class) and dunder names are the object's own. No
``typing.Protocol`` declares a private member, and outside ``storage/`` and ``codecs/`` no
code asks (``isinstance``/``issubclass``) which of their classes an object is.
``docs/design.md`` draws the same order.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "zarrdask"

#: Layers from the bottom up; a module's layer is the first entry its dotted name starts
#: with (the longest prefix wins). Modules of one layer may import each other (no cycles).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("zarrdask.errors", "zarrdask.keywords", "zarrdask.arguments", "zarrdask.compat"),
    ("zarrdask.compat.icechunk", "zarrdask.compat.fsspec", "zarrdask.compat.zarr_python", "zarrdask.storage"),
    ("zarrdask.metadata",),
    ("zarrdask.indexing",),
    ("zarrdask.codecs",),
    ("zarrdask.display",),  # text and HTML of nodes and plans (read through Protocols)
    ("zarrdask.plan",),
    ("zarrdask.door",),  # the front door: what users pass as a store, resolved once
    ("zarrdask.runtime",),  # threads, result memory, the decoded-chunk cache, locks, progress
    ("zarrdask.nodes",),  # Array, Group, creation, stored units
    ("zarrdask.api",),  # open / open_array / open_group and zarr-python's conveniences
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


def _protocol(node: ast.ClassDef) -> bool:
    """``class X(Protocol)``, ``class X(typing.Protocol)`` or ``class X(Protocol[T])``."""
    for base in node.bases:
        target = base.value if isinstance(base, ast.Subscript) else base
        if (isinstance(target, ast.Name) and target.id == "Protocol"
                or isinstance(target, ast.Attribute) and target.attr == "Protocol"):
            return True
    return False


def _members(node: ast.ClassDef) -> Iterator[tuple[str, int]]:
    """The names a class body declares (annotations, assignments, methods, properties)."""
    for item in node.body:
        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
            yield item.name, item.lineno
        elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            yield item.target.id, item.lineno
        elif isinstance(item, ast.Assign):
            yield from ((t.id, item.lineno) for t in item.targets if isinstance(t, ast.Name))


def test_no_protocol_declares_a_private_member():
    """A ``Protocol`` is what other code may use of an object: a private name in one makes
    another object's private member an interface (the rule above then passes, the Protocol
    "defining" the name, while a module reads another's private state)."""
    found = [f"{_where(module, line)}: {node.name}.{name}"
             for module, tree in TREES.items() for node in ast.walk(tree)
             if isinstance(node, ast.ClassDef) and _protocol(node)
             for name, line in _members(node) if _private(name)]
    assert not found, ("Protocol members with private names (make the member public on the object that owns it, "
                       "or have the owner hand over what is used, e.g. a record of its operations):\n"
                       + "\n".join(found))


def _inside(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _classes_of(package: str) -> set[str]:
    """The names of the classes the modules of ``package`` define."""
    return {node.name for module, tree in TREES.items() if _inside(module, package)
            for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}


def _bound(module: str, package: str, classes: set[str]) -> tuple[set[str], set[str]]:
    """The names ``module`` binds by importing from ``package``: to its classes (``from
    ..codecs.sharding import ShardingCodec as S``) and to its modules (``from .. import
    codecs``, ``import zarrdask.codecs.base``), dotted as they are then written."""
    named: set[str] = set()
    modules: set[str] = set()
    for node in ast.walk(TREES[module]):
        if isinstance(node, ast.Import):
            modules.update(a.asname or a.name for a in node.names if _inside(a.name, package))
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(module, MODULES[module], node)
            for alias in node.names:
                if _inside(f"{base}.{alias.name}", package) and f"{base}.{alias.name}" in MODULES:
                    modules.add(alias.asname or alias.name)
                elif _inside(base, package) and alias.name in classes:
                    named.add(alias.asname or alias.name)
    return named, modules


def _asked(node: ast.expr, named: set[str], modules: set[str], classes: set[str]) -> set[str]:
    """The classes of the package an isinstance's class argument (or its tuple) names."""
    asked = set()
    for part in ast.walk(node):
        if isinstance(part, ast.Name) and part.id in named:
            asked.add(part.id)
        elif isinstance(part, ast.Attribute) and part.attr in classes and ast.unparse(part.value) in modules:
            asked.add(ast.unparse(part))
    return asked


#: the packages whose objects answer for themselves, the classes of each that may still be
#: asked for (the ABC a store is: "is it a store" is no fact of one store class), and what
#: to use instead of asking
ANSWERING = (
    ("zarrdask.storage", frozenset({"Store"}),
     "let the store answer (Store.guard, held_in, identity(), file_of, is_local, read_only, or a new Store method)"),
    ("zarrdask.codecs", frozenset(),
     "let the pipeline or codec answer (ChunkPipeline.sharding, pipeline.codec_chain, Codec.kind, or a new "
     "public method in codecs/)"),
)


@pytest.mark.parametrize(("package", "askable", "fix"), ANSWERING, ids=[p for p, _, _ in ANSWERING])
def test_no_class_of_a_package_is_asked_for_outside_it(package, askable, fix):
    """A store answers for itself (``Store.guard``, ``held_in``, ``identity()``, ``file_of``,
    ``is_local``, ``read_only``), and a codec chain for itself (``ChunkPipeline.sharding``,
    ``codec_chain``): outside ``storage/`` and ``codecs/`` no code asks which class one of
    their objects is (``isinstance``/``issubclass`` of a class they define, base classes
    included), so a new store or codec class cannot be left out of a decision made elsewhere."""
    classes = _classes_of(package) - askable
    found = []
    for module, tree in TREES.items():
        if _inside(module, package):
            continue
        named, modules = _bound(module, package, classes)
        if not named and not modules:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in (
                    "isinstance", "issubclass") and len(node.args) == 2:
                asked = _asked(node.args[1], named, modules, classes)
                if asked:
                    found.append(f"{_where(module, node.lineno)}: {node.func.id} of {sorted(asked)}")
    assert not found, f"classes of {package} asked for outside it ({fix}):\n" + "\n".join(found)
