"""The demo (``ci/demo`` / ``python -m zarrdask.demo [DIR]``): write a climate-style
float32 cube (time, lat, lon) as a sharded Zarr v3 array, read it back with and without
Dask, and print its layout, stored size and compression ratio. Local files only."""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np

import zarrdask


def climate_cube(n_time: int = 365, n_lat: int = 180, n_lon: int = 360) -> np.ndarray:
    """A smooth, seasonal temperature field (K) with weather noise, like a daily reanalysis."""
    rng = np.random.default_rng(42)
    t = np.arange(n_time)[:, None, None]
    lat = np.linspace(-89.5, 89.5, n_lat)[None, :, None]
    lon = np.linspace(0.5, 359.5, n_lon)[None, None, :]
    season = 15 * np.cos(2 * np.pi * (t - 200) / 365) * np.sin(np.deg2rad(lat))
    field = 288 - 40 * np.sin(np.deg2rad(lat)) ** 2 + season + 3 * np.cos(np.deg2rad(3 * lon))
    noise = rng.normal(0, 0.5, size=(n_time, n_lat, n_lon))
    return np.round(field + noise, 2).astype("float32")


def run(directory: Path) -> None:
    data = climate_cube()
    path = directory / "temperature.zarr"
    t0 = time.perf_counter()
    array = zarrdask.create_array(
        path, shape=data.shape, dtype="float32", chunks=(73, 45, 90), shards=(73, 90, 180),
        compressors=[{"name": "blosc", "configuration": {"cname": "zstd", "clevel": 5, "shuffle": "bitshuffle"}}],
        dimension_names=["time", "lat", "lon"], fill_value=float("nan"),
        attributes={"units": "K", "long_name": "air temperature at 2 m"}, overwrite=True,
    )
    array[...] = data
    t_write = time.perf_counter() - t0

    t0 = time.perf_counter()
    back = zarrdask.open_array(path)
    values = back[...]
    t_read = time.perf_counter() - t0
    assert np.array_equal(values, data), "round trip changed the data"

    lazy = zarrdask.from_zarr(path)
    mean = float(lazy.mean(dtype="float64").compute())
    stored = back.nbytes_stored()
    print(f"array        : {path}")
    print(f"shape        : {back.shape}  dims {back.dimension_names}  dtype {back.dtype}")
    print(f"chunks/shards: inner chunks {back.chunks}, shards {back.shards}")
    print(f"codecs       : {json.dumps(back.codecs)}")
    print(f"attributes   : {dict(back.attrs)}")
    print(f"logical size : {back.nbytes / 2**20:.1f} MiB")
    print(f"stored size  : {stored / 2**20:.1f} MiB (compression ratio {back.nbytes / stored:.2f}x)")
    print(f"write / read : {t_write:.2f} s / {t_read:.2f} s (bit-exact round trip)")
    print(f"dask mean    : {mean:.3f} K over {lazy.npartitions} shard tasks")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("directory", nargs="?", help="where to write (default: a temporary directory)")
    args = parser.parse_args()
    if args.directory:
        Path(args.directory).mkdir(parents=True, exist_ok=True)
        run(Path(args.directory))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            run(Path(tmp))


if __name__ == "__main__":
    main()
