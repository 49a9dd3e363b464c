"""The dedup history's (re)load from bronze: kept in memory when bronze holds few events past the horizon,
read by event-time range when it holds many (a replay from the earliest offsets), with the same answers."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import TYPE_CHECKING

import pytest

from lakehouse.pipeline import Pipeline, load_pipeline
from spark_jobs.speed import recent_arrivals
from spark_jobs.speed.recent_arrivals import RecentArrivals

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark
T0 = datetime(2026, 1, 1, 8, 0, tzinfo=UTC)
MINUTE = timedelta(minutes=1)
ARRIVALS = "event_id string, kafka_timestamp timestamp, kafka_partition int, kafka_offset bigint, event_time timestamp"


def test_a_large_bronze_is_read_by_range_with_the_answers_of_one_kept_in_memory(spark: SparkSession,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    p = load_pipeline("sensor_readings")
    events = [(f"e{i}", T0 + i * MINUTE, 0, i, T0 + i * MINUTE) for i in range(10)]
    events.append(("e5", T0 + 20 * MINUTE, 1, 0, T0 + 5 * MINUTE))  # a later copy of e5
    spark.sql("CREATE DATABASE IF NOT EXISTS bronze")
    (spark.createDataFrame(events, ARRIVALS).selectExpr("*", "to_date(event_time) AS event_date")
     .write.mode("overwrite").saveAsTable("bronze.sensor_readings"))
    try:
        _same_answers_both_ways(spark, p, monkeypatch)
    finally:  # the package's session is shared: a later module expects no bronze table
        spark.sql("DROP TABLE IF EXISTS bronze.sensor_readings")


def _same_answers_both_ways(spark: SparkSession, p: Pipeline, monkeypatch: pytest.MonkeyPatch) -> None:
    answers = []
    for in_memory_max, by_range in ((1_000, False), (5, True)):
        monkeypatch.setattr(recent_arrivals, "IN_MEMORY_MAX", in_memory_max)
        history = RecentArrivals(spark, p)
        window = history.history(T0 + 2 * MINUTE, T0 + 6 * MINUTE)
        assert (history.bronze_until is not None) == by_range and (not history.chunks) == by_range
        found = sorted((r.event_id, r.kafka_offset) for r in window.collect())
        assert found == [("e2", 2), ("e3", 3), ("e4", 4), ("e5", 0), ("e5", 5), ("e6", 6)]
        later = T0 + 20 * MINUTE
        history.add(history.keyed(spark.createDataFrame([("x", later, 0, 30, later, "s", 1.0)],
                                                        f"{ARRIVALS}, sensor_id string, temperature double")),
                    T0 + 10 * MINUTE, later)
        assert history.bronze_until is None, "the watermark passed what was read from bronze"
        after = sorted(r.event_id for r in history.history(T0 + 10 * MINUTE).collect())
        answers.append((found, after))
    assert answers[0] == answers[1] and answers[0][1] == ["x"]


def test_a_bound_in_another_zone_reads_the_utc_dates_partitions(spark: SparkSession) -> None:
    """``event_date`` is bronze's UTC date: a bound given at +05:30 just before UTC midnight (already the next
    day there) still reads the events of the UTC day before; a naive bound is refused."""
    p = load_pipeline("sensor_readings")
    night = datetime(2026, 1, 1, 23, 50, tzinfo=UTC)
    events = [(f"n{i:02d}", night + i * MINUTE, 0, i, night + i * MINUTE) for i in range(20)]  # to 00:09 on 2 January
    spark.sql("CREATE DATABASE IF NOT EXISTS bronze")
    (spark.createDataFrame(events, ARRIVALS).selectExpr("*", "to_date(event_time) AS event_date")
     .write.mode("overwrite").partitionBy("event_date").saveAsTable("bronze.sensor_readings"))
    try:
        kolkata = timezone(timedelta(hours=5, minutes=30))
        since = (night + 5 * MINUTE).astimezone(kolkata)  # 23:55 UTC on 1 January, 05:25 on 2 January there
        assert since.date() != (night + 5 * MINUTE).date()
        found = sorted(r.event_id for r in RecentArrivals(spark, p).history(since).collect())
        assert found == [f"n{i:02d}" for i in range(5, 20)]
        with pytest.raises(ValueError, match="timezone-aware"):
            RecentArrivals(spark, p).history(datetime(2026, 1, 1, 23, 55))
    finally:
        spark.sql("DROP TABLE IF EXISTS bronze.sensor_readings")
