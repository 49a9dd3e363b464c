"""Events that keep flowing while something breaks, and the exactly-once check that ends each trial.

``EventProducer`` sends ``sensor_readings`` events stamped with the wall clock (so none is later than
the watermark), temperatures from -5 to 50 (above 35, below 20 and at least 45 often: the pipeline's
sequence and threshold alerts fire), one malformed record in 40 and one duplicate (same event id, re-sent) in 25, and
remembers exactly what it sent; with ``late_every``, every n-th event is stamped 10 minutes ago (late
once the job's watermark runs). ``assert_exactly_once`` checks every table against that: every Kafka
offset of every partition in bronze or quarantine exactly once, bronze equal to the valid records
sent, the speed table equal to an independent oracle (``speed_helpers.expected_tumbling``).
Used by test_speed_crash.py (speed job killed) and test_kafka_cluster.py (brokers killed).
"""

from __future__ import annotations

import contextlib
import json
import random
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from tests.integration.speed_helpers import expected_tumbling, speed_rows

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from lakehouse.config import TidewaterConfig

PIPELINE, TOPIC = "sensor_readings", "sensor-readings"
LATE_PREFIX, LATE_BY_MS = "late", 600_000  # 10 minutes: behind the 2-minute watermark once it runs


class EventProducer(threading.Thread):
    """Sends events at about ``rate`` per second until stopped; remembers exactly what it sent. The
    producer is idempotent with acks=all (a retry after a broker failure never writes a record twice);
    every send it could not deliver is kept in ``failed``."""

    def __init__(self, cfg: TidewaterConfig, rate: float = 100.0, late_every: int = 0) -> None:
        super().__init__(daemon=True)
        from kafka import KafkaProducer

        self.producer = KafkaProducer(bootstrap_servers=cfg.kafka.bootstrap, acks="all", enable_idempotence=True,
                                      linger_ms=5, delivery_timeout_ms=300_000)
        self.rate, self.stopping, self.paused = rate, threading.Event(), threading.Event()
        self.late_every = late_every  # every n-th event stamped LATE_BY_MS ago (0: none), never re-sent
        self.valid: list[dict[str, Any]] = []  # every valid record sent, duplicates included
        self.malformed = 0
        self.failed: list[str] = []
        self.rng = random.Random(20261122)

    def _send(self, key: bytes | None, value: bytes) -> None:
        self.producer.send(TOPIC, key=key, value=value).add_errback(lambda exc: self.failed.append(repr(exc)))

    def run(self) -> None:
        i = 0
        while not self.stopping.is_set():
            if self.paused.is_set():
                time.sleep(0.05)
                continue
            i += 1
            if i % 40 == 0:
                self._send(None, b'{"event_id": "broken-%d", "sensor_id": ' % i)
                self.malformed += 1
            else:
                late = bool(self.late_every) and i % self.late_every == 0
                on_time = [e for e in self.valid[-20:] if not e["event_id"].startswith(LATE_PREFIX)]
                if i % 25 == 0 and on_time:
                    event = on_time[-self.rng.randrange(1, len(on_time) + 1)]
                else:
                    event = {"event_id": f"{LATE_PREFIX if late else 'k'}{i:07d}", "sensor_id": f"s-{i % 7}",
                             "timestamp": int(time.time() * 1000) - (LATE_BY_MS if late else 0),
                             "temperature": round(self.rng.uniform(-5.0, 50.0), 2)}
                self._send(event["sensor_id"].encode(), json.dumps(event).encode())
                self.valid.append(event)
            time.sleep(1.0 / self.rate)
        self.producer.flush(120)
        self.producer.close()

    @contextlib.contextmanager
    def paused_and_flushed(self) -> Iterator[None]:
        """No new event while the block runs, and every one sent so far acknowledged (or failed)."""
        self.paused.set()
        time.sleep(0.2)  # a send in progress finishes
        self.producer.flush(300)
        try:
            yield
        finally:
            self.paused.clear()

    def finish(self) -> None:
        self.stopping.set()
        self.join(300)


def assert_exactly_once(spark: SparkSession, cfg: TidewaterConfig, producer: EventProducer,
                        left_out: set[str] | None = None) -> None:
    """Bronze, quarantine and speed against what ``producer`` sent (call once the job caught up);
    ``left_out``: the ids of events the speed layer dropped as late (never re-sent by the producer)."""
    from benchmarks.correctness import offset_problems, spark_query

    assert not producer.failed, f"sends the brokers never acknowledged: {producer.failed[:5]}"
    sent = producer.valid
    for table in ("bronze.sensor_readings", "quarantine.sensor_readings"):
        spark.catalog.refreshTable(table)
    bronze = spark.table("bronze.sensor_readings")
    quarantine = spark.table("quarantine.sensor_readings")
    problems = offset_problems(spark_query(spark), cfg, PIPELINE, TOPIC)
    assert not problems, f"every offset exactly once in bronze or quarantine: {problems}"

    assert bronze.count() == len(sent), "bronze holds every valid Kafka record exactly once (duplicates are records too)"
    by_id = {r["event_id"]: r["count"] for r in bronze.groupBy("event_id").count().collect()}
    sent_by_id: dict[str, int] = {}
    for e in sent:
        sent_by_id[e["event_id"]] = sent_by_id.get(e["event_id"], 0) + 1
    assert by_id == sent_by_id
    assert quarantine.count() == producer.malformed

    expected = expected_tumbling([e for e in sent if e["event_id"] not in (left_out or set())])  # plain Python
    got = speed_rows(spark, "speed.sensor_readings")
    assert set(got) == set(expected)
    for key, (count, avg, lo, hi) in expected.items():
        row = got[key]
        assert (row.event_count, row.min_temperature, row.max_temperature) == (count, lo, hi), key
        assert row.avg_temperature == pytest.approx(avg), key
