"""An isolated benchmark stack: own temp data folder and free ports, real metastore + Kafka; and how a
benchmark command stops it on SIGTERM and reports bad input.

The environment variables are exported so every subprocess (speed job, baseline job, CLI
commands) sees the same stack; they are restored and the services stopped on exit.
"""

from __future__ import annotations

import functools
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from lakehouse.config import TidewaterConfig, load_config
from lakehouse.errors import TidewaterError
from tidewater.isolated_stack import isolated_env, running_stack

REPO = Path(__file__).resolve().parent.parent


@contextmanager
def isolated_stack(keep: bool = False) -> Iterator[TidewaterConfig]:
    """The shared isolated stack (tidewater/isolated_stack.py) in lambda mode, for one benchmark run."""
    with isolated_env("tidewater-bench-", {"TIDEWATER_MODE": "lambda"}, keep=keep), running_stack(load_config()) as cfg:
        yield cfg



def stop_stack_on_term(command: str) -> None:
    """SIGTERM ends ``command`` as Ctrl-C does: its ``finally`` blocks stop its isolated stack (brokers,
    metastore, jobs) and delete its temp folder, instead of leaving them running."""
    def stop(signum: int, _frame: object) -> None:
        raise SystemExit(f"tidewater: {command} stopped by signal {signum}")

    signal.signal(signal.SIGTERM, stop)


def one_line_errors(main: Callable[[list[str] | None], int]) -> Callable[..., int]:
    """A benchmark command's ``main`` that reports a ``TidewaterError`` as one ``tidewater: ...`` line with
    the error's exit code, as the ``tidewater`` command does."""
    @functools.wraps(main)
    def run(argv: list[str] | None = None) -> int:
        try:
            return main(argv)
        except TidewaterError as exc:
            print(f"tidewater: {exc}", file=sys.stderr)
            return exc.EXIT_CODE

    return run
