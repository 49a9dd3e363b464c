"""The speed layer end to end on real Kafka, Spark and Delta, with a known event set.

Tumbling windows (``sensor_readings``): phase A: clean events over six minutes for four sensors, plus one record of every malformed
kind. Phase B (after A is processed): out-of-order events within the watermark, events later than
the watermark, duplicates of recent events and one duplicate of an old (already late) event.
Phase C: events that advance the watermark so early windows become final.

Session windows (``game_sessions``): one user's session seen in ``serving.game_sessions`` while it is
open, extended, merged with a second open session, and closed by the watermark, against a plain-Python
oracle, never twice.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING

import pytest

from tests.integration.speed_helpers import (
    MINUTE,
    cli,
    encode,
    event,
    expected_sessions,
    expected_tumbling,
    play,
    send,
    session_rows,
    speed_rows,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from lakehouse.config import TidewaterConfig

pytestmark = pytest.mark.integration
HOST_TZ = "Asia/Kolkata"  # east of UTC: see the host_time_zone fixture

SENSORS = ["s-a", "s-b", "s-c", "s-d"]


def test_speed_layer_tables_match_hand_computed_values(spark: SparkSession, stack: TidewaterConfig) -> None:
    from lakehouse.pipeline import load_pipeline
    from spark_jobs.io.ops_reader import read_rows
    from spark_jobs.speed.control import stop_speed, wait_caught_up

    cfg = stack
    p = load_pipeline("sensor_readings", cfg.pipelines)
    t0 = (int(time.time() * 1000) - 3_600_000) // MINUTE * MINUTE
    phase_a = [event(f"a{s}{i:03d}", s, t0 + i * 15_000, 10.0 + i + k) for k, s in enumerate(SENSORS) for i in range(24)]
    good = event("bad", "s-a", t0, 1.0)
    malformed = {
        "MALFORMED_JSON": b'{"event_id": "x1", "sensor_id": ',
        "MISSING_FIELD": json.dumps({k: v for k, v in good.items() if k != "temperature"}).encode(),
        "WRONG_TYPE": json.dumps({**good, "temperature": "warm"}).encode(),
        "NULL_ID": json.dumps({**good, "event_id": None}).encode(),
        "NULL_KEY": json.dumps({**good, "sensor_id": ""}).encode(),
        "IMPOSSIBLE_TIMESTAMP": json.dumps({**good, "timestamp": -1}).encode(),
    }
    cli("produce", "sensor_readings", "--count", "0")  # creates the topic through the CLI path
    send(cfg, "sensor-readings", encode(phase_a) + list(malformed.values()))
    cli("speed", "start", "sensor_readings")
    try:
        assert wait_caught_up(cfg, p, timeout=300, job_must_run=True), "speed layer did not catch up with phase A"
        # watermark is now t0 + 5:45 - 2:00 = t0 + 3:45
        ooo = [event(f"o{s}", s, t0 + 4 * MINUTE + 10_000, 50.0) for s in SENSORS]
        late = [event(f"l{i}", "s-a", t0 + MINUTE + 30_000, 45.0) for i in range(3)]
        dup_recent = [e for e in phase_a if e["timestamp"] >= t0 + 4 * MINUTE + 30_000][:3]
        dup_old = [phase_a[1]]  # event time t0 + 0:15, behind the watermark -> dropped as late
        send(cfg, "sensor-readings", encode(ooo + late + dup_recent + dup_old))
        assert wait_caught_up(cfg, p, timeout=300, job_must_run=True), "speed layer did not catch up with phase B"
        phase_c = [event(f"c{s}{i}", s, t0 + 6 * MINUTE + i * 20_000, 20.0) for s in SENSORS for i in range(4)]
        send(cfg, "sensor-readings", encode(phase_c))
        assert wait_caught_up(cfg, p, timeout=300, job_must_run=True), "speed layer did not catch up with phase C"
        time.sleep(12)  # one more trigger: the no-data batch that evicts state and the finality update
    finally:
        stop_speed(cfg, p)

    # bronze: every valid Kafka record exactly once, late events and duplicates included
    valid_records = phase_a + ooo + late + dup_recent + dup_old + phase_c
    bronze = spark.table("bronze.sensor_readings")
    assert bronze.count() == len(valid_records)
    assert bronze.select("kafka_partition", "kafka_offset").distinct().count() == len(valid_records)
    assert {r.event_id for r in bronze.select("event_id").collect()} == {e["event_id"] for e in valid_records}
    assert bronze.where("event_id LIKE 'l%'").count() == 3  # late events still reach the batch layer

    # quarantine: each bad record with the right reason code and its raw value
    q = {r.reason_code: r for r in spark.table("quarantine.sensor_readings").collect()}
    assert sorted(q) == sorted(malformed)
    for code, raw in malformed.items():
        assert q[code].raw_value == raw.decode() and q[code].reason and q[code].kafka_topic == "sensor-readings"

    # speed: equal to a plain-Python aggregation of the events the watermark accepted
    accepted = phase_a + ooo + dup_recent + phase_c
    expected = expected_tumbling(accepted)
    got = speed_rows(spark, "speed.sensor_readings")
    assert set(got) == set(expected)
    for key, (count, avg, lo, hi) in expected.items():
        row = got[key]
        assert row.event_count == count, key
        assert row.avg_temperature == pytest.approx(avg) and (row.min_temperature, row.max_temperature) == (lo, hi)
    # finality: the watermark reached t0 + 7:00 - 2:00 = t0 + 5:00
    for (sensor, ws), row in got.items():
        assert row.is_final == (ws + MINUTE <= t0 + 5 * MINUTE), (sensor, ws, row.is_final)

    # the watermark drops were counted: 3 late events + 1 duplicate of an old event
    progress = [r for r in read_rows(cfg, "ops.stream_progress") if r["pipeline"] == "sensor_readings"]
    assert sum(r["rows_dropped_by_watermark"] for r in progress if r["query"] == "speed") == 4
    assert {r["query"] for r in progress} == {"ingest", "speed"}
    assert all(r["end_offsets"] and r["batch_duration_ms"] >= 0 for r in progress)

    # exactness: the batch layer then serves, up to its cutoff, the exact answer over EVERY valid
    # event (the late ones included), deduplicated, computed here in plain Python
    out = cli("batch", "sensor_readings")
    assert "published" in out.stdout
    cutoff_ms = max(e["timestamp"] for e in valid_records) - 2 * MINUTE  # max event time - allowed lateness
    exact = {k: v for k, v in expected_tumbling(valid_records).items() if k[1] + MINUTE <= cutoff_ms}
    serving = speed_rows(spark, "serving.sensor_readings")
    batch_rows = {k: r for k, r in serving.items() if r.source == "batch"}
    assert set(batch_rows) == set(exact)
    for key, (count, avg, lo, hi) in exact.items():
        row = batch_rows[key]
        assert (row.event_count, row.min_temperature, row.max_temperature) == (count, lo, hi), key
        assert row.avg_temperature == pytest.approx(avg), key
    # the window the late events landed in is the one the batch layer corrected
    late_window = ("s-a", t0 + MINUTE)
    assert batch_rows[late_window].finality == "corrected" and batch_rows[late_window].event_count == 4 + 3
    assert {r.finality for k, r in batch_rows.items() if k != late_window} == {"final"}
    # as_of names the Delta versions behind each row: the batch table version just published
    published = int(spark.sql("DESCRIBE HISTORY batch.sensor_readings LIMIT 1").collect()[0]["version"])
    assert {r.as_of.split(" (run ")[0] for r in batch_rows.values()} == {f"batch.sensor_readings v{published}"}
    assert all(" bronze v" in r.as_of for r in batch_rows.values())
    assert all(r.as_of.startswith("speed.sensor_readings micro-batch ") for r in serving.values() if r.source == "speed")
    # speed rows after the cutoff, none twice
    assert all(r.source == "speed" for k, r in serving.items() if k[1] + MINUTE > cutoff_ms)
    assert spark.sql("SELECT sensor_id, window_start FROM serving.sensor_readings GROUP BY 1, 2 "
                     "HAVING count(*) > 1").count() == 0


def test_open_session_is_shown_while_open_extended_merged_and_closed(spark: SparkSession, stack: TidewaterConfig) -> None:
    from lakehouse.pipeline import load_pipeline
    from spark_jobs.speed.control import speed_process, stop_speed, wait_caught_up

    cfg = stack
    p = load_pipeline("game_sessions", cfg.pipelines)
    gap = p.window.gap_seconds * 1000
    t0 = (int(time.time() * 1000) - 3_600_000) // MINUTE * MINUTE
    sent: list[dict] = []

    def step(events: list[dict], open_after: bool, late: tuple[dict, ...] = ()) -> None:
        """Send ``events`` (and ``late`` ones, behind the watermark: dropped); serving must then show exactly
        the oracle's sessions of u1, each once, provisional in the speed table while open (``open_after``),
        final once closed."""
        sent.extend(events)
        send(cfg, "game-events", encode([*events, *late]))
        caught_up = wait_caught_up(cfg, p, timeout=300, job_must_run=True)
        assert caught_up, f"speed did not catch up with {events}; its log:\n{speed_process(cfg, p).tail(80)}"
        want = {k: v for k, v in expected_sessions(sent, gap).items() if k[0] == "u1"}
        deadline, got = time.monotonic() + 90, {}
        while time.monotonic() < deadline:
            rows = [r for r in session_rows(spark, "serving.game_sessions") if r.user_id == "u1"]
            spans = sorted((r.ws, r.we) for r in rows)
            assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:], strict=False)), f"one session shown twice: {spans}"
            got = {(r.user_id, r.ws, r.we): (r.event_count, r.total_points, r.first_event_ms, r.last_event_ms)
                   for r in rows}
            speed = {(r.ws, r.we): r.is_final for r in session_rows(spark, "speed.game_sessions") if r.user_id == "u1"}
            if got == want and set(speed.values()) == {not open_after}:
                break
            time.sleep(2)
        assert got == want
        assert set(speed.values()) == {not open_after}, speed
        assert {r.source for r in rows} == {"speed"}

    cli("produce", "game_sessions", "--count", "0")  # creates the topic
    cli("speed", "start", "game_sessions")
    try:
        step([play("p1", "u1", t0, 3)], open_after=True)  # open: [t0, t0 + 5m)
        step([play("p2", "u1", t0 + 3 * MINUTE, 4)], open_after=True)  # extended: [t0, t0 + 8m)
        step([play("p3", "u1", t0 + 12 * MINUTE, 5)], open_after=True)  # a second open session: [t0 + 12m, t0 + 17m)
        # bridges both (7.5m < 8m, 7.5m + 5m > 12m): one session [t0, t0 + 17m) replaces the two
        step([play("p4", "u1", t0 + 7 * MINUTE + 30_000, 6), play("p2", "u1", t0 + 3 * MINUTE, 4)], open_after=True)
        assert len(expected_sessions(sent, gap)) == 1
        # another user moves the watermark to t0 + 30m, past the session's end: it is closed, final; a u1
        # event behind the watermark (t0 + 2m) would have opened a session of its own: it is dropped
        step([play("q1", "u2", t0 + 40 * MINUTE, 1)], open_after=False, late=(play("l1", "u1", t0 + MINUTE, 100),))
    finally:
        stop_speed(cfg, p)
