"""Shared pytest configuration."""

from __future__ import annotations

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
