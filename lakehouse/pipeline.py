"""Declarative pipeline definitions (``lakehouse/pipelines/<name>.yml``): loader and validator.

A definition is the only place where a pipeline's topic, event schema, event-time field, event
id, grouping keys, window, aggregates and watermark are written. The speed, batch and replay jobs
all build their computation from it. Config may override ``watermark`` and ``allowed_lateness``
per pipeline (``pipelines: {<name>: {...}}`` in tidewater.yml).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from lakehouse.errors import ConfigError, PipelineDefinitionError

PIPELINES_DIR = Path(__file__).resolve().parent / "pipelines"
FIELD_TYPES = {"string": "string", "long": "bigint", "int": "int", "double": "double", "boolean": "boolean"}
AGG_FUNCTIONS = ("count", "sum", "avg", "min", "max", "approx_distinct")
WINDOW_TYPES = ("tumbling", "sliding", "session")
_DURATION = re.compile(r"^\s*(\d+)\s*(second|minute|hour|day)s?\s*$")
_UNIT_SECONDS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


def duration_seconds(text: str) -> int:
    """'2 minutes' -> 120. Raises ValueError for anything else."""
    match = _DURATION.match(str(text))
    if not match:
        raise ValueError(text)
    return int(match.group(1)) * _UNIT_SECONDS[match.group(2)]


@dataclass(frozen=True)
class Window:
    type: str
    size: str | None = None
    slide: str | None = None
    gap: str | None = None

    @property
    def size_seconds(self) -> int:
        """Length of a tumbling or sliding window; 0 for a session window (it has ``gap_seconds``)."""
        return duration_seconds(self.size or "0 seconds")

    @property
    def gap_seconds(self) -> int:
        """Inactivity that closes a session window; 0 for tumbling and sliding windows."""
        return duration_seconds(self.gap or "0 seconds")


@dataclass(frozen=True)
class Aggregate:
    name: str
    fn: str
    column: str | None = None


@dataclass(frozen=True)
class Pipeline:
    name: str
    topic: str
    schema: dict[str, str]
    event_time: str
    event_id: str
    keys: tuple[str, ...]
    window: Window
    aggregates: tuple[Aggregate, ...]
    watermark: str
    owner: str = "unknown"
    description: str = ""
    allowed_lateness: str = ""
    quality: dict[str, Any] = field(default_factory=dict)
    # events stamped further ahead of their arrival (broker LogAppendTime) are quarantined as
    # FUTURE_TIMESTAMP: one fast producer clock must not drag the watermark and the cutoff ahead
    max_future_skew: str = "5 minutes"

    @property
    def watermark_seconds(self) -> int:
        return duration_seconds(self.watermark)

    @property
    def lateness_seconds(self) -> int:
        """How long the batch layer waits past a window's end before it counts it as complete."""
        return duration_seconds(self.allowed_lateness) if self.allowed_lateness else self.watermark_seconds

    @property
    def future_skew_seconds(self) -> int:
        return duration_seconds(self.max_future_skew)

    @property
    def grain(self) -> tuple[str, ...]:
        """Primary key of the windowed tables: grouping keys plus window bounds."""
        return (*self.keys, "window_start", "window_end")

    @property
    def required_strings(self) -> tuple[str, ...]:
        """Fields whose null or empty value makes an event unusable (id and keys)."""
        return (self.event_id, *self.keys)


def _fail(name: str, fld: str, problem: str) -> None:
    raise PipelineDefinitionError(name, fld, problem)


def _duration(name: str, fld: str, value: Any, positive: bool = False) -> str:
    try:
        seconds = duration_seconds(value)
    except ValueError:
        _fail(name, fld, f"is {value!r}; expected a duration like '2 minutes' or '30 seconds'")
    if positive and seconds <= 0:
        _fail(name, fld, f"is {value!r}; a window must be longer than 0 seconds, e.g. '1 minute'")
    return str(value)


def _checked(p: Pipeline) -> Pipeline:
    """Rules across fields: the batch layer never counts a window complete before the speed layer does."""
    if p.allowed_lateness and p.lateness_seconds < p.watermark_seconds:
        _fail(p.name, "allowed_lateness", f"is {p.allowed_lateness!r}, shorter than the watermark {p.watermark!r}; "
              "set it to at least the watermark, or leave it out (it defaults to the watermark)")
    return p


def parse_pipeline(raw: dict[str, Any], source: str = "<dict>") -> Pipeline:
    """Validate a raw definition; every error names the pipeline and the field."""
    if not isinstance(raw, dict):
        raise PipelineDefinitionError(source, "<root>", "must be a YAML mapping")
    name = str(raw.get("name") or source)
    for req in ("name", "topic", "schema", "event_time", "event_id", "keys", "window", "aggregates", "watermark"):
        if req not in raw:
            _fail(name, req, "is missing")
    if not _NAME.match(name):
        _fail(name, "name", "must be lower_snake_case (letters, digits, _)")
    schema = raw["schema"]
    if not isinstance(schema, dict) or not schema:
        _fail(name, "schema", "must map field names to types")
    for fld, typ in schema.items():
        if typ not in FIELD_TYPES:
            _fail(name, f"schema.{fld}", f"has type {typ!r}; expected one of {sorted(FIELD_TYPES)}")
    if schema.get(raw["event_time"]) != "long":
        _fail(name, "event_time", f"must name a 'long' field (epoch millis) of the schema, got {raw['event_time']!r}")
    if schema.get(raw["event_id"]) != "string":
        _fail(name, "event_id", f"must name a 'string' field of the schema, got {raw['event_id']!r}")
    keys = raw["keys"]
    if not isinstance(keys, list) or not keys or any(k not in schema for k in keys):
        _fail(name, "keys", f"must be a non-empty list of schema fields, got {keys!r}")
    win = raw["window"]
    if not isinstance(win, dict) or win.get("type") not in WINDOW_TYPES:
        _fail(name, "window.type", f"must be one of {WINDOW_TYPES}")
    wtype = win["type"]
    needed = {"tumbling": ("size",), "sliding": ("size", "slide"), "session": ("gap",)}[wtype]
    for part in needed:
        if part not in win:
            _fail(name, f"window.{part}", f"is required for a {wtype} window")
        _duration(name, f"window.{part}", win[part], positive=True)
    if wtype == "sliding" and duration_seconds(win["size"]) % duration_seconds(win["slide"]):
        _fail(name, "window.slide", "must divide window.size evenly")
    aggs = []
    if not isinstance(raw["aggregates"], list) or not raw["aggregates"]:
        _fail(name, "aggregates", "must be a non-empty list")
    for i, agg in enumerate(raw["aggregates"]):
        if not isinstance(agg, dict) or agg.get("fn") not in AGG_FUNCTIONS:
            _fail(name, f"aggregates[{i}].fn", f"must be one of {AGG_FUNCTIONS}")
        if not _NAME.match(str(agg.get("name", ""))):
            _fail(name, f"aggregates[{i}].name", "must be lower_snake_case")
        col = agg.get("column")
        if agg["fn"] != "count" and col not in schema:
            _fail(name, f"aggregates[{i}].column", f"must name a schema field, got {col!r}")
        if agg["fn"] in ("sum", "avg") and schema.get(col) not in ("long", "int", "double"):
            _fail(name, f"aggregates[{i}].column", f"must be numeric for {agg['fn']}")
        aggs.append(Aggregate(agg["name"], agg["fn"], col))
    watermark = _duration(name, "watermark", raw["watermark"])
    lateness = _duration(name, "allowed_lateness", raw["allowed_lateness"]) if raw.get("allowed_lateness") else ""
    skew = _duration(name, "max_future_skew", raw.get("max_future_skew", "5 minutes"))
    return _checked(Pipeline(
        name=name, topic=str(raw["topic"]), schema=dict(schema), event_time=raw["event_time"],
        event_id=raw["event_id"], keys=tuple(keys), window=Window(**{k: win.get(k) for k in ("type", "size", "slide", "gap")}),
        aggregates=tuple(aggs), watermark=watermark, owner=str(raw.get("owner", "unknown")),
        description=str(raw.get("description", "")), allowed_lateness=lateness, quality=dict(raw.get("quality") or {}),
        max_future_skew=skew,
    ))


def load_pipeline(name: str, overrides: dict[str, dict[str, Any]] | None = None) -> Pipeline:
    """Load ``<name>.yml`` and apply config overrides (watermark, allowed_lateness)."""
    import yaml

    path, known = PIPELINES_DIR / f"{name}.yml", ", ".join(declared_pipelines()) or "none"
    if not _NAME.match(str(name)):
        raise PipelineDefinitionError(str(name), "", "is not lower_snake_case (letters, digits, _); "
                                      f"known pipelines: {known}")
    if not path.exists():
        declared_in = path.relative_to(PIPELINES_DIR.parent.parent)
        raise PipelineDefinitionError(name, "", f"is not declared (no {declared_in}); known pipelines: {known}")
    pipeline = parse_pipeline(yaml.safe_load(path.read_text()), source=name)
    extra = (overrides or {}).get(name) or {}
    if not isinstance(extra, dict):
        raise PipelineDefinitionError(name, f"pipelines.{name}",
                                      f"is {extra!r}; expected a mapping such as {{watermark: '5 minutes'}}")
    for key in extra:
        if key not in ("watermark", "allowed_lateness", "max_future_skew"):
            raise PipelineDefinitionError(name, f"pipelines.{name}.{key}",
                                          "cannot be overridden; only watermark, allowed_lateness and max_future_skew can")
    if extra:
        changes: dict[str, Any] = {k: _duration(name, k, v) for k, v in extra.items()}
        pipeline = _checked(replace(pipeline, **changes))
    return pipeline


PIPELINES_ENV = "TIDEWATER_PIPELINES"


def declared_pipelines() -> list[str]:
    return sorted(p.stem for p in PIPELINES_DIR.glob("*.yml"))


def available_pipelines() -> list[str]:
    """The pipelines the stack runs: every declared one (``lakehouse/pipelines/*.yml``), or the
    comma-separated subset in ``$TIDEWATER_PIPELINES`` (speed jobs, DAG tasks, serving views)."""
    declared = declared_pipelines()
    chosen = [name.strip() for name in os.environ.get(PIPELINES_ENV, "").split(",") if name.strip()]
    unknown = [name for name in chosen if name not in declared]
    if unknown:
        raise ConfigError(PIPELINES_ENV, ",".join(unknown), f"a comma-separated subset of {', '.join(declared)}")
    return sorted(set(chosen)) if chosen else declared
