"""Declarative pipeline definitions (``lakehouse/pipelines/<name>.yml``): loader and validator.

A definition is the only place where a pipeline's topic, event schema, event-time field, event
id, grouping keys, window, aggregates, watermark and alert patterns are written. The speed, batch and replay jobs
all build their computation from it. Config may override ``watermark``, ``allowed_lateness`` and
``max_future_skew`` per pipeline (``pipelines: {<name>: {...}}`` in tidewater.yml). The rules a
definition must pass are ``lakehouse.pipeline_checks``; its typed values, ``lakehouse.pipeline_spec``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from lakehouse.alert_checks import parse_alerts
from lakehouse.errors import ConfigError, PipelineDefinitionError
from lakehouse.pipeline_checks import NAME, WINDOW_KEYS, check_definition, check_times
from lakehouse.pipeline_spec import FIELD_TYPES, Aggregate, Pipeline, Window, duration_seconds
from lakehouse.yaml_file import read_yaml

# the definition's typed values are imported from here by the rest of the code
__all__ = ["FIELD_TYPES", "OVERRIDABLE", "PIPELINES_DIR", "PIPELINES_ENV", "PIPELINES_DIR_ENV", "Aggregate", "Pipeline", "Window",
           "available_pipelines", "declared_pipelines", "duration_seconds", "load_pipeline", "parse_pipeline"]

PIPELINES_DIR = Path(__file__).resolve().parent / "pipelines"
PIPELINES_ENV = "TIDEWATER_PIPELINES"
# another folder of definitions instead of PIPELINES_DIR (e.g. generated ones: benchmarks/s10_many_pipelines.py);
# processes started from one with it set (speed jobs, the speed host) inherit it
PIPELINES_DIR_ENV = "TIDEWATER_PIPELINES_DIR"
OVERRIDABLE = ("watermark", "allowed_lateness", "max_future_skew")  # per pipeline, in tidewater.yml
_REPO = Path(__file__).resolve().parent.parent


def parse_pipeline(raw: dict[str, Any], source: str = "<dict>") -> Pipeline:
    """Validate a raw definition; every error names the pipeline and the field. ``source``: the
    pipeline's name when the definition holds none."""
    if not isinstance(raw, dict):
        raise PipelineDefinitionError(source, "<root>", "must be a YAML mapping")
    name = str(raw.get("name") or source)
    check_definition(name, raw)
    win = raw["window"]
    return check_times(Pipeline(
        name=name, topic=str(raw["topic"]), schema=dict(raw["schema"]), event_time=raw["event_time"],
        event_id=raw["event_id"], keys=tuple(raw["keys"]), window=Window(**{k: win.get(k) for k in WINDOW_KEYS}),
        aggregates=tuple(Aggregate(a["name"], a["fn"], a.get("column")) for a in raw["aggregates"]),
        watermark=str(raw["watermark"]), owner=str(raw.get("owner", "unknown")),
        description=str(raw.get("description", "")), allowed_lateness=str(raw.get("allowed_lateness") or ""),
        quality=dict(raw.get("quality") or {}), max_future_skew=str(raw.get("max_future_skew") or ""),
        alerts=parse_alerts(name, raw.get("alerts"), raw["schema"]),
    ))


def load_pipeline(name: str, overrides: dict[str, dict[str, Any]] | None = None) -> Pipeline:
    """Load ``<name>.yml`` with the config's overrides of it (``OVERRIDABLE``); an error names the file."""
    path, known = pipelines_dir() / f"{name}.yml", ", ".join(declared_pipelines()) or "none"
    if not NAME.match(str(name)):
        raise PipelineDefinitionError(str(name), "", "is not lower_snake_case (letters, digits, _); "
                                      f"known pipelines: {known}")
    if not path.exists():
        raise PipelineDefinitionError(name, "", f"is not declared (no {_shown(path)}); known pipelines: {known}")
    raw = read_yaml(path, _shown(path))
    extra = (overrides or {}).get(name) or {}
    if not isinstance(extra, dict):
        raise PipelineDefinitionError(name, f"pipelines.{name}",
                                      f"is {extra!r}; expected a mapping such as {{watermark: '5 minutes'}}")
    for key in extra:
        if key not in OVERRIDABLE:
            raise PipelineDefinitionError(name, f"pipelines.{name}.{key}",
                                          "cannot be overridden; only watermark, allowed_lateness and max_future_skew can")
    if isinstance(raw, dict) and "name" in raw and raw["name"] != name:
        raise PipelineDefinitionError(name, "name", f"is {raw['name']!r}, not the file's name; set name: {name}, or "
                                      f"rename the file to {raw['name']}.yml", source=_shown(path))
    source = f"{_shown(path)} with the config's pipelines.{name}" if extra else _shown(path)
    try:
        return parse_pipeline({**raw, **extra} if isinstance(raw, dict) else raw, source=name)
    except PipelineDefinitionError as exc:
        raise PipelineDefinitionError(exc.pipeline, exc.field, exc.problem, source=source) from None


def _shown(path: Path) -> str:
    """A definition file's path as messages name it: from the repository's root when it is inside."""
    return str(path.relative_to(_REPO)) if path.is_relative_to(_REPO) else str(path)


def pipelines_dir() -> Path:
    """The folder of the definitions: ``$TIDEWATER_PIPELINES_DIR`` when set, else ``lakehouse/pipelines``."""
    chosen = os.environ.get(PIPELINES_DIR_ENV, "").strip()
    if not chosen:
        return PIPELINES_DIR
    folder = Path(chosen)
    if not folder.is_dir():
        raise ConfigError(PIPELINES_DIR_ENV, chosen, "an existing folder of pipeline definitions (<name>.yml)")
    return folder


def declared_pipelines() -> list[str]:
    return sorted(p.stem for p in pipelines_dir().glob("*.yml"))


def available_pipelines() -> list[str]:
    """The pipelines the stack runs: every declared one (``lakehouse/pipelines/*.yml``), or the
    comma-separated subset in ``$TIDEWATER_PIPELINES`` (speed jobs, DAG tasks, serving views)."""
    declared = declared_pipelines()
    chosen = [name.strip() for name in os.environ.get(PIPELINES_ENV, "").split(",") if name.strip()]
    unknown = [name for name in chosen if name not in declared]
    if unknown:
        raise ConfigError(PIPELINES_ENV, ",".join(unknown), f"a comma-separated subset of {', '.join(declared)}")
    return sorted(set(chosen)) if chosen else declared
