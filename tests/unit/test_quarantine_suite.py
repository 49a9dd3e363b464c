"""The quarantine suite fails a pipeline whose quarantine rate is above its ``quality.max_quarantine_rate``:
the expectation is critical, so ``tidewater check`` (and the quality DAG) fail and name the rate and the limit."""

from __future__ import annotations

import dataclasses

import great_expectations as gx
import pandas as pd
import pytest

from expectations.runner import ValidationOutcome, tally
from expectations.suites import DEFAULT_MAX_QUARANTINE_RATE, build_suite, expectation_specs, expected_expectations
from lakehouse.pipeline import Pipeline, available_pipelines, load_pipeline

pytestmark = pytest.mark.unit


def rate_spec(p: Pipeline) -> dict[str, object]:
    specs = [kwargs for _, kwargs in expectation_specs("quarantine", p) if kwargs.get("column") == "quarantine_rate"]
    assert len(specs) == 1, specs
    return specs[0]


@pytest.mark.parametrize("pipeline", available_pipelines())
def test_the_rate_above_the_max_is_an_error(pipeline: str) -> None:
    p = load_pipeline(pipeline)
    spec = rate_spec(p)
    assert spec.get("severity", "critical") == "critical", spec
    assert spec["max_value"] == float(p.quality.get("max_quarantine_rate", DEFAULT_MAX_QUARANTINE_RATE))
    assert expected_expectations("quarantine", p) == [
        '["expect_column_values_to_be_between", {"column": "quarantine_rate", "max_value": '
        f'{spec["max_value"]}, "min_value": 0.0}}, "critical"]']


def test_the_max_is_the_pipelines_own() -> None:
    p = load_pipeline("sensor_readings")
    tolerant = dataclasses.replace(p, quality={**p.quality, "max_quarantine_rate": 0.2})
    assert rate_spec(tolerant)["max_value"] == 0.2 and "severity" not in rate_spec(tolerant)


def validate(p: Pipeline, bronze_rows: int, quarantine_rows: int) -> ValidationOutcome:
    """The pipeline's quarantine suite run by GX (pandas engine) on the one-row rate frame."""
    context = gx.get_context(mode="ephemeral")
    suite = context.suites.add(build_suite("quarantine", p))
    batch = context.data_sources.add_pandas("rates").add_dataframe_asset("rates").add_batch_definition_whole_dataframe("all")
    rate = quarantine_rows / (bronze_rows + quarantine_rows)
    frame = pd.DataFrame({"bronze_rows": [bronze_rows], "quarantine_rows": [quarantine_rows], "quarantine_rate": [rate]})
    result = gx.ValidationDefinition(name="rates", data=batch, suite=suite).run(
        batch_parameters={"dataframe": frame}, result_format="SUMMARY")
    outcome = ValidationOutcome(p.name, "quarantine", f"quarantine.{p.name}")
    tally(outcome, "quarantine", result.results)
    return outcome


def test_a_rate_above_the_max_fails_the_suite_and_names_rate_and_limit() -> None:
    p = load_pipeline("sensor_readings")
    outcome = validate(p, bronze_rows=2_861, quarantine_rows=2_039)  # 41.6 % quarantined
    assert not outcome.success and not outcome.warnings, outcome.summary()
    assert len(outcome.failures) == 1 and "quarantine_rate" in outcome.failures[0], outcome.summary()
    assert f"'max_value': {DEFAULT_MAX_QUARANTINE_RATE}" in outcome.failures[0], outcome.failures[0]
    assert "0.416" in outcome.failures[0], outcome.failures[0]
    assert outcome.summary().startswith("FAILED quarantine suite on quarantine.sensor_readings")


def test_a_rate_at_the_max_passes() -> None:
    outcome = validate(load_pipeline("sensor_readings"), bronze_rows=95, quarantine_rows=5)
    assert outcome.success and not outcome.failures and not outcome.warnings, outcome.summary()
