"""Write the reconciliation ledger of a published batch run, and read its summary.

For every window the run wrote (the rows of ``batch.<p>`` that carry its run id),
``transforms.reconcile.ledger_rows`` compares the batch value with the active speed table's value
and counts the causes, using the bronze snapshot the run read, the quarantine table and the active
speed version's ``late.<p>`` rows (``late_rows``: the link from a corrected window to its late records). Rows are
MERGEd on the ledger grain, so recording the same run twice leaves one copy.

The ledger is monitoring, not part of what a run publishes: publish makes the run's windows
visible, and the ledger follows (the DAG's ``reconcile`` task, ``tidewater reconcile <p>
--run-id``, or the last step of a plain ``tidewater batch <p>``). It reads the published rows, not
staging, so a run staged in between does not hide them.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from lakehouse import contracts, naming
from lakehouse.config import TidewaterConfig
from lakehouse.errors import NothingToDo
from lakehouse.pipeline import Pipeline
from lakehouse.run_records import BatchRun
from lakehouse.speed_versions import active_version
from lakehouse.window_kinds import kind_of
from spark_jobs.io import batch_runs
from spark_jobs.io.delta_io import add_missing_columns, merge_upsert
from spark_jobs.shared import definition_guard
from spark_jobs.transforms import incremental
from spark_jobs.transforms.reconcile import ledger_rows, summarize

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def published_run(spark: SparkSession, p: Pipeline, run_id: str | None) -> BatchRun:
    """The published run ``run_id`` (the latest published run when None), or why there is none."""
    contracts.ensure(spark, contracts.BATCH_RUNS)
    run = batch_runs.last_published(spark, p.name) if run_id is None else batch_runs.already_published(spark, p.name, run_id)
    if run is None:
        which = f"run {run_id!r} of {p.name} is not published" if run_id else f"no run of {p.name} is published yet"
        raise NothingToDo(f"reconcile: {which}; publish one with 'tidewater batch {p.name}'")
    return run


def has_ledger(spark: SparkSession, run_id: str) -> bool:
    contracts.ensure(spark, contracts.RECONCILIATION)
    return bool(spark.table(contracts.RECONCILIATION.name).where(f"run_id = '{run_id}'").limit(1).count())


def ensure_ledger(spark: SparkSession, cfg: TidewaterConfig, p: Pipeline, run_id: str | None = None) -> dict[str, Any]:
    """Record the ledger of published run ``run_id`` (None: the latest) unless it has one already."""
    run_id = published_run(spark, p, run_id).run_id
    if has_ledger(spark, run_id):
        return {"run_id": run_id, "recorded": False}
    return {"run_id": run_id, "recorded": True, "windows": record_ledger(spark, cfg, p, run_id)}


def ledger_inputs(spark: SparkSession, cfg: TidewaterConfig, p: Pipeline, run: BatchRun) -> dict[str, Any] | None:
    """What the ledger of published run ``run`` compares (DataFrames): its ``staged`` rows (persisted: the
    caller unpersists), the active ``speed`` version's rows, the ``bronze`` events of its windows, the
    ``quarantine`` and the speed version's ``late`` rows. None when there is nothing to compare: the run
    wrote no window, or its windows and the speed table's have different definitions."""
    from pyspark.sql import functions as F

    contracts.ensure(spark, contracts.RECONCILIATION, contracts.quarantine(p), contracts.late(p))
    add_missing_columns(spark, contracts.RECONCILIATION)
    speed_version = active_version(cfg, p.name)
    contracts.ensure(spark, contracts.speed(p, speed_version))
    apart = definition_guard.apart(cfg, p.tables.batch, contracts.storage_table(p, speed_version), p)
    if apart:  # windows of two definitions: every one would count as a difference
        print(f"reconcile: no ledger for run {run.run_id}: {apart}", file=sys.stderr, flush=True)
        return None
    staged = spark.table(p.tables.batch).where(f"run_id = '{run.run_id}'").persist()
    span = staged.agg(F.min("window_start").alias("lo"), F.max("window_end").alias("hi")).collect()[0]
    if span["lo"] is None:
        staged.unpersist()
        return None
    in_span = (F.col("event_time") >= F.lit(span["lo"])) & (F.col("event_time") < F.lit(span["hi"]))
    bronze = spark.read.option("versionAsOf", run.bronze_version).table(p.tables.bronze).where(in_span)
    if run.mode == "incremental" and not kind_of(p.window).keeps_state:  # the staged windows' events only
        bronze = incremental.in_windows(p, bronze, staged.select(*p.grain))
    return {"staged": staged, "speed": spark.table(naming.speed_table(p.name, speed_version)), "bronze": bronze,
            "quarantine": spark.table(p.tables.quarantine),
            "late": spark.table(p.tables.late).where(f"speed_version = {int(speed_version)}")}


def record_ledger(spark: SparkSession, cfg: TidewaterConfig, p: Pipeline, run_id: str | None) -> int:
    """The published run's ``ops.reconciliation`` rows (speed vs batch per window and aggregate);
    returns the windows. ``run_id`` (None: the latest published run) is looked up in
    ``ops.batch_runs`` before any SQL uses it."""
    from pyspark.sql import functions as F

    run = published_run(spark, p, run_id)
    inputs = ledger_inputs(spark, cfg, p, run)
    if inputs is None:
        return 0
    staged = inputs["staged"]
    rows = ledger_rows(p, staged, inputs["speed"], inputs["bronze"], inputs["quarantine"], inputs["late"])
    out = rows.select(F.lit(run.run_id).alias("run_id"), F.lit(p.name).alias("pipeline"), "*",
                      F.current_timestamp().alias("recorded_at"))
    out = out.select(*(F.col(c).cast(t).alias(c) for c, t in contracts.RECONCILIATION.columns))
    # only this run's rows can match (run_id leads the grain): Delta skips every other run's files by
    # their run_id statistics, so the MERGE reads what the run adds, not the whole ledger
    merge_upsert(spark, out, contracts.RECONCILIATION.name, list(contracts.RECONCILIATION.grain),
                 target_filter=f"t.run_id = '{run.run_id}'")
    windows = staged.count()
    staged.unpersist()
    return windows


def summary(spark: SparkSession, p: Pipeline) -> dict[str, Any]:
    contracts.ensure(spark, contracts.RECONCILIATION)
    return summarize(spark.table(contracts.RECONCILIATION.name).where(f"pipeline = '{p.name}'"))
