"""``SessionMerge``: the ``foreachBatch`` sink (``io.sink.MicroBatchSink``) of a session pipeline's ``speed`` query.

It applies the session changes of ``speed.open_sessions`` to ``speed.<p>[__vN]`` in one MERGE on the grain
(keys, ``window_start``, ``window_end``): ``delete`` rows remove a session that was extended or merged
away, ``upsert`` rows insert or replace one (the newer ``batch_id`` wins). So the table holds each
session once: open ones with ``is_final = false``, closed ones with ``is_final = true``. Within one
micro-batch a session may be upserted open and then closed: the closed row is the one applied. A
re-run micro-batch (a crash after its commit, before the checkpoint's) recomputes the same changes
from the same state, and the MERGE of absolute values leaves the table as it was.

Before the MERGE, the micro-batch's events that Spark dropped as behind the watermark go to
``late.<p>`` (``speed.session_late``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from infra.utc import sql_timestamp
from lakehouse import contracts
from lakehouse.config import TidewaterConfig
from lakehouse.pipeline import Pipeline
from spark_jobs.io.delta_io import key_condition
from spark_jobs.speed.log_cleanup import LogCleanup, stream_tables
from spark_jobs.speed.session_late import SessionLate


class SessionMerge:
    """foreachBatch sink of a session pipeline's ``speed`` query."""

    def __init__(self, spark: Any, cfg: TidewaterConfig, p: Pipeline, version: int, table: str,
                 checkpoint: Path) -> None:
        self.spark, self.p, self.table = spark, p, table
        self.late = SessionLate(spark, cfg, p, version, checkpoint)
        tables = [*stream_tables(p.name, ["speed"], table), contracts.late(p).name]
        self.log_cleanup = LogCleanup(spark, p.name, tables, cfg.mode)

    def __call__(self, df: Any, batch_id: int) -> None:
        from delta.tables import DeltaTable
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        self.late(batch_id)
        last = Window.partitionBy(*self.p.grain).orderBy(F.col("is_final").desc(), (F.col("op") == "upsert").desc())
        changes = (df.withColumn("_rank", F.row_number().over(last)).where("_rank = 1").drop("_rank")
                   .withColumn("updated_at", F.current_timestamp())
                   .withColumn("batch_id", F.lit(batch_id).cast("bigint"))).persist()
        try:
            first = changes.agg(F.min("window_start")).collect()[0][0]
            if first is None:
                return
            columns = [*contracts.result_columns(self.p), "updated_at", "batch_id", "is_final"]
            values: dict[str, str | Any] = {f"`{c}`": f"s.`{c}`" for c in columns}
            # every row a change can match starts at or after the batch's first session: Delta skips older files
            on = f"t.window_start >= {sql_timestamp(first)} AND {key_condition(self.p.grain)}"
            (DeltaTable.forName(self.spark, self.table).alias("t").merge(changes.alias("s"), on)
             .whenMatchedDelete(condition="s.op = 'delete'")
             .whenMatchedUpdate(condition="s.op = 'upsert' AND s.batch_id >= t.batch_id", set=values)
             .whenNotMatchedInsert(condition="s.op = 'upsert'", values=values).execute())
        finally:
            changes.unpersist()
        self.log_cleanup.maybe_start(batch_id)
