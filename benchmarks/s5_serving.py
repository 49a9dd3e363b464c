"""Scenario 5: serving queries over JDBC (Spark Thrift Server, pyhive): p50/p95 of a point query
(one sensor, one hour) and a one-day scan across all sensors. Each query's answer is checked
against the same SQL run by the harness's own Spark session before timing.
"""

from __future__ import annotations

import statistics
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from benchmarks.result import ScenarioResult
from benchmarks.sizes import Sizes
from lakehouse import naming
from lakehouse.config import TidewaterConfig

PIPELINE = "sensor_readings"




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


def run(spark: Any, cfg: TidewaterConfig, sizes: Sizes, work: Path, context: dict[str, Any]) -> ScenarioResult:
    res = ScenarioResult(5, "Serving queries over JDBC")
    from pyhive import hive

    from infra.services import thrift_server

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
                    f"FROM {table} WHERE window_start >= '{day[0]}' AND window_start < '{day[1]}' GROUP BY sensor_id "
                    "ORDER BY sensor_id",
    }
    res.settings = {"table": table, "client": "pyhive (HiveServer2 binary, NOSASL)", "repetitions": sizes.serving_queries,
                    "warm_up": 2, "sensor": sensor, "hour": [str(h) for h in hour], "day": [str(d) for d in day]}
    started = time.monotonic()
    thrift_server.start(cfg)
    res.metrics["thrift_start_s"] = round(time.monotonic() - started, 1)
    try:
        conn = hive.connect(host=cfg.thrift.host, port=cfg.thrift.port, auth="NOSASL")
        cur = conn.cursor()
        for name, sql in queries.items():
            expected = [tuple(r) for r in spark.sql(sql).collect()]
            timings = []
            for i in range(sizes.serving_queries + 2):
                t0 = time.perf_counter()
                cur.execute(sql)
                got = cur.fetchall()
                if i >= 2:
                    timings.append(time.perf_counter() - t0)
            res.check(f"{name}: JDBC rows == Spark rows", len(expected), len(got),
                      len(expected) > 0 and [normalize(r) for r in got] == [normalize(r) for r in expected])
            res.metrics[name] = {"p50_s": percentile(timings, 0.5), "p95_s": percentile(timings, 0.95),
                                 "mean_s": round(statistics.mean(timings), 4), "rows": len(got)}
        conn.close()
    finally:
        thrift_server.stop(cfg)
    return res.finish()
