"""A small micro-batch runs interpreted (no whole-stage generated code), a big one with generated
code, and both give the same partials."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import pytest

from lakehouse.config import SparkConfig
from lakehouse.pipeline import load_pipeline
from spark_jobs.speed.execution_mode import use_for
from spark_jobs.transforms.partials import partial_aggregate

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

pytestmark = pytest.mark.spark
LIMIT = SparkConfig().interpreted_max_records  # the default of spark.interpreted_max_records
T0 = datetime(2026, 1, 1, 8, 0)


def _generated_stages(df: DataFrame) -> int:
    """Whole-stage generated code in the plan that ran (``*(n)`` marks an operator of stage n)."""
    import re

    return len(re.findall(r"\*\(\d+\)", str(df._jdf.queryExecution().executedPlan().toString())))


def test_small_micro_batches_run_interpreted_with_the_same_results(spark: SparkSession) -> None:
    from pyspark.sql import functions as F

    p = load_pipeline("sensor_readings")
    rows = [(f"e{i}", f"s{i % 3}", float(i % 11), T0 + timedelta(seconds=7 * i)) for i in range(200)]
    events = spark.createDataFrame(rows, "event_id string, sensor_id string, temperature double, event_time timestamp")

    def partials() -> DataFrame:  # a per-batch timestamp literal, as the speed job's late filter has
        return events.where(F.col("event_time") >= F.lit(T0 + timedelta(seconds=30))).transform(partial_aggregate(p))

    try:
        assert use_for(spark, LIMIT, LIMIT) is True
        interpreted = partials()
        slow = sorted(map(tuple, interpreted.collect()))
        assert _generated_stages(interpreted) == 0
        assert use_for(spark, LIMIT + 1, LIMIT) is False
        generated = partials()
        assert sorted(map(tuple, generated.collect())) == slow
        assert _generated_stages(generated) > 0
        assert len(slow) >= 3  # not vacuous: windows of three sensors
        assert use_for(spark, None, LIMIT) is False  # unknown size: generated code
        assert use_for(spark, 1, 0) is False  # spark.interpreted_max_records 0: always generated code
    finally:
        use_for(spark, None, LIMIT)
