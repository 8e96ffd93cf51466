"""What the commands share: the store arguments and JSON output."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Protocol


class Subcommands(Protocol):
    """Where a command adds its parser (what ``ArgumentParser.add_subparsers`` returns)."""

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser: ...


def add_store_arguments(p: argparse.ArgumentParser, *, json_output: bool = True) -> None:
    p.add_argument("store", metavar="PATH", help="a local path or URL of the store (s3://, memory://, .zip, ...)")
    p.add_argument("--path", default="", help="the node inside the store (default: its root)")
    add_storage_option(p)
    if json_output:
        p.add_argument("--json", action="store_true", help="print JSON instead of text")


def add_storage_option(p: argparse.ArgumentParser, flag: str = "--storage-option", of: str = "") -> None:
    """A repeatable ``KEY=VALUE`` fsspec storage option (of ``of``: the source, the target)."""
    p.add_argument(flag, action="append", default=[], metavar="KEY=VALUE", type=_key_value,
                   help=f"an fsspec storage option{' of ' + of if of else ''} (JSON values), repeatable")


def _key_value(text: str) -> tuple[str, Any]:
    """An argparse type: ``KEY=VALUE``, the value JSON when it parses, else a string (argparse
    reports anything else, exit 2, before a store is opened)."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE (e.g. --storage-option anon=true), got {text!r}")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


def storage_options(args: argparse.Namespace, name: str = "storage_option") -> dict[str, Any] | None:
    """The ``--storage-option KEY=VALUE`` pairs (or those of the option ``name``) as a dict
    (None: none given)."""
    return dict(getattr(args, name)) or None


def count(text: str) -> int:
    """An argparse type: an integer, 0 or more (argparse reports anything else, exit 2)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected 0 or more, got {value}")
    return value


def print_json(doc: Any) -> None:
    json.dump(doc, sys.stdout, indent=2, default=str, allow_nan=True)
    sys.stdout.write("\n")
