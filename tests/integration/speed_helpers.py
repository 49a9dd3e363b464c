"""Helpers for speed-layer integration tests: exact event sets and an independent reference."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import defaultdict
from typing import Any

MINUTE = 60_000


def event(eid: str, sensor: str, ts: int, temp: float) -> dict[str, Any]:
    return {"event_id": eid, "sensor_id": sensor, "timestamp": ts, "temperature": temp}


def send(cfg: Any, topic: str, values: list[bytes]) -> None:
    from kafka import KafkaProducer

    prod = KafkaProducer(bootstrap_servers=cfg.kafka.bootstrap, acks="all")
    for v in values:
        prod.send(topic, value=v)
    prod.flush(60)
    prod.close()


def encode(events: list[dict[str, Any]]) -> list[bytes]:
    return [json.dumps(e).encode() for e in events]


def expected_tumbling(events: list[dict[str, Any]]) -> dict[tuple[str, int], tuple[int, float, float, float]]:
    """(sensor, window start ms) -> (count, avg, min, max), deduplicated on event id: plain Python."""
    seen: dict[str, dict[str, Any]] = {}
    for e in events:
        seen.setdefault(e["event_id"], e)
    groups: dict[tuple[str, int], list[float]] = defaultdict(list)
    for e in seen.values():
        groups[(e["sensor_id"], e["timestamp"] // MINUTE * MINUTE)].append(e["temperature"])
    return {k: (len(v), sum(v) / len(v), min(v), max(v)) for k, v in groups.items()}


def cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    out = subprocess.run([sys.executable, "-m", "tidewater.cli", *args], capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, f"tidewater {' '.join(args)} failed:\n{out.stdout[-2000:]}\n{out.stderr[-3000:]}"
    return out


def speed_rows(spark: Any, table: str) -> dict[tuple[str, int], Any]:
    spark.catalog.refreshTable(table)
    rows = spark.sql(f"SELECT *, unix_millis(window_start) AS ws FROM {table}").collect()
    return {(r.sensor_id, r.ws): r for r in rows}


def as_partial_rows(p: Any, version: int, rows: Any) -> Any:
    """Rows in the speed contract's columns -> rows of the partials table behind ``speed.<p>[__vN]``
    (one partial per window; ``is_final`` rows carry their window end as watermark, so the view marks
    every window up to the last final one final)."""
    from pyspark.sql import functions as F

    from lakehouse import contracts

    partials = contracts.speed(p, version).requires[0]
    out = rows.withColumns({"watermark": F.when(F.col("is_final"), F.col("window_end")), "lineage": F.lit("test"),
                            "compacted": F.lit(False), "slot": F.lit(0)})
    return out.select(*partials.column_names)


def write_speed_rows(spark: Any, p: Any, version: int, rows: Any, mode: str = "append") -> None:
    """``as_partial_rows`` appended to (or overwriting) the partials table."""
    from lakehouse import naming

    as_partial_rows(p, version, rows).write.format("delta").mode(mode).saveAsTable(
        naming.speed_partials_table(p.name, version))


def expected_late(events: list[dict[str, Any]], watermark_ms: int) -> list[tuple[str, str, int, int, int]]:
    """The records a micro-batch whose watermark is ``watermark_ms`` leaves out of the speed layer
    (event time before it), one per one-minute window: (event id, sensor, event time, window start,
    lateness ms), sorted; duplicates are records too. Plain Python."""
    return sorted((e["event_id"], e["sensor_id"], e["timestamp"], e["timestamp"] // MINUTE * MINUTE,
                   watermark_ms - e["timestamp"]) for e in events if e["timestamp"] < watermark_ms)


def expected_session_late(events: list[dict[str, Any]], watermark_ms: int, gap_ms: int) -> list[tuple[str, str, int, int, int, int]]:
    """The ``game_sessions`` records that a micro-batch whose late-event watermark is ``watermark_ms``
    leaves out (event time AT or before it: the rule of Spark's stateful operators), each with the
    session it would have opened: (event id, user, event time, window start, window end, lateness ms),
    sorted; duplicates are records too. Plain Python."""
    return sorted((e["event_id"], e["user_id"], e["timestamp"], e["timestamp"], e["timestamp"] + gap_ms,
                   watermark_ms - e["timestamp"]) for e in events if e["timestamp"] <= watermark_ms)


def late_rows(spark: Any, table: str) -> list[Any]:
    """``late.<p>`` rows with their instants as epoch milliseconds (no host-zone conversion)."""
    spark.catalog.refreshTable(table)
    return spark.sql(f"SELECT *, unix_millis(event_time) AS ts, unix_millis(window_start) AS ws, "
                     f"unix_millis(window_end) AS we, unix_millis(watermark) AS wm FROM {table}").collect()


def play(eid: str, user: str, ts: int, points: int) -> dict[str, Any]:
    """A ``game_sessions`` event."""
    return {"event_id": eid, "user_id": user, "timestamp": ts, "action": "move", "points": points}


def expected_sessions(events: list[dict[str, Any]], gap_ms: int) -> dict[tuple[str, int, int], tuple[int, int, int, int]]:
    """(user, start ms, end ms) -> (count, points, first ms, last ms) of every session, open or closed: a
    new session when an event comes a gap or more after the last (plain Python, deduplicated on event id)."""
    seen: dict[str, dict[str, Any]] = {}
    for e in events:
        seen.setdefault(e["event_id"], e)
    out: dict[tuple[str, int, int], tuple[int, int, int, int]] = {}
    for user in sorted({e["user_id"] for e in seen.values()}):
        runs: list[list[dict[str, Any]]] = []
        for e in sorted((e for e in seen.values() if e["user_id"] == user), key=lambda e: e["timestamp"]):
            if runs and e["timestamp"] < runs[-1][-1]["timestamp"] + gap_ms:
                runs[-1].append(e)
            else:
                runs.append([e])
        for run in runs:
            lo, hi = run[0]["timestamp"], run[-1]["timestamp"]
            out[(user, lo, hi + gap_ms)] = (len(run), sum(x["points"] for x in run), lo, hi)
    return out


def session_rows(spark: Any, table: str) -> list[Any]:
    """Every row of ``table`` (a session speed table or ``serving.game_sessions``), times as epoch ms."""
    spark.catalog.refreshTable(table)
    return spark.sql(f"SELECT *, unix_millis(window_start) AS ws, unix_millis(window_end) AS we FROM {table}").collect()
