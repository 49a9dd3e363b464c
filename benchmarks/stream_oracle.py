"""A plain-Python oracle (no Spark): what ``serving.<p>`` must hold after speed + batch, computed from
the records exactly as the broker stored them (partition, offset, LogAppendTime, value).

It applies the documented rules (docs/architecture.md) independently of the product code: the
reason codes of ``spark_jobs/transforms/parse.py`` (first match wins), the duplicate rule (the copy
that reached Kafka first, then the lower partition, then the lower offset), Spark's tumbling,
sliding and session windows, the aggregates of the pipeline YAML, the batch cutoff
``min(max event time, last arrival) - allowed_lateness`` and the serving view: batch rows with
``window_end <= cutoff``, speed rows after it. ``approx_distinct`` is exact here: the batch layer
counts exactly, and the generator keeps at most 12 distinct values per window, where the speed
layer's HLL sketch is still exact.

Speed rows are computed here as the exact answer over the windows' events, which is what the speed
layer must give when those events are on time and carry no conflicting duplicates; the caller
checks that premise with ``members``. Shared by tests/integration/test_random_streams.py and the
soak (benchmarks/soak.py); ``benchmarks/correctness.py`` compares ``serving.<p>`` with it. Session windows are in
the speed table while still open too (provisional), each session once.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from lakehouse.contracts import MIN_EVENT_MS
from lakehouse.pipeline import Pipeline, duration_seconds


@dataclass(frozen=True)
class Record:
    """One Kafka record as stored by the broker."""

    partition: int
    offset: int
    kafka_ms: int
    value: bytes


@dataclass
class Expected:
    cutoff_ms: int
    watermark_ms: int  # the speed layer's final watermark
    codes: dict[tuple[int, int], str | None]  # (partition, offset) -> reason code (None: valid)
    rows: dict[tuple[Any, ...], dict[str, Any]] = field(default_factory=dict)  # grain -> aggregates, source
    members: dict[tuple[Any, ...], list[str]] = field(default_factory=dict)  # grain -> event ids in the window


def _typed(value: Any, typ: str) -> Any:
    """The value as Spark's ``try_cast`` of its JSON text gives it, or None (for the types the pipelines use)."""
    if typ == "string":
        return value if isinstance(value, str) else json.dumps(value)
    if isinstance(value, bool) or value is None:
        return None
    if typ == "double":
        try:
            return float(value)
        except (TypeError, ValueError):
            return None
    if isinstance(value, int):
        return value
    return int(value) if isinstance(value, str) and value.strip().lstrip("-").isdigit() else None


def reason_code(p: Pipeline, rec: Record) -> tuple[str | None, dict[str, Any] | None]:
    """(reason code, typed event): the first failing check, in the product's documented order."""
    try:
        obj = json.loads(rec.value)
    except ValueError:
        obj = None
    if not isinstance(obj, dict):
        return "MALFORMED_JSON", None
    if any(name not in obj for name in p.schema):
        return "MISSING_FIELD", None
    for name in p.schema:
        required = name == p.event_id or name in p.keys
        if obj[name] is None or (required and isinstance(obj[name], str) and not obj[name].strip()):
            return ("NULL_ID" if name == p.event_id else "NULL_KEY" if name in p.keys else "MISSING_FIELD"), None
    event = {name: _typed(obj[name], typ) for name, typ in p.schema.items()}
    if any(v is None for v in event.values()):
        return "WRONG_TYPE", None
    ts = event[p.event_time]
    if ts < MIN_EVENT_MS:
        return "IMPOSSIBLE_TIMESTAMP", None
    if ts > rec.kafka_ms + duration_seconds(p.max_future_skew) * 1000:
        return "FUTURE_TIMESTAMP", None
    return None, event


def windows_of(p: Pipeline, ts: int) -> list[tuple[int, int]]:
    """Spark's fixed windows [start, end) containing ``ts`` (starts aligned to the epoch)."""
    size = p.window.size_seconds * 1000
    slide = duration_seconds(str(p.window.slide)) * 1000 if p.window.type == "sliding" else size
    last = ts - ts % slide
    return [(s, s + size) for s in range(last, ts - size, -slide)]


def sessions_of(p: Pipeline, events: list[dict[str, Any]]) -> list[tuple[int, int, list[dict[str, Any]]]]:
    """Spark's session windows of one key: a new session when an event comes a gap or more after the last."""
    gap = p.window.gap_seconds * 1000
    out: list[tuple[int, int, list[dict[str, Any]]]] = []
    for e in sorted(events, key=lambda e: e[p.event_time]):
        ts = e[p.event_time]
        if out and ts < out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], ts + gap), [*out[-1][2], e])
        else:
            out.append((ts, ts + gap, [e]))
    return out


AGGREGATES: dict[str, Callable[[list[Any]], Any]] = {
    "count": len, "sum": sum, "min": min, "max": max, "avg": lambda v: sum(v) / len(v),
    "approx_distinct": lambda v: len(set(v)),
}


def aggregate(p: Pipeline, events: list[dict[str, Any]]) -> dict[str, Any]:
    """The pipeline's aggregates over one window's events (``approx_distinct`` exact, as batch gives it)."""
    out = {a.name: AGGREGATES[a.fn]([e[a.column] if a.column else 1 for e in events]) for a in p.aggregates}
    out["max_event_time"] = max(e[p.event_time] for e in events)
    return out


def expected_serving(p: Pipeline, records: Iterable[Record]) -> Expected:
    """The rows of ``serving.<p>`` after every record went through speed and then one batch run
    (``records`` is read once: a generator keeps a long topic out of memory)."""
    codes: dict[tuple[int, int], str | None] = {}
    first: dict[str, tuple[tuple[int, int, int], dict[str, Any]]] = {}
    top, last_arrival = 0, 0  # over every valid copy, as bronze holds them
    for rec in records:
        code, event = reason_code(p, rec)
        codes[(rec.partition, rec.offset)] = code
        if event is None:
            continue
        arrival = (rec.kafka_ms, rec.partition, rec.offset)
        top, last_arrival = max(top, event[p.event_time]), max(last_arrival, rec.kafka_ms)
        eid = event[p.event_id]
        if eid not in first or arrival < first[eid][0]:
            first[eid] = (arrival, event)
    events = [e for _, e in first.values()]
    cutoff = min(top, last_arrival) - p.lateness_seconds * 1000
    speed_watermark = top - p.watermark_seconds * 1000
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    if p.window.type == "session":
        by_key: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
        for e in events:
            by_key[tuple(e[k] for k in p.keys)].append(e)
        for key, evs in by_key.items():
            for start, end, members in sessions_of(p, evs):
                groups[(*key, start, end)] = members
    else:
        for e in events:
            for start, end in windows_of(p, e[p.event_time]):
                groups[(*(e[k] for k in p.keys), start, end)].append(e)
    out = Expected(cutoff_ms=cutoff, watermark_ms=speed_watermark, codes=codes)
    for grain, members in groups.items():
        end = grain[-1]
        out.rows[grain] = {**aggregate(p, members), "source": "batch" if end <= cutoff else "speed"}
        out.members[grain] = [e[p.event_id] for e in members]
    return out
