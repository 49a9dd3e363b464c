"""The ``tidewater`` command line: the single wiring point from user commands to jobs/services.

Each command group lives in ``tidewater/commands/<group>.py`` and exposes ``register(sub)``.
Errors a user can fix are printed as one line (``tidewater: ...``) with exit status 2 (or their
``EXIT_CODE``, see ``lakehouse.errors``).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import NoReturn

from lakehouse.errors import TidewaterError

COMMAND_MODULES = (
    "tidewater.commands.stack",      # setup, up, down, status, config show
    "tidewater.commands.produce",    # produce
    "tidewater.commands.speed",      # speed start|stop|status|run
    "tidewater.commands.layers",     # batch, replay, reconcile, sql
    "tidewater.commands.beeline",    # beeline (Hive JDBC shell on the Thrift server)
    "tidewater.commands.quality",    # check
    "tidewater.commands.maintenance",  # maintenance
    "tidewater.commands.bench",      # bench
)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, with the fix
        self.exit(2, f"tidewater: {message} (see 'tidewater {self.prog.split(' ', 1)[-1]} --help')\n"
                  if " " in self.prog else f"tidewater: {message} (see 'tidewater --help')\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="tidewater", description="Tidewater: exact streaming numbers on Kafka, Spark and Delta.")
    parser.add_argument("--config", help="path of tidewater.yml (default: ./tidewater.yml or $TIDEWATER_CONFIG)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for name in COMMAND_MODULES:  # every group, or an ImportError: a command never vanishes silently
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        result = args.handler(args)
    except TidewaterError as exc:  # one line; exit 2 or the class's own code (NothingToDo 3, TopicMissing 4)
        print(f"tidewater: {exc}", file=sys.stderr)
        return exc.EXIT_CODE
    except KeyboardInterrupt:
        print("tidewater: interrupted", file=sys.stderr)
        return 130
    return int(result or 0)


if __name__ == "__main__":
    sys.exit(main())
