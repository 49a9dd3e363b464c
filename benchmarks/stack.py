"""An isolated benchmark stack: own temp data folder and free ports, real metastore + Kafka.

The environment variables are exported so every subprocess (speed job, baseline job, CLI
commands) sees the same stack; they are restored and the services stopped on exit.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from lakehouse.config import TidewaterConfig

REPO = Path(__file__).resolve().parent.parent


@contextmanager
def isolated_stack(keep: bool = False) -> Iterator[TidewaterConfig]:
    """The shared isolated stack (tidewater/isolated_stack.py) in lambda mode, for one benchmark run."""
    from lakehouse.config import load_config
    from tidewater.isolated_stack import isolated_env, running_stack

    with isolated_env("tidewater-bench-", {"TIDEWATER_MODE": "lambda"}, keep=keep), running_stack(load_config()) as cfg:
        yield cfg

