"""A pipeline definition as typed values (``Pipeline`` with its ``Window`` and ``Aggregate`` values) and the
words a definition may use: field types, aggregate functions and durations (window kinds: ``lakehouse.window_kinds``).
``lakehouse.pipeline`` loads definitions into these values (and is where the rest of the code imports them from).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from lakehouse import naming
from lakehouse.alert_spec import AlertPattern

FIELD_TYPES = {"string": "string", "long": "bigint", "int": "int", "double": "double", "boolean": "boolean"}
AGG_FUNCTIONS = ("count", "sum", "avg", "min", "max", "approx_distinct")
_DURATION = re.compile(r"^\s*(\d+)\s*(second|minute|hour|day)s?\s*$")
_UNIT_SECONDS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}


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
    def slide_seconds(self) -> int:
        """Step of a sliding window; 0 for the other kinds."""
        return duration_seconds(self.slide or "0 seconds")

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
    # FUTURE_TIMESTAMP: one fast producer clock must not drag the watermark and the cutoff ahead. At most
    # the watermark (``lakehouse.pipeline_checks``); left empty, it is the watermark.
    max_future_skew: str = ""
    alerts: tuple[AlertPattern, ...] = ()  # ``alerts:``, parsed by ``lakehouse.alert_checks``

    def __post_init__(self) -> None:
        if not self.max_future_skew:
            object.__setattr__(self, "max_future_skew", self.watermark)

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
    def tables(self) -> naming.Tables:
        """This pipeline's table names (``lakehouse.naming``)."""
        return naming.tables(self.name)

    @property
    def grain(self) -> tuple[str, ...]:
        """Primary key of the windowed tables: grouping keys plus window bounds."""
        return (*self.keys, "window_start", "window_end")

    @property
    def required_strings(self) -> tuple[str, ...]:
        """Fields whose null or empty value makes an event unusable (id and keys)."""
        return (self.event_id, *self.keys)
