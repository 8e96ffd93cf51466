"""The ``zarrdask`` command line: one module per command, each with ``add_parser`` and ``run``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ..errors import ZarrdaskError
from . import copy, info, migrate, tree, verify

__all__ = ["main"]

COMMANDS = (info, tree, verify, migrate, copy)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="zarrdask", description="Inspect, check, migrate and copy Zarr v2/v3 stores.")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.add_parser(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run a command; its exit code (2 for an error zarrdask reports, with its message)."""
    args = parser().parse_args(argv)
    try:
        return args.run(args)
    except ZarrdaskError as exc:
        print(f"zarrdask {args.command}: error: {exc}", file=sys.stderr)
        return 2
