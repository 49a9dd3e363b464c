"""Pipeline definitions load, and each invalid field is named in the error."""

from __future__ import annotations

import copy
import inspect
from pathlib import Path
from typing import Any

import pytest
import yaml

from lakehouse import contracts
from lakehouse.config import load_config
from lakehouse.errors import ConfigError, PipelineDefinitionError
from lakehouse.pipeline import PIPELINES_DIR, available_pipelines, declared_pipelines, load_pipeline, parse_pipeline
from lakehouse.reserved_columns import RESERVED_COLUMNS, RESERVED_PREFIX, WORKING_COLUMNS
from spark_jobs.transforms import parse, partials, windows

pytestmark = pytest.mark.unit
REPO = Path(__file__).resolve().parents[2]


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


def test_reserved_columns_are_exactly_the_columns_tidewater_adds() -> None:
    """Every table of every declared pipeline (bronze, quarantine, speed, its partials, batch, staging,
    late, serving) and the parser's output: what is not a field or aggregate of the definition is reserved."""
    added: set[str] = {c for c, _ in contracts.SERVING_COLUMNS} | set(parse.BRONZE_META) | set(parse.QUARANTINE_COLUMNS)
    for name in declared_pipelines():
        p = load_pipeline(name)
        speed = contracts.speed(p)
        tables = (contracts.bronze(p), contracts.quarantine(p), speed, *speed.requires, contracts.batch(p),
                  contracts.batch_staging(p), contracts.late(p))
        own = {*p.schema, *(a.name for a in p.aggregates)}
        added |= {c for table in tables for c in table.column_names if c not in own}
    assert {c for c in added if not c.startswith(RESERVED_PREFIX)} == set(RESERVED_COLUMNS) - set(WORKING_COLUMNS)
    for column in WORKING_COLUMNS:  # grouped by beside the keys
        assert all(f'.alias("{column}")' in inspect.getsource(m) for m in (windows, partials)), column


@pytest.mark.parametrize(
    "column",
    ["kafka_offset", "kafka_partition", "kafka_topic", "kafka_timestamp", "ingest_time", "raw_value", "reason_code",
     "reason", "event_date", "source", "finality", "as_of", "window_start", "window_end", "max_event_time",
     "updated_at", "batch_id", "is_final", "watermark", "lineage", "compacted", "slot", "computed_at", "run_id",
     "bronze_version", "op", "window"],
)
def test_schema_fields_named_like_a_column_tidewater_adds_are_refused(column: str) -> None:
    raw = _raw()
    raw["schema"][column] = "string"
    with pytest.raises(PipelineDefinitionError) as err:
        parse_pipeline(raw)
    assert f"field 'schema.{column}' is a column Tidewater adds itself (" in str(err.value), err.value
    assert "rename the field in the events and in the schema" in str(err.value), err.value


def test_event_time_and_underscored_names_are_tidewaters() -> None:
    raw = _raw()  # event time: 'timestamp'
    raw["schema"]["event_time"] = "long"
    with pytest.raises(PipelineDefinitionError, match="field 'schema.event_time' is a column Tidewater adds itself"):
        parse_pipeline(raw)
    raw = _raw()
    raw["schema"]["event_time"] = raw["schema"].pop("timestamp")
    raw["event_time"] = "event_time"  # the event-time field itself: bronze would hold two event_time columns
    with pytest.raises(PipelineDefinitionError, match="field 'schema.event_time' is a column Tidewater adds itself"):
        parse_pipeline(raw)
    raw = _raw()
    raw["schema"]["_json"] = "string"
    with pytest.raises(PipelineDefinitionError, match="field 'schema._json' starts with '_', which Tidewater keeps"):
        parse_pipeline(raw)


@pytest.mark.parametrize(("name", "problem"), [
    ("window_end", "is a column Tidewater adds itself ("),
    ("sensor_id", "repeats a grouping key or an earlier aggregate"),
    ("event_count", "repeats a grouping key or an earlier aggregate"),
])
def test_aggregate_names_never_collide_with_other_columns(name: str, problem: str) -> None:
    raw = _raw()
    raw["aggregates"].append({"name": name, "fn": "count"})
    with pytest.raises(PipelineDefinitionError) as err:
        parse_pipeline(raw)
    assert f"field 'aggregates[4].name' {problem}" in str(err.value), err.value


def test_a_future_skew_longer_than_the_watermark_is_refused() -> None:
    raw = _raw()  # watermark 2 minutes
    raw["max_future_skew"] = "5 minutes"
    with pytest.raises(PipelineDefinitionError) as err:
        parse_pipeline(raw)
    assert "field 'max_future_skew' is '5 minutes', longer than the watermark '2 minutes'" in str(err.value), err.value
    assert "set max_future_skew to at most the watermark, or leave it out" in str(err.value), err.value
    raw["max_future_skew"] = "2 minutes"
    assert parse_pipeline(raw).future_skew_seconds == 120
    with pytest.raises(PipelineDefinitionError, match="'max_future_skew' is '3 minutes', longer than the watermark '2"):
        load_pipeline("sensor_readings", {"sensor_readings": {"max_future_skew": "3 minutes"}})


def test_an_unset_future_skew_follows_the_watermark() -> None:
    assert load_pipeline("sensor_readings").max_future_skew == "2 minutes"
    shorter = load_pipeline("sensor_readings", {"sensor_readings": {"watermark": "30 seconds"}})
    assert (shorter.watermark, shorter.max_future_skew) == ("30 seconds", "30 seconds")


@pytest.mark.parametrize("name", declared_pipelines())
def test_a_fast_clock_within_the_skew_never_makes_on_time_events_late(name: str) -> None:
    """The speed watermark is the highest accepted event time minus the watermark delay: an event stamped
    ``max_future_skew`` ahead of its arrival must leave it at or before that arrival, or every on-time
    event after it would be dropped as late."""
    p = load_pipeline(name)
    arrived_ms = 1_772_366_400_000
    watermark_ms = arrived_ms + p.future_skew_seconds * 1000 - p.watermark_seconds * 1000
    on_time_ms = arrived_ms  # the next event, stamped by a right clock as it reaches Kafka
    assert on_time_ms >= watermark_ms, (p.max_future_skew, p.watermark)


def test_the_repository_config_and_pipelines_load() -> None:
    cfg = load_config(REPO / "tidewater.yml", env={})
    assert [load_pipeline(name, cfg.pipelines).name for name in available_pipelines()] == available_pipelines()
