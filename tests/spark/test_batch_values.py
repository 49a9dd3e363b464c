"""A micro-batch's own values (``speed.micro_batch_values``) give the same rows as literals, and a second
micro-batch with other values compiles no new classes, where literals compile new ones each time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest

from spark_jobs.speed import micro_batch_values as batch_values
from spark_jobs.speed.execution_mode import use_for

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

pytestmark = pytest.mark.spark
T0 = datetime(2026, 1, 1, 8, 0, tzinfo=UTC)


def _micro_batch(events: DataFrame, cutoff: Any, batch_id: Any, written: Any) -> list[tuple[Any, ...]]:
    """What a micro-batch's queries do with such values: filter by a time, stamp rows, count."""
    from pyspark.sql import functions as F

    rows = events.where(F.col("event_time") >= cutoff).groupBy("sensor_id").agg(F.count("*").alias("n"))
    stamped = rows.select("*", batch_id.alias("batch_id"), written.alias("written"))
    return sorted(map(tuple, stamped.collect()))


def test_batch_values_are_exact_and_compile_once(spark: SparkSession) -> None:
    from pyspark.sql import functions as F

    rows = [(f"s{i % 3}", T0 + timedelta(seconds=7 * i)) for i in range(300)]
    events = spark.createDataFrame(rows, "sensor_id string, event_time timestamp").cache()
    events.count()
    use_for(spark, None, 0)  # generated code, as a big micro-batch runs

    def by_values(k: int) -> list[tuple[Any, ...]]:
        at = T0 + timedelta(seconds=100 + k, milliseconds=k)
        return _micro_batch(events, batch_values.timestamp(spark, at), batch_values.whole_number(spark, 1_000 + k),
                            batch_values.timestamp(spark, at))

    def by_literals(k: int) -> list[tuple[Any, ...]]:
        at = T0 + timedelta(seconds=100 + k, milliseconds=k)
        return _micro_batch(events, F.lit(at), F.lit(1_000 + k).cast("bigint"), F.lit(at))

    for k in (1, 2):
        assert by_values(k) == by_literals(k)  # exact to the millisecond, types included
    assert len(by_values(3)) == 3 and by_values(3)[0][2] == 1_003  # not vacuous: three sensors, the id

    before = batch_values.compilations(spark)
    by_values(4)
    by_values(5)
    with_values = batch_values.compilations(spark) - before
    before = batch_values.compilations(spark)
    by_literals(6)
    by_literals(7)
    with_literals = batch_values.compilations(spark) - before
    assert with_values == 0, with_values
    assert with_literals >= 2, with_literals  # the check can fail: each literal micro-batch compiles again


def test_a_negative_number_or_a_naive_time_is_refused(spark: SparkSession) -> None:
    with pytest.raises(ValueError, match="n >= 0"):
        batch_values.whole_number(spark, -1)
    with pytest.raises(ValueError, match="timezone-aware"):  # read in the host's zone, it would shift
        batch_values.timestamp(spark, datetime(2026, 1, 1, 8, 0))
