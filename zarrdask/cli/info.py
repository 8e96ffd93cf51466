"""``zarrdask info PATH``: an array's (or every array's of a group) metadata and storage."""

from __future__ import annotations

import argparse

from ..api.openers import open as open_node
from ..nodes.array import Array
from ..display.describe import NodeInfo
from ..nodes.group import Group
from ._common import Subcommands, add_store_arguments, print_json, storage_options


def add_parser(sub: Subcommands) -> None:
    p = sub.add_parser("info", help="describe an array, or a group and every array below it",
                       description="Format, shape, data type, chunks and shards, codecs, dimension names, fill "
                                   "value, chunks and shards stored of those possible, bytes stored and the "
                                   "compression ratio. Lists the keys (and reads shard indexes); reads no chunk.")
    add_store_arguments(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    node = open_node(args.store, path=args.path or None, storage_options=storage_options(args))
    tables: dict[str, NodeInfo] = {}
    if isinstance(node, Group):
        tables[node.name] = node.info
        tables.update(_arrays_below(node))
    else:
        tables[node.name] = node.info_complete()
    if args.json:
        print_json({name: table.to_json() for name, table in tables.items()})
    else:
        print("\n\n".join(str(table) for table in tables.values()))
    return 0


def _arrays_below(group: Group) -> dict[str, NodeInfo]:
    out = {}
    for _, member in group.members():
        if isinstance(member, Array):
            out[member.name] = member.info_complete()
        else:
            out.update(_arrays_below(member))
    return out
