"""``late.<p>`` rows of a micro-batch (``speed.late_rows.late_events``) against a plain-Python oracle: a
sliding window's late event is kept once per window it belongs to, with its lateness; on-time events
and unusable records are not kept."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import pytest

from lakehouse import contracts
from lakehouse.pipeline import load_pipeline
from spark_jobs.speed.cached_records import behind
from spark_jobs.speed.late_rows import late_events

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark
T0 = datetime(2026, 1, 1, 8, 0, tzinfo=UTC)
MINUTE_MS = 60_000


def test_a_sliding_windows_late_event_is_kept_once_per_window_it_missed(spark: SparkSession) -> None:
    p = load_pipeline("lift_rides")  # 10-minute windows every 5 minutes
    wm = T0 + timedelta(minutes=20)
    times = [T0 + timedelta(seconds=97 * i) for i in range(20)]  # 0 to 30:43: some behind the watermark
    rows: list[tuple[object, ...]] = [(f"e{i}", f"lift-{i % 2}", f"skier-{i}", t, "rides", 0, 100 + i, t, t, None, None, None)
            for i, t in enumerate(times)]
    rows.append(("bad", "lift-0", "skier-x", T0, "rides", 0, 99, T0, T0, "WRONG_TYPE", "x", "{}"))  # unusable
    schema = ("event_id string, lift_id string, skier_id string, event_time timestamp, kafka_topic string, "
              "kafka_partition int, kafka_offset bigint, kafka_timestamp timestamp, ingest_time timestamp, "
              "reason_code string, reason string, raw_value string")
    records = spark.createDataFrame(rows, schema)

    got = late_events(records, p, behind(spark, wm), wm, batch_id=7, version=2, lineage="q").selectExpr(
        "*", "unix_millis(event_time) AS ts", "unix_millis(window_start) AS ws", "unix_millis(window_end) AS we",
        "unix_millis(watermark) AS wm").collect()

    wm_ms, size, slide = int(wm.timestamp() * 1000), 10 * MINUTE_MS, 5 * MINUTE_MS
    expected = sorted(
        (f"e{i}", 100 + i, ws, ws + size, wm_ms - ts)
        for i, t in enumerate(times) if (ts := int(t.timestamp() * 1000)) < wm_ms
        for ws in (ts // slide * slide - slide, ts // slide * slide))
    assert len(expected) == 2 * 13  # 13 events behind the watermark, 2 windows each
    assert sorted((r.event_id, r.kafka_offset, r.ws, r.we, r.lateness_ms) for r in got) == expected
    assert all(r.wm == wm_ms and (r.batch_id, r.speed_version, r.lineage) == (7, 2, "q") for r in got)
    assert all(r.window_key == f'{{"lift_id":"{r.lift_id}"}}' and r.arrival_time == r.event_time for r in got)
    assert list(got[0].asDict())[:len(contracts.late(p).columns)] == contracts.late(p).column_names
