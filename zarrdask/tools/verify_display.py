"""How a ``verify`` report reads to people: a short text (``repr``) and an HTML display
for Jupyter (a verdict in the header, counts, findings by kind, the write calls that did
not finish, what was fixed). The report stays plain data; its ``__repr__`` and
``_repr_html_`` call these functions."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Protocol

from ..display.kit import Fact, document, esc, fact_table, rows_table, section

__all__ = ["STRICT_JSON_NOTE", "report_html", "report_text"]

#: Findings a report's text lists; its HTML lists up to ``HTML_FINDINGS`` per section.
TEXT_FINDINGS = 10
HTML_FINDINGS = 500


class Finding(Protocol):
    """``verify.Finding``: the key, its kind and what is wrong."""

    @property
    def key(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def problem(self) -> str: ...


class Record(Protocol):
    """``storage.records.WriteRecord``: a write call that did not finish."""

    @property
    def key(self) -> str: ...
    @property
    def call(self) -> str: ...
    @property
    def started(self) -> str: ...
    @property
    def host(self) -> str: ...
    @property
    def pid(self) -> int: ...
    @property
    def region(self) -> object: ...
    @property
    def units(self) -> int | None: ...
    @property
    def nbytes(self) -> int: ...
    @property
    def version(self) -> str: ...


class Report(Protocol):
    """What the display reads of ``verify.VerifyReport``."""

    @property
    def store(self) -> str: ...
    @property
    def nodes(self) -> int: ...
    @property
    def arrays(self) -> int: ...
    @property
    def units_stored(self) -> int: ...
    @property
    def units_checked(self) -> int: ...
    @property
    def findings(self) -> Sequence[Finding]: ...
    @property
    def fixed(self) -> Sequence[Finding]: ...
    @property
    def unverifiable(self) -> Sequence[str]: ...
    @property
    def not_strict_json(self) -> Sequence[str]: ...
    @property
    def interrupted(self) -> Sequence[Record]: ...
    @property
    def ok(self) -> bool: ...


#: what the attribute values listed in ``not_strict_json`` mean for other readers
STRICT_JSON_NOTE = ("NaN or Infinity in attributes (read by zarrdask and zarr-python; TensorStore, zarrs and browsers "
                "refuse the document: store None or a string where they read it)")


def _verdict(report: Report) -> str:
    n = len(report.findings)
    return "ok" if report.ok else f"{n} problem{'s' if n != 1 else ''}"


def report_text(report: Report) -> str:
    """The verdict and counts, then the first findings, fixes and unverifiable arrays."""
    lines = [f"VerifyReport: {_verdict(report)}: {report.store}",
             f"  {report.nodes} nodes, {report.arrays} arrays, {report.units_checked} of {report.units_stored} "
             "stored units read"]
    lines.extend(f"  {f.key or '<root>'}: {f.kind}: {f.problem}" for f in report.findings[:TEXT_FINDINGS])
    if len(report.findings) > TEXT_FINDINGS:
        lines.append(f"  ... and {len(report.findings) - TEXT_FINDINGS} more findings")
    if report.interrupted:
        calls = ", ".join(f"{r.call} ({r.started})" for r in report.interrupted[:TEXT_FINDINGS])
        lines.append(f"  interrupted writes: {len(report.interrupted)}: {calls}")
    if report.fixed:
        lines.append(f"  fixed: {len(report.fixed)} ({', '.join(sorted({f.kind for f in report.fixed}))})")
    if report.unverifiable:
        lines.append(f"  no checksum, verified by decoding only: {', '.join(report.unverifiable)}")
    if report.not_strict_json:
        lines.append(f"  {STRICT_JSON_NOTE}: {', '.join(report.not_strict_json)}")
    return "\n".join(lines)


def _findings_table(findings: Sequence[Finding]) -> str:
    rows = ((f.key or "<root>", f.kind, f.problem) for f in findings[:HTML_FINDINGS])
    return rows_table(("key", "kind", "problem"), rows, total=len(findings))


def report_html(report: Report) -> str:
    """The report as a display: verdict in the header, then its sections."""
    facts = fact_table((
        Fact("Store", report.store),
        Fact("Nodes", str(report.nodes)),
        Fact("Arrays", str(report.arrays)),
        Fact("Stored units read", f"{report.units_checked} of {report.units_stored}"),
    ))
    kinds = sorted({f.kind for f in report.findings})
    body = section("Summary", facts)
    if report.findings:
        body += section("Findings", _findings_table(report.findings), count=len(report.findings),
                        preview=", ".join(kinds))
    if report.interrupted:
        rows = ((r.key, r.call, r.started, f"{r.host} / {r.pid}", json.dumps(r.region),
                 "" if r.units is None else str(r.units), f"{r.nbytes:,}", r.version)
                for r in report.interrupted[:HTML_FINDINGS])
        table = rows_table(("record", "call", "started", "host / pid", "region", "units planned", "bytes planned",
                            "zarrdask"), rows, total=len(report.interrupted))
        body += section("Interrupted writes", table, count=len(report.interrupted),
                        preview="run the same call again to complete each")
    if report.fixed:
        body += section("Fixed", _findings_table(report.fixed), count=len(report.fixed), open=False)
    if report.unverifiable:
        listed = "".join(f"<li>{esc(path)}</li>" for path in report.unverifiable)
        body += section("No checksum: verified by decoding only", f"<ul>{listed}</ul>",
                        count=len(report.unverifiable), open=False)
    if report.not_strict_json:
        listed = "".join(f"<li>{esc(place)}</li>" for place in report.not_strict_json)
        body += section("NaN or Infinity in attributes", f"<p>{esc(STRICT_JSON_NOTE)}</p><ul>{listed}</ul>",
                        count=len(report.not_strict_json), open=False)
    css = "zd-good" if report.ok else "zd-bad"
    verdict = f"<span class='zd-note {css}' data-verdict='{'ok' if report.ok else 'problems'}'>{esc(_verdict(report))}</span>"
    return document("zarrdask VerifyReport", report.store, report_text(report), body, header_extra=verdict)
