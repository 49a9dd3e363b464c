"""Write the reconciliation ledger of a published batch run, and read its summary.

For every window the run finalized (its staged upserts), ``transforms.reconcile.ledger_rows``
compares the batch value with the active speed table's value and counts the causes, using the
bronze snapshot the run read and the quarantine table. Rows are MERGEd on the ledger grain, so
recording the same run twice leaves one copy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lakehouse import contracts, naming
from lakehouse.config import TidewaterConfig
from lakehouse.pipeline import Pipeline

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def record_ledger(spark: SparkSession, cfg: TidewaterConfig, p: Pipeline, run_id: str, incremental_run: bool = True) -> int:
    """The run's ``ops.reconciliation`` rows (speed vs batch per window and aggregate); returns the windows."""
    from pyspark.sql import functions as F

    from lakehouse.speed_versions import active_version
    from spark_jobs.io.delta_io import merge_upsert
    from spark_jobs.transforms import incremental
    from spark_jobs.transforms.reconcile import ledger_rows

    contracts.ensure(spark, contracts.RECONCILIATION, contracts.quarantine(p))
    staged = (spark.table(naming.staging_table("batch", p.name))
              .where(f"run_id = '{run_id}' AND op = 'upsert'").persist())
    span = staged.agg(F.min("window_start").alias("lo"), F.max("window_end").alias("hi")).collect()[0]
    if span["lo"] is None:
        staged.unpersist()
        return 0
    version = staged.select("bronze_version").collect()[0][0]
    in_span = (F.col("event_time") >= F.lit(span["lo"])) & (F.col("event_time") < F.lit(span["hi"]))
    raw = spark.read.option("versionAsOf", version).table(naming.table("bronze", p.name)).where(in_span)
    if incremental_run and p.window.type != "session":  # the staged windows' events (late ones span the history)
        raw = incremental.in_windows(p, raw, staged.select(*p.grain))
    speed_version = active_version(cfg, p.name)
    speed_table = naming.speed_table(p.name, speed_version)
    contracts.ensure(spark, contracts.speed(p, speed_version))
    rows = ledger_rows(p, staged, spark.table(speed_table), raw, spark.table(naming.table("quarantine", p.name)))
    out = rows.select(F.lit(run_id).alias("run_id"), F.lit(p.name).alias("pipeline"), "*",
                      F.current_timestamp().alias("recorded_at"))
    out = out.select(*(F.col(c).cast(t).alias(c) for c, t in contracts.RECONCILIATION.columns))
    # only this run's rows can match (run_id leads the grain): Delta skips every other run's files by
    # their run_id statistics, so the MERGE reads what the run adds, not the whole ledger
    merge_upsert(spark, out, contracts.RECONCILIATION.name, list(contracts.RECONCILIATION.grain),
                 target_filter=f"t.run_id = '{run_id}'")
    windows = staged.count()
    staged.unpersist()
    return windows


def summary(spark: SparkSession, p: Pipeline) -> dict[str, Any]:
    from spark_jobs.transforms.reconcile import summarize

    contracts.ensure(spark, contracts.RECONCILIATION)
    rows = spark.table(contracts.RECONCILIATION.name).where(f"pipeline = '{p.name}'").collect()
    return summarize(r.asDict() for r in rows)
