"""Parse and validate a definition's ``alerts:`` section into ``lakehouse.alert_spec.AlertPattern`` values.
Each refusal is one :class:`PipelineDefinitionError` naming the pipeline, the field and the fix:
unknown keys (with the closest known one), names, kinds, keys, durations, counts and conditions (a
schema field, a known operator, a value of the field's type; ordering operators on numbers and strings).

```yaml
alerts:
  - {name: hot_then_cold, kind: sequence, key: sensor_id, within: 10 minutes,
     first: {field: temperature, op: ">", value: 35}, then: {field: temperature, op: "<", value: 20}}
  - {name: silent_sensor, kind: absence, key: sensor_id, within: 5 minutes}
  - {name: overheating, kind: threshold, key: sensor_id, within: 1 minute, count: 3,
     when: {field: temperature, op: ">=", value: 45}}
```
"""

from __future__ import annotations

from typing import Any, NoReturn

from lakehouse.alert_spec import KINDS, OPERATORS, ORDERING, AlertPattern, Condition
from lakehouse.errors import PipelineDefinitionError
from lakehouse.pipeline_checks import NAME, duration, refuse_unknown
from lakehouse.pipeline_spec import duration_seconds

COMMON_KEYS = ("name", "kind", "key", "within")
KIND_KEYS = {"sequence": ("first", "then"), "absence": (), "threshold": ("when", "count")}
CONDITION_KEYS = ("field", "op", "value")
_EXAMPLE = "{field: temperature, op: '>', value: 35}"
_PYTHON_TYPES: dict[str, tuple[type, ...]] = {"string": (str,), "long": (int,), "int": (int,), "double": (int, float),
                                              "boolean": (bool,)}


def _fail(name: str, fld: str, problem: str) -> NoReturn:
    raise PipelineDefinitionError(name, fld, problem)


def parse_alerts(name: str, raw: Any, schema: dict[str, str]) -> tuple[AlertPattern, ...]:
    """The patterns of ``raw`` (the definition's ``alerts:`` value; absent: none)."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        _fail(name, "alerts", f"is {raw!r}; expected a list of patterns such as "
              "[{name: silent_sensor, kind: absence, key: sensor_id, within: 5 minutes}]")
    patterns = tuple(_pattern(name, f"alerts[{i}]", item, schema) for i, item in enumerate(raw))
    names = [p.name for p in patterns]
    for i, pattern in enumerate(patterns):
        if names.index(pattern.name) != i:
            _fail(name, f"alerts[{i}].name", f"repeats {pattern.name!r}; give each alert a name of its own")
    return patterns


def _pattern(name: str, at: str, item: Any, schema: dict[str, str]) -> AlertPattern:
    if not isinstance(item, dict):
        _fail(name, at, f"is {item!r}; expected a mapping with name, kind, key and within")
    kind = item.get("kind")
    if kind not in KINDS:
        _fail(name, f"{at}.kind", f"is {kind!r}; expected one of {', '.join(KINDS)}")
    refuse_unknown(name, f"{at}.", item, (*COMMON_KEYS, *KIND_KEYS[kind]))
    for required in (*COMMON_KEYS, *KIND_KEYS[kind]):
        if required not in item:
            _fail(name, f"{at}.{required}", f"is missing; a {kind} alert needs {', '.join((*COMMON_KEYS, *KIND_KEYS[kind]))}")
    alert_name = str(item["name"])
    if not NAME.match(alert_name):
        _fail(name, f"{at}.name", f"is {item['name']!r}; expected lower_snake_case (letters, digits, _)")
    key = item["key"]
    if schema.get(key) not in ("string", "long", "int"):
        _fail(name, f"{at}.key", f"is {key!r}; expected a string or integer field of the schema ({', '.join(schema)})")
    duration(name, f"{at}.within", item["within"], positive=True)
    count = item.get("count", 0)
    if kind == "threshold" and (not isinstance(count, int) or isinstance(count, bool) or count < 1):
        _fail(name, f"{at}.count", f"is {count!r}; expected a whole number of events, at least 1")
    first = item.get("first", item.get("when"))
    return AlertPattern(
        name=alert_name, kind=kind, key=str(key), within=str(item["within"]),
        within_ms=duration_seconds(item["within"]) * 1000, count=count if kind == "threshold" else 0,
        first=_condition(name, f"{at}.{'first' if kind == 'sequence' else 'when'}", first, schema) if first else None,
        then=_condition(name, f"{at}.then", item["then"], schema) if kind == "sequence" else None)


def _condition(name: str, at: str, raw: Any, schema: dict[str, str]) -> Condition:
    if not isinstance(raw, dict):
        _fail(name, at, f"is {raw!r}; expected a condition such as {_EXAMPLE}")
    refuse_unknown(name, f"{at}.", raw, CONDITION_KEYS)
    for required in CONDITION_KEYS:
        if required not in raw:
            _fail(name, f"{at}.{required}", f"is missing; a condition is {_EXAMPLE}")
    fld, op, value = raw["field"], raw["op"], raw["value"]
    if fld not in schema:
        _fail(name, f"{at}.field", f"is {fld!r}; expected a schema field ({', '.join(schema)})")
    if op not in OPERATORS:
        _fail(name, f"{at}.op", f"is {op!r}; expected one of {' '.join(OPERATORS)} (quote it in YAML: op: '>')")
    typ = schema[fld]
    bool_for_number = isinstance(value, bool) and typ != "boolean"
    if not isinstance(value, _PYTHON_TYPES[typ]) or bool_for_number:
        _fail(name, f"{at}.value", f"is {value!r}; {fld} is a {typ} field, so the value must be a {typ}")
    if typ == "boolean" and op in ORDERING:
        _fail(name, f"{at}.op", f"is {op!r}; a boolean field takes == or !=")
    return Condition(str(fld), str(op), value)
