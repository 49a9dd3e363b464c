"""``late.<p>`` of a session pipeline: the valid events its ``speed`` query leaves out as behind the watermark.

The session query's stateful steps (``dropDuplicatesWithinWatermark``, then ``open_sessions``'
transformWithState) drop every event at or before the watermark that Spark gives them for late events,
before anything else. In Spark 4.1 that is the watermark of the PREVIOUS micro-batch
(``PropagateWatermarkSimulator.getInputWatermarkForLateEvents``: for micro-batch N, ``batchWatermarkMs``
of offset-log entry N-1; none in a query's first micro-batch), compared as ``event_time <= watermark``
(``cached_records.behind`` with ``at_watermark``). Both steps get the same watermark (the dedup passes
its input watermark on), so the dedup drops them all, before it looks for duplicates: a late copy of an
event is a late record too, and progress' ``rows_dropped_by_watermark`` counts the same records as
``late.<p>`` holds.

The sink (``speed.session_sink``) never sees those events: Spark drops them inside the query's plan. So
for each micro-batch with a watermark, ``SessionLate`` reads the micro-batch's own Kafka offset range
(offset-log entries N-1 -> N) once more, in batch mode, parses it as the query does, and appends its
late valid events (``late_rows.late_events``); the window each missed is the session it would have
opened, ``[event_time, event_time + gap)`` (``window_kinds.Session.missed``).

Exactly once: one tagged append per micro-batch with late events (``<lineage>/<micro-batch>``); the
micro-batch that Spark runs again at a start (``lineage.uncommitted_batch``, read before the query
starts) first looks for rows of its lineage and micro-batch. A lineage's first micro-batch deletes the
version's rows at or after the offsets it starts from (``late_rows.forget_from``): it reads them again.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lakehouse import contracts
from lakehouse.config import TidewaterConfig
from lakehouse.errors import TidewaterError
from lakehouse.pipeline import Pipeline
from spark_jobs.io.delta_io import tagged_append
from spark_jobs.io.kafka_source import read_range
from spark_jobs.io.lineage import offset_log_entry, query_id, uncommitted_batch
from spark_jobs.speed import late_rows
from spark_jobs.speed import micro_batch_values as batch_values
from spark_jobs.speed.cached_records import behind
from spark_jobs.transforms.parse import classify, with_kafka_metadata


def late_event_watermark(checkpoint: Path, batch_id: int) -> datetime | None:
    """The watermark by which the session query drops late events in micro-batch ``batch_id``: the
    previous offset-log entry's (None: the first micro-batch, or no watermark yet)."""
    if batch_id == 0:
        return None
    meta, _ = offset_log_entry(checkpoint, batch_id - 1)
    ms = int(meta.get("batchWatermarkMs") or 0)
    return datetime.fromtimestamp(ms / 1000, UTC) if ms > 0 else None


def batch_ranges(checkpoint: Path, batch_id: int, topic: str) -> dict[int, tuple[int, int]]:
    """Partition -> (first offset, end offset) of the Kafka records micro-batch ``batch_id`` (>= 1) read:
    from the previous offset-log entry to its own (a partition new in it starts at 0). Every partition of
    the topic, also those without records: a Kafka read of a subscribed topic must name them all."""
    _, start = offset_log_entry(checkpoint, batch_id - 1)
    _, end = offset_log_entry(checkpoint, batch_id)
    before = start.get(topic, {})
    return {int(part): (int(before.get(part, 0)), int(offset)) for part, offset in end.get(topic, {}).items()}


def initial_offsets(checkpoint: Path, topic: str) -> dict[str, int]:
    """Partition -> the offset the checkpoint's query started from (its Kafka source's initial offsets,
    ``sources/0/0``: a version line, then the JSON)."""
    path = checkpoint / "sources" / "0" / "0"
    text = path.read_text(errors="replace") if path.is_file() else ""
    if "{" not in text:
        raise TidewaterError(f"speed: {path} does not hold the Kafka offsets the query started from, so the late "
                             "rows it reads again cannot be told apart; build a new speed version: tidewater replay")
    return {str(part): int(offset) for part, offset in json.loads(text[text.index("{"):])[topic].items()}


class SessionLate:
    """Per micro-batch of a session pipeline's ``speed`` query: its late events -> ``late.<p>``."""

    def __init__(self, spark: Any, cfg: TidewaterConfig, p: Pipeline, version: int, checkpoint: Path) -> None:
        self.spark, self.cfg, self.p, self.version, self.checkpoint = spark, cfg, p, version, checkpoint
        self.rerun_of = uncommitted_batch(checkpoint)  # read before the query starts
        self.qid = ""  # the checkpoint's query id: this lineage (read once the query runs)

    def __call__(self, batch_id: int) -> int:
        """Append micro-batch ``batch_id``'s late events (once); returns how many it appended."""
        self.qid = self.qid or query_id(self.checkpoint)
        if batch_id == 0:
            late_rows.forget_from(self.spark, self.p, self.version, initial_offsets(self.checkpoint, self.p.topic))
        wm = late_event_watermark(self.checkpoint, batch_id)
        if wm is None:
            return 0
        ranges = batch_ranges(self.checkpoint, batch_id, self.p.topic)
        if not any(end > first for first, end in ranges.values()) or (batch_id == self.rerun_of and self.written(batch_id)):
            return 0
        return self.append(batch_id, wm, ranges)

    def written(self, batch_id: int) -> bool:
        """Whether ``late.<p>`` holds rows of this lineage's micro-batch ``batch_id`` (one commit: all of them)."""
        return bool(self.spark.sql(
            f"SELECT 1 FROM {contracts.late(self.p).name} WHERE speed_version = {int(self.version)} AND "
            f"lineage = '{self.qid}' AND batch_id = {int(batch_id)} LIMIT 1").collect())

    def append(self, batch_id: int, wm: datetime, ranges: dict[int, tuple[int, int]]) -> int:
        meta, _ = offset_log_entry(self.checkpoint, batch_id)
        batch_time = batch_values.timestamp(self.spark, datetime.fromtimestamp(int(meta["batchTimestampMs"]) / 1000, UTC))
        records = with_kafka_metadata(read_range(self.spark, self.cfg, self.p.topic, ranges), batch_time).transform(
            classify(self.p))
        rows = late_rows.late_events(records, self.p, behind(self.spark, wm, at_watermark=True), wm, batch_id=batch_id,
                                     version=self.version, lineage=self.qid).persist()
        try:
            late = rows.count()
            if late:
                tagged_append(rows, contracts.late(self.p).name, f"{self.qid}/{batch_id}")
        finally:
            rows.unpersist()
        return late
