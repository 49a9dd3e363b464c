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


def test_a_session_pipelines_late_event_is_kept_with_the_session_it_would_have_opened(spark: SparkSession) -> None:
    """By the session query's rule (at or before the watermark: an event AT it is late, lateness 0), each
    late record once, with ``[event_time, event_time + gap)``; and the reconciliation ledger links each to
    the batch session of its key that holds its event time."""
    from spark_jobs.transforms.reconcile import late_row_counts

    p = load_pipeline("game_sessions")  # 5-minute gap
    wm = T0 + timedelta(minutes=20)
    times = [T0 + timedelta(minutes=m) for m in (1, 3, 20, 21, 30)]  # 20: at the watermark; 21, 30: on time
    rows: list[tuple[object, ...]] = [(f"e{i}", f"u{i % 2}", int(t.timestamp() * 1000), "move", 3, t, "game-events", 1,
                                       10 + i, t, t, None, None, None) for i, t in enumerate(times)]
    rows.append(("e0", "u0", 0, "move", 3, times[0], "game-events", 0, 50, T0, T0, None, None, None))  # a late copy
    schema = ("event_id string, user_id string, timestamp bigint, action string, points int, event_time timestamp, "
              "kafka_topic string, kafka_partition int, kafka_offset bigint, kafka_timestamp timestamp, "
              "ingest_time timestamp, reason_code string, reason string, raw_value string")
    records = spark.createDataFrame(rows, schema)

    late = late_events(records, p, behind(spark, wm, at_watermark=True), wm, batch_id=4, version=1, lineage="q")
    got = late.selectExpr("*", "unix_millis(event_time) AS ts", "unix_millis(window_start) AS ws",
                          "unix_millis(window_end) AS we").collect()

    wm_ms, gap = int(wm.timestamp() * 1000), 5 * MINUTE_MS
    expected = sorted((eid, offset, ts, ts + gap, wm_ms - ts) for eid, offset, ts in
                      [(f"e{i}", 10 + i, int(t.timestamp() * 1000)) for i, t in enumerate(times)] + [("e0", 50, int(times[0].timestamp() * 1000))]
                      if ts <= wm_ms)
    assert [e[4] for e in expected] == sorted([19 * MINUTE_MS, 19 * MINUTE_MS, 17 * MINUTE_MS, 0], reverse=True)
    assert sorted((r.event_id, r.kafka_offset, r.ws, r.we, r.lateness_ms) for r in got) == expected

    # batch sessions: u0 [0m, 8m) holds e0 and its copy; u1 [3m, 8m) holds e1; u0 [20m, 25m) holds e2
    session = "user_id string, window_start timestamp, window_end timestamp"
    batch = spark.createDataFrame([("u0", T0, T0 + timedelta(minutes=8)), ("u1", T0 + timedelta(minutes=3), T0 + timedelta(minutes=8)),
                                   ("u0", T0 + timedelta(minutes=20), T0 + timedelta(minutes=25)),
                                   ("u1", T0 + timedelta(minutes=21), T0 + timedelta(minutes=26))], session)
    counts = {(r.user_id, int(r.window_start.timestamp() // 60 - T0.timestamp() // 60)): r.late_rows
              for r in late_row_counts(p, late, batch).collect()}
    assert counts == {("u0", 0): 2, ("u1", 3): 1, ("u0", 20): 1}
