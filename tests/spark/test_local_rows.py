"""``io.local_rows.local_frame``: the driver's rows as a frame with the values ``createDataFrame`` gives
them (instants included, aware or naive, with or without ``PYARROW_IGNORE_TIMEZONE``), computed
without a Python RDD."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

import pytest

from spark_jobs.io.local_rows import local_frame

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark
DDL = "`name` string, `n` bigint, `k` int, `x` double, `ok` boolean, `at` timestamp"
KOLKATA = timezone(timedelta(hours=5, minutes=30))


def _lineage(df: object) -> str:
    return str(df._jdf.queryExecution().toRdd().toDebugString())  # type: ignore[attr-defined]


@pytest.mark.parametrize("ignore_timezone", [None, "1"])
def test_rows_keep_their_values_and_instants_without_a_python_rdd(spark: SparkSession, monkeypatch: pytest.MonkeyPatch,
                                                                   ignore_timezone: str | None) -> None:
    # importing pyspark.pandas sets PYARROW_IGNORE_TIMEZONE=1, and pyarrow then drops an aware value's offset
    if ignore_timezone is None:
        monkeypatch.delenv("PYARROW_IGNORE_TIMEZONE", raising=False)
    else:
        monkeypatch.setenv("PYARROW_IGNORE_TIMEZONE", ignore_timezone)
    at = datetime(2026, 3, 29, 1, 30, 15, 123456, tzinfo=UTC)
    rows: list[list[Any]] = [["a", 2**40, 7, 1.5, True, at],
            ["b", None, None, None, None, None],
            ["c", -1, 0, -0.25, False, at.astimezone(KOLKATA)],  # the same instant, another offset
            ["d", 3, 1, 2.0, True, at.replace(tzinfo=None)]]  # naive: this process's zone, UTC (conftest)
    new = local_frame(spark, rows, DDL)
    old = spark.createDataFrame(rows, DDL)
    got = [tuple(r) for r in new.collect()]
    assert got == [tuple(r) for r in old.collect()]
    assert [r[5] for r in got] == [at.replace(tzinfo=None), None, at.replace(tzinfo=None), at.replace(tzinfo=None)]
    assert got[0][:5] == ("a", 2**40, 7, 1.5, True) and got[1][1:] == (None,) * 5
    assert new.schema == old.schema
    # the reason for it: createDataFrame's rows are a Python RDD (Python tasks at every evaluation)
    assert "PythonRDD" in _lineage(old) and "PythonRDD" not in _lineage(new)


def test_a_row_of_the_wrong_width_is_refused(spark: SparkSession) -> None:
    with pytest.raises(ValueError, match="2 values for the 6 columns"):
        local_frame(spark, [["a", 1]], DDL)
