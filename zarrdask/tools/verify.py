"""``verify``: an fsck of a Zarr hierarchy (v2 or v3), reading every stored chunk.

Checks that every metadata document parses and describes an array zarrdask can open;
that every stored chunk or shard reads through zarrdask's own read path (codecs decode,
crc32c checksums match, shard index entries lie inside their shard); that
every key belongs to a node (keys that belong to no chunk are orphans, leftover
temporary files of interrupted atomic writes, and pieces an interrupted staged Dask write
left, are reported apart); that no write call left the record of one that did not
finish (``<node>/.zarrdask-writes/``, see :mod:`zarrdask.storage.records`: a problem, so
``ok`` is False, until the call is run again); and that consolidated
metadata agrees with the documents it copies. ``fix=True`` removes the temporary files,
rewrites stale consolidated metadata and removes the records of unfinished writes whose
rows no longer exist (their arrays shrunk below them, or deleted); other findings need a
person. Arrays whose chunks carry no checksum are listed apart (``unverifiable``):
decoding them proves less; so are attribute values of NaN or ±Infinity
(``not_strict_json``), which zarrdask and zarr-python read but strict JSON readers such
as TensorStore refuse.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..nodes.array import Array
from ..runtime.executor import run_all
from ..nodes.group import consolidate_metadata
from ..door.node_io import NodeMetadata, parse_node_documents, read_node, read_nodes
from ..runtime.progress import ProgressBar, counted
from ..nodes.units import StoredUnits
from .. import arguments
from ..errors import InvalidModeError, MetadataError, NodeNotFoundError, ZarrdaskError
from ..metadata.nodes import ArrayMetadata
from ..metadata.v2 import ArrayMetadataV2
from ..metadata.v3 import ArrayMetadataV3
from ..metadata.attribute_values import non_finite_places
from ..metadata.consolidated import v2_documents_for
from ..door import resolve
from ..storage.base import Store, join_path
from ..storage.records import RECORDS_DIR, WriteRecord, is_record, read_records, region_bounds
from ..storage.temporary import atomic_files, is_staged
from .verify_display import report_html, report_text

__all__ = ["Finding", "VerifyReport", "verify"]

_DOCS = {3: {"array": {"zarr.json"}, "group": {"zarr.json"}},
         2: {"array": {".zarray", ".zattrs"}, "group": {".zgroup", ".zattrs", ".zmetadata"}}}
_MARKERS = ("zarr.json", ".zarray", ".zgroup")


@dataclass(frozen=True)
class Finding:
    """One problem: the store key it is about, its kind (``metadata``, ``chunk``,
    ``orphan``, ``temporary``, ``interrupted``, ``consolidated``) and what is wrong."""

    key: str
    kind: str
    problem: str

    def __str__(self) -> str:
        return f"{self.key or '<root>'}: {self.kind}: {self.problem}"


@dataclass
class VerifyReport:
    """What ``verify`` found. ``ok`` when nothing is left to report; ``fixed`` lists the
    findings that ``fix=True`` repaired (they are not in ``findings``)."""

    store: str
    nodes: int = 0
    arrays: int = 0
    units_stored: int = 0
    units_checked: int = 0
    findings: list[Finding] = field(default_factory=list)
    fixed: list[Finding] = field(default_factory=list)
    #: arrays whose chunks carry no checksum: verified only as far as decoding goes (a
    #: flipped byte that still decodes cannot be seen); not a problem, not a clean bill either
    unverifiable: list[str] = field(default_factory=list)
    #: the records of write calls that did not finish (each also a finding)
    interrupted: list[WriteRecord] = field(default_factory=list)
    #: attribute values of NaN or ±Infinity (``node: attributes['k']``), held as the bare
    #: tokens NaN/Infinity: read by zarrdask and zarr-python, refused by strict JSON readers
    #: (TensorStore, zarrs, browsers); not a problem, a portability note
    not_strict_json: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.findings

    def to_json(self) -> dict[str, Any]:
        return {"store": self.store, "ok": self.ok, "nodes": self.nodes, "arrays": self.arrays,
                "units_stored": self.units_stored, "units_checked": self.units_checked,
                "findings": [vars(f) for f in self.findings], "fixed": [vars(f) for f in self.fixed],
                "not_verifiable_beyond_decoding": list(self.unverifiable),
                "interrupted_writes": [vars(r) for r in self.interrupted],
                "not_strict_json": list(self.not_strict_json)}

    def __repr__(self) -> str:
        return report_text(self)

    def _repr_html_(self) -> str:
        return report_html(self)


@dataclass(frozen=True)
class _Unit:
    """One stored chunk (or shard) to read: its array's stored units, key and grid coordinates."""

    units: StoredUnits
    key: str
    coords: tuple[int, ...]


def verify(store: Any, *, path: str = "", sample: int | None = None, fix: bool = False, progress: bool = False,
           storage_options: dict[str, Any] | None = None) -> VerifyReport:
    """Check the hierarchy at ``path`` (see the module docstring). ``sample``: read at most
    this many stored chunks per array, chosen at random (metadata, key and consolidated
    checks stay complete); ``progress``: a bar while chunks are read (a widget in Jupyter, stderr in a
    terminal, nothing in a file or pipe)."""
    function = "zarrdask.verify"
    if sample is not None:
        sample = arguments.count(function, "sample", sample)
    progress, fix = arguments.flag(function, "progress", progress), arguments.flag(function, "fix", fix)
    path = (arguments.text(function, "path", path) or "").strip("/")
    s = resolve(function, store, mode="a" if fix else "r", storage_options=storage_options, read=False).store
    try:
        old = read_nodes(s, [path])[0]
    except ZarrdaskError:  # (broken metadata: the walk below reports it)
        old = None
    if old is not None and old.source_format is not None:  # (its keys are not Zarr v2/v3's: every one an orphan)
        raise InvalidModeError(
            f"{function}(): {path or '<root>'!r} in {s!r} is {old.source_format}, which verify does not check (it "
            f"checks Zarr v2 and v3 stores); zarrdask reads it as it is, and zarrdask.migrate(store) writes it as "
            f"Zarr v3, which verify checks (in place; into target=<a new store> for the v3.0 draft and N5)")
    if next(iter(s.list_prefix(path)), None) is None:
        raise NodeNotFoundError(f"no array or group at {path or '<root>'!r} in {s!r}: nothing is stored there")
    report = VerifyReport(s.url)
    nodes = _walk(s, path, report)
    units = []
    for node_path, meta in nodes.items():
        if isinstance(meta, (ArrayMetadataV2, ArrayMetadataV3)):
            units.extend(_array_units(s, node_path, meta, report, sample))
    report.units_checked = len(units)
    if progress:
        with ProgressBar(len(units), "verify", "key") as bar:  # (a chunk or a shard)
            results = run_all(counted(_check_unit, bar), units, None)
    else:
        results = run_all(_check_unit, units, None)
    report.findings.extend(f for f in results if f is not None)
    for group_path, meta in nodes.items():
        if meta.node_type == "group":
            report.findings.extend(_check_consolidated(s, group_path, nodes))
    report.findings.extend(Finding(k, "temporary", "leftover temporary file of an interrupted write")
                           for k in atomic_files(s, path))
    if fix:
        _fix(s, report, nodes)
    report.findings.sort(key=lambda f: (f.key, f.kind))
    return report


def _walk(store: Store, root: str, report: VerifyReport) -> dict[str, NodeMetadata]:
    """Every node below ``root`` by listing (not through consolidated metadata); keys that
    are no node's documents or chunks go to the report as orphans."""
    nodes: dict[str, NodeMetadata] = {}
    pending: list[tuple[str, int | None]] = [(root, None)]
    while pending:
        path, zarr_format = pending.pop()
        values, dirs = store.list_dir(path)
        meta = None
        if any(m in values for m in _MARKERS):
            try:
                meta = read_node(store, path, zarr_format, consolidated=False)
            except MetadataError as exc:
                report.findings.append(Finding(exc.key or join_path(path, _MARKERS[0]), "metadata", _problems(exc)))
                report.findings.extend(_staged(k) for k in store.list_prefix(path) if is_staged(k))
                continue
            except NodeNotFoundError:
                meta = None  # a node of the other format: its keys belong to nothing here
        elif path == root:
            report.findings.append(Finding(join_path(root, "zarr.json"), "metadata",
                                           "no Zarr array or group here (no zarr.json, .zarray or .zgroup)"))
        if meta is not None:
            report.not_strict_json.extend(f"{path or '/'}: {place}" for place in non_finite_places(meta.attributes))
        if meta is not None and meta.node_type == "array":
            nodes[path] = meta
            continue  # its keys are checked with its chunks
        if RECORDS_DIR in dirs:
            dirs = [d for d in dirs if d != RECORDS_DIR]
            _report_records(store, path, report)
        known = _DOCS[meta.zarr_format]["group"] if meta is not None else set()
        report.findings.extend(Finding(join_path(path, v), "orphan", "belongs to no node (not a metadata document "
                                                                       "of a group, nor under an array)")
                               for v in values if v not in known)
        if meta is not None:
            nodes[path] = meta
            zarr_format = meta.zarr_format
        pending.extend((join_path(path, d), zarr_format) for d in reversed(dirs))
    report.nodes = len(nodes)
    return nodes


def _problems(exc: MetadataError) -> str:
    return "; ".join(str(p) for p in exc.problems)


def _array_units(store: Store, path: str, meta: ArrayMetadata, report: VerifyReport,
                 sample: int | None) -> list[_Unit]:
    """The stored units of the array at ``path`` to read; its other keys are orphans."""
    try:
        array = Array(store, path, meta).with_options(threads=1)
    except MetadataError as exc:
        report.findings.append(Finding(exc.key or join_path(path, "zarr.json"), "metadata", _problems(exc)))
        report.findings.extend(_staged(k) for k in store.list_prefix(path) if is_staged(k))
        return []
    report.arrays += 1
    units = array.units
    if not units.carries_checksum:
        report.unverifiable.append(path or "/")
    docs = {join_path(path, d) for d in _DOCS[meta.zarr_format]["array"]}
    stored: list[tuple[str, tuple[int, ...]]] = []
    records = False
    for key in units.store.list_prefix(path):
        coords = units.coords_of(key)
        if coords is not None:
            stored.append((key, coords))
        elif is_staged(key):
            report.findings.append(_staged(key))
        elif is_record(key):
            records = True
        elif key not in docs:
            report.findings.append(Finding(key, "orphan", f"belongs to no chunk of array {path or '/'!r} "
                                                          f"(grid {tuple(a.count for a in array.unit_grid)})"))
    if records:
        _report_records(store, path, report)
    report.units_stored += len(stored)
    stored.sort()
    if sample is not None and sample < len(stored):
        stored = sorted(random.sample(stored, sample))
    return [_Unit(units, key, coords) for key, coords in stored]


def _report_records(store: Store, path: str, report: VerifyReport) -> None:
    """The records at the node ``path`` of write calls that did not finish, as findings."""
    for record in read_records(store, path):
        report.interrupted.append(record)
        report.findings.append(Finding(record.key, "interrupted", record.describe()))


def _staged(key: str) -> Finding:
    return Finding(key, "temporary", "staged piece left by an interrupted Dask write (to_zarr's staging)")


def _check_unit(unit: _Unit) -> Finding | None:
    """Read one stored unit whole through the array's read path."""
    problem = unit.units.check_unit(unit.coords)
    return None if problem is None else Finding(unit.key, "chunk", problem)


def _check_consolidated(store: Store, path: str, nodes: dict[str, NodeMetadata]) -> Iterator[Finding]:
    """Compare the group's consolidated metadata, if any, with the documents in the store."""
    fmt = nodes[path].zarr_format
    key = join_path(path, "zarr.json" if fmt == 3 else ".zmetadata")
    try:
        meta = read_node(store, path, fmt)
    except MetadataError as exc:
        yield Finding(exc.key or key, "consolidated", _problems(exc))
        return
    consolidated: Mapping[str, Any] | None = getattr(meta, "consolidated", None)
    if consolidated is None:
        return
    below = {p[len(path) + 1:] if path else p: m for p, m in nodes.items() if p != path and p.startswith(path)
             and (not path or p.startswith(path + "/"))}
    if fmt == 3:
        copy = {rel: _canonical(m.to_json()) for rel, m in consolidated.items()}
        actual = {rel: _canonical(m.evolve(consolidated=None).to_json() if m.node_type == "group" else m.to_json())
                  for rel, m in below.items()}
    else:
        raw = consolidated
        rels = {k.rsplit("/", 1)[0] if "/" in k else "" for k in raw}
        copy = {}
        for rel in rels:
            try:
                parsed = parse_node_documents(v2_documents_for(raw, rel), rel, 2, consolidated=False)
            except MetadataError as exc:
                yield Finding(key, "consolidated", f"entry {rel or '<root>'!r}: {_problems(exc)}")
                continue
            if parsed is not None:
                copy[rel] = _canonical(_v2_json(parsed))
        if "" not in copy:
            copy[""] = _canonical(_v2_json(nodes[path].evolve(consolidated=None)))  # (optional in .zmetadata)
        actual = {rel: _canonical(_v2_json(m.evolve(consolidated=None) if m.node_type == "group" else m))
                  for rel, m in {"": nodes[path], **below}.items()}
    for entry in sorted(set(copy) | set(actual)):
        if entry not in copy:
            yield Finding(key, "consolidated", f"stale: lacks {entry!r}, which the store has")
        elif entry not in actual:
            yield Finding(key, "consolidated", f"stale: has {entry!r}, which the store does not")
        elif copy[entry] != actual[entry]:
            yield Finding(key, "consolidated", f"stale: {entry!r} differs from the store's document")


def _v2_json(meta: NodeMetadata) -> dict[str, Any]:
    return {name: json.loads(data) for name, data in meta.to_documents().items()}


def _canonical(doc: Any) -> str:
    return json.dumps(doc, sort_keys=True, default=repr, allow_nan=True)


def _fix(store: Store, report: VerifyReport, nodes: Mapping[str, NodeMetadata]) -> None:
    """Remove leftover temporary files and the records of unfinished writes whose rows no
    longer exist; rewrite stale consolidated metadata (deepest first)."""
    temporary = [f for f in report.findings if f.kind == "temporary"]
    store.delete_many([f.key for f in temporary])
    gone = {r.key for r in report.interrupted if _rows_gone(store, r, nodes)}
    obsolete = [f for f in report.findings if f.kind == "interrupted" and f.key in gone]
    store.delete_many(sorted(gone))
    report.interrupted = [r for r in report.interrupted if r.key not in gone]
    stale = [f for f in report.findings if f.kind == "consolidated" and f.problem.startswith("stale")]
    groups = sorted({f.key.rsplit("/", 1)[0] if "/" in f.key else "" for f in stale}, key=len, reverse=True)
    for group in groups:
        consolidate_metadata(store, group)
    report.fixed = temporary + obsolete + stale
    report.findings = [f for f in report.findings if f not in report.fixed]


def _rows_gone(store: Store, record: WriteRecord, nodes: Mapping[str, NodeMetadata]) -> bool:
    """Whether nothing ``record``'s write was writing exists any more: every array of its
    region (an array's bounds at its node, or a Dataset's arrays by path) is shrunk below
    it along some dimension, or deleted. Records of other calls (a copy) never are."""
    region = record.region
    regions = region.items() if isinstance(region, dict) else [(record.node, region)]
    for path, recorded in regions:
        bounds = region_bounds(recorded)
        if bounds is None:
            return False
        meta = nodes.get(path)
        if meta is None and next(iter(store.list_prefix(path)), None) is not None:
            return False  # (keys there, but no array verify could open: not known to be gone)
        if isinstance(meta, (ArrayMetadataV2, ArrayMetadataV3)) and all(
                lo < min(hi, n) for (lo, hi), n in zip(bounds, meta.shape)):
            return False  # (some of its region is still in the array)
    return bool(regions)
