"""The speed job's two ``foreachBatch`` sinks (``io.sink.MicroBatchSink``): Delta writes that a replayed micro-batch cannot double.

* ``ingest_writer``: unusable records -> ``quarantine.<p>``, then valid events -> ``bronze.<p>``, each an
  idempotent append (``txnAppId`` tied to the query version, ``txnVersion`` = micro-batch id).
* ``SpeedMerge``: windowed results -> MERGE into ``speed.<p>[__vN]`` on the grain (absolute values,
  newer ``batch_id`` wins), then ``is_final`` for windows the watermark has passed.

Each deletes its tables' expired Delta log files every ``log_cleanup.CLEAN_EVERY`` micro-batches, as the
stateless stream does (``speed.log_cleanup``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from infra.utc import sql_timestamp as _ts
from lakehouse import naming
from lakehouse.pipeline import Pipeline
from lakehouse.window_kinds import kind_of
from spark_jobs.io.sink import MicroBatchSink


class SpeedMerge:
    """foreachBatch sink of the ``speed`` query: MERGE windows, then mark finalized ones."""

    def __init__(self, spark: Any, p: Pipeline, table: str, mode: str) -> None:
        from spark_jobs.speed.log_cleanup import LogCleanup, stream_tables

        self.spark, self.p, self.table = spark, p, table
        self.log_cleanup = LogCleanup(spark, p.name, stream_tables(p.name, ["speed"], table), mode)
        self.append_mode = kind_of(p.window).keeps_state
        row = spark.sql(f"SELECT max(max_event_time) AS m FROM {table}").collect()[0]
        self.max_event_time = row["m"]
        self.finalized_upto: Any = None  # max_event_time at the last finalize (None: scan everything once)

    def __call__(self, df: Any, batch_id: int) -> None:
        from pyspark.sql import functions as F

        from spark_jobs.io.delta_io import merge_upsert

        df = df.persist()
        try:
            top, first = df.agg(F.max("max_event_time"), F.min("window_start")).collect()[0]
            if top is not None and (self.max_event_time is None or top > self.max_event_time):
                self.max_event_time = top
            rows = df.select(
                *df.columns, F.current_timestamp().alias("updated_at"), F.lit(batch_id).cast("bigint").alias("batch_id"),
                F.lit(self.append_mode).alias("is_final"),
            )
            # every target row a source row can match starts at or after the batch's first window:
            # saying so lets Delta skip the files of older windows instead of scanning the table
            prune = f"t.window_start >= {_ts(first)}" if first is not None else None
            merge_upsert(self.spark, rows, self.table, self.p.grain, newer_than="batch_id", target_filter=prune)
        finally:
            df.unpersist()
        self.finalize()
        self.log_cleanup.maybe_start(batch_id)

    def watermark_expr(self, event_time: Any = None, delays: int = 1) -> str | None:
        """The watermark (max event time - delay) as SQL; ``delays=2`` gives a safety margin below it."""
        event_time = event_time or self.max_event_time
        if event_time is None:
            return None
        return f"{_ts(event_time)} - INTERVAL {delays * self.p.watermark_seconds} SECONDS"

    def finalize(self) -> None:
        """Windows whose end the watermark has passed will never change again in the stream.
        Windows that ended before the previous finalize's watermark (with one more delay of margin)
        were finalized then, so only the band in between is searched."""
        wm = self.watermark_expr()
        if wm is None or self.append_mode:
            return
        band = f" AND window_end > {self.watermark_expr(self.finalized_upto, 2)}" if self.finalized_upto else ""
        self.spark.sql(f"UPDATE {self.table} SET is_final = true WHERE NOT is_final AND window_end <= {wm}{band}")
        self.finalized_upto = self.max_event_time


def ingest_writer(p: Pipeline, checkpoint: Path, floors: dict[str, dict[str, int] | None], mode: str) -> MicroBatchSink:
    """foreachBatch sink of the ``ingest`` query: quarantine, then bronze, each exactly once from its
    floor (``lineage.ingest_floors``: the order is what a new lineage's floors rely on)."""
    from spark_jobs.io import lineage
    from spark_jobs.io.delta_io import idempotent_append
    from spark_jobs.transforms.parse import quarantined, valid_events

    apps: dict[str, str] = {}
    cleanups: list[Any] = []

    def _write(df: Any, batch_id: int) -> None:
        from pyspark.sql import functions as F

        if not apps:  # the checkpoint's metadata exists once the query runs
            from spark_jobs.speed.log_cleanup import LogCleanup, stream_tables

            cleanups.append(LogCleanup(df.sparkSession, p.name, stream_tables(p.name, ["ingest"], None), mode))
            qid = lineage.query_id(checkpoint)
            apps.update(bronze=naming.txn_app_id(p.name, "bronze", qid),
                        quarantine=naming.txn_app_id(p.name, "quarantine", qid))
        df = df.persist()
        try:
            idempotent_append(quarantined(lineage.from_floor(df, floors.get("quarantine"))),
                              naming.table("quarantine", p.name), apps["quarantine"], batch_id)
            bronze = valid_events(lineage.from_floor(df, floors.get("ingest"))).withColumn("event_date", F.to_date("event_time"))
            idempotent_append(bronze, naming.table("bronze", p.name), apps["bronze"], batch_id)
        finally:
            df.unpersist()
        cleanups[0].maybe_start(batch_id)

    return _write
