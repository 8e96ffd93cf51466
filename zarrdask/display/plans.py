"""How a read plan and a write plan's summary read to people: a few lines of text
(``repr``) and an HTML display for Jupyter. The records stay plain data; their
``__repr__`` and ``_repr_html_`` call these functions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from .kit import Fact, document, fact_table, format_bytes, rows_table, section

__all__ = ["read_plan_html", "read_plan_text", "write_summary_html", "write_summary_text"]

class UnitRead(Protocol):
    """What the display reads of one stored value of a read (``fetch_plan.UnitRead``)."""

    @property
    def key(self) -> str: ...
    @property
    def whole(self) -> bool: ...
    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def chunks(self) -> Sequence[object]: ...


class ReadCounts(Protocol):
    """``fetch_plan.ReadPlanSummary``."""

    @property
    def units(self) -> int: ...
    @property
    def whole_gets(self) -> int: ...
    @property
    def ranged_units(self) -> int: ...
    @property
    def chunks(self) -> int: ...


class ReadPlan(Protocol):
    """What the display reads of a read plan (``fetch_plan.ReadPlan``; this module sits
    beside it and imports none of the records, which call it)."""

    @property
    def units(self) -> Sequence[UnitRead]: ...
    def summary(self) -> ReadCounts: ...


class CutPieces(Protocol):
    """How cut blocks reach a write's tasks (``write_plan.Pieces``)."""

    @property
    def cut(self) -> bool: ...
    @property
    def staged(self) -> bool: ...
    @property
    def waiting_bytes(self) -> int: ...


class WritePlanSummary(Protocol):
    """What the display reads of ``write_plan.WritePlanSummary``."""

    @property
    def write_tasks(self) -> int: ...
    @property
    def units_written(self) -> int: ...
    @property
    def full_writes(self) -> int: ...
    @property
    def read_modify_writes(self) -> int: ...
    @property
    def source_blocks(self) -> int: ...
    @property
    def max_blocks_per_task(self) -> int: ...
    @property
    def mean_blocks_per_task(self) -> float: ...
    @property
    def max_task_bytes(self) -> int: ...
    @property
    def bytes_written(self) -> int: ...
    @property
    def bytes_read(self) -> int: ...
    @property
    def aligned(self) -> bool: ...
    @property
    def pieces(self) -> CutPieces: ...
    @property
    def max_units_per_task(self) -> int: ...
    @property
    def median_units_per_task(self) -> int: ...
    @property
    def task_bytes(self) -> int | None: ...


#: Stored values a read plan's text lists; its HTML lists up to ``HTML_UNITS``.
TEXT_UNITS = 5
HTML_UNITS = 200


def _fetch(unit: UnitRead) -> str:
    return "whole" if unit.whole else "ranged (index, then byte ranges)"


def _headline(plan: ReadPlan) -> str:
    s = plan.summary()
    return (f"{s.units} stored values ({s.whole_gets} whole GETs, {s.ranged_units} through their shard index), "
            f"{s.chunks} chunks decoded")


def read_plan_text(plan: ReadPlan) -> str:
    """The plan's counts and its first stored values, one line each."""
    lines = [f"ReadPlan: {_headline(plan)}"]
    lines.extend(f"  {u.key}  {_fetch(u)}, {len(u.chunks)} chunks -> {u.shape}" for u in plan.units[:TEXT_UNITS])
    if len(plan.units) > TEXT_UNITS:
        lines.append(f"  ... and {len(plan.units) - TEXT_UNITS} more")
    return "\n".join(lines)


def read_plan_html(plan: ReadPlan) -> str:
    """The plan's counts and a table of the stored values it touches."""
    s = plan.summary()
    facts = fact_table((
        Fact("Stored values touched", str(s.units)),
        Fact("Fetched whole (one GET)", str(s.whole_gets)),
        Fact("Fetched through the shard index", str(s.ranged_units)),
        Fact("Chunks decoded", str(s.chunks)),
    ))
    rows = ((u.key, _fetch(u), len(u.chunks), u.shape) for u in plan.units[:HTML_UNITS])
    table = rows_table(("key", "fetch", "chunks", "part of the result"), rows, total=len(plan.units))
    body = (section("Summary", facts)
            + section("Stored values", table, open=len(plan.units) <= 20, count=len(plan.units)))
    return document("zarrdask ReadPlan", f"{s.units} stored values", read_plan_text(plan), body)


def _grouping(s: WritePlanSummary) -> str:
    """How units are grouped into tasks: units per task, the largest task and the target."""
    target = "no target: one per owned run of units" if s.task_bytes is None else f"target {format_bytes(s.task_bytes)}"
    return (f"units per task: at most {s.max_units_per_task}, median {s.median_units_per_task}; "
            f"largest task {format_bytes(s.max_task_bytes)} ({target})")


def _pieces(s: WritePlanSummary) -> str:
    """How the blocks that cut units reach the write tasks."""
    p = s.pieces
    if s.aligned or not s.write_tasks:
        return "no cut blocks"
    if not p.cut:
        return "cut blocks read whole by each task (blocks under 16 MiB)"  # write_plan.CUT_BYTES (no import: a cycle)
    if p.staged:
        return (f"cut blocks' pieces staged in the store (else {format_bytes(p.waiting_bytes)} would wait in memory "
                "for the next block row)")
    return f"cut blocks' pieces wait in memory for the next block row (up to {format_bytes(p.waiting_bytes)})"


def write_summary_text(summary: WritePlanSummary) -> str:
    """What a write will do, in four lines."""
    s = summary
    aligned = "source blocks aligned to the units" if s.aligned else "source blocks not aligned to the units"
    return (f"WritePlanSummary: {s.write_tasks} tasks write {s.units_written} units ({s.full_writes} whole, "
            f"{s.read_modify_writes} read-modify-written); {aligned}\n"
            f"  {s.source_blocks} source blocks (at most {s.max_blocks_per_task}, mean {s.mean_blocks_per_task:.2f} "
            f"per task); {_grouping(s)}\n"
            f"  {_pieces(s)}\n"
            f"  {format_bytes(s.bytes_written)} written, {format_bytes(s.bytes_read)} read back "
            "(uncompressed estimates)")


def write_summary_html(summary: WritePlanSummary) -> str:
    """The summary's counts and estimates as a table, its alignment in the header."""
    s = summary
    facts = fact_table((
        Fact("Write tasks", str(s.write_tasks)),
        Fact("Units written (one key each)", str(s.units_written)),
        Fact("Written whole", str(s.full_writes)),
        Fact("Read-modify-written", str(s.read_modify_writes)),
        Fact("Source blocks", str(s.source_blocks)),
        Fact("Source blocks per task", f"at most {s.max_blocks_per_task}, mean {s.mean_blocks_per_task:.2f}"),
        Fact("Largest task buffer", format_bytes(s.max_task_bytes)),
        Fact("Task size target", "none: one task per owned run of units" if s.task_bytes is None
             else f"{format_bytes(s.task_bytes)} ({s.task_bytes})"),
        Fact("Units per task", f"at most {s.max_units_per_task}, median {s.median_units_per_task}"),
        Fact("Cut blocks", _pieces(s)),
        Fact("Bytes written", f"{format_bytes(s.bytes_written)} ({s.bytes_written})"),
        Fact("Bytes read back", f"{format_bytes(s.bytes_read)} ({s.bytes_read})"),
    ))
    status = ("<span class='zd-note zd-good'>aligned</span>" if s.aligned
              else "<span class='zd-note zd-bad'>not aligned: tasks gather pieces of several blocks</span>")
    body = section("Plan", facts) + ("<div class='zd-empty'>byte counts are uncompressed estimates</div>")
    title = f"{s.write_tasks} tasks, {s.units_written} units"
    return document("zarrdask WritePlanSummary", title, write_summary_text(s), body, header_extra=status)

