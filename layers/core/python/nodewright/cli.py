"""The `nodewright` command line: validate, simulate, disrupt, migrate, explain-event, demo, localworld.

Each sub-command lives in its own module and registers itself through `add_parser`, so this file
only wires them together and nothing heavy is imported until a command runs.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from nodewright import __version__

# sub-command name -> module that defines `add_parser(subparsers)`; the parser it adds sets `func`.
COMMANDS: dict[str, str] = {
    "validate": "nodewright.commands.validate",
    "simulate": "nodewright.commands.simulate",
    "disrupt": "nodewright.commands.disrupt",
    "migrate": "nodewright.commands.migrate",
    "explain-event": "nodewright.commands.explain_event",
    "demo": "nodewright.commands.demo",
    "localworld": "nodewright.localworld.cli",
}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser with every sub-command, or with only the sub-command `only` (a key of COMMANDS).

    Registering a sub-command imports its module, and the modules of all of them together take a few hundred
    milliseconds to import; a run of one command needs only its own (its parser, help and errors are the same).
    """
    parser = argparse.ArgumentParser(prog="nodewright", description=__doc__)
    parser.add_argument("--version", action="version", version=f"nodewright {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True)
    for name, module_name in COMMANDS.items():
        if only is None or name == only:
            importlib.import_module(module_name).add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line `argv` (default: the process's arguments); its exit code."""
    return _run(argv)[0]


def _run(argv: Sequence[str] | None) -> tuple[int, argparse.Namespace]:
    argv = list(sys.argv[1:] if argv is None else argv)
    # The sub-command comes first when there is one (`nodewright simulate ...`); anything else (`--help`,
    # `--version`, a mistyped command) gets the full parser, which lists every command.
    parser = build_parser(argv[0] if argv and argv[0] in COMMANDS else None)
    args = parser.parse_args(argv)
    result: int = args.func(args)
    return result, args


def program() -> NoReturn:
    """`nodewright` and `python -m nodewright`: `main()` as the process. A command whose parser sets
    `exit_at_once` (simulate) ends the process as soon as its output is flushed: the interpreter's teardown would
    free, one by one, the millions of objects a large input built (a tenth of `simulate` on 10,000 pods), and such
    a command leaves nothing else to finish (no atexit work, no open files). When flushing fails (a closed pipe),
    Python's own exit reports it."""
    code, args = _run(None)
    if getattr(args, "exit_at_once", False):
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except OSError:
            sys.exit(code)
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    program()
