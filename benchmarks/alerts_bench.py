"""Scenario 9's pieces shared by its backlog and latency phases: the bench pipeline, the Flink job's command
line, and Tidewater's alerts query run in the harness's Spark session.

**The bench pipeline** is ``sensor_readings`` with its ``hot_then_cold`` pattern only (``absence`` and
``threshold`` would be work Flink's single ``MATCH_RECOGNIZE`` does not do), a topic of its own and the size's
watermark, so that both engines run one pattern over the same records: a generated definition
(``bench_pipeline``), parsed by the same loader as the shipped ones.

**Tidewater** runs only the alerts query (``spark_jobs.alerts.query.start_alerts``, what the speed job runs)
in the harness's session, with the speed job's ``ProgressRecorder`` writing its micro-batches to
``ops.stream_progress`` (query ``alerts``); ``AlertsRun.wait_watermark`` waits for the micro-batch that ran
at a given watermark (the one whose timers decide every alert before it).
"""

from __future__ import annotations

import json
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from benchmarks.s6_flink import FLINK_PYTHON, JARS
from benchmarks.stack import REPO
from lakehouse import contracts, naming
from lakehouse.alert_spec import AlertPattern, Condition
from lakehouse.config import TidewaterConfig
from lakehouse.pipeline import PIPELINES_DIR, Pipeline, duration_seconds, parse_pipeline
from lakehouse.yaml_file import read_yaml
from spark_jobs.alerts.query import start_alerts
from spark_jobs.io.ops_reader import rows_of, table_path
from spark_jobs.io.progress_recorder import ProgressRecorder

SOURCE_PIPELINE, PATTERN = "sensor_readings", "hot_then_cold"
NAME, TOPIC = "alerts_bench", "alerts-bench"
# fill.events' temperature is ((i * 7919) mod 1000) / 20 - 10: with 300 sensors a sensor's readings cycle
# through ten values 5 °C apart (hot, then cold two readings later); with 1,000 each sensor's is constant
SENSORS = 300
FLINK_TYPES = {"string": "STRING", "long": "BIGINT", "int": "INT", "double": "DOUBLE", "boolean": "BOOLEAN"}
QUERY = "alerts"


def bench_pipeline(watermark: str) -> Pipeline:
    """``sensor_readings`` with only ``hot_then_cold``, topic ``alerts-bench`` and ``watermark``."""
    raw = read_yaml(PIPELINES_DIR / f"{SOURCE_PIPELINE}.yml")
    alerts = [a for a in raw["alerts"] if a["name"] == PATTERN]
    return parse_pipeline({**raw, "name": NAME, "topic": TOPIC, "watermark": watermark, "alerts": alerts})


def sequence(p: Pipeline) -> AlertPattern:
    pattern = next(a for a in p.alerts if a.name == PATTERN)
    assert pattern.kind == "sequence" and pattern.first and pattern.then, pattern
    return pattern


def flink_condition(c: Condition) -> str:
    return f"{c.field},{c.op},{c.value}"


def flink_command(cfg: TidewaterConfig, p: Pipeline, until: dict[int, int], extra: list[str]) -> list[str]:
    """The ``flink_match_job.py`` command for ``p``'s sequence over its topic up to ``until``."""
    pattern = sequence(p)
    assert pattern.first and pattern.then
    fields = sorted({c.field for c in pattern.conditions})
    jar = sorted(JARS.glob("flink-sql-connector-kafka-*.jar"))[-1]
    options = {
        "--bootstrap": cfg.kafka.bootstrap, "--topic": p.topic, "--jar": str(jar), "--until": offsets_option(until),
        "--key": pattern.key, "--first": flink_condition(pattern.first), "--then": flink_condition(pattern.then),
        "--within-ms": str(pattern.within_ms), "--watermark-ms": str(watermark_ms(p)),
        "--fields": ",".join(f"{f}:{FLINK_TYPES[p.schema[f]]}" for f in fields),
    }
    return [str(FLINK_PYTHON), str(REPO / "benchmarks" / "flink_match_job.py"),
            *(x for kv in options.items() for x in kv), *extra]


def offsets_option(offsets: dict[int, int]) -> str:
    return ";".join(f"partition:{k},offset:{v}" for k, v in sorted(offsets.items()))


def watermark_ms(p: Pipeline) -> int:
    return int(duration_seconds(p.watermark) * 1000)


def stored_alerts(spark: Any, p: Pipeline) -> list[tuple[str, str, str]]:
    """(key, first event id, then event id) of every ``hot_then_cold`` row of ``alerts.<p>`` (a row stored
    twice shows twice)."""
    table = naming.table("alerts", p.name)
    spark.catalog.refreshTable(table)
    rows = spark.sql(f"SELECT key, event_ids FROM {table} WHERE pattern = '{PATTERN}'").collect()
    return [(r.key, r.event_ids[0], r.event_ids[-1]) for r in rows]


def send(cfg: TidewaterConfig, topic: str, events: list[dict[str, Any]]) -> None:
    """A few JSON events to partition 0 of ``topic`` (acks=all)."""
    from confluent_kafka import Producer

    prod = Producer({"bootstrap.servers": cfg.kafka.bootstrap, "acks": "all", "enable.idempotence": True})
    for e in events:
        prod.produce(topic, key=str(e["sensor_id"]).encode(), value=json.dumps(e).encode(), partition=0)
    if prod.flush(60):
        raise RuntimeError(f"could not send {len(events)} events to {topic}")


class AlertsRun:
    """Tidewater's alerts query of ``p`` in ``spark``, its progress recorded to ``ops.stream_progress``."""

    def __init__(self, spark: Any, cfg: TidewaterConfig, p: Pipeline) -> None:
        self.spark, self.cfg, self.p = spark, cfg, p
        self.query: Any = None
        self.recorder: Any = None

    def start(self) -> None:
        contracts.ensure(self.spark, contracts.STREAM_PROGRESS)
        checkpoint: Path = naming.alerts_checkpoint(self.cfg, self.p.name)
        self.recorder = ProgressRecorder(self.spark, self.cfg, self.p.name, {QUERY: (1, checkpoint)})
        self.recorder.start()
        trigger = {"processingTime": f"{self.cfg.spark.trigger_seconds} seconds"}
        self.query = start_alerts(self.spark, self.cfg, self.p, trigger)

    def progress(self) -> list[dict[str, Any]]:
        return sorted((r for r in rows_of(table_path(self.cfg, "ops.stream_progress"), utc=True)
                       if r["pipeline"] == self.p.name and r["query"] == QUERY), key=lambda r: r["batch_id"])

    def wait_watermark(self, target_ms: int, timeout: float) -> list[dict[str, Any]]:
        """Until a recorded micro-batch ran at a watermark of at least ``target_ms``; returns the rows."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.query.isActive:
                raise RuntimeError(f"the alerts query of {self.p.name} stopped: {self.query.exception()}")
            rows = self.progress()
            if any(at_ms(r["watermark"]) >= target_ms for r in rows):
                return rows
            time.sleep(1)
        raise TimeoutError(f"the alerts query of {self.p.name} did not reach watermark {target_ms} within {timeout:.0f} s")

    def stop(self) -> None:
        if self.query is not None and self.query.isActive:
            self.query.stop()
        if self.recorder is not None:
            self.recorder.stop()


def at_ms(value: datetime | None) -> int:
    return int(value.timestamp() * 1000) if value is not None else -1


def span_until(rows: list[dict[str, Any]], target_ms: int) -> float:
    """Seconds from the start of the first micro-batch that read input to the end of the first one that ran
    at a watermark of at least ``target_ms`` (its timers decided every alert before it)."""
    start = min(r["batch_time"] for r in rows if (r["input_rows"] or 0) > 0)
    done = min((r for r in rows if at_ms(r["watermark"]) >= target_ms), key=lambda r: r["batch_id"])
    return done["batch_time"].timestamp() + (done["batch_duration_ms"] or 0) / 1000.0 - start.timestamp()
