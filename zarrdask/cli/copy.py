"""``zarrdask copy SRC DST``: copy a hierarchy as it is, or rechunk, re-shard, recompress or
convert it; every option applies or is an error, and ``--dry-run`` shows the plan."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ._common import Subcommands, add_storage_option, print_json, storage_options


def add_parser(sub: Subcommands) -> None:
    p = sub.add_parser("copy", help="copy a hierarchy as it is, or change its chunks, shards, codecs or format",
                       description="By default DST is SRC: every metadata document and every stored chunk or "
                                   "shard, byte for byte. --chunks, --shards, --codecs and --zarr-format change "
                                   "only what they name; arrays whose chunks change are read with from_zarr and "
                                   "written with to_zarr in one Dask graph (on a cluster with --scheduler). Shards "
                                   "must be multiples of the chunks; new chunks on a sharded array keep its "
                                   "shards when they divide them, else pass --shards (or --shards none). DST must "
                                   "be empty unless --overwrite. Exit code 0 when copied, 2 on an error (nothing "
                                   "is written when an option does not apply).")
    p.add_argument("source", metavar="SRC", help="the source store (path or URL)")
    p.add_argument("target", metavar="DST", help="the target store (path or URL); must be empty")
    p.add_argument("--path", default="", help="the node of SRC to copy (default: its root)")
    add_storage_option(p, of="SRC")
    add_storage_option(p, "--target-storage-option", of="DST")
    p.add_argument("--chunks", type=_shape, metavar="SPEC", default=argparse.SUPPRESS,
                   help="new chunks: '10,20,30' (arrays with that many dimensions), '64' (every dimension) or "
                        "'time=10,lat=90' (by dimension name); -1 is a whole dimension (write --chunks=-1)")
    p.add_argument("--shards", type=_shards, metavar="SPEC", default=argparse.SUPPRESS,
                   help="new shards, as --chunks, or 'none' for no sharding (Zarr v3 only)")
    p.add_argument("--codecs", type=_codecs, metavar="CODECS", default=argparse.SUPPRESS,
                   help="new compressors (the bytes->bytes codecs; filters and serializer are kept): names "
                        "('zstd', 'zstd,crc32c'), JSON ('[{\"name\": \"blosc\", ...}]') or 'none'")
    p.add_argument("--zarr-format", type=int, choices=[2, 3], help="the target format (default: the source's)")
    p.add_argument("--overwrite", action="store_true", help="replace the contents of DST")
    p.add_argument("--dry-run", action="store_true",
                   help="print the plan (each array's layout, stored chunks/shards and bytes before and after), "
                        "write nothing")
    p.add_argument("--json", action="store_true", help="the plan (--dry-run) or the copied arrays as JSON")
    p.add_argument("--scheduler", metavar="ADDRESS", help="a distributed scheduler to run on (tcp://host:port)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar (drawn on stderr only when it is a terminal; none with --json either)")
    p.set_defaults(run=run)


def _sizes(text: str) -> list[int]:
    try:
        return [int(s) for s in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected sizes like '10,20' or names like 'time=10', got {text!r}") from None


def _shape(text: str) -> Any:
    if "=" not in text:
        return tuple(_sizes(text))
    items = [item.split("=", 1) for item in text.split(",")]
    return {name.strip(): size for (name, _), size in zip(items, _sizes(",".join(v for _, v in items)))}


def _shards(text: str) -> Any:
    return None if text == "none" else _shape(text)


def _codecs(text: str) -> Any:
    if text.strip().startswith(("[", "{")):
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise argparse.ArgumentTypeError(f"not valid JSON ({exc}): {text!r}") from None
    if text == "none":
        return None
    return [name.strip() for name in text.split(",")]


def run(args: argparse.Namespace) -> int:
    from ..tools.copy import KEEP, copy  # (imports Dask)

    kwargs = dict(path=args.path, zarr_format=args.zarr_format, overwrite=args.overwrite, dry_run=args.dry_run,
                  progress=not (args.no_progress or args.json), storage_options=storage_options(args),
                  target_storage_options=storage_options(args, "target_storage_option"),
                  chunks=getattr(args, "chunks", KEEP), shards=getattr(args, "shards", KEEP),
                  compressors=getattr(args, "codecs", KEEP))
    if args.scheduler:
        from distributed import Client

        with Client(args.scheduler) as client:
            result = copy(args.source, args.target, client=client, **kwargs)
    else:
        result = copy(args.source, args.target, **kwargs)
    if args.json:
        print_json(result.to_json() if args.dry_run else {"target": result.store.url,
                                                          "zarr_format": result.zarr_format})
    elif args.dry_run:
        print(result)
        print("dry run: nothing written")
    else:
        print(f"copied to {result.store.url} (Zarr v{result.zarr_format})")
    return 0
