"""Throughput from streaming progress, and where the time went (Spark event logs).

Catch-up time is measured from the start of the first micro-batch that read input to the end of
the batch whose end offsets reach the topic's end offsets, so JVM start-up is not counted.
``sql_breakdown`` sums SQL execution time per description (micro-batch writes, the MERGE, the
progress recorder's appends ...) from a Spark event log: the Spark-UI evidence for the bottleneck.
(Spark 4 does not write ``QueryProgressEvent`` to the event log; the jobs dump their progress.)
"""

from __future__ import annotations

import json
import re
import time
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

from spark_jobs.io.ops_reader import read_rows


def reached(offsets: dict[str, Any], target: dict[int, int]) -> bool:
    return all(int(offsets.get(str(part), -1)) >= end for part, end in target.items())


def run_until_reached(spark: Any, query: Any, topic: str, target: dict[int, int], progress_file: str, name: str) -> None:
    """Poll ``query`` until its end offsets reach ``target``; then stop it and ``spark``, and dump its
    progress events (with the ``durationMs`` phases) to ``progress_file`` as JSON."""
    seen: list[dict[str, Any]] = []
    try:
        while query.isActive:
            time.sleep(0.5)
            seen = [json.loads(p.json) for p in query.recentProgress]
            ends = [(p.get("sources") or [{}])[0].get("endOffset") for p in seen]
            ends = [json.loads(e) if isinstance(e, str) else e for e in ends if e]
            if ends and reached(ends[-1].get(topic, {}), target):
                break
        if query.exception():
            raise SystemExit(f"{name}: query failed: {query.exception()}")
    finally:
        query.stop()
        Path(progress_file).write_text(json.dumps([json.loads(p.json) for p in query.recentProgress] or seen))
        spark.stop()


def span_seconds(batches: list[tuple[datetime, float, int]]) -> float | None:
    """(start time, duration s, input rows) per batch -> seconds from first input batch to last end."""
    busy = [b for b in batches if b[2] > 0]
    if not busy:
        return None
    start = min(b[0] for b in busy)
    end = max(b[0].timestamp() + b[1] for b in busy)
    return end - start.timestamp()


def spark_progress_batches(progress: list[dict[str, Any]]) -> list[tuple[datetime, float, int]]:
    out = []
    for p in progress:
        ts = datetime.fromisoformat(p["timestamp"].replace("Z", "+00:00"))
        out.append((ts, (p.get("durationMs") or {}).get("triggerExecution", 0) / 1000.0, int(p.get("numInputRows", 0))))
    return out


def _events(log_dir: Path) -> list[dict[str, Any]]:
    out = []
    for f in sorted(log_dir.rglob("*")):
        if f.is_file():
            for line in f.read_text(errors="replace").splitlines():
                try:
                    out.append(json.loads(line))
                except ValueError:
                    continue
    return out


def _kind(description: str) -> str:
    """Group SQL executions: drop query/run ids and line numbers from the description."""
    text = re.sub(r"\s+", " ", description)
    text = re.sub(r"(id|runId) = [0-9a-f-]+[,\]]?", "", text)
    text = re.sub(r"(:\d+|batch = \d+)", "", text).strip()
    return text[:70] or "other"


def sql_breakdown(log_dir: Path) -> dict[str, float]:
    """SQL statement kind -> total seconds of its executions (SQLExecutionStart/End pairs)."""
    starts: dict[int, tuple[str, int]] = {}
    totals: dict[str, float] = defaultdict(float)
    for ev in _events(log_dir):
        kind = ev.get("Event", "")
        if kind.endswith("SparkListenerSQLExecutionStart"):
            starts[ev["executionId"]] = (ev.get("description") or "", ev["time"])
        elif kind.endswith("SparkListenerSQLExecutionEnd") and ev["executionId"] in starts:
            desc, t0 = starts.pop(ev["executionId"])
            totals[_kind(desc)] += (ev["time"] - t0) / 1000.0
    return {k: round(v, 2) for k, v in sorted(totals.items(), key=lambda kv: -kv[1])[:8]}


def event_log_args(log_dir: Path) -> str:
    """PYSPARK_SUBMIT_ARGS that make a child Spark application write an uncompressed event log."""
    log_dir.mkdir(parents=True, exist_ok=True)
    return (f"--conf spark.eventLog.enabled=true --conf spark.eventLog.dir=file://{log_dir} "
            "--conf spark.eventLog.compress=false pyspark-shell")


def batch_growth(batches: list[tuple[datetime, float, int]], size: int) -> dict[str, Any]:
    """The flatness figure (scenario 8's goal): mean duration of the last 10% of the full-size micro-batches
    (``size`` input rows) over that of the first 10% (at least one each; the first full batch is
    left out, it carries the JVM's warm-up)."""
    full = [b[1] for b in sorted(batches) if b[2] == size][1:]
    if len(full) < 2:
        return {"full_batches": len(full), "last_over_first": None}
    k = max(1, len(full) // 10)
    first, last = sum(full[:k]) / k, sum(full[-k:]) / k
    return {"full_batches": len(full), "first_10pct_s": round(first, 2), "last_10pct_s": round(last, 2),
            "last_over_first": round(last / first, 3) if first else None}


def speed_batches(cfg: Any, pipeline: str, since: datetime) -> list[tuple[datetime, float, int]]:
    """(batch time, duration s, input rows) of ``pipeline``'s speed micro-batches since ``since``."""
    rows = [r for r in read_rows(cfg, "ops.stream_progress") if r["pipeline"] == pipeline and r["query"] == "speed"]
    return sorted((r["batch_time"], r["batch_duration_ms"] / 1000.0, int(r["input_rows"] or 0)) for r in rows
                  if r["batch_time"] is not None and r["batch_time"] >= since)
