"""Incremental = full where a run must delete published windows, on tiny inline data.

A published window leaves a full run's result when its only event is displaced by a copy of the
same id that reached Kafka earlier but bronze later, or (sessions) when a late event merges it into
a session still open at the cutoff. The incremental rows (``batch.increment.incremental_rows``, the
code a run stages) applied to the published windows must give what a full run gives.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

import pytest

from lakehouse.pipeline import Pipeline, load_pipeline
from spark_jobs.batch.increment import incremental_rows
from spark_jobs.shared.step_timer import Steps
from spark_jobs.transforms.incremental import all_windows
from spark_jobs.transforms.windows import dedup_history

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

pytestmark = pytest.mark.spark

SENSOR_COLUMNS = ("event_id string, sensor_id string, temperature double, event_time timestamp, "
                  "kafka_timestamp timestamp, kafka_partition int, kafka_offset bigint")
GAME_COLUMNS = ("event_id string, user_id string, timestamp bigint, action string, points int, event_time timestamp, "
                "kafka_timestamp timestamp, kafka_partition int, kafka_offset bigint")


def T(hhmmss: str) -> datetime:
    return datetime.fromisoformat(f"2026-01-01T{hhmmss}")


def sensor_events(spark: SparkSession, rows: list[tuple[Any, ...]]) -> DataFrame:
    """(id, sensor, temperature, event time, arrival, offset) -> bronze rows on partition 0."""
    return spark.createDataFrame([(i, s, t, T(et), T(at), 0, o) for i, s, t, et, at, o in rows], SENSOR_COLUMNS)


def game_events(spark: SparkSession, rows: list[tuple[Any, ...]]) -> DataFrame:
    """(id, user, points, event time, arrival, offset) -> bronze rows on partition 0."""
    return spark.createDataFrame([(i, u, int(T(et).timestamp() * 1000), "play", pts, T(et), T(at), 0, o)
                                  for i, u, pts, et, at, o in rows], GAME_COLUMNS)


def full_run(p: Pipeline, bronze: DataFrame, cutoff: datetime) -> DataFrame:
    return all_windows(p, bronze.transform(dedup_history(p)), cutoff)


def incremental_run(p: Pipeline, old: DataFrame, new: DataFrame, old_cutoff: datetime,
                    new_cutoff: datetime) -> tuple[DataFrame, str, int]:
    """The published windows of ``old`` at ``old_cutoff`` with an incremental run's rows applied, the
    way the run took, and how many windows it deleted."""
    published = full_run(p, old, old_cutoff).persist()
    increment = incremental_rows(p, published, old.unionByName(new), new, old_cutoff, new_cutoff, Steps())
    grain = list(p.grain)
    upserts = increment.upserts.select(*published.columns).persist()
    deleted = 0 if increment.deletes is None else increment.deletes.count()
    kept = published.join(upserts.select(*grain), grain, "left_anti")
    if increment.deletes is not None:
        kept = kept.join(increment.deletes.select(*grain), grain, "left_anti")
    return kept.unionByName(upserts), increment.way, deleted


def test_displaced_only_event_of_a_tumbling_window_removes_the_window(spark: SparkSession) -> None:
    from pyspark.testing import assertDataFrameEqual

    p = load_pipeline("sensor_readings")
    old = sensor_events(spark, [("a", "s1", 10.0, "00:00:05", "00:00:06", 1), ("b", "s1", 20.0, "00:01:10", "00:01:11", 2),
                                ("c", "s2", 1.5, "00:02:30", "00:02:31", 3)])
    # a copy of a that reached Kafka before a's (an earlier arrival) but bronze after it, with another
    # sensor and time: it is a's first copy now, so (s1, 0:00), where a was the only event, is gone
    new = sensor_events(spark, [("a", "s9", 5.0, "00:02:10", "00:00:01", 7)])
    cutoff = T("00:03:00")
    result, way, deleted = incremental_run(p, old, new, cutoff, cutoff)
    assert way == "recompute" and deleted == 1
    assertDataFrameEqual(result, full_run(p, old.unionByName(new), cutoff))


def test_sessions_displaced_or_merged_past_the_cutoff_are_removed(spark: SparkSession) -> None:
    from pyspark.testing import assertDataFrameEqual

    p = load_pipeline("game_sessions")
    old = game_events(spark, [("x1", "u1", 3, "00:00:00", "00:00:01", 1),   # u1's only event at 0:00
                              ("x2", "u1", 4, "00:20:00", "00:20:01", 2), ("x3", "u1", 5, "00:21:00", "00:21:01", 3),
                              ("y1", "u3", 1, "00:22:00", "00:22:01", 4), ("y2", "u3", 2, "00:24:00", "00:24:01", 5),
                              ("z1", "u4", 9, "00:40:00", "00:40:01", 6)])
    new = game_events(spark, [("x1", "u2", 6, "00:12:00", "00:00:00", 7),   # displaces x1: u1's 0:00 session is gone
                              ("y3", "u3", 7, "00:28:00", "00:41:00", 8)])  # u3's [0:22, 0:29) runs on to 0:33
    cutoff = T("00:30:00")
    before = {(r.user_id, r.window_start) for r in full_run(p, old, cutoff).collect()}
    assert {("u1", T("00:00:00")), ("u3", T("00:22:00"))} <= before
    result, way, deleted = incremental_run(p, old, new, cutoff, cutoff)
    assert way == "recompute" and deleted == 2
    expected = full_run(p, old.unionByName(new), cutoff)
    assert {(r.user_id, r.window_start) for r in expected.collect()} == {("u1", T("00:20:00")), ("u2", T("00:12:00"))}
    assertDataFrameEqual(result, expected)


def test_session_split_by_a_displaced_copy_is_published_in_two(spark: SparkSession) -> None:
    from pyspark.testing import assertDataFrameEqual

    p = load_pipeline("game_sessions")
    old = game_events(spark, [("v1", "u5", 1, "00:00:00", "00:00:01", 1), ("v2", "u5", 2, "00:04:00", "00:04:01", 2),
                              ("v3", "u5", 3, "00:08:00", "00:08:01", 3)])  # one session: [0:00, 0:13)
    # v2, which joined the two halves, really belongs to u6: u5 has [0:00, 0:05) and [0:08, 0:13) now
    new = game_events(spark, [("v2", "u6", 2, "00:20:00", "00:04:00", 4)])
    cutoff = T("00:30:00")
    result, way, deleted = incremental_run(p, old, new, cutoff, cutoff)
    expected = full_run(p, old.unionByName(new), cutoff)
    assert {(r.user_id, r.window_start) for r in expected.collect()} == {
        ("u5", T("00:00:00")), ("u5", T("00:08:00")), ("u6", T("00:20:00"))}
    assert way == "recompute" and deleted == 1
    assertDataFrameEqual(result, expected)
