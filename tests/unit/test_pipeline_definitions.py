"""Pipeline definitions load, and each invalid field is named in the error."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from lakehouse.errors import ConfigError, PipelineDefinitionError
from lakehouse.pipeline import PIPELINES_DIR, available_pipelines, load_pipeline, parse_pipeline

pytestmark = pytest.mark.unit


def test_reference_pipelines_load() -> None:
    assert available_pipelines() == ["game_sessions", "lift_rides", "sensor_readings"]

    s = load_pipeline("sensor_readings")
    assert (s.topic, s.window.type, s.window.size, s.watermark_seconds) == ("sensor-readings", "tumbling", "1 minute", 120)
    assert s.grain == ("sensor_id", "window_start", "window_end")
    lift = load_pipeline("lift_rides")
    assert (lift.window.size, lift.window.slide, lift.watermark_seconds) == ("10 minutes", "5 minutes", 300)
    game = load_pipeline("game_sessions")
    assert (game.window.type, game.window.gap, game.watermark_seconds) == ("session", "5 minutes", 600)


def test_pipelines_knob_selects_a_subset_and_refuses_unknown_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIDEWATER_PIPELINES", " sensor_readings, lift_rides ")
    assert available_pipelines() == ["lift_rides", "sensor_readings"]
    monkeypatch.setenv("TIDEWATER_PIPELINES", "sensor_readings,sensors")
    with pytest.raises(ConfigError, match="TIDEWATER_PIPELINES.*'sensors'.*subset of game_sessions"):
        available_pipelines()


def test_config_overrides_watermark() -> None:
    p = load_pipeline("sensor_readings", {"sensor_readings": {"watermark": "30 seconds"}})
    assert p.watermark_seconds == 30
    with pytest.raises(PipelineDefinitionError, match="pipelines.sensor_readings.topic"):
        load_pipeline("sensor_readings", {"sensor_readings": {"topic": "x"}})


def _raw() -> dict[str, Any]:
    return yaml.safe_load((PIPELINES_DIR / "sensor_readings.yml").read_text())


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda r: r.pop("topic"), "topic"),
        (lambda r: r["schema"].update(temperature="float"), "schema.temperature"),
        (lambda r: r.update(event_time="sensor_id"), "event_time"),
        (lambda r: r.update(keys=["nope"]), "keys"),
        (lambda r: r.update(window={"type": "hopping"}), "window.type"),
        (lambda r: r.update(window={"type": "sliding", "size": "10 minutes"}), "window.slide"),
        (lambda r: r.update(window={"type": "sliding", "size": "10 minutes", "slide": "3 minutes"}), "window.slide"),
        (lambda r: r.update(watermark="soon"), "watermark"),
        (lambda r: r["aggregates"].append({"name": "x", "fn": "median", "column": "temperature"}), "aggregates[4].fn"),
        (lambda r: r["aggregates"].append({"name": "x", "fn": "sum", "column": "sensor_id"}), "aggregates[4].column"),
    ],
)
def test_invalid_definitions_name_the_field(mutate: Any, field: str) -> None:
    raw = copy.deepcopy(_raw())
    mutate(raw)
    with pytest.raises(PipelineDefinitionError) as err:
        parse_pipeline(raw)
    assert f"field '{field}'" in str(err.value)


def test_unknown_pipeline_lists_known_ones() -> None:
    with pytest.raises(PipelineDefinitionError) as err:
        load_pipeline("sensors")
    assert str(err.value) == ("pipeline 'sensors' is not declared (no lakehouse/pipelines/sensors.yml); "
                              "known pipelines: game_sessions, lift_rides, sensor_readings")
