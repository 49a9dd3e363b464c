"""The committed expectation suites are what the pipeline definitions ask for, and a missing or stale one
is refused with the command that fixes it (``expectations.suites.suite_problem``: the gate fails closed)."""

from __future__ import annotations

import dataclasses

import pytest

from expectations.suites import SUITE_KINDS, expected_expectations, suite_problem
from lakehouse.pipeline import available_pipelines, load_pipeline

pytestmark = pytest.mark.unit
FIX = "'.venv/bin/python -m expectations.suites'"


@pytest.mark.parametrize("pipeline", available_pipelines())
def test_every_committed_suite_matches_its_definition(pipeline: str) -> None:
    p = load_pipeline(pipeline)
    assert {kind: suite_problem(kind, p) for kind in SUITE_KINDS} == dict.fromkeys(SUITE_KINDS)


def test_a_changed_range_makes_the_suites_that_check_it_stale() -> None:
    p = load_pipeline("sensor_readings")
    hotter = dataclasses.replace(p, quality={**p.quality, "ranges": {"temperature": [-90.0, 90.0]}})
    problems = {kind: suite_problem(kind, hotter) for kind in SUITE_KINDS}
    assert {k for k, v in problems.items() if v} == {"bronze", "speed", "batch", "staging"}
    line = problems["staging"] or ""
    assert line.startswith("quality: suite staging.sensor_readings (expectations/gx/expectations/staging/"
                           "sensor_readings.json) no longer matches lakehouse/pipelines/sensor_readings.yml")
    assert '"max_value": 90.0' in line and FIX in line and "\n" not in line


def test_a_new_pipeline_without_suites_is_named_with_the_fix() -> None:
    p = dataclasses.replace(load_pipeline("lift_rides"), name="chairlift_queue")
    line = suite_problem("staging", p) or ""
    assert line == ("quality: no expectation suite staging.chairlift_queue (expectations/gx/expectations/staging/"
                    f"chairlift_queue.json); a new pipeline needs its suites: generate the suites with {FIX}, "
                    "then commit them")


def test_the_canonical_form_is_what_gx_stores() -> None:
    p = load_pipeline("sensor_readings")
    speed = expected_expectations("speed", p)
    assert ('["expect_column_values_to_be_between", {"column": "avg_temperature_minus_min_temperature", '
            '"min_value": 0.0}, "critical"]') in speed  # strict_min False is GX's default: not stored
    assert ('["expect_column_values_to_be_between", {"column": "window_end_minus_window_start", "min_value": 0.0, '
            '"strict_min": true}, "critical"]') in speed
