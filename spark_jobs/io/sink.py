"""The one sink protocol: what a streaming query hands each micro-batch to.

A sink is called by Spark's ``foreachBatch`` with the micro-batch's rows and its id. Every Tidewater sink
writes Delta exactly once per micro-batch id: a micro-batch that Spark re-runs after a crash changes
nothing that already committed (an idempotent append keyed by ``txnAppId``/``txnVersion``, a MERGE on the
grain where the newer ``batch_id`` wins, or a check of what the re-run already wrote). The speed layer's
sinks implement it: ``speed.session_sink.SessionMerge``, ``speed.sinks.ingest_writer`` and ``speed.stream_batch.
StreamBatch``, and ``speed.queries`` hands each query its sink as a ``MicroBatchSink``.
"""

from __future__ import annotations

from typing import Any, Protocol


class MicroBatchSink(Protocol):
    def __call__(self, df: Any, batch_id: int) -> None:
        """Write the micro-batch ``df`` (a DataFrame) of id ``batch_id``, exactly once."""

