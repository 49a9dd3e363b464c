"""Where scenario 4's replay spends its time: its micro-batches split at the end of scenario 1's records.

The replay reads the whole topic: scenario 1's pre-filled events (stamped 1 ms apart), then what later
scenarios sent live (up to 10,000 events/s, stamped with their send time) and scenario 4's top-up. Scenario 1's
catch-up rate is measured on the first part only, so the like-for-like figure is the replay's rate over
that part. Per part: records, seconds, events/s, median micro-batch seconds, the seconds per step that the
speed job logs for each micro-batch (``stream: batch N: parse 1.2s, ...``), and the densest minute of
event time (events per minute: the speed layer's dedup history holds one watermark delay of events).
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any

from benchmarks.progress import span_seconds
from lakehouse import naming

STEP = re.compile(r"([a-z][a-z+ ()',-]*?) ([0-9.]+)s")
BATCH_LINE = re.compile(r"^stream: batch (\d+): (.*)$")


def logged_steps(log_file: Path) -> dict[int, dict[str, float]]:
    """{batch id: {step: seconds}} from the speed job's per-micro-batch lines."""
    out: dict[int, dict[str, float]] = {}
    for line in log_file.read_text(errors="replace").splitlines() if log_file.exists() else []:
        m = BATCH_LINE.match(line)
        if m:
            out[int(m.group(1))] = {k.strip(): float(v) for k, v in STEP.findall(m.group(2))}
    return out


def _end_total(row: dict[str, Any], topic: str) -> int:
    ends = json.loads(row["end_offsets"] or "{}")
    return sum(int(v) for v in (ends.get(topic) or ends).values() if str(v).lstrip("-").isdigit())


def densest_minute(spark: Any, pipeline: str, after: int | None, upto: int | None) -> int:
    """Events in the busiest minute of event time among bronze's records numbered (over all partitions,
    in offset order within each) in (after, upto]: approximated per partition by offsets, since the fill
    spreads records evenly over partitions."""
    where = []
    parts = int(spark.sql(f"SELECT count(DISTINCT kafka_partition) FROM {naming.table('bronze', pipeline)}").collect()[0][0]) or 1
    if after is not None:
        where.append(f"kafka_offset >= {after // parts}")
    if upto is not None:
        where.append(f"kafka_offset < {upto // parts}")
    sql = (f"SELECT max(n) FROM (SELECT count(*) AS n FROM {naming.table('bronze', pipeline)} "
           f"{'WHERE ' + ' AND '.join(where) if where else ''} GROUP BY date_trunc('minute', event_time))")
    return int(spark.sql(sql).collect()[0][0] or 0)


def segments(spark: Any, pipeline: str, topic: str, rows: list[dict[str, Any]], split_at: int,
             log_file: Path) -> dict[str, Any]:
    """The replay's figures for its micro-batches up to ``split_at`` records and for the rest."""
    steps = logged_steps(log_file)
    ordered = sorted(rows, key=lambda r: r["batch_id"])
    parts = {"scenario_1_records": [r for r in ordered if _end_total(r, topic) <= split_at],
             "later_records": [r for r in ordered if _end_total(r, topic) > split_at]}
    out: dict[str, Any] = {}
    for name, batch_rows in parts.items():
        busy = [r for r in batch_rows if (r["input_rows"] or 0) > 0]
        if not busy:
            continue
        records = sum(int(r["input_rows"]) for r in busy)
        seconds = span_seconds([(_at(r["batch_time"]), (r["batch_duration_ms"] or 0) / 1000.0, int(r["input_rows"]))
                                for r in busy])
        durations = sorted((r["batch_duration_ms"] or 0) / 1000.0 for r in busy)
        per_step: dict[str, float] = {}
        for r in busy:
            for step, s in steps.get(int(r["batch_id"]), {}).items():
                per_step[step] = round(per_step.get(step, 0.0) + s, 1)
        bounds = (None, split_at) if name == "scenario_1_records" else (split_at, None)
        out[name] = {"records": records, "micro_batches": len(busy), "seconds": round(seconds or 0, 2),
                     "events_per_s": round(records / seconds) if seconds else None,
                     "median_batch_s": durations[len(durations) // 2], "steps_s": per_step,
                     "densest_event_minute": densest_minute(spark, pipeline, *bounds)}
    return out


def _at(value: Any) -> datetime:
    return value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
