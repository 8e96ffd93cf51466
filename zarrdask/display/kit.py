"""The building blocks of every zarrdask display in Jupyter: one stylesheet, collapsible
sections, fact tables and attribute lists, as HTML strings.

Pure code (no I/O, no JavaScript). It sits in ``plan/`` so that the plan records, the core
nodes and the tools' reports, all above it, draw with the same parts. The style follows
xarray's repr: colours come from the notebook's theme (JupyterLab's ``--jp-*`` variables,
PyData Sphinx's ``--pst-*``, VS Code's ``--vscode-*``) and otherwise from the surrounding
text colour (``currentColor``), so a display is readable on light and dark pages alike;
sections fold with a hidden checkbox and its label. The plain-text repr rides along in a
``<pre>`` that the stylesheet hides: a notebook that strips styles (untrusted) shows it.
Every string that comes from a user (names, keys, attribute values) is escaped here.
"""

from __future__ import annotations

import html
import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

__all__ = ["Fact", "STYLE", "attributes_list", "document", "esc", "fact_table", "format_bytes", "rows_table",
           "section", "short_json", "toggle"]

#: The stylesheet, sent once with each display (a notebook keeps no state between cells).
STYLE = """
.zd-wrap {
  --zd-fg: var(--jp-content-font-color0, var(--pst-color-text-base, var(--vscode-editor-foreground, currentColor)));
  --zd-fg2: var(--jp-content-font-color2, var(--pst-color-text-muted, var(--vscode-descriptionForeground, currentColor)));
  --zd-border: var(--jp-border-color2, var(--pst-color-border, var(--vscode-editorWidget-border, rgba(128,128,128,.45))));
  --zd-row: var(--jp-layout-color2, var(--pst-color-surface, rgba(128,128,128,.10)));
  --zd-fill: rgba(236,177,114,.55);
  --zd-good: #2e7d32;
  --zd-bad: #c62828;
  color: var(--zd-fg);
  font-size: 13px;
  line-height: 1.5;
  max-width: 980px;
  min-width: 280px;
}
html[theme="dark"] .zd-wrap, html[data-theme="dark"] .zd-wrap, body[data-theme="dark"] .zd-wrap,
body[data-jp-theme-light="false"] .zd-wrap, body.vscode-dark .zd-wrap {
  --zd-good: #7bc67e;
  --zd-bad: #ff7b72;
}
.zd-fallback { display: none; }
.zd-header { padding: 4px 0; border-bottom: 1px solid var(--zd-border); margin-bottom: 4px; }
.zd-type { color: var(--zd-fg2); margin-right: .6em; }
.zd-title { font-weight: 600; margin-right: .6em; }
.zd-note { color: var(--zd-fg2); margin-left: .6em; }
.zd-dims { display: inline; list-style: none; padding: 0; margin: 0 .6em 0 0; }
.zd-dims li { display: inline; }
.zd-dims:before { content: "("; }
.zd-dims:after { content: ")"; }
.zd-dims li:not(:last-child):after { content: ", "; }
.zd-dims b { font-weight: 600; }
.zd-main { display: flex; flex-wrap: wrap; gap: 8px 24px; align-items: flex-start; }
.zd-sections { flex: 1 1 380px; min-width: 0; max-width: 640px; }
.zd-figures { flex: 0 0 auto; display: flex; flex-direction: column; gap: 8px; }
.zd-figures figure { margin: 0; }
.zd-figures figcaption { color: var(--zd-fg2); font-size: 12px; max-width: 230px; }
.zd-figures svg { color: var(--zd-fg); overflow: visible; }
.zd-section { border-top: 1px solid var(--zd-border); }
.zd-header + .zd-section, .zd-sections > .zd-section:first-child { border-top: none; }
.zd-wrap > .zd-section, .zd-wrap > .zd-empty { max-width: 760px; }
.zd-toggle { position: absolute; opacity: 0; width: 0; height: 0; margin: 0; }
.zd-toggle + label { display: block; cursor: pointer; padding: 3px 0; color: var(--zd-fg2); font-weight: 600; }
.zd-toggle + label:hover { color: var(--zd-fg); }
.zd-toggle:focus-visible + label { outline: auto; }
.zd-toggle + label:before { content: "\\25BA"; display: inline-block; width: 1.3em; font-size: 10px; }
.zd-toggle:checked + label:before { content: "\\25BC"; }
.zd-toggle + label .zd-count, .zd-toggle + label .zd-preview { font-weight: normal; margin-left: .5em; }
.zd-toggle + label .zd-preview { color: var(--zd-fg); font-family: var(--jp-code-font-family, monospace); }
.zd-toggle ~ .zd-body { display: none; }
.zd-toggle:checked ~ .zd-body { display: block; }
.zd-body { padding: 0 0 6px 1.3em; }
.zd-wrap table { border-collapse: collapse; margin: 0; width: 100%; table-layout: auto; }
.zd-wrap table th, .zd-wrap table td {
  text-align: left; vertical-align: top; padding: 1px 10px 1px 4px; border: none;
  overflow-wrap: anywhere; color: var(--zd-fg); background: transparent;
}
.zd-wrap table th { font-weight: normal; color: var(--zd-fg2); white-space: nowrap; width: 1%; }
.zd-wrap table tr:nth-child(odd) { background: var(--zd-row); }
.zd-wrap table.zd-rows thead th { width: auto; font-weight: 600; border-bottom: 1px solid var(--zd-border); }
.zd-wrap table.zd-rows thead tr { background: transparent; }
dl.zd-attrs { display: grid; grid-template-columns: minmax(6em, max-content) 1fr; gap: 1px 12px; margin: 0; }
dl.zd-attrs dt { color: var(--zd-fg2); overflow: hidden; text-overflow: ellipsis; white-space: nowrap; max-width: 16em; }
dl.zd-attrs dd { margin: 0; white-space: pre-wrap; overflow-wrap: anywhere; font-family: var(--jp-code-font-family, monospace); }
.zd-empty { color: var(--zd-fg2); font-style: italic; }
.zd-good { color: var(--zd-good); font-weight: 600; }
.zd-bad { color: var(--zd-bad); font-weight: 600; }
ul.zd-tree { list-style: none; margin: 0; padding: 0 0 0 1.1em; border-left: 1px solid var(--zd-border); }
.zd-section > .zd-body > ul.zd-tree { border-left: none; padding-left: 0; }
ul.zd-tree > li { position: relative; }
ul.zd-tree > li > label { padding: 1px 0; font-weight: normal; color: var(--zd-fg); }
.zd-leaf { display: block; padding: 1px 0 1px 1.3em; }
.zd-leaf .zd-dims, .zd-node-note { color: var(--zd-fg2); margin-left: .4em; }
code.zd-code { font-family: var(--jp-code-font-family, monospace); overflow-wrap: anywhere; }
"""


class Fact(NamedTuple):
    """One row of a fact table: a label and its value as people read it."""

    label: str
    text: str


def esc(value: object) -> str:
    """Any value as escaped HTML text (quotes included: it may land in an attribute)."""
    return html.escape(str(value), quote=True)


def short_json(value: Any, limit: int = 400) -> str:
    """``value`` as compact JSON (``repr`` for what JSON cannot hold), cut at ``limit``
    characters with an ellipsis: a display must stay readable whatever an attribute holds."""
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=True)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def format_bytes(n: int) -> str:
    """``n`` bytes in binary units, as dask writes them (``1.50 MiB``)."""
    for unit, size in (("PiB", 2**50), ("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("kiB", 2**10)):
        if n >= size * 0.9:
            return f"{n / size:.2f} {unit}"
    return f"{n} B"


def fact_table(facts: Iterable[Fact]) -> str:
    """Label / value rows as a two-column table."""
    rows = "".join(f"<tr><th>{esc(f.label)}</th><td>{esc(f.text)}</td></tr>" for f in facts)
    return f"<table>{rows}</table>"


def rows_table(columns: Sequence[str], rows: Iterable[Sequence[object]], *, total: int | None = None) -> str:
    """A table with a header row; ``total``: how many rows there are, when only some are
    given (the table then says how many were left out)."""
    head = "".join(f"<th>{esc(c)}</th>" for c in columns)
    body = [("<tr>" + "".join(f"<td>{esc(v)}</td>" for v in row) + "</tr>") for row in rows]
    more = ""
    if total is not None and total > len(body):
        more = f"<div class='zd-empty'>and {total - len(body)} more</div>"
    return f"<table class='zd-rows'><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>{more}"


def attributes_list(attributes: Mapping[str, Any]) -> str:
    """Attributes as a definition list of names and their JSON values."""
    if not attributes:
        return "<div class='zd-empty'>no attributes</div>"
    items = "".join(f"<dt title='{esc(key)}'>{esc(key)}</dt><dd>{esc(short_json(value))}</dd>"
                    for key, value in attributes.items())
    return f"<dl class='zd-attrs'>{items}</dl>"


def toggle(label_html: str, body_html: str, *, open: bool, kind: str = "section") -> str:
    """A checkbox, its label and the body it shows when checked (the caller escapes
    ``label_html``; ``kind`` names the block for styles and tests)."""
    ident = f"zd-{uuid.uuid4().hex}"
    checked = " checked" if open else ""
    return (f"<input type='checkbox' class='zd-toggle' id='{ident}'{checked} data-kind='{esc(kind)}'>"
            f"<label for='{ident}'>{label_html}</label><div class='zd-body'>{body_html}</div>")


def section(title: str, body_html: str, *, open: bool = True, count: int | None = None,
            preview: str = "") -> str:
    """A titled section that folds on click; ``count`` and the one-line ``preview`` stay
    on its label, so a folded section still says what it holds."""
    label = esc(title)
    if count is not None:
        label += f"<span class='zd-count'>({count})</span>"
    if preview:
        label += f"<span class='zd-preview'>{esc(preview)}</span>"
    return f"<div class='zd-section' data-section='{esc(title)}'>{toggle(label, body_html, open=open)}</div>"


def document(kind: str, title: str, text: str, body_html: str, *, header_extra: str = "") -> str:
    """A whole display: the stylesheet, the hidden text fallback, a header naming the
    object (``kind`` and its escaped ``title``) and the body."""
    return (f"<div class='zd-wrap' data-kind='{esc(kind)}'><style>{STYLE}</style>"
            f"<pre class='zd-fallback'>{esc(text)}</pre>"
            f"<div class='zd-header'><span class='zd-type'>{esc(kind)}</span>"
            f"<span class='zd-title'>{esc(title)}</span>{header_extra}</div>{body_html}</div>")
