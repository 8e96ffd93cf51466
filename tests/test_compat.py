"""The private dask and xarray APIs zarrdask uses (``zarrdask/compat/``) still work on
the installed releases: these tests call the private paths directly, so a release that
breaks one fails here loudly instead of silently taking the fallback."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np

import zarrdask
from zarrdask.compat import dask as dask_compat
from zarrdask.storage import MemoryStore


def test_dask_private_from_array_serves_the_installed_dask(tmp_path):
    """With query planning on, the private FromArray subclass keys blocks by zarrdask's name."""
    script = textwrap.dedent(f"""
        import numpy as np, dask, dask.array as da
        assert da.array_expr_enabled()
        import zarrdask
        from zarrdask.compat.dask import private_from_array, CHECKED_ON
        from zarrdask.core.block_reader import BlockReader
        a = zarrdask.create_array({str(tmp_path / "a.zarr")!r}, shape=(10, 6), dtype="i4", chunks=(4, 3))
        a[...] = np.arange(60).reshape(10, 6)
        x = private_from_array(BlockReader(a), ((4, 4, 2), (3, 3)), "zarrdask-read-test", lock=False,
                               asarray=False, fancy=False, inline_array=True, meta=np.empty((0, 0), "i4"))
        assert x.name == "zarrdask-read-test", (x.name, dask.__version__, CHECKED_ON)
        assert np.array_equal(x.compute(), np.arange(60).reshape(10, 6))
        print("ok", dask.__version__)
    """)
    env = {**os.environ, "DASK_ARRAY__QUERY_PLANNING": "True"}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "ok" in out.stdout, (
        f"dask's private FromArray path broke (checked on {dask_compat.CHECKED_ON}): {out.stderr[-2000:]}")


def test_dask_fallback_reads_the_same(monkeypatch):
    def broken(*args, **kwargs):
        raise TypeError("a future dask")

    monkeypatch.setattr(dask_compat, "private_from_array", broken)
    monkeypatch.setattr(dask_compat.da, "array_expr_enabled", lambda: True)
    a = zarrdask.create_array(MemoryStore(), shape=(8,), dtype="u1", chunks=(4,))
    a[...] = np.arange(8)
    from zarrdask.core.block_reader import BlockReader

    x = dask_compat.named_from_array(BlockReader(a), ((4, 4),), "zarrdask-read-x", lock=False, asarray=False,
                                     fancy=False, inline_array=True, meta=np.empty((0,), "u1"))
    assert np.array_equal(x.compute(), np.arange(8))
