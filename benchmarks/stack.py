"""An isolated benchmark stack: own temp data folder and free ports, real metastore + Kafka; and how a
benchmark command stops it on SIGTERM and reports bad input.

The environment variables are exported so every subprocess (speed job, baseline job, CLI
commands) sees the same stack; they are restored and the services stopped on exit.
"""

from __future__ import annotations

import functools
import shutil
import signal
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import yaml

from lakehouse.config import TidewaterConfig, load_config
from lakehouse.errors import TidewaterError
from lakehouse.pipeline import PIPELINES_DIR, PIPELINES_DIR_ENV
from lakehouse.yaml_file import read_yaml
from tidewater.isolated_stack import isolated_env, running_stack

REPO = Path(__file__).resolve().parent.parent


@contextmanager
def isolated_stack(keep: bool = False, alerts: bool = False) -> Iterator[TidewaterConfig]:
    """The shared isolated stack (tidewater/isolated_stack.py) in lambda mode, for one benchmark run; its
    pipelines are the shipped definitions, without their ``alerts:`` sections unless ``alerts``
    (``speed_layer_definitions``)."""
    folder = speed_layer_definitions(Path(tempfile.mkdtemp(prefix="tidewater-bench-pipelines-")), alerts)
    try:
        with isolated_env("tidewater-bench-", {"TIDEWATER_MODE": "lambda", PIPELINES_DIR_ENV: str(folder)},
                          keep=keep), running_stack(load_config()) as cfg:
            yield cfg
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def speed_layer_definitions(folder: Path, alerts: bool = False, shipped: Path = PIPELINES_DIR) -> Path:
    """The shipped pipeline definitions in ``folder``, without their ``alerts:`` sections unless ``alerts``:
    the scenarios measure the speed layer against baselines that do the same work, and a pipeline's alerts
    query is one more streaming query in its speed job (scenario 9 measures it on its own)."""
    for path in shipped.glob("*.yml"):
        raw = read_yaml(path)
        if not alerts:
            raw.pop("alerts", None)
        (folder / path.name).write_text(yaml.safe_dump(raw, sort_keys=False))
    return folder



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
