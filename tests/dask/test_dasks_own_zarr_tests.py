"""dask's own zarr tests (``dask/array/tests/test_array_core.py -k zarr``, as installed)
with zarrdask's ``to_zarr`` / ``from_zarr`` in dask's place: every test passes except
those that check what zarrdask does differently by design, each listed with its reason in
the README's "coming from" section."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: dask's test -> the design difference it checks (README, "Coming from dask")
DIFFERENCES = {
    "test_zarr_sharding_roundtrip[chunks0-shards0]": "one task per shard",
    "test_zarr_sharding_roundtrip[chunks1-shards1]": "one task per shard",
    "test_zarr_inline_array[False]": "a reader in the graph",
    "test_zarr_irregular_chunks[shape0-chunks0-True]": "no rechunk of irregular chunks",
    "test_zarr_irregular_chunks[shape1-chunks1-True]": "no rechunk of irregular chunks",
    "test_zarr_irregular_chunks[shape4-chunks4-True]": "no rechunk of irregular chunks",
    "test_compute_chunk_sizes_warning_fixes_to_zarr": "no rechunk of irregular chunks",
    "test_zarr_risky_shards_warns": "no risk warnings",
    "test_zarr_regions": "no risk warnings",
}


def test_dasks_zarr_tests_fail_only_on_the_documented_differences(tmp_path):
    pytest.importorskip("dask.array.tests.test_array_core")
    report = tmp_path / "report.xml"
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "--pyargs", "dask.array.tests.test_array_core", "-k", "zarr", "-q",
         "-p", "_dask_swap", "-p", "no:cacheprovider", f"--junitxml={report}", "-W", "ignore"],
        capture_output=True, text=True, cwd=tmp_path, timeout=600,
        env={**__import__("os").environ, "PYTHONPATH": str(ROOT / "tests")})
    cases = ET.parse(report).getroot().iter("testcase")
    outcome = {case.get("name"): ("failed" if case.find("failure") is not None or case.find("error") is not None
                                  else "skipped" if case.find("skipped") is not None else "passed") for case in cases}
    assert len(outcome) >= 30, run.stdout[-2000:]
    failed = {name for name, result in outcome.items() if result == "failed"}
    assert failed == set(DIFFERENCES), (sorted(failed ^ set(DIFFERENCES)), run.stdout[-3000:])
    assert {"test_zarr_nocompute", "test_zarr_to_zarr_shards[None]"} <= {n for n, r in outcome.items() if r == "passed"}
    readme = (ROOT / "README.md").read_text()
    for reason in set(DIFFERENCES.values()):
        assert reason in readme, reason
