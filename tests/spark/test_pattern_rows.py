"""The alerts query's rows (``alerts.processor.pattern_rows``) against a plain-Python oracle: one row per
(pattern, event) that the pattern looks at, from ONE projection of the events (its plan reads the events
once, whatever the number of patterns)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import pytest

from lakehouse.pipeline import load_pipeline
from spark_jobs.alerts.processor import pattern_rows

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark
T0 = datetime(2026, 1, 1, 8, 0, tzinfo=UTC)


def test_each_pattern_gets_the_events_it_looks_at_from_one_scan(spark: SparkSession) -> None:
    p = load_pipeline("sensor_readings")  # hot_then_cold (> 35, then < 20), silent_sensor (every event), overheating (>= 45)
    temperatures = [50.0, 36.0, 25.0, 10.0, None, 45.0]
    rows = [(f"e{i}", f"s-{i % 2}" if i != 2 else None, T0 + timedelta(seconds=i), t) for i, t in enumerate(temperatures)]
    events = spark.createDataFrame(rows, "event_id string, sensor_id string, event_time timestamp, temperature double")

    got = pattern_rows(p, events)
    found = sorted((r.pattern, r.key, r.event_id, r.event_ms, r.first, r.then) for r in got.collect())

    expected = []
    for event_id, key, at, t in rows:
        if key is None:
            continue  # no key: no pattern looks at it
        ms = int(at.timestamp() * 1000)
        for a in p.alerts:
            first = a.first is None or (t is not None and bool(a.first.apply(t)))
            then = a.then is not None and t is not None and bool(a.then.apply(t))
            if first or then:
                expected.append((a.name, key, event_id, ms, first, then))
    assert found == sorted(expected)
    assert {a.kind for a in p.alerts} == {"sequence", "absence", "threshold"}, "every pattern kind is covered"
    plan = got._jdf.queryExecution().optimizedPlan().toString()
    scans = plan.count("LocalRelation") + plan.count("LogicalRDD")
    assert scans == 1, f"the events are read once for every pattern:\n{plan}"
