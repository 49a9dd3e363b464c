"""The stateless speed computation: partials of two micro-batches, folded by the speed view's SQL
(``lakehouse.speed_fold``), equal the shared aggregation over both (sketches: the same estimate either way)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import pytest

from lakehouse.pipeline import load_pipeline
from lakehouse.speed_fold import fold_sql
from spark_jobs.transforms.partials import first_copies, partial_aggregate
from spark_jobs.transforms.windows import windowed_aggregate

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from lakehouse.pipeline import Pipeline

pytestmark = pytest.mark.spark
T0 = datetime(2026, 1, 1, 8, 0, tzinfo=UTC)


def _fold(spark: SparkSession, p: Pipeline, a: DataFrame, b: DataFrame) -> DataFrame:
    """What the speed view shows after micro-batches ``a`` and ``b`` appended their partials."""
    from pyspark.sql import functions as F

    extra = {"updated_at": F.lit(T0), "watermark": F.lit(None).cast("timestamp")}
    (a.withColumns({**extra, "batch_id": F.lit(1)}).unionByName(b.withColumns({**extra, "batch_id": F.lit(2)}))
     .createOrReplaceTempView("partials_of_two_batches"))
    return spark.sql(fold_sql(p, "partials_of_two_batches"))


def test_sliding_windows_with_sketches_fold_exactly(spark: SparkSession) -> None:
    p = load_pipeline("lift_rides")
    rows = [(f"e{i}", f"lift-{i % 3}", f"skier-{(i * 7) % 23}", T0 + timedelta(seconds=37 * i)) for i in range(120)]
    schema = "event_id string, lift_id string, skier_id string, event_time timestamp"
    a, b = (spark.createDataFrame(part, schema) for part in (rows[:70], rows[70:]))
    folded = {(r.lift_id, r.window_start): (r.ride_count, r.distinct_skiers) for r in _fold(
        spark, p, a.transform(partial_aggregate(p)), b.transform(partial_aggregate(p))).collect()}
    whole = a.unionByName(b).transform(windowed_aggregate(p, streaming=False)).collect()
    assert set(folded) == {(r.lift_id, r.window_start) for r in whole}
    for r in whole:
        count, distinct = folded[(r.lift_id, r.window_start)]
        assert count == r.ride_count
        assert distinct == r.distinct_skiers  # 23 skiers at most: the sketch is exact at this size


def test_tumbling_averages_fold_from_sums_and_counts(spark: SparkSession) -> None:
    p = load_pipeline("sensor_readings")
    rows = [(f"e{i}", f"s{i % 2}", float(i % 9) - 3.5, T0 + timedelta(seconds=11 * i)) for i in range(40)]
    schema = "event_id string, sensor_id string, temperature double, event_time timestamp"
    a, b = (spark.createDataFrame(part, schema) for part in (rows[::2], rows[1::2]))
    folded = {(r.sensor_id, r.window_start): r for r in _fold(
        spark, p, a.transform(partial_aggregate(p)), b.transform(partial_aggregate(p))).collect()}
    for r in a.unionByName(b).transform(windowed_aggregate(p, streaming=False)).collect():
        got = folded[(r.sensor_id, r.window_start)]
        assert (got.event_count, got.min_temperature, got.max_temperature) == (
            r.event_count, r.min_temperature, r.max_temperature)
        assert got.avg_temperature == pytest.approx(r.avg_temperature)
        assert got.max_event_time == r.max_event_time


def test_first_copies_apply_the_arrival_rule_against_history(spark: SparkSession) -> None:
    p = load_pipeline("sensor_readings")
    schema = "event_id string, kafka_timestamp timestamp, kafka_partition int, kafka_offset bigint"
    history = spark.createDataFrame([("a", T0, 0, 1), ("b", T0 + timedelta(seconds=5), 1, 9)], schema)
    batch = spark.createDataFrame([
        ("a", T0 + timedelta(seconds=9), 2, 1),    # re-sent: an earlier copy exists -> dropped
        ("b", T0 + timedelta(seconds=5), 0, 3),    # same arrival ms, lower partition -> the first copy
        ("c", T0 + timedelta(seconds=9), 3, 4), ("c", T0 + timedelta(seconds=9), 3, 5)], schema)  # in-batch dup
    kept = first_copies(p, batch, history.unionByName(batch)).collect()
    assert sorted((r.event_id, r.kafka_partition, r.kafka_offset) for r in kept) == [("b", 0, 3), ("c", 3, 4)]


def test_recent_arrivals_join_without_shuffling_the_history(spark: SparkSession) -> None:
    """The dedup history stays hash-partitioned by event id through new chunks and a fold, and a
    micro-batch keyed once (``RecentArrivals.keyed``) goes through the first-copy window and the anti
    join with no other shuffle or sort of its own; the answer is the one ``first_copies`` gives against
    the history and the micro-batch itself."""
    p = load_pipeline("sensor_readings")
    confs = {"spark.sql.autoBroadcastJoinThreshold": "-1", "spark.sql.shuffle.partitions": "4"}  # as the speed job
    before = {key: str(spark.conf.get(key)) for key in confs}
    for key, value in confs.items():
        spark.conf.set(key, value)
    try:
        _keyed_micro_batch_against_history(spark, p)
    finally:
        for key, value in before.items():
            spark.conf.set(key, value)


def _keyed_micro_batch_against_history(spark: SparkSession, p: Pipeline) -> None:
    from spark_jobs.speed import recent_arrivals
    from spark_jobs.speed.recent_arrivals import RecentArrivals
    from spark_jobs.transforms.partials import earliest_copies

    schema = ("event_id string, kafka_timestamp timestamp, kafka_partition int, kafka_offset bigint, event_time timestamp, "
              "sensor_id string, temperature double")
    ra = RecentArrivals(spark, p)
    ra.start_from(spark.createDataFrame([("a", T0, 0, 1, T0)], schema.rsplit(",", 2)[0]), T0)
    for i in range(recent_arrivals.MERGE_AT + 1):  # one fold on the way
        at = T0 + timedelta(seconds=i + 1)
        ra.add(ra.keyed(spark.createDataFrame([(f"x{i}", at, 1, i, at, "s", 1.0)], schema)), T0, at)
    rows = [("a", T0 + timedelta(seconds=99), 2, 7), ("x3", T0, 0, 0), ("n", T0, 3, 2), ("n", T0, 3, 1),
            ("m", T0 + timedelta(seconds=2), 0, 5), ("m", T0 + timedelta(seconds=1), 1, 9)]
    batch = spark.createDataFrame([(*r, T0, "s", 2.0) for r in rows], schema)
    kept = first_copies(p, ra.keyed(batch).transform(earliest_copies(p)), ra.history(T0))
    plan = kept._jdf.queryExecution().executedPlan().toString()
    got = sorted((r.event_id, r.kafka_offset) for r in kept.collect())
    reference = sorted((r.event_id, r.kafka_offset) for r in first_copies(p, batch, ra.history(T0), batch).collect())
    assert len(ra.chunks) < recent_arrivals.MERGE_AT
    assert "Exchange" not in plan, plan  # neither the history nor the keyed micro-batch is shuffled again
    lines = plan.splitlines()
    (union,) = [i for i, line in enumerate(lines) if "+- Union" in line]
    sorts = [i for i, line in enumerate(lines) if "+- Sort [" in line]
    assert len(sorts) == 1 and sorts[0] < union, plan  # the one sort: the history's union, for the join
    # "a" has an earlier copy; x3 arrived before its history copy; "n" and "m": their first copies in the batch
    assert got == reference == [("m", 9), ("n", 1), ("x3", 0)]


def test_compacted_rows_fold_like_the_partials_they_replace(spark: SparkSession) -> None:
    """A compaction writes ``fold_sql(compacted=True)`` rows back into the partials table: folding
    them with later partials must give the view the same windows as folding every partial."""
    from pyspark.sql import functions as F

    p = load_pipeline("lift_rides")
    rows = [(f"e{i}", f"lift-{i % 2}", f"skier-{(i * 5) % 17}", T0 + timedelta(seconds=53 * i)) for i in range(90)]
    schema = "event_id string, lift_id string, skier_id string, event_time timestamp"
    parts = [spark.createDataFrame(rows[k::3], schema).transform(partial_aggregate(p)) for k in range(3)]
    extra = {"updated_at": F.lit(T0), "watermark": F.lit(T0 + timedelta(minutes=30))}
    marked = [df.withColumns({**extra, "batch_id": F.lit(k), "lineage": F.lit("q"), "compacted": F.lit(False),
                              "slot": F.lit(0)})
              for k, df in enumerate(parts)]
    marked[0].unionByName(marked[1]).createOrReplaceTempView("first_two")
    compacted = spark.sql(fold_sql(p, "first_two", compacted=True))
    assert compacted.where("NOT compacted").count() == 0
    compacted.unionByName(marked[2]).createOrReplaceTempView("after_compaction")
    marked[0].unionByName(marked[1]).unionByName(marked[2]).createOrReplaceTempView("all_partials")
    cols = ["lift_id", "window_start", "window_end", "ride_count", "distinct_skiers", "max_event_time", "batch_id", "is_final"]
    after, every = (sorted(tuple(r) for r in spark.sql(fold_sql(p, t)).select(*cols).collect())
                    for t in ("after_compaction", "all_partials"))
    assert after == every
    assert {r[-1] for r in every} == {True, False}  # windows ending by the watermark are final, later ones not
