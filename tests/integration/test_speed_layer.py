"""The speed layer end to end on real Kafka, Spark and Delta, with a known event set.

Tumbling windows (``sensor_readings``): phase A: clean events over six minutes for four sensors, plus one record of every malformed
kind. Phase B (after A is processed): out-of-order events within the watermark, events later than
the watermark, duplicates of recent events and one duplicate of an old (already late) event.
Phase C: events that advance the watermark so early windows become final. A few sensors' readings
fire each alert pattern of sensor_readings (``alerts.sensor_readings`` and its topic, against a plain-Python
oracle; three late readings that would fire one are dropped as the docs say). The late ones are kept,
each with the window it missed, in ``late.<p>`` (checked against a plain-Python oracle). Then
``tidewater whatif`` on that bronze, against a plain-Python oracle (``whatif_oracle``) and what the speed
layer really dropped.

Session windows (``game_sessions``): one user's session seen in ``serving.game_sessions`` while it is
open, extended, merged with a second open session, and closed by the watermark, against a plain-Python
oracle, never twice; the events the session query drops as late are kept in ``late.game_sessions``,
each with the session it would have opened (checked against a plain-Python oracle).
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

import pytest

from benchmarks.alerts_oracle import expected_alerts
from tests.integration.alert_checks import assert_topic_holds, table_alerts, wait_alerts_caught_up
from tests.integration.speed_helpers import (
    MINUTE,
    cli,
    encode,
    event,
    expected_late,
    expected_session_late,
    expected_sessions,
    expected_tumbling,
    late_rows,
    play,
    send,
    session_rows,
    speed_rows,
)
from tests.integration.whatif_oracle import tumbling

if TYPE_CHECKING:
    from pathlib import Path

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
    # alerts: s-x hot (x0, x1) then cold (x2) within 10 minutes, hot again (x3) with no cold after; s-y 4 readings
    # >= 45 within 30 s (one alert of 3), then 3 more in phase B; s-z silent for 5:30
    phase_a += [event("x0", "s-x", t0, 36.0), event("x1", "s-x", t0 + 30_000, 37.0), event("x2", "s-x", t0 + MINUTE, 15.0),
                event("x3", "s-x", t0 + 2 * MINUTE, 40.0),
                *(event(f"y{i}", "s-y", t0 + 2 * MINUTE + i * 10_000, 46.0) for i in range(4)),
                event("z0", "s-z", t0 - MINUTE, 20.0), event("z1", "s-z", t0 + 4 * MINUTE + 30_000, 20.0)]
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
        assert wait_caught_up(cfg, p, timeout=600, job_must_run=True), "speed layer did not catch up with phase A"
        wait_alerts_caught_up(cfg, p)
        # watermark is now t0 + 5:45 - 2:00 = t0 + 3:45
        ooo = [event(f"o{s}", s, t0 + 4 * MINUTE + 10_000, 50.0) for s in SENSORS]
        ooo += [event(f"y{4 + i}", "s-y", t0 + 4 * MINUTE + i * 20_000, 47.0) for i in range(3)]
        late = [event(f"l{i}", "s-a", t0 + MINUTE + 30_000, 45.0) for i in range(3)]
        dup_recent = [e for e in phase_a if e["timestamp"] >= t0 + 4 * MINUTE + 30_000][:3]
        dup_old = [phase_a[1]]  # event time t0 + 0:15, behind the watermark -> dropped as late
        send(cfg, "sensor-readings", encode(ooo + late + dup_recent + dup_old))
        assert wait_caught_up(cfg, p, timeout=300, job_must_run=True), "speed layer did not catch up with phase B"
        wait_alerts_caught_up(cfg, p)
        phase_c = [event(f"c{s}{i}", s, t0 + 6 * MINUTE + i * 20_000, 20.0) for s in SENSORS for i in range(4)]
        send(cfg, "sensor-readings", encode(phase_c))
        assert wait_caught_up(cfg, p, timeout=300, job_must_run=True), "speed layer did not catch up with phase C"
        time.sleep(12)  # one more trigger: the no-data batch that evicts state and the finality update
        alerts_watermark = wait_alerts_caught_up(cfg, p)
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

    # alerts: exactly the oracle's over the events the watermark accepted (the three late s-a readings of 45
    # would have made an overheating alert), each once, decided by the last watermark t0 + 5:00
    assert alerts_watermark == t0 + 5 * MINUTE
    alerts = expected_alerts(p, list({e["event_id"]: e for e in accepted}.values()), alerts_watermark)
    assert {(a[1], a[3]) for a in alerts} == {("hot_then_cold", ("x0", "x2")), ("overheating", ("y0", "y1", "y2")),
                                              ("overheating", ("y4", "y5", "y6")), ("silent_sensor", ("z0",))}
    stored = table_alerts(spark, "alerts.sensor_readings")
    assert sorted(stored) == sorted(alerts)
    assert_topic_holds(cfg, "sensor-readings.alerts", alerts)

    # the watermark drops were counted: 3 late events + 1 duplicate of an old event
    progress = [r for r in read_rows(cfg, "ops.stream_progress") if r["pipeline"] == "sensor_readings"]
    assert sum(r["rows_dropped_by_watermark"] for r in progress if r["query"] == "speed") == 4
    assert {r["query"] for r in progress} == {"ingest", "speed", "alerts"}
    assert all(r["end_offsets"] and r["batch_duration_ms"] >= 0 for r in progress if r["query"] != "alerts")
    alerts_batches = sorted(r["batch_id"] for r in progress if r["query"] == "alerts")  # each once, no gap
    assert alerts_batches == list(range(len(alerts_batches)))

    # late.<p>: exactly the records a plain-Python oracle says the speed layer left out, each with the
    # window it missed and its lateness at the watermark of the micro-batch that read it (phase A's
    # largest event time - 2 minutes, for all of phase B and C)
    watermark_ms = max(e["timestamp"] for e in phase_a) - 2 * MINUTE
    late_expected = expected_late(ooo + late + dup_recent + dup_old + phase_c, watermark_ms)
    assert len(late_expected) == 4
    kept = late_rows(spark, "late.sensor_readings")
    assert sorted((r.event_id, r.sensor_id, r.ts, r.ws, r.lateness_ms) for r in kept) == late_expected
    assert all(r.we == r.ws + MINUTE and r.wm == watermark_ms and r.speed_version == 1 for r in kept)
    assert all(r.window_key == json.dumps({"sensor_id": r.sensor_id}, separators=(",", ":")) for r in kept)
    # each is its own Kafka record, the one bronze holds under that id and time, and reached Kafka
    at = {(r.kafka_partition, r.kafka_offset): (r.event_id, r.ts) for r in
          bronze.selectExpr("kafka_partition", "kafka_offset", "event_id", "unix_millis(event_time) AS ts").collect()}
    assert all(at[(r.kafka_partition, r.kafka_offset)] == (r.event_id, r.ts) for r in kept)
    assert len({(r.kafka_partition, r.kafka_offset) for r in kept}) == 4 and all(r.arrival_time for r in kept)
    # and the counts agree, micro-batch by micro-batch: the rows are the ones counted
    dropped = {(r["run_id"], r["batch_id"]): r["rows_dropped_by_watermark"] for r in progress
               if r["query"] == "speed" and r["rows_dropped_by_watermark"]}
    per_batch: dict[tuple[str, int], int] = {}
    for r in kept:
        per_batch[(r.lineage, r.batch_id)] = per_batch.get((r.lineage, r.batch_id), 0) + 1
    assert per_batch == dropped

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
    # the ledger links each window to its late.<p> rows: the corrected window to its 3 late events, the
    # first window to the late duplicate (which changed no value), every other window to none
    spark.catalog.refreshTable("ops.reconciliation")
    ledger = {(json.loads(r.window_key)["sensor_id"], r.ws): (r.late_rows, r.late_events) for r in spark.sql(
        "SELECT window_key, unix_millis(window_start) AS ws, late_rows, late_events FROM ops.reconciliation "
        "WHERE pipeline = 'sensor_readings' AND aggregate = 'event_count'").collect()}
    assert set(ledger) == set(exact)
    assert ledger[late_window] == (3, 3) and ledger[("s-a", t0)] == (1, 0)
    assert all(v == (0, 0) for k, v in ledger.items() if k not in (late_window, ("s-a", t0)))
    # as_of names the Delta versions behind each row: the batch table version just published
    published = int(spark.sql("DESCRIBE HISTORY batch.sensor_readings LIMIT 1").collect()[0]["version"])
    assert {r.as_of.split(" (run ")[0] for r in batch_rows.values()} == {f"batch.sensor_readings v{published}"}
    assert all(" bronze v" in r.as_of for r in batch_rows.values())
    assert all(r.as_of.startswith("speed.sensor_readings micro-batch ") for r in serving.values() if r.source == "speed")
    # speed rows after the cutoff, none twice
    assert all(r.source == "speed" for k, r in serving.items() if k[1] + MINUTE > cutoff_ms)
    assert spark.sql("SELECT sensor_id, window_start FROM serving.sensor_readings GROUP BY 1, 2 "
                     "HAVING count(*) > 1").count() == 0


def test_alert_sink_stores_a_rerun_or_recomputed_micro_batch_once(spark: SparkSession, stack: TidewaterConfig,
                                                                  tmp_path: Path) -> None:
    """``AlertSink`` on the alerts the first test left (run after it): a new lineage's micro-batch that
    recomputes stored alerts, and the micro-batch Spark re-runs at a start, store each alert once and send
    it to the topic as stored; a plain micro-batch of new alerts is appended."""
    from lakehouse.pipeline import load_pipeline
    from spark_jobs.alerts.sink import AlertSink

    cfg, table = stack, "alerts.sensor_readings"
    p = load_pipeline("sensor_readings", cfg.pipelines)
    stored = table_alerts(spark, table)
    assert stored, "alerts.sensor_readings is empty: this test reads what test_speed_layer_tables_match_... wrote"
    as_output = ("SELECT alert_id, pattern, kind, key, event_ids, transform(event_times, t -> unix_millis(t)) AS "
                 "event_times_ms, unix_millis(watermark) AS watermark_ms FROM {}")
    spark.sql(as_output.format(table)).createOrReplaceTempView("stored_alerts")
    last_ms = max(max(a[4]) for a in stored)

    def new_alert(n: int) -> Any:
        ms = last_ms + n * MINUTE
        return spark.sql(f"SELECT 'sink-{n}' AS alert_id, 'overheating' AS pattern, 'threshold' AS kind, 's-n' AS key, "
                         f"array('n{n}') AS event_ids, array(CAST({ms} AS BIGINT)) AS event_times_ms, "
                         f"CAST({ms} AS BIGINT) AS watermark_ms")

    # a new lineage (no checkpoint yet) recomputes the stored alerts and finds one more
    AlertSink(spark, cfg, p, tmp_path / "new-lineage")(spark.table("stored_alerts").unionByName(new_alert(1)), 0)
    # the micro-batch a start runs again (planned, not committed): the same alert once more
    rerun = tmp_path / "rerun"
    (rerun / "offsets").mkdir(parents=True)
    (rerun / "offsets" / "4").write_text("v1")
    sink = AlertSink(spark, cfg, p, rerun)
    sink(new_alert(1), 4)
    sink(new_alert(2), 5)  # the next micro-batch: appended
    after = table_alerts(spark, table)
    assert len(after) == len({a[0] for a in after}) == len(stored) + 2, "every alert once"
    assert set(after) == set(stored) | {(f"sink-{n}", "overheating", "s-n", (f"n{n}",), (last_ms + n * MINUTE,))
                                        for n in (1, 2)}
    batches: dict[str, int] = dict(spark.sql(f"SELECT alert_id, batch_id FROM {table} WHERE alert_id LIKE 'sink-%'").collect())
    assert batches == {"sink-1": 0, "sink-2": 5}, "an alert keeps its first emission's batch"
    assert_topic_holds(cfg, "sensor-readings.alerts", set(after))


def test_whatif_replays_this_bronze_as_a_plain_python_oracle_does(spark: SparkSession, stack: TidewaterConfig,
                                                                   tmp_path: Path) -> None:
    """``tidewater whatif`` on the bronze the test above left (run after it; under Asia/Kolkata): every
    figure equals the plain-Python oracle's, and at the pipeline's own watermark (2 minutes) the model drops
    exactly the three events the speed layer dropped and finds wrong exactly the window batch corrected."""
    rows = [tuple(r) for r in spark.sql(
        "SELECT event_id, sensor_id, unix_millis(event_time), unix_millis(kafka_timestamp), unix_millis(ingest_time), "
        "kafka_partition, kafka_offset FROM bronze.sensor_readings").collect()]
    assert len(rows) > 100, "bronze is empty: this test reads what test_speed_layer_tables_match_... wrote"
    chart = tmp_path / "whatif.png"
    out = cli("whatif", "sensor_readings", "--delays", "30s,1m,2m,10m", "--json", "--chart", str(chart))
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert chart.read_bytes()[:4] == b"\x89PNG" and report["chart"] == str(chart)
    oracle = [tumbling(rows, d, MINUTE, 120) for d in (30, 60, 120, 600)]
    for got, want in zip(report["delays"], oracle, strict=True):
        assert {k: got[k] for k in want} == pytest.approx(want), want["delay_seconds"]
    at_watermark = report["delays"][2]
    assert (at_watermark["dropped_events"], at_watermark["wrong_windows"]) == (3, 1)
    corrected = spark.sql("SELECT count(*) FROM serving.sensor_readings WHERE finality = 'corrected'").collect()[0][0]
    assert corrected == 1
    assert report["delays"][0]["dropped_events"] > 3  # 30 s: the out-of-order events of phase B drop too
    assert report["suggested_delay_seconds"] == 600 and report["delays"][3]["dropped_events"] == 0


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
        # another user moves the watermark to t0 + 30m, past the session's end: it is closed, final. Events
        # behind the watermark the micro-batch drops late ones by (t0 + 2m: the latest event so far, t0 + 12m,
        # minus 10m) are dropped: a u1 event that would have opened a session of its own, a late copy of p1,
        # and a u3 event exactly at the watermark
        late = (play("l1", "u1", t0 + MINUTE, 100), play("p1", "u1", t0, 3), play("l2", "u3", t0 + 2 * MINUTE, 7))
        step([play("q1", "u2", t0 + 40 * MINUTE, 1)], open_after=False, late=late)
        assert_late_sessions_kept(spark, cfg, p, expected_session_late(list(late), t0 + 2 * MINUTE, gap))
    finally:
        stop_speed(cfg, p)


def assert_late_sessions_kept(spark: SparkSession, cfg: TidewaterConfig, p: Any, want: list[tuple]) -> None:
    """``late.game_sessions`` holds exactly ``want`` (the oracle's late records), each at the watermark of
    a micro-batch of the speed query, which counted as many dropped rows in its progress."""
    from spark_jobs.io.ops_reader import read_rows

    deadline, got, dropped = time.monotonic() + 60, [], {}
    while time.monotonic() < deadline:
        kept = late_rows(spark, "late.game_sessions")
        got = sorted((r.event_id, r.user_id, r.ts, r.ws, r.we, r.lateness_ms) for r in kept)
        dropped = {r["batch_id"]: int(r["rows_dropped_by_watermark"]) for r in read_rows(cfg, "ops.stream_progress")
                   if r["pipeline"] == p.name and r["query"] == "speed" and r["rows_dropped_by_watermark"]}
        if got == want and sum(dropped.values()) == len(want):
            break
        time.sleep(2)
    assert got == want
    # progress counts, per micro-batch, as many dropped rows as late.game_sessions holds of it
    assert dropped == {b: sum(1 for r in kept if r.batch_id == b) for b in {r.batch_id for r in kept}}
    assert {(r.wm, r.speed_version, r.arrival_time is not None) for r in kept} == {(want[0][2] + want[0][5], 1, True)}
