"""The definition a table's windows were computed under, and how a change to it is named (pure)."""

from __future__ import annotations

import dataclasses

import pytest

from lakehouse import definition
from lakehouse.pipeline import Aggregate, Window, load_pipeline

pytestmark = pytest.mark.unit


def test_durations_have_one_spelling() -> None:
    assert [definition.duration_text(s) for s in (0, 1, 90, 60, 300, 3600, 7200, 86400)] == [
        "0 seconds", "1 second", "90 seconds", "1 minute", "5 minutes", "1 hour", "2 hours", "1 day"]


def test_a_window_change_is_named_and_a_respelt_one_is_none() -> None:
    p = load_pipeline("sensor_readings")
    stored = definition.encoded(p)
    assert definition.changes(stored, dataclasses.replace(p, window=Window("tumbling", "60 seconds"))) == []
    assert definition.changes(stored, dataclasses.replace(p, window=Window("tumbling", "5 minutes"))) == [
        'window.size: "1 minute" -> "5 minutes"']
    sliding = dataclasses.replace(p, window=Window("sliding", "1 minute", slide="30 seconds"))
    assert definition.changes(stored, sliding) == ['window.slide: (unset) -> "30 seconds"',
                                                    'window.type: "tumbling" -> "sliding"']


def test_what_shapes_the_windows_counts_and_the_rest_does_not() -> None:
    p = load_pipeline("sensor_readings")
    stored = definition.encoded(p)
    elsewhere = dataclasses.replace(p, watermark="10 minutes", owner="someone", topic="other",
                                    quality={}, schema={**p.schema, "site": "string"})
    assert definition.changes(stored, elsewhere) == []
    more = dataclasses.replace(p, aggregates=(*p.aggregates, Aggregate("total", "sum", "temperature")))
    assert definition.changes(stored, more) == ['aggregates.total: (unset) -> "sum(temperature)"']
    assert definition.changes(stored, dataclasses.replace(p, keys=())) == [
        'fields.sensor_id: "string" -> (unset)', 'keys: ["sensor_id"] -> []']
    retyped = dataclasses.replace(p, schema={**p.schema, "temperature": "long"})
    assert definition.changes(stored, retyped) == ['fields.temperature: "double" -> "long"']


def test_a_table_without_a_stored_definition_is_taken_as_it_is() -> None:
    assert definition.changes(None, load_pipeline("sensor_readings")) == []


def test_the_stored_definition_fits_in_a_sql_string_literal() -> None:
    for name in ("sensor_readings", "lift_rides", "game_sessions"):
        assert "'" not in definition.encoded(load_pipeline(name)) and "\\" not in definition.encoded(load_pipeline(name))


def test_two_layers_apart_name_the_change_and_each_rebuild_needed() -> None:
    p = load_pipeline("sensor_readings")
    now = definition.encoded(p)
    old = definition.encoded(dataclasses.replace(p, window=Window("tumbling", "5 minutes")))
    assert definition.apart("batch.t", now, "speed.t", now, p) == ""
    assert definition.apart("batch.t", None, "speed.t", old, p) == ""  # a table from before the property
    reason = definition.apart("batch.t", now, "speed.t", old, p)
    assert 'window.size: "1 minute" -> "5 minutes"' in reason and "'tidewater replay sensor_readings'" in reason
    assert "--full" not in reason  # the batch table already holds the current definition
