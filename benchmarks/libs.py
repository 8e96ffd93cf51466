"""Thin adapters giving zarrdask, zarr-python and TensorStore the same small interface.

Every adapter writes the same layout with the same codec chain:
  unsharded: [bytes(little), zstd(level=1, checksum=false)]
  sharded:   [sharding_indexed(chunk_shape=inner, codecs=[bytes, zstd-1],
              index_codecs=[bytes, crc32c], index_location="end")]
which is zarr-python's default sharding layout, written out explicitly for TensorStore.
Library defaults are kept otherwise (thread pools, concurrency, caches), so each library
runs as a user would get it.

zarrdask is imported lazily: while a piece of its API has not landed, its cells report
"n/a" with the error instead of stopping the run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from harness import TENSORSTORE, ZARR_PYTHON, ZARRDASK, ZARRS

ZSTD1 = {"name": "zstd", "configuration": {"level": 1, "checksum": False}}
BYTES_LE = {"name": "bytes", "configuration": {"endian": "little"}}


@dataclass(frozen=True)
class Layout:
    """``chunks`` is the read chunk (inner chunk when sharded); ``shards`` the shard or None."""

    chunks: tuple[int, ...]
    shards: tuple[int, ...] | None = None

    def v3_codecs(self) -> list[dict]:
        if self.shards is None:
            return [BYTES_LE, ZSTD1]
        return [
            {
                "name": "sharding_indexed",
                "configuration": {
                    "chunk_shape": list(self.chunks),
                    "codecs": [BYTES_LE, ZSTD1],
                    "index_codecs": [BYTES_LE, {"name": "crc32c"}],
                    "index_location": "end",
                },
            }
        ]

    @property
    def grid(self) -> tuple[int, ...]:
        return self.shards if self.shards is not None else self.chunks


class Lib:
    name: str

    def write(self, path: str, data: np.ndarray, layout: Layout) -> None:
        raise NotImplementedError

    def open(self, path: str) -> Any:
        raise NotImplementedError

    def read_all(self, handle: Any) -> np.ndarray:
        raise NotImplementedError

    def read(self, handle: Any, sel: tuple) -> np.ndarray:
        raise NotImplementedError


# --------------------------------------------------------------------------- zarrdask


class ZarrdaskLib(Lib):
    name = ZARRDASK

    @staticmethod
    def module():
        import zarrdask  # noqa: PLC0415 - lazily: it is being written while this harness runs

        return zarrdask

    def write(self, path, data, layout):
        zd = self.module()
        a = zd.create_array(
            path,
            shape=data.shape,
            dtype=data.dtype,
            chunks=layout.chunks,
            shards=layout.shards,
            compressors=[ZSTD1],
            fill_value=0,
            overwrite=True,
        )
        a[...] = data

    def open(self, path):
        return self.module().open_array(path)

    def read_all(self, handle):
        return handle[...]

    def read(self, handle, sel):
        return handle[sel]


# --------------------------------------------------------------------------- zarr-python


class ZarrPythonLib(Lib):
    name = ZARR_PYTHON

    def write(self, path, data, layout, dimension_names=None):
        import zarr
        from zarr.codecs import ZstdCodec

        z = zarr.create_array(
            store=path,
            shape=data.shape,
            dtype=data.dtype,
            chunks=layout.chunks,
            shards=layout.shards,
            compressors=ZstdCodec(level=1, checksum=False),
            fill_value=0,
            overwrite=True,
            dimension_names=dimension_names,
        )
        z[...] = data

    def open(self, path):
        import zarr

        return zarr.open_array(path, mode="r")

    def read_all(self, handle):
        return handle[...]

    def read(self, handle, sel):
        return handle[sel]


class ZarrsLib(ZarrPythonLib):
    """zarr-python with the zarrs codec pipeline (Rust; ``pip install zarrs``). The pipeline
    is chosen when an array is created or opened, so only those steps need the setting."""

    name = ZARRS
    PIPELINE = {"codec_pipeline.path": "zarrs.ZarrsCodecPipeline"}

    def write(self, path, data, layout):
        import zarr

        with zarr.config.set(self.PIPELINE):
            super().write(path, data, layout)

    def open(self, path):
        import zarr

        with zarr.config.set(self.PIPELINE):
            return super().open(path)


# --------------------------------------------------------------------------- TensorStore


def ts_spec(path: str, *, shape=None, layout: Layout | None = None, dtype="float32") -> dict:
    spec: dict = {"driver": "zarr3", "kvstore": {"driver": "file", "path": path}}
    if layout is not None:
        spec["metadata"] = {
            "shape": list(shape),
            "data_type": dtype,
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(layout.grid)}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "codecs": layout.v3_codecs(),
            "fill_value": 0,
        }
    return spec


class TensorStoreLib(Lib):
    name = TENSORSTORE

    def write(self, path, data, layout):
        import tensorstore as ts

        arr = ts.open(
            ts_spec(path, shape=data.shape, layout=layout, dtype=str(data.dtype)),
            create=True,
            delete_existing=True,
        ).result()
        arr.write(data).result()

    def open(self, path):
        import tensorstore as ts

        return ts.open(ts_spec(path), read=True).result()

    def read_all(self, handle):
        return handle.read().result()

    def read(self, handle, sel):
        return handle[sel].read().result()


class TSDaskAdapter:
    """What ``da.from_array`` / ``da.store`` need from a TensorStore (it lacks a numpy dtype)."""

    def __init__(self, arr):
        self.arr = arr
        self.shape = tuple(arr.shape)
        self.dtype = np.dtype(arr.dtype.numpy_dtype)
        self.ndim = len(self.shape)

    def __getitem__(self, sel):
        return self.arr[sel].read().result()

    def __setitem__(self, sel, value):
        self.arr[sel].write(value).result()


LIB_OBJECTS: dict[str, Lib] = {
    ZARRDASK: ZarrdaskLib(),
    ZARR_PYTHON: ZarrPythonLib(),
    ZARRS: ZarrsLib(),
    TENSORSTORE: TensorStoreLib(),
}


def zarrdask_status() -> str:
    """What of zarrdask's API exists right now (for the report)."""
    try:
        import zarrdask as zd
    except Exception as exc:  # noqa: BLE001
        return f"zarrdask not importable: {type(exc).__name__}: {exc}"
    have = [n for n in ("create_array", "open_array", "from_zarr", "to_zarr", "plan_write") if hasattr(zd, n)]
    try:
        import xarray as xr

        engines = xr.backends.list_engines()
        have.append("engine=zarrdask" if "zarrdask" in engines else "(no xarray engine)")
    except Exception:  # noqa: BLE001
        pass
    return "zarrdask provides: " + ", ".join(have)


def preload_zarrdask() -> None:
    """Import every zarrdask layer now, so that commits landing during a long run can't mix
    code versions inside one run (the report names the commit at start)."""
    import importlib

    for mod in ("zarrdask", "zarrdask.dask_io", "zarrdask.xarray_backend.backend"):
        try:
            importlib.import_module(mod)
        except Exception:  # noqa: BLE001 - reported per cell later
            pass
