"""Shared pytest configuration."""

from __future__ import annotations

from pathlib import Path

import pytest


def pytest_configure(config: pytest.Config) -> None:
    # Markers used by xarray's own backend test-suite, reused in tests/xarray/test_xarray_compat.py.
    for name in ("asyncio", "flaky", "network", "skip_if_param", "skip_with_dask_array"):
        config.addinivalue_line("markers", f"{name}: used by xarray's test-suite (tests/xarray/test_xarray_compat.py)")


# One moto S3 server for the whole session (moto's state is process-wide).
from _s3 import s3_endpoint, s3_url  # noqa: E402, F401


@pytest.fixture(scope="module", autouse=True)
def _end_command_line_processes():
    """The processes a test module ran its command lines in (tests/_cli.py) end with it."""
    yield
    from _cli import CliProcess

    CliProcess.close_all()


_CHECKOUT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module", autouse=True)
def _leave_the_checkout_as_found(request: pytest.FixtureRequest):
    """A test writes under tmp_path: a module that leaves a new entry in the checkout's root fails
    (a drawn relative path once wrote stores into the working directory, and they got committed)."""
    before = set(p.name for p in _CHECKOUT.iterdir())
    yield
    new = sorted(set(p.name for p in _CHECKOUT.iterdir()) - before - {".hypothesis", ".pytest_cache", "dask-worker-space"})
    assert not new, f"{request.module.__name__} left {new!r} in {_CHECKOUT}: write under tmp_path"


@pytest.fixture
def frozen_heap():
    """The objects alive before the test are left out of garbage collections during it. The
    benchmark harness collects before every call it times; in a session that has built up a
    large heap each full collection took 0.1-0.5 s, most of a scaled-down benchmark's time."""
    import gc

    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
