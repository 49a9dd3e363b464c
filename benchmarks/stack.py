"""An isolated benchmark stack: own temp data folder and free ports, real metastore + Kafka.

The environment variables are exported so every subprocess (speed job, baseline job, CLI
commands) sees the same stack; they are restored and the services stopped on exit.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from lakehouse.config import TidewaterConfig

REPO = Path(__file__).resolve().parent.parent
PORT_VARS = ("TIDEWATER_KAFKA_PORT", "TIDEWATER_KAFKA_CONTROLLER_PORT", "TIDEWATER_METASTORE_PORT",
             "TIDEWATER_THRIFT_PORT", "TIDEWATER_AIRFLOW_PORT")


@contextmanager
def isolated_stack(keep: bool = False) -> Iterator[TidewaterConfig]:
    from infra.jars import fetch_jars
    from infra.services import kafka_broker, metastore, thrift_server
    from infra.services.process import free_port
    from lakehouse.config import load_config

    data = Path(tempfile.mkdtemp(prefix="tidewater-bench-"))
    env = {"TIDEWATER_CONFIG": str(REPO / "tidewater.yml"), "TIDEWATER_DATA_DIR": str(data),
           "TIDEWATER_MODE": "lambda", **{var: str(free_port()) for var in PORT_VARS}}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    cfg = load_config()
    try:
        fetch_jars()
        metastore.start(cfg)
        kafka_broker.start(cfg)
        yield cfg
    finally:
        from spark_jobs.speed_control import stop_all_speed

        stop_all_speed(cfg)
        thrift_server.stop(cfg)
        kafka_broker.stop(cfg)
        metastore.stop(cfg)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        if not keep:
            shutil.rmtree(data, ignore_errors=True)


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
