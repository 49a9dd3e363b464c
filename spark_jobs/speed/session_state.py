"""The open session windows of one key, as plain Python values (``speed.open_sessions`` keeps them in Spark state).

A session is ``Session(start, end, max_event, acc)`` in epoch ms: ``start`` is its first event's time,
``end`` its last event's time plus the gap (Spark's ``session_window``), ``acc`` one accumulator per
aggregate of the definition. An event at ``t`` opens ``[t, t + gap)`` and joins every session it
overlaps (``t < end`` and ``start < t + gap``), so one event can bridge two sessions into one.
``approx_distinct`` keeps the distinct values themselves: an open session's count is exact.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from lakehouse.pipeline import Aggregate


@dataclass(frozen=True)
class Session:
    start: int
    end: int
    max_event: int
    acc: tuple[Any, ...]


def _unit(agg: Aggregate, event: dict[str, Any]) -> Any:
    """The accumulator of one event for ``agg``."""
    if agg.fn == "count":
        return 1
    value = event[str(agg.column)]
    if agg.fn == "avg":
        return None if value is None else (value, 1)
    if agg.fn == "approx_distinct":
        return () if value is None else (value,)
    return value


def _combine(fn: str, a: Any, b: Any) -> Any:
    """Two accumulators of ``fn`` as one (``None``: no non-null value yet, as Spark's aggregates skip nulls)."""
    if fn == "count":
        return a + b
    if fn == "approx_distinct":
        return tuple(sorted(set(a) | set(b), key=repr))
    if a is None or b is None:
        return b if a is None else a
    if fn == "sum":
        return a + b
    if fn == "avg":
        return (a[0] + b[0], a[1] + b[1])
    return min(a, b) if fn == "min" else max(a, b)


def _merge(aggs: Sequence[Aggregate], a: Session, b: Session) -> Session:
    acc = tuple(_combine(g.fn, x, y) for g, x, y in zip(aggs, a.acc, b.acc, strict=True))
    return Session(min(a.start, b.start), max(a.end, b.end), max(a.max_event, b.max_event), acc)


def add_events(aggs: Sequence[Aggregate], gap_ms: int, sessions: Iterable[Session],
               events: Iterable[tuple[int, dict[str, Any]]]) -> list[Session]:
    """``sessions`` with ``events`` ((event time ms, values) pairs) added: sorted by start, disjoint."""
    out = sorted(sessions, key=lambda s: s.start)
    for t, values in events:
        joined = Session(t, t + gap_ms, t, tuple(_unit(g, values) for g in aggs))
        kept = []
        for s in out:
            if s.start < joined.end and t < s.end:
                joined = _merge(aggs, joined, s)
            else:
                kept.append(s)
        out = sorted([*kept, joined], key=lambda s: s.start)
    return out


def changes(before: Sequence[Session], after: Sequence[Session]) -> tuple[list[Session], list[Session]]:
    """(sessions of ``before`` gone from ``after``: extended or merged away; sessions of ``after`` that
    are new or changed)."""
    return [s for s in before if s not in after], [s for s in after if s not in before]


def value(agg: Aggregate, acc: Any) -> Any:
    """The aggregate's result from its accumulator."""
    if agg.fn == "avg":
        return None if acc is None else acc[0] / acc[1]
    if agg.fn == "approx_distinct":
        return len(acc)
    return acc


def dumps(sessions: Sequence[Session]) -> str:
    return json.dumps([[s.start, s.end, s.max_event, list(s.acc)] for s in sessions])


def loads(text: str | None) -> list[Session]:
    def _acc(a: Any) -> Any:
        return tuple(a) if isinstance(a, list) else a

    return [Session(start, end, top, tuple(_acc(a) for a in acc)) for start, end, top, acc in json.loads(text or "[]")]
