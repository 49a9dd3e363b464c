"""Speed layer entry point: one long-running Spark application per pipeline (and query version), with
``speed.host: per_pipeline`` (with ``shared``, ``spark_jobs.speed.host`` runs every pipeline in one).

The queries (``spark_jobs.speed.queries``): for tumbling and sliding windows ONE stateless ``stream``
query (roles ``ingest`` and ``speed``: bronze, quarantine and the speed table from one read of Kafka);
for session windows an ``ingest`` and a stateful ``speed`` query. ``--version`` is the speed version;
a Kappa replay runs only the ``speed`` role, from the earliest offsets, into a new version. The
per-pipeline part (locks, progress recovery, queries, restarts within the ``restart_budget``, graceful
stop) is ``spark_jobs.speed.pipeline_run``. SIGTERM stops gracefully.

Run: ``python -m spark_jobs.speed.job <pipeline> [--version N] [--queries ingest,speed]``.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from typing import Any

from infra.spark_session import get_spark
from lakehouse.config import TidewaterConfig, load_config
from lakehouse.errors import TidewaterError
from lakehouse.pipeline import Pipeline, load_pipeline
from spark_jobs.shared.locks import exclusive
from spark_jobs.speed.control import REFUSAL
from spark_jobs.speed.pipeline_run import (
    STARTUP_LOCK,
    STARTUP_WAIT_SECONDS,
    PipelineRun,
    QueryLocked,
    acquire_locks,
    query_checkpoints,
)
from spark_jobs.speed.queries import start_queries

__all__ = ["start_queries", "acquire_locks", "query_checkpoints", "run", "main"]

SUPERVISE_EVERY_S = 0.5


def run(cfg: TidewaterConfig, p: Pipeline, version: int, which: list[str], starting_offsets: str | None = None,
        run_seconds: float | None = None) -> None:
    pipeline_run = PipelineRun(cfg, p, version, which, starting_offsets)
    try:
        pipeline_run.lock()
    except QueryLocked as exc:
        print(f"speed: {exc}", file=sys.stderr)
        sys.exit(3)
    stopping = {"flag": False}

    def _on_term(signum: int, frame: Any) -> None:
        stopping["flag"] = True

    signal.signal(signal.SIGTERM, _on_term)
    signal.signal(signal.SIGINT, _on_term)
    with exclusive(cfg, STARTUP_LOCK, STARTUP_WAIT_SECONDS):  # see STARTUP_LOCK
        spark = get_spark(cfg, f"tidewater-speed-{p.name}-v{version}")
        pipeline_run.start(spark)
    print(f"speed: {p.name} v{version} running queries {sorted(pipeline_run.queries)}", flush=True)
    failed: list[tuple[str, str]] | None = None
    started = time.monotonic()
    try:
        while not stopping["flag"] and failed is None:
            if run_seconds is not None and time.monotonic() - started > run_seconds:
                break
            failed = pipeline_run.check()
            time.sleep(SUPERVISE_EVERY_S)
    finally:
        pipeline_run.stop()
    if failed:
        for name, error in failed:
            print(f"speed: query {name} failed: {error}", file=sys.stderr)
        sys.exit(1)
    print(f"speed: {p.name} v{version} stopped", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m spark_jobs.speed.job")
    parser.add_argument("pipeline")
    parser.add_argument("--version", type=int, default=1)
    parser.add_argument("--queries", default="ingest,speed")
    parser.add_argument("--starting-offsets", choices=["earliest", "latest"])
    parser.add_argument("--run-seconds", type=float)
    args = parser.parse_args(argv)
    cfg = load_config()
    p = load_pipeline(args.pipeline, cfg.pipelines)
    try:
        run(cfg, p, args.version, args.queries.split(","), args.starting_offsets, args.run_seconds)
    except TidewaterError as exc:  # a refusal: one line, which 'tidewater speed start' shows as its own
        print(f"{REFUSAL}{exc}", file=sys.stderr, flush=True)
        sys.exit(2)


if __name__ == "__main__":
    main()
