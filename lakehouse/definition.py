"""The part of a pipeline definition that shapes its windowed results, kept with the tables computed under it.

A speed table and ``batch.<p>`` hold windows of one definition: its keys, window, aggregates, event time and
event id. Edit ``window.size`` in the YAML and restart the speed job, and its checkpoint went on appending
five-minute windows beside the one-minute ones, the next incremental batch run MERGEd them into
``batch.<p>``, and ``serving.<p>`` showed both sizes at once: sums over it counted events twice, and
nothing said so. Each such table now carries the definition it was computed under (table property
``tidewater.definition``, set when it is created, and by a full batch run); a job that would add rows of
another definition refuses with one line naming the change and the command that rebuilds the table
(``spark_jobs.shared.definition_guard``), and the serving view never merges two definitions (``apart``).
Tables created before this property have none and are taken as they are. This module is pure.
"""

from __future__ import annotations

import json

from lakehouse.pipeline import Pipeline, duration_seconds
from lakehouse.settings_diff import differences, flatten

PROPERTY = "tidewater.definition"
_UNITS = (("day", 86400), ("hour", 3600), ("minute", 60), ("second", 1))


def duration_text(seconds: int) -> str:
    """60 -> '1 minute', 300 -> '5 minutes', 90 -> '90 seconds': one spelling per duration (pure)."""
    unit, size = next(((u, s) for u, s in _UNITS if seconds and seconds % s == 0), ("second", 1))
    n = seconds // size
    return f"{n} {unit}{'' if n == 1 else 's'}"


def of(p: Pipeline) -> dict[str, object]:
    """What the windows of ``p`` depend on (pure): not its owner, topic, watermark or quality rules."""
    window = {k: duration_text(duration_seconds(v)) if k != "type" else v
              for k, v in vars(p.window).items() if v is not None}
    used = {p.event_time, *p.keys, *(a.column for a in p.aggregates if a.column)}
    return {"event_time": p.event_time, "event_id": p.event_id, "keys": list(p.keys), "window": window,
            "aggregates": {a.name: f"{a.fn}({a.column})" if a.column else a.fn for a in p.aggregates},
            "fields": {f: p.schema[f] for f in sorted(used)}}


def encoded(p: Pipeline) -> str:
    """``of(p)`` as the table property's value: compact JSON (names are identifiers: no quote to escape)."""
    return json.dumps(of(p), sort_keys=True, separators=(",", ":"))


def changes(stored: str | None, p: Pipeline) -> list[str]:
    """``key: old -> new`` per difference between a table's stored definition and ``p`` (pure); none
    when the table stores none (created before the property existed)."""
    if not stored:
        return []
    return differences(flatten(json.loads(stored)), flatten(of(p)))


def apart(batch_table: str, batch: str | None, speed_table: str, speed: str | None, p: Pipeline) -> str:
    """Why the batch and speed tables of ``p`` cannot be served together, from the definitions they store
    (they differ: the change, and the commands that rebuild each layer not on ``p``'s), or '' when they can
    (one definition, or either table stores none). Pure."""
    if batch is None or speed is None or json.loads(batch) == json.loads(speed):
        return ""
    between = differences(flatten(json.loads(batch)), flatten(json.loads(speed)))
    fixes = [fix for old, fix in ((batch, f"'tidewater batch {p.name} --full'"), (speed, f"'tidewater replay {p.name}'"))
             if changes(old, p)]
    return (f"{batch_table} and {speed_table} hold windows of two definitions (from the batch table's to the "
            f"speed table's: {'; '.join(between)}); run {' and '.join(fixes)} to rebuild under the current one")
