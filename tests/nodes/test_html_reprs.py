"""The Jupyter displays of arrays, groups, plans and verify reports, read back with the
standard library's HTML parser (no browser): their sections fold with a checkbox and its
label, names, dimension names and attributes are shown and escaped, the codec chain is
shown once, a group's first level is open and its subgroups folded, the colours follow
the notebook's theme, and the text reprs are short."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import dask.array as da
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrdask
from zarrdask.display import html as node_html
from zarrdask.display.describe import codec_summary
from zarrdask.display.kit import STYLE, short_json

HOSTILE = "<script>alert('x')</script>&amp;\"q\""
VOID = {"input", "br", "img", "meta", "hr", "wbr", "col", "area", "base", "embed", "link", "source", "track"}
SVG_VOID = {"polygon", "polyline", "line", "rect", "path", "circle"}


@dataclass
class Element:
    tag: str
    attrs: dict[str, str]
    children: list[Element | str] = field(default_factory=list)

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def walk(self):
        yield self
        for c in self.children:
            if isinstance(c, Element):
                yield from c.walk()

    def find_all(self, tag: str | None = None, **attrs: str) -> list[Element]:
        return [e for e in self.walk() if (tag is None or e.tag == tag)
                and all(e.attrs.get(k.replace("_", "-")) == v for k, v in attrs.items())]

    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    def with_class(self, name: str) -> list[Element]:
        return [e for e in self.walk() if name in e.classes()]


class TreeBuilder(HTMLParser):
    """The document as a tree of elements; fails on a closing tag that closes nothing open."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("#root", {})
        self.stack = [self.root]

    def handle_starttag(self, tag, attrs):
        element = Element(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(element)
        if tag not in VOID:
            self.stack.append(element)

    def handle_startendtag(self, tag, attrs):
        self.stack[-1].children.append(Element(tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag):
        assert tag in [e.tag for e in self.stack], f"</{tag}> closes nothing open"
        while self.stack[-1].tag != tag:
            opened = self.stack.pop()
            assert opened.tag in SVG_VOID, f"<{opened.tag}> left open before </{tag}>"
        self.stack.pop()

    def handle_data(self, data):
        self.stack[-1].children.append(data)


def parse(page: str) -> Element:
    builder = TreeBuilder()
    builder.feed(page)
    builder.close()
    assert builder.stack == [builder.root], f"unclosed: {[e.tag for e in builder.stack[1:]]}"
    (wrap,) = builder.root.find_all("div", **{"class": "zd-wrap"})
    return wrap


def visible(wrap: Element) -> Element:
    """The display without its stylesheet and its hidden text fallback."""
    return Element(wrap.tag, wrap.attrs, [c for c in wrap.children if not (
        isinstance(c, Element) and (c.tag == "style" or "zd-fallback" in c.classes()))])


def sections(wrap: Element) -> dict[str, Element]:
    return {s.attrs["data-section"]: s for s in wrap.with_class("zd-section")}


def is_open(block: Element) -> bool:
    """A folding block: its checkbox, the label for it, the body after it."""
    box, label, body = [c for c in block.children if isinstance(c, Element)][:3]
    assert box.tag == "input" and box.attrs["type"] == "checkbox" and "zd-toggle" in box.classes()
    assert label.tag == "label" and label.attrs["for"] == box.attrs["id"]
    assert "zd-body" in body.classes()
    return "checked" in box.attrs


@pytest.fixture
def climate(tmp_path: Path) -> zarrdask.Array:
    a = zarrdask.create_array(tmp_path / "c.zarr", shape=(40, 18, 36), dtype="f4", chunks=(10, 9, 9),
                              shards=(20, 18, 18), dimension_names=("time", "lat", HOSTILE),
                              attributes={"units": "K", HOSTILE: HOSTILE, "range": [1, 2]})
    a[:20] = np.ones((20, 18, 36), dtype="f4")
    return a


def test_array_sections_names_and_attributes(climate: zarrdask.Array) -> None:
    wrap = parse(climate._repr_html_())
    assert wrap.attrs["data-kind"] == "zarrdask.Array"
    shown = sections(wrap)
    assert list(shown) == ["Metadata", "Codecs", "Attributes", "Storage"]
    assert [is_open(s) for s in shown.values()] == [True, False, True, True]
    assert len({i.attrs["id"] for i in wrap.find_all("input")}) == len(wrap.find_all("input"))
    # dimension names: in the header and on the drawn axes of both figures
    (dims,) = wrap.find_all("ul", **{"class": "zd-dims"})
    assert [li.text() for li in dims.find_all("li")] == ["time: 40", "lat: 18", f"{HOSTILE}: 36"]
    figures = wrap.find_all("figure")
    assert len(figures) == 2
    assert [t.text() for t in figures[0].find_all("text")] == [f"{HOSTILE}: 36", "lat: 18", "time: 40"]
    assert [t.text() for t in figures[1].find_all("text")] == [f"{HOSTILE}: 18", "lat: 18", "time: 20"]
    assert "shards (20, 18, 18)" in figures[0].text() and "chunks (10, 9, 9)" in figures[1].text()
    # attributes shown, each value as JSON
    attrs = shown["Attributes"]
    assert [dt.text() for dt in attrs.find_all("dt")] == ["units", HOSTILE, "range"]
    assert [dd.text() for dd in attrs.find_all("dd")] == ['"K"', json.dumps(HOSTILE), "[1, 2]"]
    # what is stored, counted (a local store, few units)
    facts = {tr.find_all("th")[0].text(): tr.find_all("td")[0].text() for tr in shown["Storage"].find_all("tr")}
    assert facts["Chunks stored"] == "16 of 32" and facts["Shards stored"] == "2 of 4"


def test_codec_chain_shown_once(climate: zarrdask.Array) -> None:
    wrap = visible(parse(climate._repr_html_()))
    chain = codec_summary(climate.codecs)
    assert chain == "sharding_indexed[bytes > zstd; index: bytes > crc32c]"
    assert wrap.text().count(chain) == 1
    codecs = sections(wrap)["Codecs"]
    assert chain in codecs.find_all("label")[0].text()
    rows = [tr.find_all("th")[0].text().strip() for tr in codecs.find_all("tr")]
    assert rows == ["sharding_indexed", "chunk: bytes", "chunk: zstd", "index: bytes", "index: crc32c"]
    assert "Codecs" not in [tr.find_all("th")[0].text() for tr in sections(wrap)["Metadata"].find_all("tr")]


def test_nothing_user_given_becomes_markup(climate: zarrdask.Array, tmp_path: Path) -> None:
    group = zarrdask.open_group(tmp_path / "g.zarr", mode="w", attributes={HOSTILE: HOSTILE})
    group.create_group(HOSTILE).create_array(HOSTILE, shape=(3,), dtype="i1", chunks=(3,))
    for page in (climate._repr_html_(), group._repr_html_()):
        wrap = parse(page)
        assert not wrap.find_all("script") and HOSTILE in wrap.text()
        assert {e.tag for e in wrap.walk()} <= {"div", "style", "pre", "span", "ul", "li", "b", "input", "label",
                                               "table", "tr", "th", "td", "dl", "dt", "dd", "figure", "figcaption",
                                               "svg", "g", "polygon", "polyline", "text"}


def test_one_dimensional_array_has_one_axis(tmp_path: Path) -> None:
    a = zarrdask.create_array(tmp_path / "x.zarr", shape=(1000,), dtype="i2", chunks=(10,))
    wrap = parse(a._repr_html_())
    (figure,) = wrap.find_all("figure")
    assert [t.text() for t in figure.find_all("text")] == ["axis 0: 1000"]
    assert "some grid lines left out" in figure.text()  # 99 boundaries, at most 24 drawn
    assert len(figure.find_all("polyline")) == 24


def test_storage_not_counted_when_costly(climate: zarrdask.Array, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(node_html, "CHEAP_UNITS", 3)
    storage = sections(parse(climate._repr_html_()))["Storage"]
    assert not is_open(storage) and "not counted for 4 stored units" in storage.text()
    assert not storage.find_all("table")


def test_group_first_level_open_rest_folded(tmp_path: Path) -> None:
    root = zarrdask.open_group(tmp_path / "h.zarr", mode="w", attributes={"title": "survey"})
    north = root.create_group("north")
    north.create_group("raw").create_array("scan", shape=(4, 4), dtype="u2", chunks=(2, 2),
                                           dimension_names=("y", "x"))
    north.create_array("depth", shape=(5,), dtype="f8", chunks=(5,))
    root.create_array("index", shape=(2,), dtype="i4", chunks=(2,))
    wrap = parse(root._repr_html_())
    shown = sections(wrap)
    assert list(shown) == ["Members", "Attributes", "Metadata"]
    members = shown["Members"]
    assert is_open(members) and "(2)" in members.find_all("label")[0].text()
    top = [li for li in members.find_all("li") if "/" not in li.attrs.get("data-member", "/")]
    assert [li.attrs["data-member"] for li in members.find_all("ul")[0].children] == ["index", "north"]
    assert [(li.attrs["data-member"], li.attrs["data-node"]) for li in top] == [("index", "array"), ("north", "group")]
    groups = {li.attrs["data-member"]: li for li in members.find_all("li", data_node="group")}
    assert set(groups) == {"north", "north/raw"}
    assert not any(is_open(li) for li in groups.values())  # every subgroup folded, open on click
    # nested members sit inside their group's folded body
    below = [li.attrs["data-member"] for li in groups["north"].find_all("li") if "data-member" in li.attrs]
    assert below == ["north", "north/depth", "north/raw", "north/raw/scan"]
    scan = groups["north/raw"].find_all("li", data_member="north/raw/scan")[0]
    assert scan.text() == "scany: 4x: 4uint16"  # (parentheses and commas are drawn by the stylesheet)
    assert [dt.text() for dt in shown["Attributes"].find_all("dt")] == ["title"]
    assert "north/raw/scan" not in wrap.find_all("pre")[0].text()  # the fallback indents instead
    assert "        scan (4, 4) uint16" in wrap.find_all("pre")[0].text()


def test_theme_aware_colours(climate: zarrdask.Array) -> None:
    for variable in ("--jp-content-font-color0", "--pst-color-text-base", "--vscode-editor-foreground",
                     "--jp-border-color2"):
        assert variable in STYLE
    for selector in ('html[data-theme="dark"]', 'body[data-jp-theme-light="false"]', "body.vscode-dark"):
        assert selector in STYLE
    page = climate._repr_html_()
    svg = "".join(s for s in page.split("<svg")[1:])
    assert "currentColor" in svg
    for fixed in ("rgb(0,0,0)", "black", "#000", "stroke:rgb"):
        assert fixed not in svg


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(attributes=st.dictionaries(st.text(min_size=1, max_size=12),
                                  st.one_of(st.text(max_size=30), st.integers(), st.lists(st.booleans(), max_size=3)),
                                  max_size=6))
def test_any_attributes_read_back(tmp_path: Path, attributes: dict) -> None:
    a = zarrdask.create_array(tmp_path / "h.zarr", shape=(2,), dtype="u1", chunks=(2,), attributes=attributes,
                              overwrite=True)
    section = sections(parse(a._repr_html_()))["Attributes"]
    assert [dt.text() for dt in section.find_all("dt")] == list(attributes)
    assert [dd.text() for dd in section.find_all("dd")] == [short_json(v) for v in attributes.values()]
    assert f"({len(attributes)})" in section.find_all("label")[0].text()


def test_read_plan_reprs(climate: zarrdask.Array) -> None:
    plan = zarrdask.plan_read(climate, (slice(5, 25), slice(None), slice(0, 9)))
    s = plan.summary()
    text = repr(plan).splitlines()
    assert text[0] == (f"ReadPlan: {s.units} stored values ({s.whole_gets} whole GETs, {s.ranged_units} through "
                       f"their shard index), {s.chunks} chunks decoded")
    assert len(text) == 1 + min(len(plan.units), 5) + (len(plan.units) > 5)
    wrap = parse(plan._repr_html_())
    shown = sections(wrap)
    assert list(shown) == ["Summary", "Stored values"]
    rows = shown["Stored values"].find_all("tbody")[0].find_all("tr")
    assert [r.find_all("td")[0].text() for r in rows] == [u.key for u in plan.units]
    assert [int(r.find_all("td")[2].text()) for r in rows] == [len(u.chunks) for u in plan.units]


def test_write_plan_reprs(climate: zarrdask.Array) -> None:
    summary = zarrdask.plan_write(da.zeros((40, 18, 36), chunks=(10, 18, 36), dtype="f4"), climate)
    text = repr(summary)
    assert text.startswith(f"WritePlanSummary: {summary.write_tasks} tasks write {summary.units_written} units")
    assert len(text.splitlines()) == 4
    wrap = parse(summary._repr_html_())
    facts = {tr.find_all("th")[0].text(): tr.find_all("td")[0].text() for tr in wrap.find_all("tr")}
    assert facts["Write tasks"] == str(summary.write_tasks)
    assert facts["Read-modify-written"] == str(summary.read_modify_writes)
    assert facts["Bytes written"].endswith(f"({summary.bytes_written})")
    assert facts["Cut blocks"] == text.splitlines()[2].strip()  # the text's third line, as a fact
    (status,) = [e for e in wrap.with_class("zd-note")]
    assert ("zd-good" in status.classes()) == summary.aligned


def test_verify_report_reprs(climate: zarrdask.Array, tmp_path: Path) -> None:
    clean = zarrdask.verify(tmp_path / "c.zarr")
    assert repr(clean).startswith("VerifyReport: ok: ")
    wrap = parse(clean._repr_html_())
    assert wrap.find_all("span", data_verdict="ok") and "Findings" not in sections(wrap)
    (tmp_path / "c.zarr" / "c" / HOSTILE.replace("/", "_")).write_bytes(b"x")
    report = zarrdask.verify(tmp_path / "c.zarr")
    assert repr(report).splitlines()[0] == f"VerifyReport: 1 problem: {report.store}"
    wrap = parse(report._repr_html_())
    assert wrap.find_all("span", data_verdict="problems")
    findings = sections(wrap)["Findings"]
    assert is_open(findings)
    (row,) = findings.find_all("tbody")[0].find_all("tr")
    assert [td.text() for td in row.find_all("td")] == [report.findings[0].key, "orphan", report.findings[0].problem]
    assert not wrap.find_all("script")


def test_info_table_display(climate: zarrdask.Array) -> None:
    info = climate.info_complete()
    wrap = parse(info._repr_html_())
    assert wrap.find_all("pre")[0].text() == str(info)
    facts = {tr.find_all("th")[0].text(): tr.find_all("td")[0].text() for tr in wrap.find_all("tr")}
    assert facts == {row.label: row.text for row in info.rows}
