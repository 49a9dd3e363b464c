"""Streaming query progress -> ``ops.stream_progress``: one row per committed micro-batch per query.

The platform's own facts are exactly once, like the data:

* A ``StreamingQueryListener`` on the session receives every progress event, also those of a
  query that the job restarted in-process (a new query object: polling the old one's
  ``recentProgress`` saw nothing more). A writer thread appends the rows.
* Each append is idempotent: ``txnAppId`` = the query lineage (``naming.txn_app_id`` with the
  checkpoint's query id), ``txnVersion`` = the highest batch id in the append, and only batch ids
  above the lineage's last committed ``txnVersion`` (read from the Delta log) are written.
* Progress that a kill -9 lost (the batch committed, its event was not yet written) is recovered at
  the next start from the checkpoint, and so is a committed batch that an append finds below its first
  row (an event lost, or a write failed, in this process; a failed write is retried at the next flush):
  every committed batch id without a row gets one built from the offset log (offsets, watermark, batch
  time, input rows), ``run_id`` = ``recovered``; the metrics only Spark's event had (durations, state
  rows, rows dropped by the watermark) stay NULL, which says "not measured", not 0.

``progress_row`` is pure: one ``StreamingQueryProgress`` JSON dict -> the contract's row.
"""

from __future__ import annotations

import dataclasses
import json
import queue
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lakehouse import contracts, naming
from lakehouse.config import TidewaterConfig
from lakehouse.contracts import STREAM_PROGRESS
from lakehouse.progress_records import StreamProgress
from spark_jobs.io import lineage
from spark_jobs.io.delta_io import idempotent_append
from spark_jobs.io.local_rows import local_frame
from spark_jobs.io.ops_reader import table_path, txn_versions

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

RECOVERED = "recovered"


def _ts(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC) if text else None


def _offsets(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return value
    return json.dumps(value, sort_keys=True)


def progress_row(pipeline: str, query: str, version: int, progress: dict[str, Any]) -> StreamProgress:
    """One ``ops.stream_progress`` row from a query's progress event (Spark's ``StreamingQueryProgress`` JSON)."""
    ops = progress.get("stateOperators") or []
    source = (progress.get("sources") or [{}])[0]
    return StreamProgress(
        pipeline=pipeline, query=query, query_version=version, run_id=str(progress.get("runId")),
        batch_id=int(progress["batchId"]), batch_time=_ts(progress.get("timestamp")),
        input_rows=int(progress.get("numInputRows") or 0),
        input_rows_per_second=float(progress.get("inputRowsPerSecond") or 0.0),
        processed_rows_per_second=float(progress.get("processedRowsPerSecond") or 0.0),
        batch_duration_ms=int((progress.get("durationMs") or {}).get("triggerExecution") or 0),
        watermark=_ts((progress.get("eventTime") or {}).get("watermark")),
        state_rows=sum(int(o.get("numRowsTotal") or 0) for o in ops),
        rows_dropped_by_watermark=sum(int(o.get("numRowsDroppedByWatermark") or 0) for o in ops),
        end_offsets=_offsets(source.get("endOffset")),
        latest_offsets=_offsets(source.get("latestOffset")),
        recorded_at=datetime.now(UTC),
    )


def recovered_row(pipeline: str, query: str, version: int, batch_id: int, meta: dict[str, Any],
                  end: dict[str, Any], start: dict[str, Any] | None) -> StreamProgress:
    """The row of a committed batch whose progress event was lost, from its offset-log entries."""
    def total(offsets: dict[str, Any]) -> int:
        return sum(int(o) for parts in offsets.values() for o in parts.values())

    ms = meta.get("batchTimestampMs")
    wm = meta.get("batchWatermarkMs") or 0
    return StreamProgress(
        pipeline=pipeline, query=query, query_version=version, run_id=RECOVERED, batch_id=batch_id,
        batch_time=datetime.fromtimestamp(ms / 1000, UTC) if ms else None,
        input_rows=total(end) - total(start) if start is not None else None,
        input_rows_per_second=None, processed_rows_per_second=None, batch_duration_ms=None,
        watermark=datetime.fromtimestamp(wm / 1000, UTC) if wm > 0 else None, state_rows=None,
        rows_dropped_by_watermark=None, end_offsets=_offsets(end), latest_offsets=None,
        recorded_at=datetime.now(UTC),
    )


class ProgressRecorder:
    """Listens to the session's streaming queries named ``<pipeline>_<query>_v<N>`` and writes their
    progress exactly once (see the module docstring). ``checkpoints`` maps query -> (version, path)."""

    def __init__(self, spark: SparkSession, cfg: TidewaterConfig, pipeline: str,
                 checkpoints: dict[str, tuple[int, Path]], interval: float = 1.0) -> None:
        self.spark, self.cfg, self.pipeline, self.checkpoints = spark, cfg, pipeline, checkpoints
        self.interval = interval
        self.events: queue.Queue[dict[str, Any]] = queue.Queue()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="progress-recorder", daemon=True)
        self._listener: Any = None
        self.unwritten: dict[str, list[StreamProgress]] = {}  # query -> rows of received events not yet written

    def start(self) -> None:
        from pyspark.sql.streaming import StreamingQueryListener

        if not self.checkpoints:  # nothing to record: the stateless stream query writes its own rows
            return
        events, prefix = self.events, f"{self.pipeline}_"

        class _Listener(StreamingQueryListener):
            def onQueryStarted(self, event: Any) -> None: ...
            def onQueryIdle(self, event: Any) -> None: ...
            def onQueryTerminated(self, event: Any) -> None: ...

            def onQueryProgress(self, event: Any) -> None:
                progress = json.loads(event.progress.json)
                if str(progress.get("name") or "").startswith(prefix):
                    events.put(progress)

        self._listener = _Listener()
        self.spark.streams.addListener(self._listener)
        self._thread.start()

    def stop(self) -> None:
        """After the queries stopped: write what was received, then rows from the offset log for the
        committed batches whose events the listener bus had not delivered yet (``recover``)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=60)
        try:
            if self._listener is not None:
                self.spark.streams.removeListener(self._listener)
            self.flush()
            self.recover()
        except Exception as exc:  # Spark is going down: the next start's ``recover`` writes these rows
            print(f"progress-recorder: at stop: {exc}", flush=True)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.flush()
            except Exception as exc:  # retried at the next flush; the data path must not stop
                print(f"progress-recorder: {exc}", flush=True)

    def _query(self, name: str) -> str:
        return name[len(self.pipeline) + 1:].rsplit("_v", 1)[0]

    def flush(self) -> None:
        """Write the rows of the events received so far; a failed write keeps them for the next flush
        (in order: nothing after them is written first)."""
        while True:
            try:
                progress = self.events.get_nowait()
            except queue.Empty:
                break
            query = self._query(str(progress["name"]))
            if query in self.checkpoints:
                self.unwritten.setdefault(query, []).append(
                    progress_row(self.pipeline, query, self.checkpoints[query][0], progress))
        for query in list(self.unwritten):
            self.write(query, self.unwritten[query])
            del self.unwritten[query]

    def recover(self) -> int:
        """Write the rows of committed batches whose progress a crash lost; returns how many."""
        contracts.ensure(self.spark, STREAM_PROGRESS)
        return sum(self.write(query, []) for query in self.checkpoints)

    def missing_rows(self, query: str, done: int, before: int | None) -> list[StreamProgress]:
        """Rows rebuilt from the checkpoint's offset log for the committed batches after ``done`` (and
        before ``before``): those whose progress event a kill, or a failed write, lost."""
        version, checkpoint = self.checkpoints[query]
        if lineage.is_new(checkpoint):
            return []
        rows = []
        for batch_id in (b for b in lineage.committed_batches(checkpoint) if b > done and (before is None or b < before)):
            meta, end = lineage.offset_log_entry(checkpoint, batch_id)
            start = lineage.offset_log_entry(checkpoint, batch_id - 1)[1] if batch_id > 0 else None
            rows.append(recovered_row(self.pipeline, query, version, batch_id, meta, end, start))
        return rows

    def app_id(self, query: str) -> str:
        return naming.txn_app_id(self.pipeline, f"progress-{query}", lineage.query_id(self.checkpoints[query][1]))

    def last_written(self, query: str) -> int:
        return txn_versions(table_path(self.cfg, STREAM_PROGRESS.name)).get(self.app_id(query), -1)

    def write(self, query: str, rows: list[StreamProgress]) -> int:
        """Append ``rows`` above the lineage's last written batch, preceded by the rows of any committed
        batch between the two (``missing_rows``): a lineage's rows never have a gap."""
        if not rows and lineage.is_new(self.checkpoints[query][1]):  # nothing committed: no query id yet
            return 0
        done = self.last_written(query)
        rows = sorted({r.batch_id: r for r in rows if r.batch_id > done}.values(), key=lambda r: r.batch_id)
        rows = self.missing_rows(query, done, rows[0].batch_id if rows else None) + rows
        if not rows:
            return 0
        # one time for the whole append: a row rebuilt here must never look newer than a later batch's
        # row (readers take a lineage's newest row by recorded_at, then batch_id)
        written_at = datetime.now(UTC)
        rows = [dataclasses.replace(r, recorded_at=written_at) for r in rows]
        df = local_frame(self.spark, [list(r.row()) for r in rows], STREAM_PROGRESS.schema)
        idempotent_append(df, STREAM_PROGRESS.name, self.app_id(query), rows[-1].batch_id)
        return len(rows)
