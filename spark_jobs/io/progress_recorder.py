"""Streaming query progress -> ``ops.stream_progress`` rows (one per micro-batch).

``progress_row`` is pure: it turns one ``StreamingQueryProgress`` JSON dict into the contract's
row, including rows dropped by the watermark (summed over stateful operators) and the Kafka end
and latest offsets per partition. ``ProgressRecorder`` polls running queries in a thread and
appends rows it has not written yet.
"""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from lakehouse.contracts import STREAM_PROGRESS
from lakehouse.naming import INGEST_VERSION

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming import StreamingQuery


def _ts(text: str | None) -> datetime | None:
    if not text:
        return None
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC).replace(tzinfo=None)


def progress_row(pipeline: str, query: str, version: int, p: dict[str, Any]) -> dict[str, Any]:
    ops = p.get("stateOperators") or []
    source = (p.get("sources") or [{}])[0]

    def offsets(value: Any) -> str | None:
        if value is None:
            return None
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                return value
        return json.dumps(value, sort_keys=True)

    return {
        "pipeline": pipeline, "query": query, "query_version": version, "run_id": p.get("runId"),
        "batch_id": int(p["batchId"]), "batch_time": _ts(p.get("timestamp")),
        "input_rows": int(p.get("numInputRows") or 0),
        "input_rows_per_second": float(p.get("inputRowsPerSecond") or 0.0),
        "processed_rows_per_second": float(p.get("processedRowsPerSecond") or 0.0),
        "batch_duration_ms": int((p.get("durationMs") or {}).get("triggerExecution") or 0),
        "watermark": _ts((p.get("eventTime") or {}).get("watermark")),
        "state_rows": sum(int(o.get("numRowsTotal") or 0) for o in ops),
        "rows_dropped_by_watermark": sum(int(o.get("numRowsDroppedByWatermark") or 0) for o in ops),
        "end_offsets": offsets(source.get("endOffset")),
        "latest_offsets": offsets(source.get("latestOffset")),
        "recorded_at": datetime.now(UTC).replace(tzinfo=None),
    }


class ProgressRecorder:
    """Polls ``queries`` every ``interval`` seconds and appends new progress rows."""

    def __init__(self, spark: SparkSession, pipeline: str, version: int,
                 queries: dict[str, StreamingQuery], interval: float = 5.0) -> None:
        self.spark, self.pipeline, self.version, self.queries = spark, pipeline, version, queries
        self.interval = interval
        self._seen: dict[str, tuple[str, int]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="progress-recorder", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=60)
        self.flush()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.flush()
            except Exception as exc:  # progress is best effort; the data path must not stop
                print(f"progress-recorder: {exc}", flush=True)

    def flush(self) -> None:
        rows = []
        for name, q in self.queries.items():
            last = self._seen.get(name, ("", -1))
            for prog in q.recentProgress:
                p = json.loads(prog.json) if hasattr(prog, "json") else prog
                key = (p.get("runId") or "", int(p["batchId"]))
                if key[0] != last[0] or key[1] > last[1]:
                    rows.append(progress_row(self.pipeline, name, INGEST_VERSION if name == "ingest" else self.version, p))
                    last = key
            self._seen[name] = last
        if rows:
            schema = ", ".join(f"`{c}` {t}" for c, t in STREAM_PROGRESS.columns)
            df = self.spark.createDataFrame([[r[c] for c in STREAM_PROGRESS.column_names] for r in rows], schema)
            df.write.format("delta").mode("append").saveAsTable(STREAM_PROGRESS.name)
