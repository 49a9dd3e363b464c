"""Scenario 5: serving queries over JDBC (Spark Thrift Server, pyhive) while the speed layer runs.

The main speed job runs and a paced producer sends 1,000 events/s of live sensors (``live-s-*``) for
the whole measurement, so queries compete with micro-batches for the 2 cores, as in production.
Measured: p50/p95 of a point query (one sensor, one hour) and of a one-day scan across all sensors,
one client; then 8 concurrent clients (one connection each) alternating both queries. Before that, 30 s
of the query mix on the server just started, reported apart (``cold_start``: JIT warm-up, first cache build). Each query's
answer is checked against the same SQL run by the harness's own Spark session before timing (the
queried windows are a day old, so the live events do not change them).
"""

from __future__ import annotations

import json
import statistics
import threading
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from benchmarks.result import ScenarioResult
from benchmarks.s2_latency import batch_stats
from benchmarks.sizes import Sizes
from infra.services import thrift_access, thrift_server
from infra.services.log_evidence import job_evidence
from lakehouse import naming
from lakehouse.config import TidewaterConfig
from lakehouse.pipeline import load_pipeline
from spark_jobs.speed.control import speed_process, start_speed, stop_speed, wait_caught_up

PIPELINE = "sensor_readings"
LIVE_RATE, CLIENTS = 1_000, 8
GOALS_S = {"point_query": 0.5, "day_scan": 1.0, "concurrent": 1.5}  # p95 goals, seconds


def normalize(row: Any) -> tuple[Any, ...]:
    """Driver-neutral values: timestamps as 'YYYY-MM-DD HH:MM:SS' text, floats rounded to 9 places."""
    out: list[Any] = []
    for v in row:
        if isinstance(v, float):
            out.append(round(v, 9))
        elif isinstance(v, (datetime, str)):
            out.append(str(v)[:19])
        else:
            out.append(v)
    return tuple(out)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 4)


def summary(timings: list[float]) -> dict[str, Any]:
    return {"p50_s": percentile(timings, 0.5), "p95_s": percentile(timings, 0.95),
            "mean_s": round(statistics.mean(timings), 4), "n": len(timings)}


class LiveLoad(threading.Thread):
    """Paced producer of current events for live sensors until stopped (the speed layer's work).

    librdkafka (``confluent-kafka``) as in ``benchmarks.paced_producer``: kafka-python's per-record
    Python work would take CPU from the Thrift server this scenario measures (the producer is load
    generator, not the system under test). ``acks=all``, idempotent; delivery failures are counted."""

    def __init__(self, cfg: TidewaterConfig, topic: str, rate: int) -> None:
        super().__init__(daemon=True)
        self.cfg, self.topic, self.rate, self.sent, self.failed = cfg, topic, rate, 0, 0
        self.stopping = threading.Event()
        self.started_at = self.stopped_at = 0.0

    def _delivered(self, err: object, _msg: object) -> None:
        if err is not None:
            self.failed += 1

    def run(self) -> None:
        from confluent_kafka import Producer

        prod = Producer({"bootstrap.servers": self.cfg.kafka.bootstrap, "acks": "all", "enable.idempotence": True,
                         "linger.ms": 5, "client.id": "tidewater-bench-s5-live"})
        self.started_at = time.time()
        try:
            while not self.stopping.is_set():
                ahead = self.started_at + self.sent / self.rate - time.time()
                if ahead > 0:
                    time.sleep(min(ahead, 0.05))
                    continue
                ms = int(time.time() * 1000)
                for _ in range(10):
                    value = {"event_id": f"live-e{self.sent}", "sensor_id": f"live-s-{self.sent % 100:03d}",
                             "timestamp": ms, "temperature": 20.0}
                    prod.produce(self.topic, value=json.dumps(value).encode(), on_delivery=self._delivered)
                    self.sent += 1
                prod.poll(0)
        finally:
            self.failed += prod.flush(60)
            self.stopped_at = time.time()


def timed(cur: Any, sql: str) -> tuple[float, list[Any]]:
    t0 = time.perf_counter()
    cur.execute(sql)
    rows = cur.fetchall()
    return time.perf_counter() - t0, rows


def warm_up(cur: Any, sqls: list[str], seconds: float) -> dict[str, Any]:
    """The query mix for ``seconds`` on a server just started (its JIT compilers at work, the
    serving cache being built): the first queries a BI tool sends; their figures are kept apart."""
    timings: list[float] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        timings.append(timed(cur, sqls[len(timings) % len(sqls)])[0])
    return {**summary(timings), "first_20": summary(timings[:20])}


def concurrent_clients(cfg: TidewaterConfig, queries: dict[str, str], rounds: int,
                       user: str) -> tuple[list[float], list[str]]:
    """``CLIENTS`` threads, one connection each, alternating the queries ``rounds`` times."""
    timings: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()

    def client(k: int) -> None:
        try:
            conn = thrift_access.connect(cfg, user)
            cur = conn.cursor()
            sqls = list(queries.values())
            for i in range(rounds):
                seconds, _rows = timed(cur, sqls[(i + k) % len(sqls)])
                with lock:
                    timings.append(seconds)
            conn.close()
        except Exception as exc:  # recorded and checked: a failing client fails the scenario
            errors.append(f"client {k}: {type(exc).__name__}: {exc}"[:300])

    threads = [threading.Thread(target=client, args=(k,)) for k in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=1800)
    return timings, errors


def run(spark: Any, cfg: TidewaterConfig, sizes: Sizes, work: Path, context: dict[str, Any]) -> ScenarioResult:
    res = ScenarioResult(5, "Serving queries over JDBC")

    table = naming.table("serving", PIPELINE)
    if not spark.catalog.tableExists(table):
        table = naming.speed_table(PIPELINE)
        res.notes.append(f"{naming.table('serving', PIPELINE)} does not exist in this stack; queried {table}")
    first = spark.sql(f"SELECT min(window_start) FROM {table} WHERE sensor_id LIKE 's-%'").collect()[0][0]
    if first is None:
        return res.fail(f"{table} holds no sensor rows; run scenario 1 first")
    day0: datetime = first
    hour = (day0, day0 + timedelta(hours=1))
    day = (day0, day0 + timedelta(days=1))
    sensor = spark.sql(f"SELECT min(sensor_id) FROM {table} WHERE sensor_id LIKE 's-%'").collect()[0][0]
    queries = {
        "point_query": f"SELECT window_start, event_count, avg_temperature, min_temperature, max_temperature FROM {table} "
                       f"WHERE sensor_id = '{sensor}' AND window_start >= '{hour[0]}' AND window_start < '{hour[1]}' "
                       "ORDER BY window_start",
        "day_scan": f"SELECT sensor_id, sum(event_count) AS events, min(min_temperature) AS lo, max(max_temperature) AS hi "
                    f"FROM {table} WHERE window_start >= '{day[0]}' AND window_start < '{day[1]}' "
                    "AND sensor_id LIKE 's-%' GROUP BY sensor_id ORDER BY sensor_id",
    }
    # a BI user reads serving; the speed table (no serving view in this stack) needs the admin
    user = thrift_access.READ_ONLY_USER if table.startswith("serving.") else thrift_access.ADMIN_USER
    res.settings = {"table": table, "client": f"pyhive (HiveServer2 binary, {thrift_access.AUTH} login as {user})",
                    "repetitions": sizes.serving_queries,
                    "warm_up": f"{sizes.serving_warm_up_s} s of the query mix after the server starts (reported as cold_start), "
                               "then 2 queries before each measured series", "sensor": sensor, "hour": [str(h) for h in hour], "day": [str(d) for d in day],
                    "live_load": f"speed job running, {LIVE_RATE} events/s produced during the measurement",
                    "concurrent_clients": CLIENTS, "concurrent_rounds": sizes.concurrent_rounds, "goals_p95_s": GOALS_S,
                    "thrift_max_staleness_seconds": cfg.thrift.max_staleness_seconds}
    p = load_pipeline(PIPELINE, cfg.pipelines)
    live = LiveLoad(cfg, p.topic, LIVE_RATE)
    try:
        start_speed(cfg, p, 1)
        res.check("the speed job caught up before the measurement", True, wait_caught_up(cfg, p, timeout=900))
        started = time.monotonic()
        thrift_server.start(cfg)
        res.metrics["thrift_start_s"] = round(time.monotonic() - started, 1)
        live.start()
        time.sleep(5)
        conn = thrift_access.connect(cfg, user)
        cur = conn.cursor()
        res.metrics["cold_start"] = warm_up(cur, list(queries.values()), sizes.serving_warm_up_s)
        for name, sql in queries.items():
            expected = [tuple(r) for r in spark.sql(sql).collect()]
            timings: list[float] = []
            got: list[Any] = []
            for i in range(sizes.serving_queries + 2):
                seconds, got = timed(cur, sql)
                if i >= 2:
                    timings.append(seconds)
            res.check(f"{name}: JDBC rows == Spark rows", len(expected), len(got),
                      len(expected) > 0 and [normalize(r) for r in got] == [normalize(r) for r in expected])
            res.metrics[name] = {**summary(timings), "rows": len(got)}
        conn.close()
        timings, errors = concurrent_clients(cfg, queries, sizes.concurrent_rounds, user)
        if not res.check(f"{CLIENTS} concurrent clients: no query failed", [], errors[:3]):
            res.notes.append(f"Thrift server log, first errors:\n{thrift_server.log_evidence(cfg)}")
        res.metrics["concurrent"] = {**summary(timings), "clients": CLIENTS} if timings else {}
        state = thrift_server.read_cache_state(thrift_server.cache_state_file(cfg))
        res.metrics["serving_cache"] = state.get("views", {}).get(table)
    finally:
        live.stopping.set()
        live.join(timeout=120)
        thrift_server.stop(cfg)
        job = speed_process(cfg, p)  # what the job's log says, before the stack is deleted
        job_state = f"{'running' if job.running() else 'gone'}; its log's error lines:\n{job_evidence(job.tail(20_000))}"
        stop_speed(cfg, p)
    load_s = max(0.001, live.stopped_at - live.started_at)
    speed = batch_stats(cfg, live.started_at, live.stopped_at).get("speed", {})
    res.metrics["live_load"] = {"events": live.sent, "rate": round(live.sent / load_s), "seconds": round(load_s, 1),
                                "speed_batches": speed}
    res.check("every live event was delivered", 0, live.failed, live.failed == 0)
    if not res.check("the speed layer committed micro-batches during the measurement", ">= 1", speed.get("batches", 0),
                     speed.get("batches", 0) >= 1):
        res.notes.append(f"speed job at the end: {job_state}")
    res.metrics["goals_met"] = {k: res.metrics.get(k, {}).get("p95_s", 1e9) <= goal for k, goal in GOALS_S.items()}
    return res.finish()
