"""The soak's end: let the speed job catch up, stop the schedules, run a final batch, then check.

1. exactly once: every offset of every partition of the topic in ``bronze.<p>`` or ``quarantine.<p>``
   exactly once (``benchmarks.correctness.offset_problems``), and as many records in the topic as the
   producer sent (its idempotence: no retry wrote a record twice);
2. ``serving.<p>`` equal, window by window, to the oracle (``benchmarks.stream_oracle``) computed in plain
   Python from the topic as the brokers stored it (read back with librdkafka, record by record);
3. the batch DAG published on its schedule during the soak.

Queries go through the Thrift server (the restarted one), as a BI tool's would.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from benchmarks.correctness import offset_problems, serving_differences, serving_rows
from benchmarks.result import ScenarioResult
from benchmarks.soak_chaos import speed_log_evidence
from benchmarks.soak_stack import jdbc_query
from benchmarks.stream_oracle import Record, expected_serving
from infra.services import airflow, thrift_server
from lakehouse import naming
from lakehouse.config import TidewaterConfig
from lakehouse.errors import NothingToDo
from lakehouse.pipeline import Pipeline
from spark_jobs.io.kafka_admin import offsets
from spark_jobs.io.ops_reader import read_rows
from spark_jobs.serving.cache import wait_fresh
from spark_jobs.speed.control import stop_speed, wait_caught_up


def settle(cfg: TidewaterConfig, p: Pipeline, res: ScenarioResult, timeout: float, since: datetime,
           batch_wait_s: float) -> float:
    """Wait until the speed job consumed everything and, for up to ``batch_wait_s``, until the batch DAG
    has published since ``since`` (a scheduled run in flight finishes, as an operator would let it),
    then stop the speed job and Airflow (no run after the final batch). Returns the catch-up's seconds."""
    started = time.monotonic()
    caught_up = wait_caught_up(cfg, p, timeout=timeout)
    took = round(time.monotonic() - started, 1)
    res.check("the speed job caught up with the topic after the producer stopped", True, caught_up)
    if not caught_up:
        res.notes.append(f"speed job log: {speed_log_evidence(cfg, p)}")
    deadline = time.monotonic() + batch_wait_s
    while not scheduled_publishes(cfg, p, since) and time.monotonic() < deadline:
        time.sleep(10)
    airflow.stop(cfg)
    stop_speed(cfg, p)
    return took


def final_batch(cfg: TidewaterConfig, p: Pipeline, res: ScenarioResult, since: datetime) -> dict[str, Any]:
    """Count the batch runs the DAG published during the soak, then run the final one (job service)."""
    scheduled = scheduled_publishes(cfg, p, since)
    out = subprocess.run([sys.executable, "-m", "tidewater.cli", "batch", p.name], capture_output=True, text=True,
                         timeout=1800)

    unchanged = out.returncode == NothingToDo.EXIT_CODE and bool(scheduled)  # the DAG's last run read the last bronze
    res.check("the final batch run published, or bronze is unchanged since the DAG's last publish", True,
              out.returncode == 0 or unchanged)
    if out.returncode:
        res.notes.append(f"final batch: {(out.stderr or out.stdout).strip().splitlines()[-1:]}")
    return {"scheduled_runs_published": len(scheduled), "final_batch_exit": out.returncode,
            "final_batch_output": [line for line in out.stdout.splitlines() if line.startswith(f"batch {p.name}: ")]}


def scheduled_publishes(cfg: TidewaterConfig, p: Pipeline, since: datetime) -> list[dict[str, Any]]:
    """The batch runs of ``p`` published since ``since`` (before the final run: the DAG's)."""
    return [r for r in read_rows(cfg, "ops.batch_runs")
            if r["pipeline"] == p.name and r["status"] == "published" and _naive(r["published_at"]) >= since]


def _naive(value: datetime | None) -> datetime:
    if value is None:
        return datetime.min
    return value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo else value


def jdbc_caught_up(cfg: TidewaterConfig, p: Pipeline, res: ScenarioResult) -> float:
    """Wait out the Thrift server's staleness bound before comparing its answers with the topic: other
    processes' commits reach JDBC answers within ``thrift.max_staleness_seconds`` (Delta snapshots
    reused that long), ``serving.<p>`` after one more cache rebuild. Returns the seconds waited."""
    started = time.monotonic()
    time.sleep(cfg.thrift.max_staleness_seconds + 1)  # an older snapshot is refreshed before it is read
    view = naming.table("serving", p.name)
    text = next(str(r[1]) for r in jdbc_query(cfg, f"DESCRIBE TABLE EXTENDED {view}") if r[0] == "View Text")
    res.check("the Thrift server's serving cache holds the tables' last commits", True,
              wait_fresh(thrift_server.cache_state_file(cfg), view, text, timeout=120))
    return round(time.monotonic() - started, 1)


def exactly_once(cfg: TidewaterConfig, p: Pipeline, res: ScenarioResult, produced: int) -> dict[str, Any]:
    in_topic = sum(end - begin for begin, end in offsets(cfg, p.topic).values())
    problems = offset_problems(lambda sql: jdbc_query(cfg, sql), cfg, p.name, p.topic)
    bronze, quarantine = (jdbc_query(cfg, f"SELECT count(*) FROM {t}.{p.name}")[0][0] for t in ("bronze", "quarantine"))
    res.check("records in the topic = events the producer sent", produced, in_topic)
    res.check("every offset of every partition in bronze or quarantine exactly once", [], problems[:5])
    res.check("bronze + quarantine rows = records in the topic", in_topic, int(bronze) + int(quarantine))
    return {"records_in_topic": in_topic, "bronze_rows": int(bronze), "quarantine_rows": int(quarantine),
            "offset_problems": problems[:5]}


def oracle(cfg: TidewaterConfig, p: Pipeline, res: ScenarioResult) -> dict[str, Any]:
    started = time.monotonic()
    expected = expected_serving(p, read_records(cfg, p.topic))
    got = serving_rows(lambda sql: jdbc_query(cfg, sql), p)
    diffs = serving_differences(p, expected, got)
    res.check(f"serving.{p.name} = the oracle computed from the topic (differences)", [], diffs[:5])
    res.check("the oracle has windows (not vacuous)", True, len(expected.rows) > 0)
    sources = [r["source"] for r in expected.rows.values()]
    return {"windows": len(expected.rows), "batch_windows": sources.count("batch"),
            "speed_windows": sources.count("speed"), "serving_rows": len(got), "differences": len(diffs),
            "first_differences": diffs[:5], "cutoff_ms": expected.cutoff_ms,
            "seconds": round(time.monotonic() - started, 1)}


def read_records(cfg: TidewaterConfig, topic: str) -> Iterator[Record]:
    """Every record of ``topic`` as the brokers stored it (partition, offset, LogAppendTime, value)."""
    from confluent_kafka import Consumer, TopicPartition

    ends = {part: end for part, (_, end) in offsets(cfg, topic).items()}
    consumer = Consumer({"bootstrap.servers": cfg.kafka.bootstrap, "group.id": f"tidewater-soak-oracle-{time.time()}",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(topic, part, 0) for part, end in ends.items() if end > 0])
    position = dict.fromkeys(ends, 0)
    deadline = time.monotonic() + 1800
    try:
        while any(position[part] < end for part, end in ends.items()) and time.monotonic() < deadline:
            for msg in consumer.consume(10_000, timeout=1.0):
                part, offset, value = msg.partition(), msg.offset(), msg.value()
                if msg.error() or part is None or offset is None or value is None or offset >= ends[part]:
                    continue
                position[part] = offset + 1
                yield Record(part, offset, msg.timestamp()[1], value)
    finally:
        consumer.close()
    if any(position[part] < end for part, end in ends.items()):
        raise RuntimeError(f"soak: read the topic up to {position}, it ends at {ends}")
