"""The `nodewright` command line: validate, simulate, disrupt, migrate, explain-event, demo, localworld.

Each sub-command lives in its own module and registers itself through `add_parser`, so this file
only wires them together and nothing heavy is imported until a command runs.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="nodewright", description=__doc__)
    parser.add_argument("--version", action="version", version=f"nodewright {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True)
    for module_name in COMMANDS.values():
        importlib.import_module(module_name).add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    result: int = args.func(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
