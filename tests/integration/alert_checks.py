"""Helpers for the alerts lane's integration tests: wait for the alerts query, read ``alerts.<p>`` and the
``<topic>.alerts`` topic in the oracle's shape (``alerts_oracle.Alert``)."""

from __future__ import annotations

import json
import time
from typing import Any

from benchmarks.alerts_oracle import Alert


def wait_alerts_caught_up(cfg: Any, p: Any, timeout: float = 300.0) -> int:
    """Until the alerts query has committed the topic's end offsets and then planned nothing new for three
    triggers (the no-data micro-batch that fires the timers the last watermark expired has run). Returns
    that last watermark (epoch ms)."""
    from lakehouse import naming
    from spark_jobs.io.kafka_admin import offsets
    from spark_jobs.io.lineage import committed_batches, last_committed_offsets, last_planned_batch, offset_log_entry

    checkpoint, deadline = naming.alerts_checkpoint(cfg, p.name), time.monotonic() + timeout
    quiet, seen, since = 3 * cfg.spark.trigger_seconds + 2, None, time.monotonic()
    while time.monotonic() < deadline:
        done = last_committed_offsets(checkpoint, p.topic) or {}
        ends = {str(k): end for k, (_, end) in offsets(cfg, p.topic).items()}
        planned = last_planned_batch(checkpoint) if checkpoint.exists() else None
        if planned != seen:
            seen, since = planned, time.monotonic()
        settled = planned is not None and planned in committed_batches(checkpoint)
        if ends and all(done.get(k, -1) >= v for k, v in ends.items()) and settled and time.monotonic() - since > quiet:
            assert planned is not None
            return int(offset_log_entry(checkpoint, planned)[0].get("batchWatermarkMs") or 0)
        time.sleep(1)
    raise AssertionError(f"the alerts query of {p.name} did not catch up within {timeout:.0f} s ({checkpoint})")


def table_alerts(spark: Any, table: str) -> list[Alert]:
    """Every row of ``alerts.<p>`` (a duplicate id shows as two entries)."""
    spark.catalog.refreshTable(table)
    rows = spark.sql(f"SELECT alert_id, pattern, key, event_ids, transform(event_times, t -> unix_millis(t)) AS ms "
                     f"FROM {table}").collect()
    return [(r.alert_id, r.pattern, r.key, tuple(r.event_ids), tuple(r.ms)) for r in rows]


def topic_records(cfg: Any, topic: str, timeout: float = 120.0) -> list[tuple[str, dict[str, Any], bytes]]:
    """(key, decoded value, raw value) of every record of ``topic``, from the earliest offset to its end."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=cfg.kafka.bootstrap, enable_auto_commit=False)
    try:
        parts = [TopicPartition(topic, n) for n in sorted(consumer.partitions_for_topic(topic) or [])]
        consumer.assign(parts)
        consumer.seek_to_beginning(*parts)
        ends, out, deadline = consumer.end_offsets(parts), [], time.monotonic() + timeout
        while any(consumer.position(tp) < ends[tp] for tp in parts):
            assert time.monotonic() < deadline, f"could not read {topic} to its end within {timeout:.0f} s"
            for records in consumer.poll(timeout_ms=1000).values():
                out += [(m.key.decode(), json.loads(m.value), m.value) for m in records]
        return out
    finally:
        consumer.close()


def assert_topic_holds(cfg: Any, topic: str, expected: set[Alert]) -> None:
    """Every alert of ``expected`` in ``topic`` under its ``alert_id`` key; a key seen twice carries the
    same bytes (the at-least-once promise: consumers keep one record per key)."""
    records = topic_records(cfg, topic)
    by_key: dict[str, set[bytes]] = {}
    for key, value, raw in records:
        assert value["alert_id"] == key
        by_key.setdefault(key, set()).add(raw)
    assert {k: len(v) for k, v in by_key.items() if len(v) > 1} == {}, "a duplicate record differs from the first"
    got = {(v["alert_id"], v["pattern"], v["key"], tuple(v["event_ids"])) for _, v, _ in records}
    assert got == {(a[0], a[1], a[2], a[3]) for a in expected}
