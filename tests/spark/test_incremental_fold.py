"""The incremental fold on tiny inline data: published windows + new first copies == a recompute."""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import TYPE_CHECKING

import pytest

from lakehouse.pipeline import Aggregate, load_pipeline
from spark_jobs.transforms import incremental_fold as fold
from spark_jobs.transforms.windows import dedup_history, windowed_aggregate

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

pytestmark = pytest.mark.spark

COLUMNS = ("event_id string, sensor_id string, temperature double, event_time timestamp, "
           "kafka_timestamp timestamp, kafka_partition int, kafka_offset bigint")


def T(hhmmss: str) -> datetime:
    return datetime.fromisoformat(f"2026-01-01T{hhmmss}")


def events(spark: SparkSession, rows: list[tuple]) -> DataFrame:
    """(id, sensor, temperature, event time, arrival, offset) -> bronze-shaped rows on partition 0."""
    return spark.createDataFrame([(i, s, t, T(et), T(at), 0, o) for i, s, t, et, at, o in rows], COLUMNS)


def test_which_pipelines_fold() -> None:
    sensors = load_pipeline("sensor_readings")
    assert fold.foldable(sensors)
    assert not fold.foldable(load_pipeline("game_sessions"))  # sessions merge: recomputed
    assert not fold.foldable(load_pipeline("lift_rides"))  # an exact distinct count does not combine
    no_count = dataclasses.replace(sensors, aggregates=tuple(a for a in sensors.aggregates if a.fn != "count"))
    assert not fold.foldable(no_count)  # an avg without the window's row count has no sum behind it
    sums = dataclasses.replace(sensors, aggregates=(Aggregate("total", "sum", "temperature"),))
    assert fold.foldable(sums)


def test_fold_equals_recompute_and_finds_displacing_copies(spark: SparkSession) -> None:
    from pyspark.testing import assertDataFrameEqual

    p = load_pipeline("sensor_readings")
    old = events(spark, [("a", "s1", 10.0, "00:00:05", "00:00:06", 1), ("b", "s1", 20.0, "00:00:50", "00:00:51", 2),
                         ("c", "s2", 1.5, "00:01:10", "00:01:11", 3)])
    new = events(spark, [("d", "s1", 40.0, "00:00:30", "00:05:00", 4),  # late, into (s1, 0:00)
                         ("a", "s2", 99.0, "00:01:20", "00:05:01", 5),  # a later copy of a: it does not count
                         ("e", "s3", 7.0, "00:02:00", "00:05:02", 6)])  # a window nobody published
    bronze = old.unionByName(new)
    published = old.transform(windowed_aggregate(p, streaming=False))
    firsts = fold.first_of_each_id(p, fold.copies_of(p, new, bronze))
    assert fold.displacing(p, new, firsts).isEmpty()
    folded = fold.folded_windows(p, published, new, firsts)
    exact = bronze.transform(dedup_history(p)).transform(windowed_aggregate(p, streaming=False))
    touched = folded.select(*p.grain)
    assertDataFrameEqual(folded.drop("op"), exact.join(touched, list(p.grain), "left_semi"))
    assert touched.count() == 3  # (s1, 0:00), (s2, 1:00) where only the repeated id fell, (s3, 2:00)
    # a window read from the published ones is an update (its row exists), a new one an upsert
    assert {(r.sensor_id, r.op) for r in folded.collect()} == {("s1", "update"), ("s2", "update"), ("s3", "upsert")}

    ahead = events(spark, [("b", "s2", 5.0, "00:01:30", "00:00:40", 7)])  # reached Kafka before b's copy
    firsts = fold.first_of_each_id(p, fold.copies_of(p, ahead, bronze.unionByName(ahead)))
    assert [r.event_id for r in fold.displacing(p, ahead, firsts).collect()] == ["b"]
