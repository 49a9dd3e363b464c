"""The rules a pipeline definition must pass (``lakehouse.pipeline.parse_pipeline`` applies them). Each
refusal is one :class:`PipelineDefinitionError` naming the pipeline, the field and the fix:

* every key is a known one (a misspelt key gets the closest known one), at the top, in ``window:``, in
  each aggregate and in ``quality:``;
* no schema field or aggregate is named like a column Tidewater adds itself (``lakehouse.reserved_columns``);
* the field types, the event time and id, the keys, the window, the aggregates and the durations;
* across fields: ``allowed_lateness`` at least the watermark (the batch layer never counts a window
  complete before the speed layer does) and ``max_future_skew`` at most the watermark (an accepted event
  from a fast clock never moves the watermark past on-time events).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence
from typing import Any, NoReturn

from lakehouse.errors import PipelineDefinitionError
from lakehouse.pipeline_spec import AGG_FUNCTIONS, FIELD_TYPES, Pipeline, duration_seconds
from lakehouse.reserved_columns import RESERVED_COLUMNS, RESERVED_PREFIX
from lakehouse.window_kinds import KINDS

TOP_KEYS = ("name", "owner", "description", "topic", "schema", "event_time", "event_id", "keys", "window", "aggregates",
            "watermark", "allowed_lateness", "max_future_skew", "quality", "alerts")
OPTIONAL_KEYS = ("owner", "description", "allowed_lateness", "max_future_skew", "quality", "alerts")
REQUIRED_KEYS = tuple(key for key in TOP_KEYS if key not in OPTIONAL_KEYS)
WINDOW_KEYS = ("type", "size", "slide", "gap")
WINDOW_TYPES = tuple(KINDS)
AGGREGATE_KEYS = ("name", "fn", "column")
QUALITY_KEYS = ("ranges", "max_quarantine_rate")
NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_NUMERIC = ("long", "int", "double")


def _fail(name: str, fld: str, problem: str) -> NoReturn:
    raise PipelineDefinitionError(name, fld, problem)


def refuse_unknown(name: str, prefix: str, given: Iterable[Any], known: Sequence[str]) -> None:
    """The first key of ``given`` that is not ``known``, named with the closest known key (difflib)."""
    for key in given:
        if key in known:
            continue
        close = difflib.get_close_matches(str(key), known, n=1)
        hint = f"did you mean '{close[0]}'?" if close else f"remove it or use one of: {', '.join(known)}"
        _fail(name, f"{prefix}{key}", f"is not a known key; {hint}")


def _refuse_reserved(name: str, fld: str, column: str, fix: str) -> None:
    if column.startswith(RESERVED_PREFIX):
        _fail(name, fld, f"starts with '{RESERVED_PREFIX}', which Tidewater keeps for its own working columns; {fix}")
    if column in RESERVED_COLUMNS:
        _fail(name, fld, f"is a column Tidewater adds itself ({RESERVED_COLUMNS[column]}); {fix}")


def duration(name: str, fld: str, value: Any, positive: bool = False) -> None:
    try:
        seconds = duration_seconds(value)
    except ValueError:
        _fail(name, fld, f"is {value!r}; expected a duration like '2 minutes' or '30 seconds'")
    if positive and seconds <= 0:
        _fail(name, fld, f"is {value!r}; a window must be longer than 0 seconds, e.g. '1 minute'")


def check_definition(name: str, raw: dict[str, Any]) -> None:
    """Every rule on the raw mapping of ``name``'s definition (the rules across fields: ``check_times``)."""
    refuse_unknown(name, "", raw, TOP_KEYS)
    for req in REQUIRED_KEYS:
        if req not in raw:
            _fail(name, req, "is missing")
    if not NAME.match(name):
        _fail(name, "name", "must be lower_snake_case (letters, digits, _)")
    schema = raw["schema"]
    _check_schema(name, schema, raw["event_time"], raw["event_id"])
    keys = raw["keys"]
    if not isinstance(keys, list) or not keys or any(k not in schema for k in keys):
        _fail(name, "keys", f"must be a non-empty list of schema fields, got {keys!r}")
    _check_window(name, raw["window"])
    _check_aggregates(name, raw["aggregates"], schema, keys)
    duration(name, "watermark", raw["watermark"])
    for optional in ("allowed_lateness", "max_future_skew"):
        if raw.get(optional):
            duration(name, optional, raw[optional])
    _check_quality(name, raw.get("quality"), schema)


def _check_schema(name: str, schema: Any, event_time: Any, event_id: Any) -> None:
    if not isinstance(schema, dict) or not schema:
        _fail(name, "schema", "must map field names to types")
    for fld, typ in schema.items():
        if typ not in FIELD_TYPES:
            _fail(name, f"schema.{fld}", f"has type {typ!r}; expected one of {sorted(FIELD_TYPES)}")
        _refuse_reserved(name, f"schema.{fld}", str(fld), "rename the field in the events and in the schema")
    if schema.get(event_time) != "long":
        _fail(name, "event_time", f"must name a 'long' field (epoch millis) of the schema, got {event_time!r}")
    if schema.get(event_id) != "string":
        _fail(name, "event_id", f"must name a 'string' field of the schema, got {event_id!r}")


def _check_window(name: str, win: Any) -> None:
    if not isinstance(win, dict):
        _fail(name, "window", f"must be a mapping such as {{type: tumbling, size: 1 minute}}, got {win!r}")
    refuse_unknown(name, "window.", win, WINDOW_KEYS)
    if win.get("type") not in WINDOW_TYPES:
        _fail(name, "window.type", f"must be one of {WINDOW_TYPES}")
    for part in KINDS[win["type"]].parts:
        if part not in win:
            _fail(name, f"window.{part}", f"is required for a {win['type']} window")
        duration(name, f"window.{part}", win[part], positive=True)
    if win["type"] == "sliding" and duration_seconds(win["size"]) % duration_seconds(win["slide"]):
        _fail(name, "window.slide", "must divide window.size evenly")


def _check_aggregates(name: str, aggregates: Any, schema: dict[str, str], keys: list[str]) -> None:
    if not isinstance(aggregates, list) or not aggregates:
        _fail(name, "aggregates", "must be a non-empty list")
    taken = set(keys)
    for i, agg in enumerate(aggregates):
        if isinstance(agg, dict):
            refuse_unknown(name, f"aggregates[{i}].", agg, AGGREGATE_KEYS)
        if not isinstance(agg, dict) or agg.get("fn") not in AGG_FUNCTIONS:
            _fail(name, f"aggregates[{i}].fn", f"must be one of {AGG_FUNCTIONS}")
        agg_name = str(agg.get("name", ""))
        if not NAME.match(agg_name):
            _fail(name, f"aggregates[{i}].name", "must be lower_snake_case")
        _refuse_reserved(name, f"aggregates[{i}].name", agg_name, "rename the aggregate")
        if agg_name in taken:
            _fail(name, f"aggregates[{i}].name", f"repeats a grouping key or an earlier aggregate ({agg_name!r}); "
                  "give it a name of its own")
        taken.add(agg_name)
        col = agg.get("column")
        if agg["fn"] != "count" and col not in schema:
            _fail(name, f"aggregates[{i}].column", f"must name a schema field, got {col!r}")
        if agg["fn"] in ("sum", "avg") and schema.get(str(col)) not in _NUMERIC:
            _fail(name, f"aggregates[{i}].column", f"must be numeric for {agg['fn']}")


def _check_quality(name: str, quality: Any, schema: dict[str, str]) -> None:
    """``ranges`` (numeric field -> [low, high], the physical limits) and ``max_quarantine_rate`` (0 to 1)."""
    if quality is None:
        return
    if not isinstance(quality, dict):
        _fail(name, "quality", f"is {quality!r}; expected a mapping such as {{ranges: {{temperature: [-90.0, 70.0]}}}}")
    refuse_unknown(name, "quality.", quality, QUALITY_KEYS)
    ranges = quality.get("ranges") or {}
    if not isinstance(ranges, dict):
        _fail(name, "quality.ranges", f"is {ranges!r}; expected a mapping of fields to [low, high]")
    refuse_unknown(name, "quality.ranges.", ranges, list(schema))
    for column, bounds in ranges.items():
        numbers = isinstance(bounds, list) and len(bounds) == 2 and all(
            isinstance(b, int | float) and not isinstance(b, bool) for b in bounds)
        if schema[column] not in _NUMERIC or not numbers or bounds[0] > bounds[1]:
            _fail(name, f"quality.ranges.{column}", f"is {bounds!r}; expected [low, high] with low <= high, for a "
                  f"numeric field ({column} is {schema[column]!r})")
    rate = quality.get("max_quarantine_rate", 0.0)
    if not isinstance(rate, int | float) or isinstance(rate, bool) or not 0 <= rate <= 1:
        _fail(name, "quality.max_quarantine_rate", f"is {rate!r}; expected a fraction from 0 to 1, e.g. 0.05")


def check_times(p: Pipeline) -> Pipeline:
    """The rules across the durations of ``p`` (its watermark, allowed lateness and future skew)."""
    if p.allowed_lateness and p.lateness_seconds < p.watermark_seconds:
        _fail(p.name, "allowed_lateness", f"is {p.allowed_lateness!r}, shorter than the watermark {p.watermark!r}; "
              "set it to at least the watermark, or leave it out (it defaults to the watermark)")
    if p.future_skew_seconds > p.watermark_seconds:
        _fail(p.name, "max_future_skew", f"is {p.max_future_skew!r}, longer than the watermark {p.watermark!r}: an "
              "event that far ahead would move the watermark past on-time events, which the speed layer then drops "
              "as late; set max_future_skew to at most the watermark, or leave it out (it defaults to the watermark)")
    return p
