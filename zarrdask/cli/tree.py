"""``zarrdask tree PATH``: the hierarchy with shapes and data types."""

from __future__ import annotations

import argparse
from typing import Any

from ..api.openers import open as open_node
from ..nodes.array import Array
from ._common import Subcommands, add_store_arguments, print_json, storage_options


def add_parser(sub: Subcommands) -> None:
    p = sub.add_parser("tree", help="print the hierarchy with shapes and data types",
                       description="The groups and arrays below PATH (through consolidated metadata when present).")
    add_store_arguments(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    node = open_node(args.store, path=args.path or None, storage_options=storage_options(args))
    if args.json:
        print_json(_as_json(node))
    elif isinstance(node, Array):
        print(f"{node.name} {node.shape} {node.dtype}")
    else:
        print(node.tree())
    return 0


def _as_json(node: Any) -> dict[str, Any]:
    if isinstance(node, Array):
        return {"name": node.basename, "node_type": "array", "shape": list(node.shape), "dtype": str(node.dtype)}
    return {"name": node.basename, "node_type": "group", "members": [_as_json(m) for _, m in node.members()]}
