"""Scenario 10's parts: generated pipelines of the three shipped window kinds, and the events each one makes
visible per commit of its speed table.

Every generated pipeline reads the paced producer's events (``benchmarks.paced_producer``: sensor id,
send time, temperature) and counts them per sensor in the window of its kind, with the shipped
pipeline's window and watermark: tumbling 1 minute (``sensor_readings``), sliding 10 minutes every 5
(``lift_rides``), sessions with a 5-minute gap (``game_sessions``). An event is visible once the
speed table's ``sum(event_count)`` over the measurement's sensors counts it (a sliding window counts
each event in ``size / slide`` windows).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from lakehouse.pipeline import Pipeline

KINDS = (  # (letter, window, watermark) of the shipped pipelines
    ("t", {"type": "tumbling", "size": "1 minute"}, "2 minutes"),
    ("s", {"type": "sliding", "size": "10 minutes", "slide": "5 minutes"}, "5 minutes"),
    ("g", {"type": "session", "gap": "5 minutes"}, "10 minutes"),
)


def definitions(count: int, prefix: str) -> dict[str, dict[str, Any]]:
    """``count`` pipeline definitions ``<prefix>_<kind letter><i>``, the kinds in turn."""
    out: dict[str, dict[str, Any]] = {}
    for i in range(count):
        letter, window, watermark = KINDS[i % len(KINDS)]
        name = f"{prefix}_{letter}{i}"
        out[name] = {
            "name": name, "owner": "benchmarks", "description": f"scenario 10: {window['type']} windows of sensor events",
            "topic": f"bench-{name.replace('_', '-')}",
            "schema": {"event_id": "string", "sensor_id": "string", "timestamp": "long", "temperature": "double"},
            "event_time": "timestamp", "event_id": "event_id", "keys": ["sensor_id"], "window": window,
            "aggregates": [{"name": "event_count", "fn": "count"},
                           {"name": "max_temperature", "fn": "max", "column": "temperature"}],
            "watermark": watermark,
        }
    return out


def write_folder(folder: Path, generated: dict[str, dict[str, Any]], shipped: Path) -> Path:
    """A definitions folder: the shipped definitions and the generated ones (``$TIDEWATER_PIPELINES_DIR``)."""
    folder.mkdir(parents=True, exist_ok=True)
    for path in shipped.glob("*.yml"):
        (folder / path.name).write_text(path.read_text())
    for name, raw in generated.items():
        (folder / f"{name}.yml").write_text(yaml.safe_dump(raw, sort_keys=False))
    return folder


def copies(p: Pipeline) -> int:
    """Windows each event is counted in."""
    w = p.window
    return int(w.size_seconds // w.slide_seconds) if w.type == "sliding" else 1


def session_commits(spark: Any, table_dir: Path, after: int, prefix: str) -> list[tuple[float, int]]:
    """``(visible_at, prefix events)`` per commit after version ``after`` of a session speed table. Its
    MERGEs mark replaced rows in deletion vectors, which a plain Parquet read does not apply: each
    version is read with Spark (time travel), the instant is its log file's modification time."""
    from pyspark.sql import functions as F

    out: list[tuple[float, int]] = []
    commits = sorted((c for c in (table_dir / "_delta_log").glob("*.json") if int(c.stem) > after),
                     key=lambda c: int(c.stem))
    for commit in commits:
        frame = spark.read.format("delta").option("versionAsOf", int(commit.stem)).load(str(table_dir))
        total = frame.where(F.col("sensor_id").startswith(prefix)).agg(F.sum("event_count")).collect()[0][0]
        out.append((commit.stat().st_mtime, int(total or 0)))
    return out
