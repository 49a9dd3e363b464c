"""Seeded random streams for any pipeline definition, sent in three phases, and the topic read back
(tests/integration/test_random_streams.py; the chaos sequence, benchmarks/chaos_sequence.py, uses its records).

Timeline (event time, all in the past): a messy *body* of ``body_ms``, then (sessions: a gap later) a
clean *tail* long enough that every window reaching past the batch cutoff holds tail events only.

* Phase 1, sent before the speed job starts (so its first micro-batch holds all of it): body events
  shuffled over seeded random partitions, duplicates with the same and with a different payload, one record
  of several malformed kinds, events from a clock more than ``max_future_skew`` fast.
* Phase 2, after phase 1 is processed (watermark W1 = max event time - watermark): new events behind
  W1 (late: dropped by speed, counted, kept in bronze), new out-of-order events between W1 and the
  max, duplicates of phase-1 events (same / different payload), malformed and future-skewed records.
  No phase-2 event is newer than phase 1's max, so W1 holds through phase 2 however it is split.
* Phase 3: the tail in event-time order on partition 0 (a micro-batch split keeps a prefix, so
  nothing in it is late) with same-payload duplicates, and, for some seeds, events from a producer
  clock up to ``max_future_skew`` fast (accepted; they move the cutoff to the last arrival) stamped at send time.
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass, field
from typing import Any

from benchmarks.stream_oracle import Record
from lakehouse.pipeline import Pipeline

MINUTE = 60_000
KINDS = ("MALFORMED_JSON", "MISSING_FIELD", "NULL_ID", "NULL_KEY", "WRONG_TYPE", "IMPOSSIBLE_TIMESTAMP")


@dataclass
class Scenario:
    p: Pipeline
    rng: random.Random
    body_start: int
    phases: list[list[tuple[int | None, bytes]]] = field(default_factory=lambda: [[], [], []])
    late_ids: set[str] = field(default_factory=set)  # phase-2 events behind W1
    dirty_ids: set[str] = field(default_factory=set)  # ids sent with more than one payload
    tail_ids: set[str] = field(default_factory=set)
    w1: int = 0
    keys: int = 3  # distinct values per grouping key
    fast: int = 0  # fast-clock events to append to phase 3 at send time


def payload(s: Scenario, eid: str, ts: int, key: str | None = None) -> dict[str, Any]:
    p, rng = s.p, s.rng
    out: dict[str, Any] = {}
    for name, typ in p.schema.items():
        if name == p.event_id:
            out[name] = eid
        elif name == p.event_time:
            out[name] = ts
        elif name in p.keys:
            out[name] = key or f"{name[:1]}{rng.randrange(s.keys)}"
        elif typ == "double":
            lo, hi = p.quality.get("ranges", {}).get(name, (-50.0, 50.0))
            out[name] = round(rng.uniform(max(lo, -40.0), min(hi, 45.0)), 2)
        elif typ in ("int", "long"):
            out[name] = rng.randint(0, 100)
        else:
            out[name] = f"{name[:1]}{rng.randint(0, 11)}"  # small pools: repeated skiers, actions
    return out


def broken(s: Scenario, kind: str, eid: str) -> bytes:
    """One unusable record of ``kind`` (FUTURE_TIMESTAMP: stamped 30 min to 10 h past its send)."""
    p, rng = s.p, s.rng
    e = payload(s, eid, s.body_start + rng.randint(0, MINUTE))
    if kind == "MALFORMED_JSON":
        text = json.dumps(e)
        return text[: rng.randint(1, len(text) - 1)].encode() if rng.random() < 0.7 else b"not json at all"
    if kind == "MISSING_FIELD":
        e.pop(rng.choice(list(p.schema)))
    elif kind in ("NULL_ID", "NULL_KEY"):
        e[p.event_id if kind == "NULL_ID" else rng.choice(p.keys)] = rng.choice([None, "", "  "])
    elif kind == "WRONG_TYPE":
        e[rng.choice([n for n, t in p.schema.items() if t != "string"])] = "warm"
    elif kind == "IMPOSSIBLE_TIMESTAMP":
        e[p.event_time] = rng.choice([-1, 0, 946_684_799_999])
    else:
        skew = 30 * MINUTE + rng.randint(0, 570 * MINUTE)
        e[p.event_time] = int(time.time() * 1000) + p.future_skew_seconds * 1000 + skew
    return json.dumps(e).encode()


def generate(p: Pipeline, seed: int, now_ms: int, partitions: int) -> Scenario:
    rng = random.Random(f"{seed}/{p.name}")
    size = max(p.window.size_seconds, p.window.gap_seconds) * 1000  # a session: its gap
    body = max(6 * MINUTE, 3 * size, p.watermark_seconds * 1000 + 2 * MINUTE)  # W1 lies inside the body
    gap = size + MINUTE if p.window.type == "session" else 0
    tail = size + p.lateness_seconds * 1000 + 2 * MINUTE
    start = (now_ms - body - gap - tail - 3 * MINUTE) // (10 * MINUTE) * (10 * MINUTE)
    s = Scenario(p, rng, start, keys=rng.randint(2, 8))
    enc = lambda e: json.dumps(e).encode()  # noqa: E731
    body_events = [payload(s, f"a{i}", start + rng.randrange(body)) for i in range(rng.randint(30, 60))]
    body_events.append(payload(s, "a-last", start + body - 1))  # m1 = body end: late events have room
    m1 = max(e[p.event_time] for e in body_events)
    s.w1 = m1 - p.watermark_seconds * 1000

    def off_edge() -> int:  # a body time not within a second of W1 (late or not must be clear-cut)
        ts = rng.randint(start, m1)
        return ts if abs(ts - s.w1) > 1000 else off_edge()

    def dups(pool: list[dict[str, Any]]) -> list[bytes]:
        same = [enc(e) for e in rng.sample(pool, rng.randint(1, 4))]
        other = [payload(s, e[p.event_id], off_edge()) for e in rng.sample(pool, rng.randint(1, 4))]
        s.dirty_ids |= {e[p.event_id] for e in other}
        return same + [enc(e) for e in other]

    def bad(n: int, tag: str) -> list[bytes]:
        return [broken(s, k, f"{tag}{i}") for i, k in enumerate(rng.sample(KINDS, n) + ["FUTURE_TIMESTAMP"])]

    one = [enc(e) for e in body_events] + dups(body_events) + bad(rng.randint(3, 6), "m")
    rng.shuffle(one)
    late = [payload(s, f"l{i}", rng.randint(start, s.w1 - 1000)) for i in range(rng.randint(2, 6))]
    ooo = [payload(s, f"o{i}", rng.randint(s.w1 + 1000, m1)) for i in range(rng.randint(1, 5))]
    s.late_ids = {e[p.event_id] for e in late}
    clear = [e for e in body_events if abs(e[p.event_time] - s.w1) > 1000]  # no duplicate on the W1 edge
    two = [enc(e) for e in late + ooo] + dups(clear) + bad(rng.randint(1, 3), "n")
    rng.shuffle(two)
    t3 = start + body + gap
    times = sorted([t3 + rng.randrange(tail - 1000) for _ in range(rng.randint(15, 30))] + [t3 + tail - 1000])
    three: list[bytes] = []
    for i, ts in enumerate(times):
        e = payload(s, f"t{i}", ts)
        s.tail_ids.add(f"t{i}")
        three += [enc(e)] * (2 if rng.random() < 0.1 else 1)
    s.phases = [[(rng.randrange(partitions), v) for v in one], [(rng.randrange(partitions), v) for v in two],
                [(0, v) for v in three]]
    s.fast = rng.choice([0, 0, 1, 2])
    return s


def fast_clock(s: Scenario) -> list[tuple[int | None, bytes]]:
    """Events from a producer clock between half of ``max_future_skew`` and (a second short of) all of it
    fast: accepted, stamped at send time."""
    now, skew = int(time.time() * 1000), s.p.future_skew_seconds * 1000
    return [(0, json.dumps(payload(s, f"f{i}", now + s.rng.randint(skew // 2, skew - 1000))).encode())
            for i in range(s.fast)]


def send(bootstrap: str, topic: str, records: list[tuple[int | None, bytes]]) -> None:
    from kafka import KafkaProducer

    prod = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    for part, value in records:
        prod.send(topic, value=value, partition=part)
    prod.flush(60)
    prod.close()


def read_topic(bootstrap: str, topic: str) -> list[Record]:
    """Every record of ``topic`` with the broker's coordinates and LogAppendTime."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    parts = [TopicPartition(topic, n) for n in consumer.partitions_for_topic(topic)]
    consumer.assign(parts)
    consumer.seek_to_beginning(*parts)
    ends = consumer.end_offsets(parts)
    out: list[Record] = []
    deadline = time.monotonic() + 60
    while any(consumer.position(tp) < ends[tp] for tp in parts) and time.monotonic() < deadline:
        for batch in consumer.poll(timeout_ms=1000).values():
            out += [Record(r.partition, r.offset, r.timestamp, r.value) for r in batch]
    consumer.close()
    assert len(out) == sum(ends.values()), f"read {len(out)} of {sum(ends.values())} records of {topic}"
    return out
