"""The shared speed host (``speed.host: shared``): two pipelines' queries in ONE Spark application.

``sensor_readings`` (the one stateless ``stream`` query, with its alerts query) and ``game_sessions``
(ingest + stateful speed query) run in one host process, each in a FAIR pool of its own. Asserted on
rows against the plain-Python oracles of ``speed_helpers``: both pipelines exact; one stopped while the
other keeps counting exactly (and the stopped one's table does not move); the host killed with
SIGKILL (driver and JVM) while events flow, then started again by one ``speed start``: both pipelines
come back (the host restores every wanted pipeline), every Kafka offset of both topics is in bronze or
quarantine exactly once, and both speed tables equal the oracle over everything sent.
"""

from __future__ import annotations

import dataclasses
import signal
import time
from typing import TYPE_CHECKING, Any

import pytest

from tests.integration.speed_helpers import (
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

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]
HOST_TZ = "Asia/Kolkata"  # east of UTC: windows and sessions are computed in UTC whatever the host's zone
MINUTE = 60_000
GAP_MS = 5 * MINUTE


def readings(prefix: str, t0: int, n: int = 40) -> list[dict[str, Any]]:
    return [event(f"{prefix}{i}", f"s{i % 4}", t0 + i * 1_500, float(20 + i % 7)) for i in range(n)]


def plays(prefix: str, t0: int, n: int = 12) -> list[dict[str, Any]]:
    return [play(f"{prefix}{i}", f"u{i % 3}", t0 + i * 10_000, i) for i in range(n)]


def tumbling_rows(spark: SparkSession) -> dict[tuple[str, int], tuple[int, float, float]]:
    return {k: (r.event_count, r.min_temperature, r.max_temperature)
            for k, r in speed_rows(spark, "speed.sensor_readings").items()}


def sessions(spark: SparkSession) -> dict[tuple[str, int, int], tuple[int, int, int, int]]:
    return {(r.user_id, r.ws, r.we): (r.event_count, r.total_points, r.first_event_ms, r.last_event_ms)
            for r in session_rows(spark, "speed.game_sessions")}


def oracle_tumbling(events: list[dict[str, Any]]) -> dict[tuple[str, int], tuple[int, float, float]]:
    return {k: (n, lo, hi) for k, (n, _, lo, hi) in expected_tumbling(events).items()}


def eventually(read: Any, want: Any, what: str, timeout: float = 120.0) -> None:
    """``read()`` equals ``want`` within ``timeout`` (a micro-batch commits a few seconds after catch-up)."""
    deadline, got = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        got = read()
        if got == want:
            return
        time.sleep(2)
    assert got == want, what


def test_two_pipelines_share_one_host_stop_one_and_survive_kill_9_exactly_once(spark: SparkSession,
                                                                             stack: TidewaterConfig) -> None:
    from benchmarks.correctness import offset_problems, spark_query
    from lakehouse.config_model import SpeedConfig
    from lakehouse.pipeline import load_pipeline
    from spark_jobs.io.kafka_admin import ensure_topic
    from spark_jobs.speed.control import speed_process, speed_status, start_speed, stop_speed, wait_caught_up
    from spark_jobs.speed.host_control import host_process

    cfg = dataclasses.replace(stack, speed=SpeedConfig(host="shared"))
    sensors, games = (load_pipeline(name, cfg.pipelines) for name in ("sensor_readings", "game_sessions"))
    for p in (sensors, games):
        ensure_topic(cfg, p.topic)
    t0 = (int(time.time() * 1000) - 4 * MINUTE) // MINUTE * MINUTE
    sent_r, sent_g = readings("a", t0), plays("a", t0)
    send(cfg, sensors.topic, encode(sent_r))
    send(cfg, games.topic, encode(sent_g))
    host = host_process(cfg)

    def caught_up(*pipelines: Any) -> None:
        for p in pipelines:
            assert wait_caught_up(cfg, p, timeout=300, job_must_run=True), f"{p.name} lag; host log:\n{host.tail(80)}"

    try:
        pid = start_speed(cfg, sensors, wait=300)
        assert start_speed(cfg, games, wait=300) == pid == host.pid(), "both pipelines in the one host process"
        assert not speed_process(cfg, sensors).running() and not speed_process(cfg, games).running()
        for p in (sensors, games):
            status = speed_status(cfg, p)
            assert (status["running"], status["pid"], status["host"]) == (True, pid, "shared"), status
        caught_up(sensors, games)
        eventually(lambda: tumbling_rows(spark), oracle_tumbling(sent_r), "sensor_readings = oracle")
        eventually(lambda: sessions(spark), expected_sessions(sent_g, GAP_MS), "game_sessions = oracle")

        # one pipeline stopped: the host and the other pipeline run on and keep counting exactly
        assert stop_speed(cfg, games) is True
        assert not speed_status(cfg, games)["running"] and host.pid() == pid
        frozen = sessions(spark)
        more_r, more_g = readings("b", t0 + 2 * MINUTE), plays("b", t0 + 3 * MINUTE)
        send(cfg, sensors.topic, encode(more_r))
        send(cfg, games.topic, encode(more_g))
        sent_r, sent_g = sent_r + more_r, sent_g + more_g
        caught_up(sensors)
        eventually(lambda: tumbling_rows(spark), oracle_tumbling(sent_r), "sensor_readings keeps counting exactly")
        assert sessions(spark) == frozen, "a stopped pipeline's table does not move"

        # both wanted again, events flowing, then SIGKILL to the host's process group (driver and JVM)
        assert start_speed(cfg, games, wait=300) == pid
        last_r, last_g = readings("c", t0 + 3 * MINUTE), plays("c", t0 + 4 * MINUTE)
        send(cfg, sensors.topic, encode(last_r[:20]))
        send(cfg, games.topic, encode(last_g[:6]))
        time.sleep(3)  # mid-micro-batch, or between two
        assert host.stop(timeout=0, sig=signal.SIGKILL)
        assert not speed_status(cfg, sensors)["running"] and not speed_status(cfg, games)["running"]
        send(cfg, sensors.topic, encode(last_r[20:]))
        send(cfg, games.topic, encode(last_g[6:]))
        sent_r, sent_g = sent_r + last_r, sent_g + last_g
        new_pid = start_speed(cfg, sensors, wait=300)  # the new host restores every wanted pipeline
        deadline = time.monotonic() + 300
        while not speed_status(cfg, games)["running"] and time.monotonic() < deadline:
            time.sleep(1)
        assert speed_status(cfg, games)["pid"] == new_pid != pid, host.tail(60)
        caught_up(sensors, games)
        eventually(lambda: tumbling_rows(spark), oracle_tumbling(sent_r), "sensor_readings = oracle after kill -9")
        eventually(lambda: sessions(spark), expected_sessions(sent_g, GAP_MS), "game_sessions = oracle after kill -9")
    finally:
        for p in (sensors, games):
            stop_speed(cfg, p)
        host.stop(timeout=90, group=False)
    for p in (sensors, games):
        assert not offset_problems(spark_query(spark), cfg, p.name, p.topic), f"{p.name}: every offset exactly once"
    assert spark.table("bronze.sensor_readings").count() == len(sent_r)
    assert spark.table("bronze.game_sessions").count() == len(sent_g)
