"""Synthetic events for a pipeline: clean, out-of-order, late, duplicate and malformed records.

``generate(pipeline, n, start_ms, step_ms, mix, seed)`` yields :class:`Record` (key, value bytes,
kind). Kinds: ``valid``, ``out_of_order`` (event time jittered back within the watermark),
``late`` (event time further back than watermark + window, so the speed layer drops it),
``duplicate`` (an earlier record sent again, same event id) and ``malformed`` (cycling through
bad JSON, missing field, wrong type, null id and impossible timestamp).

No clean event is stamped after the wall clock at which it is sent (the parser quarantines events
stamped ahead of their Kafka arrival): :func:`default_start_ms` places the clean event times, and the
other kinds only move an event time back or resend an earlier event.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Iterator
from dataclasses import dataclass

from lakehouse.pipeline import Pipeline

MALFORMED_KINDS = ("MALFORMED_JSON", "MISSING_FIELD", "WRONG_TYPE", "NULL_ID", "IMPOSSIBLE_TIMESTAMP")


@dataclass(frozen=True)
class Mix:
    late: float = 0.0
    out_of_order: float = 0.0
    duplicate: float = 0.0
    malformed: float = 0.0


@dataclass(frozen=True)
class Record:
    key: bytes | None
    value: bytes
    kind: str
    event: dict[str, object] | None = None


def _value_for(field: str, typ: str, p: Pipeline, rng: random.Random, i: int, ts: int) -> object:
    if field == p.event_time:
        return ts
    if typ == "string":
        if field in p.keys:
            return f"{field.split('_')[0]}-{rng.randrange(_cardinality(p)):04d}"
        return f"{field.split('_')[0]}-{rng.randrange(100_000)}"
    if typ == "double":
        return round(rng.gauss(20.0, 8.0), 2)
    if typ in ("int", "long"):
        return rng.randrange(0, 100)
    return rng.random() < 0.5


def _cardinality(p: Pipeline) -> int:
    return 50


def make_event(p: Pipeline, rng: random.Random, i: int, ts: int, id_prefix: str = "e") -> dict[str, object]:
    event = {f: _value_for(f, t, p, rng, i, ts) for f, t in p.schema.items()}
    event[p.event_id] = f"{id_prefix}{i:09d}"
    if "action" in p.schema:
        event["action"] = rng.choice(["move", "attack", "collect", "chat"])
    return event


def malformed(p: Pipeline, event: dict[str, object], kind: str) -> bytes:
    """A broken variant of ``event`` that the parser must quarantine with reason ``kind``."""
    bad = dict(event)
    if kind == "MALFORMED_JSON":
        return b'{"' + json.dumps(event).encode()[2:-1]  # lost closing brace
    if kind == "MISSING_FIELD":
        bad.pop(p.keys[0])
    elif kind == "WRONG_TYPE":
        numeric = [f for f, t in p.schema.items() if t in ("double", "int") and f != p.event_time]
        bad[numeric[0] if numeric else p.event_time] = "not-a-number"
    elif kind == "NULL_ID":
        bad[p.event_id] = None
    elif kind == "IMPOSSIBLE_TIMESTAMP":
        bad[p.event_time] = 123
    return json.dumps(bad).encode()


def _key(p: Pipeline, event: dict[str, object]) -> bytes | None:
    value = event.get(p.keys[0])
    return str(value).encode() if value is not None else None


def default_start_ms(n: int, step_ms: float, paced: bool, now_ms: int) -> int:
    """The first clean event time when the caller gives none, so that no event is stamped after the wall
    clock that sends it. Sent as fast as possible (``paced`` False), the ``n`` events end at ``now_ms``:
    they span the ``n - 1`` steps before it. Paced at one event per ``step_ms`` of wall-clock time from
    ``now_ms`` on (``spark_jobs.io.producer.paced``), they start at ``now_ms``."""
    return now_ms if paced else now_ms - math.ceil(max(n - 1, 0) * step_ms)


def generate(
    p: Pipeline, n: int, start_ms: int, step_ms: float, mix: Mix = Mix(), seed: int = 7, id_prefix: str = "e"
) -> Iterator[Record]:
    """``n`` records whose clean event times advance by ``step_ms`` from ``start_ms``."""
    rng = random.Random(seed)
    sent: list[dict[str, object]] = []
    late_back_ms = (p.watermark_seconds + p.window.size_seconds + p.window.gap_seconds + 60) * 1000
    for i in range(n):
        ts = int(start_ms + i * step_ms)
        roll = rng.random()
        if roll < mix.malformed:
            kind = MALFORMED_KINDS[i % len(MALFORMED_KINDS)]
            event = make_event(p, rng, i, ts, id_prefix)
            yield Record(_key(p, event), malformed(p, event, kind), f"malformed:{kind}")
            continue
        roll -= mix.malformed
        if roll < mix.duplicate and sent:
            event = rng.choice(sent[-1000:])
            yield Record(_key(p, event), json.dumps(event).encode(), "duplicate", event)
            continue
        roll -= mix.duplicate
        kind = "valid"
        if roll < mix.late and ts - late_back_ms > start_ms:
            ts, kind = ts - late_back_ms, "late"
        elif roll < mix.late + mix.out_of_order:
            ts, kind = ts - rng.randrange(1, max(2, p.watermark_seconds * 1000 // 2)), "out_of_order"
        event = make_event(p, rng, i, ts, id_prefix)
        sent.append(event)
        yield Record(_key(p, event), json.dumps(event).encode(), kind, event)
