"""The ``alerts:`` section of a pipeline definition: parsed into typed patterns, and every mistake refused
with one line naming the field and the fix."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from lakehouse.alert_spec import Condition
from lakehouse.errors import PipelineDefinitionError
from lakehouse.pipeline import PIPELINES_DIR, parse_pipeline

pytestmark = pytest.mark.unit


def _raw(**alert: Any) -> dict[str, Any]:
    raw = copy.deepcopy(yaml.safe_load((PIPELINES_DIR / "sensor_readings.yml").read_text()))
    raw["alerts"] = [alert]
    return raw


def test_the_shipped_alerts_parse_into_typed_patterns() -> None:
    raw = yaml.safe_load((PIPELINES_DIR / "sensor_readings.yml").read_text())
    p = parse_pipeline(raw)
    kinds = {a.name: (a.kind, a.key, a.within_ms, a.first, a.then, a.count) for a in p.alerts}
    assert kinds == {
        "hot_then_cold": ("sequence", "sensor_id", 600_000, Condition("temperature", ">", 35),
                          Condition("temperature", "<", 20), 0),
        "silent_sensor": ("absence", "sensor_id", 300_000, None, None, 0),
        "overheating": ("threshold", "sensor_id", 60_000, Condition("temperature", ">=", 45), None, 3),
    }
    assert Condition("temperature", ">", 35).apply(35.5) and not Condition("temperature", ">", 35).apply(None)


SEQ = {"name": "x", "kind": "sequence", "key": "sensor_id", "within": "1 minute",
       "first": {"field": "temperature", "op": ">", "value": 1}, "then": {"field": "temperature", "op": "<", "value": 0}}


@pytest.mark.parametrize(("alert", "field", "words"), [
    ({**SEQ, "kind": "pattern"}, "alerts[0].kind", "expected one of sequence, absence, threshold"),
    ({**SEQ, "withn": "1 minute"}, "alerts[0].withn", "did you mean 'within'?"),
    ({k: v for k, v in SEQ.items() if k != "then"}, "alerts[0].then", "is missing"),
    ({**SEQ, "key": "nope"}, "alerts[0].key", "expected a string or integer field"),
    ({**SEQ, "key": "temperature"}, "alerts[0].key", "expected a string or integer field"),
    ({**SEQ, "within": "soon"}, "alerts[0].within", "expected a duration"),
    ({**SEQ, "name": "Bad-Name"}, "alerts[0].name", "lower_snake_case"),
    ({**SEQ, "first": "temperature > 35"}, "alerts[0].first", "expected a condition"),
    ({**SEQ, "first": {"field": "temperature", "op": "LIKE", "value": 1}}, "alerts[0].first.op", "expected one of"),
    ({**SEQ, "first": {"field": "temp", "op": ">", "value": 1}}, "alerts[0].first.field", "expected a schema field"),
    ({**SEQ, "first": {"field": "temperature", "op": ">", "value": "1; DROP TABLE x"}}, "alerts[0].first.value",
     "must be a double"),
    ({**SEQ, "first": {"field": "temperature", "op": ">", "value": True}}, "alerts[0].first.value", "must be a double"),
    ({**SEQ, "first": {"field": "temperature", "op": ">", "value": 1, "sql": "x"}}, "alerts[0].first.sql", "not a known key"),
    ({"name": "t", "kind": "threshold", "key": "sensor_id", "within": "1 minute", "count": 0,
      "when": {"field": "temperature", "op": ">", "value": 1}}, "alerts[0].count", "at least 1"),
    ({"name": "g", "kind": "absence", "key": "sensor_id", "within": "1 minute", "count": 3}, "alerts[0].count",
     "not a known key"),
])
def test_bad_alerts_are_refused_with_one_line(alert: dict[str, Any], field: str, words: str) -> None:
    with pytest.raises(PipelineDefinitionError) as err:
        parse_pipeline(_raw(**alert))
    assert err.value.field == field, str(err.value)
    assert words in str(err.value) and "\n" not in str(err.value)


def test_two_alerts_of_one_name_are_refused() -> None:
    raw = _raw(**SEQ)
    raw["alerts"].append(dict(SEQ))
    with pytest.raises(PipelineDefinitionError, match="repeats 'x'"):
        parse_pipeline(raw)
