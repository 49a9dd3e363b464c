"""The quality gate's engine choice (``expectations.runner.in_memory_if_small``) on a plain Spark session."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def failing_frame(spark: SparkSession) -> DataFrame:
    """Rows that raise when Spark computes them: any job over this frame fails."""
    from pyspark.sql import functions as F

    @F.udf("boolean")
    def refuse(_: int) -> bool:
        raise ValueError("computed")

    return spark.range(3).where(refuse("id"))


def test_a_known_row_count_chooses_the_engine_without_a_job(spark: SparkSession) -> None:
    from expectations.runner import DATASOURCE, in_memory_if_small

    df = failing_frame(spark)
    same, source = in_memory_if_small(df, max_rows=2, rows=3)
    assert same is df and source == DATASOURCE
    with pytest.raises(Exception, match="computed"):  # the frame really fails once computed
        in_memory_if_small(df, max_rows=2)


def test_small_frames_go_to_pandas_and_big_ones_stay_in_spark(spark: SparkSession) -> None:
    from expectations.runner import DATASOURCE, IN_MEMORY_DATASOURCE, in_memory_if_small

    df = spark.range(5)
    small, source = in_memory_if_small(df, max_rows=5)
    assert source == IN_MEMORY_DATASOURCE and list(small["id"]) == [0, 1, 2, 3, 4]
    assert in_memory_if_small(df, max_rows=4) == (df, DATASOURCE)
    assert in_memory_if_small(df, max_rows=0) == (df, DATASOURCE)
    assert in_memory_if_small(df, max_rows=5, rows=5)[1] == IN_MEMORY_DATASOURCE
