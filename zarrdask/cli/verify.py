"""``zarrdask verify PATH``: an fsck; exit code 0 only when nothing is wrong."""

from __future__ import annotations

import argparse

from ..tools.verify import verify
from ..tools.verify_display import STRICT_JSON_NOTE
from ._common import Subcommands, add_store_arguments, count, print_json, storage_options


def add_parser(sub: Subcommands) -> None:
    p = sub.add_parser("verify", help="check metadata, every chunk and shard, and stray keys (an fsck)",
                       description="Checks that every metadata document is valid, that every stored chunk and "
                                   "shard decodes (crc32c checksums, shard index entries inside their "
                                   "shard), reports keys that belong to no chunk, leftover temporary files "
                                   "and stale consolidated metadata. Arrays whose chunks carry no checksum "
                                   "(crc32c, zstd with checksum, gzip, ...) are listed as not verifiable beyond "
                                   "decoding: a flipped byte that still decodes cannot be seen there. Exit code 0 "
                                   "when clean, 1 when something is wrong (each bad key is named with why), 2 on an "
                                   "error (such as a missing path).")
    add_store_arguments(p)
    p.add_argument("--sample", type=count, metavar="N", help="read at most N stored chunks per array, chosen at random")
    p.add_argument("--fix", action="store_true",
                   help="remove leftover temporary files and the records of unfinished writes whose rows no "
                        "longer exist, and rewrite stale consolidated metadata (run it while nothing writes to "
                        "the store)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar (drawn on stderr only when it is a terminal)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    report = verify(args.store, path=args.path, sample=args.sample, fix=args.fix,
                    progress=not (args.no_progress or args.json), storage_options=storage_options(args))
    if args.json:
        print_json(report.to_json())
    else:
        for finding in report.fixed:
            print(f"fixed: {finding}")
        for finding in report.findings:
            print(finding)
        state = "OK" if report.ok else f"{len(report.findings)} problem(s)"
        print(f"{state}: {report.nodes} node(s), {report.arrays} array(s), {report.units_checked} of "
              f"{report.units_stored} stored chunk(s)/shard(s) read")
        if report.unverifiable:
            print(f"not verifiable beyond decoding: {len(report.unverifiable)} array(s) whose chunks carry no "
                  f"checksum (a flipped byte that still decodes cannot be seen): {', '.join(report.unverifiable)}")
        if report.not_strict_json:
            print(f"{STRICT_JSON_NOTE}: {', '.join(report.not_strict_json)}")
    return 0 if report.ok else 1
