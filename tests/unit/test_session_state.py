"""The open sessions of one key (``speed.session_state``), fed in random micro-batches, against the
plain-Python oracle of Spark's session windows (``benchmarks.stream_oracle``)."""

from __future__ import annotations

import random

from benchmarks.stream_oracle import aggregate, sessions_of
from lakehouse.pipeline import load_pipeline
from spark_jobs.speed import session_state

P = load_pipeline("game_sessions")
GAP_MS = P.window.gap_seconds * 1000


def fold(batches: list[list[dict]]) -> list[session_state.Session]:
    sessions: list[session_state.Session] = []
    for batch in batches:
        stored = session_state.dumps(sessions)  # through the state's text form, as between micro-batches
        sessions = session_state.add_events(P.aggregates, GAP_MS, session_state.loads(stored),
                                            ((e["timestamp"], e) for e in batch))
    return sessions


def as_rows(sessions: list[session_state.Session]) -> dict:
    return {(s.start, s.end): {**{a.name: session_state.value(a, x) for a, x in zip(P.aggregates, s.acc, strict=True)},
                               "max_event_time": s.max_event} for s in sessions}


def test_random_batches_equal_the_oracle() -> None:
    rng = random.Random(67)
    for _ in range(200):
        events = [{"timestamp": rng.randrange(0, 40 * 60_000), "points": rng.choice([1, 5, 10])}
                  for _ in range(rng.randrange(1, 25))]
        cuts = sorted(rng.sample(range(len(events) + 1), min(3, len(events) + 1)))
        batches = [events[a:b] for a, b in zip([0, *cuts], [*cuts, len(events)], strict=True)]
        expected = {(s, e): aggregate(P, members) for s, e, members in sessions_of(P, events)}
        assert as_rows(fold(batches)) == expected


def test_nulls_are_skipped_as_spark_skips_them() -> None:
    sessions = fold([[{"timestamp": 0, "points": None}], [{"timestamp": 60_000, "points": 3}]])
    assert as_rows(sessions)[(0, 6 * 60_000)]["total_points"] == 3
    assert as_rows(fold([[{"timestamp": 0, "points": None}]]))[(0, 5 * 60_000)]["total_points"] is None


def test_a_bridging_event_merges_two_sessions_and_changes_name_both() -> None:
    first = fold([[{"timestamp": 0, "points": 1}], [{"timestamp": 8 * 60_000, "points": 2}]])
    assert [(s.start, s.end) for s in first] == [(0, 5 * 60_000), (8 * 60_000, 13 * 60_000)]
    bridged = session_state.add_events(P.aggregates, GAP_MS, first, [(4 * 60_000, {"points": 4, "timestamp": 4 * 60_000})])
    gone, changed = session_state.changes(first, bridged)
    assert gone == first
    assert as_rows(changed) == {(0, 13 * 60_000): {"event_count": 3, "total_points": 7, "first_event_ms": 0,
                                                   "last_event_ms": 8 * 60_000, "max_event_time": 8 * 60_000}}
