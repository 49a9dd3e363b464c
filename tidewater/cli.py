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

from infra.job_service import client as job_client
from lakehouse.errors import TidewaterError

COMMAND_MODULES = (
    "tidewater.commands.stack",      # setup, up, down, status, config show
    "tidewater.commands.produce",    # produce
    "tidewater.commands.speed",      # speed start|stop|status|run
    "tidewater.commands.batch",      # batch
    "tidewater.commands.layers",     # serving, replay, reconcile, sql
    "tidewater.commands.beeline",    # beeline (Hive JDBC shell on the Thrift server)
    "tidewater.commands.quality",    # check
    "tidewater.commands.maintenance",  # maintenance
    "tidewater.commands.whatif",     # whatif
)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, with the fix
        self.exit(2, f"tidewater: {message} (see 'tidewater {self.prog.split(' ', 1)[-1]} --help')\n"
                  if " " in self.prog else f"tidewater: {message} (see 'tidewater --help')\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="tidewater", description="Tidewater: exact streaming numbers on Kafka, Spark and Delta.")
    parser.add_argument("--config", help="path of tidewater.yml (default: ./tidewater.yml or $TIDEWATER_CONFIG)")
    parser.add_argument("--local", action="store_true",
                        help="run a Spark command in this process, not in the job service (or TIDEWATER_LOCAL=1)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for name in COMMAND_MODULES:  # every group, or an ImportError: a command never vanishes silently
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """The ``tidewater`` command: a Spark-bound command goes to the job service when one runs for this
    configuration (infra/job_service/client.py), anything else (or ``--local``) runs here."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        parser = build_parser()  # lists the pipelines: a bad $TIDEWATER_PIPELINES fails here
    except TidewaterError as exc:
        print(f"tidewater: {exc}", file=sys.stderr)
        return exc.EXIT_CODE
    args = parser.parse_args(argv)
    if job_client.wants_service(args):
        try:
            if getattr(args, "precheck", None) is not None:  # Spark-free checks before the round trip
                args.precheck(args)
            forwarded = job_client.forward(argv, args)
        except TidewaterError as exc:
            print(f"tidewater: {exc}", file=sys.stderr)
            return exc.EXIT_CODE
        if forwarded is not None:
            return forwarded
    return _handle(args)


def run(argv: list[str]) -> int:
    """Parse and run ``argv`` in this process: the job service's dispatch (never forwards)."""
    return _handle(build_parser().parse_args(argv))


def _handle(args: argparse.Namespace) -> int:
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
