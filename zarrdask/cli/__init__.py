"""The ``zarrdask`` command line: one module per command, each with ``add_parser`` and ``run``.

Exit codes, for every command: 0 clean, 1 problems found (``verify``), 2 an error (a
missing path, bad arguments, an error zarrdask reports); errors print one line, no traceback.
Output into a pipe closed early (``zarrdask info ... | head``) ends quietly with 141, as
tools killed by SIGPIPE do.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import sys
from collections.abc import Sequence
from typing import NoReturn

from ..api.openers import without_create_hint
from ..errors import ZarrdaskError
from ..keywords import did_you_mean
from . import copy, info, migrate, tree, verify

__all__ = ["main"]

COMMANDS = (info, tree, verify, migrate, copy)
_INVALID_CHOICE = re.compile(r"invalid choice: '([^']*)'")


class _Parser(argparse.ArgumentParser):
    """argparse, adding the nearest command name to an unknown one."""

    #: the commands' names (set once they are added)
    command_names: tuple[str, ...] = ()

    def error(self, message: str) -> NoReturn:
        found = _INVALID_CHOICE.search(message)
        if found and self.command_names:
            message += did_you_mean(found.group(1), list(self.command_names))
        super().error(message)


def parser() -> argparse.ArgumentParser:
    from .. import __version__

    p = _Parser(prog="zarrdask", description="Inspect, check, migrate and copy Zarr v2/v3 stores. Exit codes: 0 "
                                             "clean, 1 problems found, 2 an error.")
    p.add_argument("--version", action="version", version=f"zarrdask {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=argparse.ArgumentParser)
    for command in COMMANDS:
        command.add_parser(sub)
    p.command_names = tuple(sub.choices)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run a command; its exit code (2 for an error, printed as one line on stderr)."""
    try:
        args = parser().parse_args(argv)
    except SystemExit as exit_:  # (argparse: --help and --version exit 0, bad arguments 2)
        return exit_.code if isinstance(exit_.code, int) else 2
    try:
        code: int = args.run(args)
        sys.stdout.flush()  # a closed pipe is found here, not at exit
        return code
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the exit's flush writes nowhere
        return 128 + signal.SIGPIPE
    except (ZarrdaskError, OSError) as exc:
        print(f"zarrdask {args.command}: error: {without_create_hint(str(exc))}", file=sys.stderr)
        return 2
