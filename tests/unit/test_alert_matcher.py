"""The pattern state machines (``spark_jobs.alerts.matcher``) against the plain-Python oracle
(``benchmarks/alerts_oracle``): random events of a few keys, arriving shuffled in random
micro-batches under a moving watermark, late ones dropped as the dedup step drops them, the state
serialised between micro-batches as Spark stores it."""

from __future__ import annotations

import random
from collections import defaultdict
from typing import Any

import pytest

from benchmarks.alerts_oracle import expected_alerts
from lakehouse.pipeline import load_pipeline
from spark_jobs.alerts import matcher

DELAY_MS = 120_000  # the watermark delay of sensor_readings


def _flags(pattern: Any, e: dict[str, Any]) -> matcher.Event:
    first = pattern.first.apply(e["temperature"]) if pattern.first else True
    then = bool(pattern.then.apply(e["temperature"])) if pattern.then else False
    return matcher.Event(e["timestamp"], e["event_id"], bool(first), then)


def _stream(events: list[dict[str, Any]], rng: random.Random) -> tuple[set[Any], list[dict[str, Any]], int]:
    """Run every pattern of sensor_readings over ``events`` in shuffled micro-batches: (alerts, on-time
    events, final watermark)."""
    p = load_pipeline("sensor_readings")
    shuffled = sorted(events, key=lambda e: e["timestamp"] + rng.randint(0, 400_000))
    states: dict[tuple[str, str], str] = {}
    timers: dict[tuple[str, str], set[int]] = defaultdict(set)
    registered: dict[tuple[str, str], int] = defaultdict(int)
    alerts, accepted, w, i = set(), [], -1, 0
    while i < len(shuffled) or any(timers.values()):
        batch = shuffled[i:i + rng.randint(1, 40)]
        i += len(batch)
        on_time = [e for e in batch if e["timestamp"] >= w]
        accepted += on_time
        for pattern in p.alerts:
            by_key: dict[str, list[dict[str, Any]]] = defaultdict(list)
            for e in on_time:
                by_key[e["sensor_id"]].append(e)
            for key in set(by_key) | {k for (name, k), ts in timers.items() if name == pattern.name and min(ts, default=w + 1) <= w}:
                # as alerts.processor: one call for the key's new rows, then one per expired timer
                group, expired = (pattern.name, key), sorted(t for t in timers[(pattern.name, key)] if t <= w)
                timers[group] -= set(expired)
                for call in (["rows"] if key in by_key else []) + expired:
                    m = matcher.loads(pattern, key, states.pop(group, None))
                    if call == "rows":
                        m.add(_flags(pattern, e) for e in by_key[key])
                    alerts |= {(a.alert_id, a.pattern, a.key, tuple(e.id for e in a.events),
                                tuple(e.t for e in a.events)) for a in m.advance(w)}
                    if not m.empty():
                        due = m.schedule(w)
                        timers[group] |= {due} if due is not None else set()
                        states[group] = m.dumps()
                    registered[group] = max(registered[group], len(timers[group]))
        if on_time:
            w = max(w, max(e["timestamp"] for e in accepted) - DELAY_MS)
        elif i >= len(shuffled):
            break
    assert max(registered.values()) <= 3, "a key holds one timer, plus at most an earlier one before it fires"
    assert not states or all(matcher.loads(p.alerts[0], "", s).timer for s in states.values())
    return alerts, accepted, w


@pytest.mark.parametrize("seed", range(12))
def test_every_pattern_matches_the_oracle_whatever_the_arrival_order(seed: int) -> None:
    rng = random.Random(seed)
    p = load_pipeline("sensor_readings")
    sensors = [f"s{k}" for k in range(3)]
    t, events = 1_700_000_000_000, []
    for n in range(400):
        t += rng.choice([1_000, 5_000, 20_000, 90_000])
        sensor = rng.choice(sensors) if n % 97 else "s-gone"  # a sensor that reports rarely: absences
        events.append({"event_id": f"e{n:04d}", "sensor_id": sensor, "timestamp": t,
                       "temperature": rng.choice([10.0, 19.5, 25.0, 36.0, 45.0, 50.0])})
    got, accepted, w = _stream(events, rng)
    expected = expected_alerts(p, accepted, w)
    assert len(accepted) < len(events)  # some arrived behind the watermark and were dropped
    assert got == expected
    assert {a[1] for a in expected} == {"hot_then_cold", "silent_sensor", "overheating"}  # every kind fired


def test_sequence_skips_past_its_last_event_and_waits_for_the_watermark() -> None:
    p = load_pipeline("sensor_readings")
    seq = next(a for a in p.alerts if a.kind == "sequence")
    m = matcher.Matcher(seq, "s1")
    m.add([matcher.Event(0, "a", True, False), matcher.Event(1_000, "b", True, False),
           matcher.Event(2_000, "c", False, True), matcher.Event(3_000, "d", False, True)])
    assert m.advance(2_000) == []  # an earlier closing event, or one at 2_000, may still arrive
    (alert,) = m.advance(2_001)
    assert [e.id for e in alert.events] == ["a", "c"]
    assert m.advance(700_000) == []  # b lies inside the match: never a start; d has no start before it
    assert m.empty()


def test_absence_waits_for_the_watermark_and_a_close_event_cancels_it() -> None:
    p = load_pipeline("sensor_readings")
    gone = next(a for a in p.alerts if a.kind == "absence")
    m = matcher.Matcher(gone, "s1")
    assert m.add([matcher.Event(0, "a"), matcher.Event(100_000, "b")]) == [300_001, 400_001]
    assert m.advance(400_000) == []  # a: b came within 5 minutes; b: not decided yet
    assert [e.id for e in m.advance(400_001)[0].events] == ["b"]
    assert matcher.loads(gone, "s1", m.dumps()).empty()


def test_a_key_that_stops_leaves_no_state_once_its_timers_fired() -> None:
    """Spark 4.1 allows no state TTL in event-time mode: the timers of ``add`` are what empties the state."""
    p = load_pipeline("sensor_readings")
    for pattern in p.alerts:
        m, w, fired = matcher.Matcher(pattern, "s1"), -1, 0
        m.add([matcher.Event(0, "a", True, True), matcher.Event(10_000, "b", True, False)])
        while not m.empty():  # as alerts.processor: advance, keep one timer, advance again when it fires
            m.advance(w)
            if m.empty() or (m.schedule(w) is None and (m.timer is None or m.timer <= w)):
                break
            w, fired = m.timer or w, fired + 1
        assert m.empty() and fired <= 4, pattern.name


def test_an_event_at_the_watermark_is_still_on_time_so_decisions_wait_past_it() -> None:
    """Late is an event time before the watermark (the speed layer's rule): one at the watermark may still
    arrive, so nothing that depends on it is decided until the watermark is past it."""
    p = load_pipeline("sensor_readings")
    hot = next(a for a in p.alerts if a.kind == "threshold")
    m = matcher.Matcher(hot, "s1")
    m.add([matcher.Event(0, "a"), matcher.Event(1_000, "b"), matcher.Event(2_000, "c")])
    assert m.advance(2_000) == []
    assert [e.id for e in m.advance(2_001)[0].events] == ["a", "b", "c"]
    seq = next(a for a in p.alerts if a.kind == "sequence")
    m = matcher.Matcher(seq, "s1")
    m.add([matcher.Event(0, "a", True, False)])
    assert m.advance(600_000) == []  # a closing event at 0 + 10 minutes may still come
    m.add([matcher.Event(600_000, "b", False, True)])
    assert [e.id for e in m.advance(600_001)[0].events] == ["a", "b"]
