"""``tidewater reconcile``'s summary (counted in Spark over ledger rows) shows every aggregate that
differs, how often and by how much."""

from __future__ import annotations

import datetime as dt
import math
from typing import TYPE_CHECKING, Any

import pytest

from lakehouse import contracts
from spark_jobs.transforms.reconcile import format_summary, summarize

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

pytestmark = pytest.mark.spark
T0 = dt.datetime(2026, 11, 20, 8, 0)


def _row(aggregate: str, window: int, speed: float | None, batch: float, run: str = "r1",
         counting: bool = True, key: str = '{"lift_id":"L1"}') -> dict[str, Any]:
    """One ledger row computed the way ``ledger_rows`` does (a missing count is 0 in speed)."""
    compared = (speed if speed is not None else 0.0) if counting else speed
    err = None if compared is None else abs(batch - compared)
    start = T0 + dt.timedelta(minutes=5 * window)
    return {"run_id": run, "pipeline": "p", "window_key": key, "window_start": start,
            "window_end": start + dt.timedelta(minutes=10), "aggregate": aggregate, "speed_value": speed,
            "batch_value": batch, "abs_error": err, "rel_error": None if err is None or not batch else err / abs(batch),
            "exact": speed is not None and err is not None and err <= 1e-9 * max(1.0, abs(batch)),
            "late_events": 0, "late_rows": 0, "duplicates_removed": 0, "quarantined": 0,
            "recorded_at": T0 + dt.timedelta(hours=1 if run == "r1" else 2)}


def ledger(spark: SparkSession, rows: list[dict[str, Any]]) -> DataFrame:
    """Ledger rows as ``ops.reconciliation`` holds them."""
    columns = contracts.RECONCILIATION.column_names
    return spark.createDataFrame([tuple(r[c] for c in columns) for r in rows], contracts.RECONCILIATION.schema)


def _table_line(text: str, aggregate: str) -> str:
    lines = [line for line in text.splitlines() if line.split()[:1] == [aggregate]]
    assert len(lines) == 1, text
    return lines[0]


def test_lift_rides_distinct_skiers_errors_are_shown(spark: SparkSession) -> None:
    """The reported case: ride counts exact, approximate distinct skiers off by up to 5.3% in 31 of
    32 windows. The table must name distinct_skiers, in how many windows it differs and how much."""
    skiers_speed = {0: 100.0, 7: 105.3}  # exact in window 0, 5.3% too high in window 7, 2% elsewhere
    rows = [r for w in range(32) for r in (_row("ride_count", w, 140.0, 140.0),
                                           _row("distinct_skiers", w, skiers_speed.get(w, 102.0), 100.0))]
    s = summarize(ledger(spark, rows))
    assert (s["windows"], s["exact_windows"]) == (32, 1)
    skiers = s["errors"]["distinct_skiers"]
    assert skiers["windows_differing"] == 31
    assert skiers["max_rel_error"] == pytest.approx(0.053)
    assert s["errors"]["ride_count"]["windows_differing"] == 0
    text = format_summary("lift_rides", s)
    line = _table_line(text, "distinct_skiers")
    assert "31" in line.split() and "5.300%" in line, text
    assert "0" in _table_line(text, "ride_count").split(), text


def test_missing_or_nan_speed_values_count_as_differences(spark: SparkSession) -> None:
    """A window the speed layer never emitted, or a NaN, is a difference, not an error of 0."""
    rows = [_row("avg_temperature", 0, None, 21.5, counting=False),
            _row("avg_temperature", 1, math.nan, 20.0, counting=False),
            _row("avg_temperature", 2, 20.0, 20.0, counting=False),
            _row("event_count", 0, 10.0, 10.0), _row("event_count", 1, 10.0, 10.0), _row("event_count", 2, 10.0, 10.0)]
    s = summarize(ledger(spark, rows))
    avg = s["errors"]["avg_temperature"]
    assert (avg["windows_differing"], avg["missing_in_speed"]) == (2, 1)
    assert math.isnan(avg["max_abs_error"]), "a NaN difference is not reported as 0"
    assert s["exact_windows"] == 1
    line = _table_line(format_summary("sensor_readings", s), "avg_temperature")
    assert "2" in line.split() and "nan" in line and "1 missing" in line, line


def test_only_the_latest_run_of_a_window_counts(spark: SparkSession) -> None:
    rows = [_row("ride_count", 0, 17.0, 19.0, run="r1"), _row("ride_count", 0, 19.0, 19.0, run="r2")]
    s = summarize(ledger(spark, rows))
    assert (s["windows"], s["exact_windows"], s["errors"]["ride_count"]["windows_differing"]) == (1, 1, 0)
    assert "all aggregates exact" in format_summary("lift_rides", s)
