"""A full batch run's dedup (``batch.dedup.first_copies``) keeps exactly the rows that ranking every
copy (``dedup_history``) keeps: ids with one copy, repeated ids with equal or different payloads,
ties on the Kafka timestamp, and the fallback that ranks every row."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import pytest

from lakehouse.pipeline import load_pipeline
from spark_jobs.batch.dedup import first_copies
from spark_jobs.transforms.windows import dedup_history

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

pytestmark = pytest.mark.spark

SCHEMA = ("event_id string, sensor_id string, temperature double, event_time timestamp, "
          "kafka_partition int, kafka_offset bigint, kafka_timestamp timestamp")
T0 = datetime(2026, 1, 1)


def bronze(spark: SparkSession, repeated: bool) -> DataFrame:
    rows = [(f"e{i}", f"s{i % 3}", float(i), T0 + timedelta(seconds=i), i % 2, 100 + i, T0 + timedelta(seconds=i))
            for i in range(40)]
    if repeated:
        rows += [("e1", "s1", 1.0, T0 + timedelta(seconds=1), 1, 900, T0 + timedelta(seconds=50)),  # same payload, later
                 ("e2", "s9", 99.0, T0 + timedelta(minutes=9), 0, 5, T0 + timedelta(seconds=60)),  # other payload, later
                 ("e3", "s0", -3.0, T0 + timedelta(seconds=3), 0, 1, T0 + timedelta(seconds=3)),   # same arrival, lower partition
                 ("e4", "s0", -4.0, T0 + timedelta(seconds=4), 0, 99, T0 + timedelta(seconds=4))]  # same arrival and partition, lower offset
    return spark.createDataFrame(rows, SCHEMA)


def kept(df: DataFrame) -> list[tuple[str, int, int]]:
    return sorted((r.event_id, r.kafka_partition, r.kafka_offset) for r in df.collect())


@pytest.mark.parametrize("repeated, max_repeated", [(False, 10), (True, 10), (True, 0)],
                         ids=["no-repeats", "repeats-ranked-alone", "fallback-ranks-every-row"])
def test_first_copies_equal_ranking_every_copy(spark: SparkSession, repeated: bool, max_repeated: int) -> None:
    p = load_pipeline("sensor_readings")
    history = bronze(spark, repeated)
    found = first_copies(p, history, max_repeated=max_repeated)
    try:
        assert found.n_repeated == (4 if repeated else 0)
        expected = kept(history.transform(dedup_history(p)))
        assert kept(found.frame) == expected
        assert len(expected) == 40  # one row per id
        if repeated:  # the copies that reached Kafka first, as dedup_history's own tests spell out
            assert {("e1", 1, 101), ("e2", 0, 102), ("e3", 0, 1), ("e4", 0, 99)} <= set(expected)
    finally:
        found.release()
