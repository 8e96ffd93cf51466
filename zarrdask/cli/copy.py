"""``zarrdask copy SRC DST``: rechunk, re-shard, recompress or convert through the Dask layer."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ._common import storage_options


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("copy", help="copy a hierarchy, changing chunks, shards, codecs or the format",
                       description="Reads every array with from_zarr and writes it with to_zarr (one owner task "
                                   "per target shard, so any new chunking is safe), in one Dask graph, on a "
                                   "distributed cluster with --scheduler.")
    p.add_argument("source", metavar="SRC", help="the source store (path or URL)")
    p.add_argument("target", metavar="DST", help="the target store (path or URL)")
    p.add_argument("--path", default="", help="the node of SRC to copy (default: its root)")
    p.add_argument("--chunks", type=_shape, metavar="SPEC",
                   help="new chunks: '10,20,30' (arrays with that many dimensions), '64' (every dimension) or "
                        "'time=10,lat=90' (by dimension name); -1 is a whole dimension (write --chunks=-1)")
    p.add_argument("--shards", type=_shape, metavar="SPEC", help="new shards, as --chunks (v3 only)")
    p.add_argument("--codecs", type=_codecs, metavar="CODECS",
                   help="compressors: names ('zstd', 'gzip,crc32c'), JSON ('[{\"name\": \"blosc\", ...}]') "
                        "or 'none'")
    p.add_argument("--zarr-format", type=int, choices=[2, 3], help="the target format (default: the source's)")
    p.add_argument("--overwrite", action="store_true", help="replace nodes that exist in DST")
    p.add_argument("--scheduler", metavar="ADDRESS", help="a distributed scheduler to run on (tcp://host:port)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(run=run, storage_option=[])


def _shape(text: str) -> Any:
    if "=" in text:
        return {name.strip(): int(size) for name, size in (item.split("=", 1) for item in text.split(","))}
    return tuple(int(s) for s in text.split(","))


def _codecs(text: str) -> Any:
    if text.strip().startswith(("[", "{")):
        return json.loads(text)
    if text == "none":
        return []
    return [name.strip() for name in text.split(",")]


def run(args: argparse.Namespace) -> int:
    from ..tools.copy import copy  # (imports Dask)

    kwargs = dict(path=args.path, chunks=args.chunks, shards=args.shards, compressors=args.codecs,
                  zarr_format=args.zarr_format, overwrite=args.overwrite, progress=not args.no_progress,
                  storage_options=storage_options(args))
    if args.scheduler:
        from distributed import Client

        with Client(args.scheduler) as client:
            node = copy(args.source, args.target, client=client, **kwargs)
    else:
        node = copy(args.source, args.target, **kwargs)
    print(f"copied to {node.store.url} (Zarr v{node.zarr_format})")
    return 0
