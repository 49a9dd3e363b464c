"""``serving.replace_view``: a view refresh takes effect or fails, whoever created the view.

The defect it guards against: ``CREATE VIEW IF NOT EXISTS`` chosen because the view looked missing,
while another process had created it, silently kept the other process's definition.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from spark_jobs.serving import replace_view, view_text

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def test_replace_view_creates_then_alters_and_reads_back(spark: SparkSession) -> None:
    spark.sql("CREATE DATABASE IF NOT EXISTS serving_test")
    spark.sql("DROP VIEW IF EXISTS serving_test.v")
    spark.range(10).write.mode("overwrite").saveAsTable("serving_test.numbers")

    first = "SELECT id FROM serving_test.numbers WHERE id < 3"
    assert replace_view(spark, "serving_test.v", first).startswith("CREATE VIEW")
    assert view_text(spark, "serving_test.v").strip() == first
    assert sorted(r.id for r in spark.table("serving_test.v").collect()) == [0, 1, 2]

    # another process created it with its own definition: the refresh must replace that one
    spark.sql("DROP VIEW serving_test.v")
    spark.sql("CREATE VIEW serving_test.v AS SELECT id FROM serving_test.numbers WHERE id > 100")
    second = "SELECT id FROM serving_test.numbers WHERE id >= 8"
    assert replace_view(spark, "serving_test.v", second).startswith("ALTER VIEW")
    assert sorted(r.id for r in spark.table("serving_test.v").collect()) == [8, 9]
