"""``zarrdask migrate PATH --to 3``: v2 or v1 metadata rewritten as v3 in place (chunks
untouched); a v3.0-draft store or an N5 container copied to ``--target``."""

from __future__ import annotations

import argparse

from ..tools.migrate import migrate
from ._common import Subcommands, add_storage_option, add_store_arguments, print_json, storage_options


def add_parser(sub: Subcommands) -> None:
    p = sub.add_parser("migrate", help="convert Zarr v2 or v1 metadata to v3 in place, without rewriting chunks "
                                             "(a v3.0-draft store or an N5 container: copied to --target)",
                       description="Writes a zarr.json for every node (v2 chunk key encoding, the v2 encoding as "
                                   "a v3 codec chain, _ARRAY_DIMENSIONS as dimension_names, null fill values "
                                   "made valid, attributes and consolidated metadata carried), then removes "
                                   "the v2 documents. A v3.0-draft store is copied to --target chunk by chunk, "
                                   "byte for byte; an N5 container is copied there as plain Zarr v3, every "
                                   "block re-encoded.")
    add_store_arguments(p)
    p.add_argument("--to", type=int, default=3, choices=[3], help="the target format (3)")
    p.add_argument("--dry-run", action="store_true", help="print the new documents, write nothing")
    p.add_argument("--target", default=None,
                   help="an empty store to copy a v3.0-draft store or an N5 container to (their chunks cannot "
                        "stay where they are)")
    add_storage_option(p, "--target-storage-option", of="--target")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    nodes = migrate(args.store, path=args.path, to=args.to, dry_run=args.dry_run,
                    storage_options=storage_options(args), target=args.target,
                    target_storage_options=storage_options(args, "target_storage_option"))
    if args.json or args.dry_run:
        print_json({"dry_run": args.dry_run,
                    "nodes": [{"key": n.key, "document": n.document, "removed": list(n.removed)} for n in nodes]})
    else:
        for n in nodes:
            print(f"{n.key}  (replaces {', '.join(n.removed)})" if n.removed else n.key)
        print(f"migrated {len(nodes)} node(s) to Zarr v3")
    return 0
