"""The ``ingest`` query's ``foreachBatch`` sink (``io.sink.MicroBatchSink``): Delta writes that a replayed micro-batch cannot double.

``ingest_writer``: unusable records -> ``quarantine.<p>``, then valid events -> ``bronze.<p>``, each an
idempotent append (``txnAppId`` tied to the query version, ``txnVersion`` = micro-batch id). A session
pipeline's ``speed`` query writes through ``speed.session_sink.SessionMerge``.

It deletes its tables' expired Delta log files every ``log_cleanup.CLEAN_EVERY`` micro-batches, as the
stateless stream does (``speed.log_cleanup``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lakehouse import naming
from lakehouse.pipeline import Pipeline
from spark_jobs.io import lineage
from spark_jobs.io.delta_io import idempotent_append
from spark_jobs.io.sink import MicroBatchSink
from spark_jobs.speed.log_cleanup import LogCleanup, stream_tables
from spark_jobs.transforms.parse import quarantined, valid_events


def ingest_writer(p: Pipeline, checkpoint: Path, floors: dict[str, dict[str, int] | None], mode: str) -> MicroBatchSink:
    """foreachBatch sink of the ``ingest`` query: quarantine, then bronze, each exactly once from its
    floor (``lineage.ingest_floors``: the order is what a new lineage's floors rely on)."""
    apps: dict[str, str] = {}
    cleanups: list[Any] = []

    def _write(df: Any, batch_id: int) -> None:
        from pyspark.sql import functions as F

        if not apps:  # the checkpoint's metadata exists once the query runs

            cleanups.append(LogCleanup(df.sparkSession, p.name, stream_tables(p.name, ["ingest"], None), mode))
            qid = lineage.query_id(checkpoint)
            apps.update(bronze=naming.txn_app_id(p.name, "bronze", qid),
                        quarantine=naming.txn_app_id(p.name, "quarantine", qid))
        df = df.persist()
        try:
            idempotent_append(quarantined(lineage.from_floor(df, floors.get("quarantine"))),
                              p.tables.quarantine, apps["quarantine"], batch_id)
            bronze = valid_events(lineage.from_floor(df, floors.get("ingest"))).withColumn("event_date", F.to_date("event_time"))
            idempotent_append(bronze, p.tables.bronze, apps["bronze"], batch_id)
        finally:
            df.unpersist()
        cleanups[0].maybe_start(batch_id)

    return _write
