"""``serving.replace_view``: a view refresh takes effect or fails, whoever created the view.

The defect it guards against: ``CREATE VIEW IF NOT EXISTS`` chosen because the view looked missing,
while another process had created it, silently kept the other process's definition.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from spark_jobs.shared.serving_view import replace_view, view_text

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


@pytest.mark.parametrize("exists_now", [True, False])
def test_replace_view_recovers_when_the_view_changed_after_the_check(spark: SparkSession, exists_now: bool,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The catalog's answer only picks the first statement: when another process created (or dropped)
    the view between that check and the DDL, the other statement is used and the refresh still holds."""
    spark.sql("CREATE DATABASE IF NOT EXISTS serving_test")
    spark.range(10).write.mode("overwrite").saveAsTable("serving_test.numbers")
    spark.sql("DROP VIEW IF EXISTS serving_test.raced")
    if exists_now:
        spark.sql("CREATE VIEW serving_test.raced AS SELECT id FROM serving_test.numbers WHERE id > 100")
    monkeypatch.setattr(spark.catalog, "tableExists", lambda *_args, **_kw: not exists_now)  # the stale answer
    select = "SELECT id FROM serving_test.numbers WHERE id = 4"
    ddl = replace_view(spark, "serving_test.raced", select)
    assert ddl.startswith("ALTER VIEW" if exists_now else "CREATE VIEW"), ddl
    assert view_text(spark, "serving_test.raced").strip() == select
    assert [r.id for r in spark.table("serving_test.raced").collect()] == [4]
