"""Scenario 1a: the Tidewater speed layer exactly as ``spark_jobs.speed.job`` runs it (same locks,
``start_queries`` for ingest + speed, ``ProgressRecorder`` into ``ops.stream_progress``), plus a
stop condition: both queries' end offsets reach ``--target``. On exit every query's progress
events (with the ``durationMs`` phase breakdown) are written to ``--progress`` as JSON.

Run: ``python -m benchmarks.tidewater_job --target '{"0": 25000, ...}' --progress FILE``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from benchmarks.progress import reached
from infra.spark_session import get_spark
from lakehouse.config import load_config
from lakehouse.pipeline import load_pipeline
from spark_jobs.io.progress_recorder import ProgressRecorder
from spark_jobs.speed.partials_table import drain_compactions
from spark_jobs.speed.pipeline_run import acquire_locks, query_checkpoints
from spark_jobs.speed.queries import start_queries
from spark_jobs.speed.stream_progress_rows import drain

PIPELINE = "sensor_readings"


def _end(progress: Any, topic: str) -> dict[str, Any]:
    end = (json.loads(progress.json).get("sources") or [{}])[0].get("endOffset") or {}
    end = json.loads(end) if isinstance(end, str) else end
    return dict(end.get(topic, {}))


def quiesce(queries: dict[str, Any], timeout: float = 120.0) -> None:
    """Wait until no query is inside a trigger (twice in a row), so stopping never interrupts a
    batch. (Spark 4.1.1: a query stopped inside a no-data batch fails on restart with an NPE in
    ``KafkaMicroBatchStream.metrics`` when it re-runs that batch from the offset log.)"""
    deadline, idle = time.monotonic() + timeout, 0
    while time.monotonic() < deadline and idle < 2:
        busy = any(q.isActive and q.status.get("isTriggerActive") for q in queries.values())
        idle = 0 if busy else idle + 1
        time.sleep(1.0)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.tidewater_job")
    ap.add_argument("--target", required=True, help="JSON {partition: end offset}")
    ap.add_argument("--progress", required=True)
    args = ap.parse_args(argv)
    target = {int(k): int(v) for k, v in json.loads(args.target).items()}

    cfg = load_config()
    p = load_pipeline(PIPELINE, cfg.pipelines)
    locks = acquire_locks(cfg, p.name, 1, ["ingest", "speed"])
    spark = get_spark(cfg, f"tidewater-speed-{p.name}-v1")
    recorder = ProgressRecorder(spark, cfg, p.name, query_checkpoints(cfg, p, 1, ["ingest", "speed"]))
    recorder.start()
    queries = start_queries(spark, cfg, p, 1, ["ingest", "speed"])
    try:
        while all(q.isActive for q in queries.values()):
            done = [bool(q.recentProgress) and reached(_end(q.recentProgress[-1], p.topic), target)
                    for q in queries.values()]
            if all(done):
                break
            time.sleep(0.5)
        quiesce(queries)
        failed = [f"{n}: {q.exception()}" for n, q in queries.items() if not q.isActive and q.exception()]
        if failed:
            raise SystemExit(f"tidewater_job: query failed: {failed}")
    finally:
        for q in queries.values():
            if q.isActive:
                q.stop()
        drain()
        drain_compactions()
        recorder.stop()
        dump = {n: [json.loads(pr.json) for pr in q.recentProgress] for n, q in queries.items()}
        Path(args.progress).write_text(json.dumps(dump))
        for lock in locks:
            lock.close()
        spark.stop()


if __name__ == "__main__":
    main()
