"""An isolated benchmark stack: own temp data folder and free ports, real metastore + Kafka.

The environment variables are exported so every subprocess (speed job, baseline job, CLI
commands) sees the same stack; they are restored and the services stopped on exit.
"""

from __future__ import annotations

import os
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


def not_landed(*paths: str) -> str | None:
    """Why a dependency is unavailable: a file missing, or (in a git checkout) not committed yet.
    ``TIDEWATER_BENCH_ALLOW_WIP=1`` accepts uncommitted files (to try a scenario against work in progress)."""
    import subprocess

    for rel in paths:
        if not (REPO / rel).exists():
            return f"{rel} does not exist yet"
        if (REPO / ".git").exists() and os.environ.get("TIDEWATER_BENCH_ALLOW_WIP") != "1":
            tracked = subprocess.run(["git", "ls-files", "--error-unmatch", rel], cwd=REPO, capture_output=True)
            if tracked.returncode != 0:
                return f"{rel} is not committed yet (work in progress of another engineer)"
    return None
