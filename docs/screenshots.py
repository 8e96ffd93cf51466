"""Screenshots of zarrdask's Jupyter displays in headless Chromium, light and dark.

Builds a small sharded array (dimension names, attributes), a group with nested groups, a
read plan, a write plan and a verify report in a temporary directory; writes each
display's HTML into a page styled as JupyterLab's light or dark theme (its ``--jp-*``
variables); and photographs the display in headless Chromium through Playwright:
``docs/screenshots/<name>-<theme>.png`` (and the pages, ``.html``, with ``--keep-html``);
``group-opened-<theme>.png`` is the group after a click on its first subgroup.

Needs Playwright (``pip install playwright``) and a Chromium: Playwright's own
(``playwright install chromium``) or one on the system (``$CHROMIUM``, or
``chromium-headless-shell`` / ``chromium`` / ``google-chrome`` on the PATH). Without them
it says so and exits with status 1.

    python docs/screenshots.py [--out docs/screenshots] [--width 1200] [--keep-html]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

import dask.array as da
import numpy as np

import zarrdask

THEMES = {
    "light": {"background": "#ffffff", "light": "true", "vars": {
        "--jp-content-font-color0": "rgba(0, 0, 0, 1)", "--jp-content-font-color2": "rgba(0, 0, 0, 0.54)",
        "--jp-border-color2": "#e0e0e0", "--jp-layout-color0": "#ffffff", "--jp-layout-color2": "#eeeeee"}},
    "dark": {"background": "#111111", "light": "false", "vars": {
        "--jp-content-font-color0": "rgba(255, 255, 255, 1)", "--jp-content-font-color2": "rgba(255, 255, 255, 0.54)",
        "--jp-border-color2": "#424242", "--jp-layout-color0": "#111111", "--jp-layout-color2": "#2b2b2b"}},
}


def displays(root: Path) -> dict[str, str]:
    """The HTML of each display, by name."""
    temperature = zarrdask.create_array(
        root / "climate.zarr", shape=(365, 181, 360), dtype="float32", chunks=(30, 46, 90),
        shards=(120, 92, 180), dimension_names=("time", "lat", "lon"),
        attributes={"long_name": "air temperature at 2 m", "units": "K", "standard_name": "air_temperature",
                    "source": "synthetic <demo> data", "valid_range": [180.0, 340.0]})
    temperature[:120] = np.full((120, 181, 360), 288.0, dtype="float32")
    group = zarrdask.open_group(root / "project.zarr", mode="w", attributes={"title": "a survey", "version": 3})
    for site in ("north", "south"):
        sub = group.create_group(site, attributes={"site": site})
        sub.create_array("depth", shape=(500,), dtype="float64", chunks=(100,), dimension_names=("z",))
        raw = sub.create_group("raw")
        for k in range(3):
            raw.create_array(f"scan_{k}", shape=(64, 64, 8), dtype="uint16", chunks=(32, 32, 8),
                             dimension_names=("y", "x", "band"))
    group.create_array("index", shape=(2, 500), dtype="int32", chunks=(1, 500), dimension_names=("site", "z"))
    read_plan = zarrdask.plan_read(temperature, (slice(100, 140), slice(0, 90), slice(None)))
    write_plan = zarrdask.plan_write(da.zeros((365, 181, 360), chunks=(73, 181, 180), dtype="float32"), temperature)
    (root / "climate.zarr" / "c" / "stray").write_bytes(b"left by hand")
    report = zarrdask.verify(root / "climate.zarr")
    return {"array": temperature._repr_html_(), "group": group._repr_html_(), "read-plan": read_plan._repr_html_(),
            "write-plan": write_plan._repr_html_(), "verify-report": report._repr_html_()}


def page(display: str, theme: str) -> str:
    """A page styled as JupyterLab's theme around one display."""
    spec = THEMES[theme]
    variables = "".join(f"{k}: {v};" for k, v in spec["vars"].items())  # type: ignore[union-attr]
    return (f"<!doctype html><html><head><meta charset='utf-8'><style>:root {{ {variables} }} "
            f"body {{ background: {spec['background']}; color: var(--jp-content-font-color0); margin: 16px; "
            "font-family: system-ui, sans-serif; }}</style></head>"
            f"<body data-jp-theme-light='{spec['light']}'><div id='out'>{display}</div></body></html>")


def _chromium() -> str | None:
    """A system Chromium for Playwright (None: Playwright's own)."""
    if os.environ.get("CHROMIUM"):
        return os.environ["CHROMIUM"]
    for name in ("chromium-headless-shell", "chromium", "chromium-browser", "google-chrome"):
        if found := shutil.which(name):
            return found
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "screenshots")
    parser.add_argument("--width", type=int, default=1200, help="viewport width in CSS pixels")
    parser.add_argument("--keep-html", action="store_true", help="also write each page as .html")
    args = parser.parse_args()
    try:
        from playwright.sync_api import Error, sync_playwright
    except ImportError:
        print("screenshots: Playwright is not installed (pip install playwright); no screenshot taken",
              file=sys.stderr)
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        shown = displays(Path(tmp))
    with sync_playwright() as p:
        try:
            browser = p.chromium.launch(executable_path=_chromium())
        except Error as exc:
            print(f"screenshots: no Chromium could be started ({exc.message.splitlines()[0]}); install one with "
                  "'playwright install chromium' or set $CHROMIUM", file=sys.stderr)
            return 1
        for theme in THEMES:
            context = browser.new_context(viewport={"width": args.width, "height": 800}, color_scheme=theme)
            tab = context.new_page()
            for name, display in shown.items():
                html = page(display, theme)
                if args.keep_html:
                    (args.out / f"{name}-{theme}.html").write_text(html, encoding="utf-8")
                tab.set_content(html)
                target = args.out / f"{name}-{theme}.png"
                tab.locator("#out").screenshot(path=str(target))
                print(f"{target} ({target.stat().st_size // 1024} kB)")
                if name == "group":  # a click on a folded subgroup opens it (no script: a checkbox)
                    tab.locator("li[data-node='group'] > label").first.click()
                    target = args.out / f"{name}-opened-{theme}.png"
                    tab.locator("#out").screenshot(path=str(target))
                    print(f"{target} ({target.stat().st_size // 1024} kB)")
            context.close()
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
