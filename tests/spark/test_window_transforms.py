"""The shared windowed aggregation on tiny inline batch data, checked against hand-computed rows."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

import pytest

from lakehouse.pipeline import load_pipeline
from spark_jobs.transforms.windows import dedup_history, windowed_aggregate

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def T(hhmmss: str) -> datetime:
    return datetime.fromisoformat(f"2026-01-01T{hhmmss}")


def test_tumbling_sensor_windows(spark: SparkSession) -> None:
    from pyspark.testing import assertDataFrameEqual

    p = load_pipeline("sensor_readings")
    events = spark.createDataFrame(
        [("a", "s1", 10.0, T("00:00:05")), ("b", "s1", 20.0, T("00:00:59")), ("c", "s1", 30.0, T("00:01:00")),
         ("d", "s2", -5.0, T("00:00:30"))],
        "event_id string, sensor_id string, temperature double, event_time timestamp",
    )
    out = events.transform(windowed_aggregate(p, streaming=False)).drop("max_event_time")
    expected = spark.createDataFrame(
        [("s1", T("00:00:00"), T("00:01:00"), 2, 15.0, 10.0, 20.0),
         ("s1", T("00:01:00"), T("00:02:00"), 1, 30.0, 30.0, 30.0),
         ("s2", T("00:00:00"), T("00:01:00"), 1, -5.0, -5.0, -5.0)],
        "sensor_id string, window_start timestamp, window_end timestamp, event_count bigint, "
        "avg_temperature double, min_temperature double, max_temperature double",
    )
    assertDataFrameEqual(out, expected)


def test_sliding_lift_windows_count_each_ride_twice(spark: SparkSession) -> None:
    from pyspark.testing import assertDataFrameEqual

    p = load_pipeline("lift_rides")
    events = spark.createDataFrame(
        [("r1", "L1", "k1", T("00:07:00")), ("r2", "L1", "k2", T("00:08:00")), ("r3", "L1", "k1", T("00:12:00"))],
        "event_id string, lift_id string, skier_id string, event_time timestamp",
    )
    out = events.transform(windowed_aggregate(p, streaming=False)).drop("max_event_time")
    # 10-minute windows every 5 minutes: [00:00,00:10) [00:05,00:15) [00:10,00:20)
    expected = spark.createDataFrame(
        [("L1", T("00:00:00"), T("00:10:00"), 2, 2), ("L1", T("00:05:00"), T("00:15:00"), 3, 2),
         ("L1", T("00:10:00"), T("00:20:00"), 1, 1)],
        "lift_id string, window_start timestamp, window_end timestamp, ride_count bigint, distinct_skiers bigint",
    )
    assertDataFrameEqual(out, expected)


def test_session_windows_close_after_gap(spark: SparkSession) -> None:
    from pyspark.testing import assertDataFrameEqual

    p = load_pipeline("game_sessions")
    ms = lambda t: int(T(t).timestamp() * 1000)  # noqa: E731
    rows = [("g1", "u1", 5, "00:00:00"), ("g2", "u1", 7, "00:04:00"), ("g3", "u1", 1, "00:12:00"),
            ("g4", "u2", 3, "00:01:00")]
    events = spark.createDataFrame(
        [(i, u, pts, ms(t), T(t)) for i, u, pts, t in rows],
        "event_id string, user_id string, points int, timestamp bigint, event_time timestamp",
    )
    out = events.transform(windowed_aggregate(p, streaming=False)).drop("max_event_time")
    # u1: 00:00 and 00:04 are within 5 min -> one session [00:00, 00:09); 00:12 starts a new one.
    expected = spark.createDataFrame(
        [("u1", T("00:00:00"), T("00:09:00"), 2, 12, ms("00:00:00"), ms("00:04:00")),
         ("u1", T("00:12:00"), T("00:17:00"), 1, 1, ms("00:12:00"), ms("00:12:00")),
         ("u2", T("00:01:00"), T("00:06:00"), 1, 3, ms("00:01:00"), ms("00:01:00"))],
        "user_id string, window_start timestamp, window_end timestamp, event_count bigint, total_points bigint, "
        "first_event_ms bigint, last_event_ms bigint",
    )
    assertDataFrameEqual(out, expected)


def test_history_dedup_keeps_first_delivery(spark: SparkSession) -> None:
    p = load_pipeline("sensor_readings")
    events = spark.createDataFrame(
        [("a", "s1", 1.0, T("00:00:01"), 0, 5), ("a", "s1", 1.0, T("00:00:01"), 0, 9), ("b", "s1", 2.0, T("00:00:02"), 1, 3)],
        "event_id string, sensor_id string, temperature double, event_time timestamp, kafka_partition int, kafka_offset bigint",
    )
    out = events.transform(dedup_history(p)).select("event_id", "kafka_offset").orderBy("event_id").collect()
    assert [(r.event_id, r.kafka_offset) for r in out] == [("a", 5), ("b", 3)]


def test_dedup_keeps_the_copy_that_reached_kafka_first_whatever_its_partition(spark: SparkSession) -> None:
    """One rule for duplicates with different payloads: earliest Kafka arrival, then partition, then
    offset. A later copy on a lower partition must not displace the published one."""
    p = load_pipeline("sensor_readings")
    rows = [("e1", "s1", 10.0, T("00:00:05"), 3, 100, T("00:00:06")),   # first to arrive
            ("e1", "s1", 99.0, T("00:05:00"), 0, 7, T("00:00:09")),     # re-sent later, other payload
            ("e2", "s1", 20.0, T("00:00:10"), 1, 5, T("00:00:11")),     # same arrival ms: lower partition wins
            ("e2", "s1", 21.0, T("00:00:10"), 2, 1, T("00:00:11"))]
    df = spark.createDataFrame(rows, "event_id string, sensor_id string, temperature double, event_time timestamp, "
                                     "kafka_partition int, kafka_offset bigint, kafka_timestamp timestamp")
    kept = {r.event_id: r.temperature for r in df.transform(dedup_history(p)).collect()}
    assert kept == {"e1": 10.0, "e2": 20.0}
