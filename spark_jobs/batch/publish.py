"""Batch publish: a staged run's rows into ``batch.<p>``, then its status and the serving view.

One transaction: an incremental run is a MERGE of its upserts and deletes; a full run, which stages
every window and no delete, replaces the table's rows (one overwrite commit, no join with the old rows).
The rows carry what the serving view shows beside them (finality, ``as_of``), so the view reads
``batch.<p>`` itself: one table written, not two. Then the run record, beside the serving view. An
interrupted publish leaves the previous results intact; the run stays ``staged`` and publishing it again
writes the same absolute values. A run whose rows are in ``batch.<p>`` is recorded ``published`` (the
next incremental run folds onto those rows) even when its view refresh fails; that publish fails, and
publishing the run again refreshes the view, a no-op once it serves the latest published cutoff.
``locks.batch_lock``, taken by the caller (``batch.wap``), makes one writer of the batch tables at a time.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from lakehouse import contracts
from lakehouse.config import TidewaterConfig
from lakehouse.contracts import Contract
from lakehouse.errors import TidewaterError
from lakehouse.pipeline import Pipeline
from lakehouse.run_records import BatchRun
from lakehouse.speed_versions import active_version
from spark_jobs.io import batch_runs
from spark_jobs.io.delta_io import commit_info, latest_version, merge_changes, replace_rows, write_version_after
from spark_jobs.io.ops_reader import column_bounds, table_path
from spark_jobs.shared import definition_guard
from spark_jobs.shared.background import Background
from spark_jobs.shared.serving_view import add_served_columns, refresh_view, served_select
from spark_jobs.shared.step_timer import Steps

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


class BatchTables(NamedTuple):
    """The tables one publish reads and writes, named once (``contracts``) and handed along."""

    staging: Contract  # batch.<p>__staging: the run's rows
    batch: Contract  # batch.<p>: where they are published
    serving: str  # serving.<p>: the view that moves to the run's cutoff

    @classmethod
    def of(cls, p: Pipeline) -> BatchTables:
        return cls(contracts.batch_staging(p), contracts.batch(p), p.tables.serving)


def merge_staged(spark: SparkSession, cfg: TidewaterConfig, p: Pipeline, run: BatchRun, tables: BatchTables,
                 speed_table: str, numbered: int, staged_here: bool = False) -> int:
    """One transaction: a MERGE of the upserts and deletes (incremental runs), or the staged rows as the
    table's new content (full runs, which stage every window and no delete); each row with its served
    columns (``serving.served_select``: finality against ``speed_table``, the active speed version,
    ``as_of`` naming version ``numbered``, the one this commit is expected to get). ``staged_here``: the
    caller staged this run under the batch lock it still holds, so staging holds its rows (not checked:
    a Spark job). Returns the version the rows' ``as_of`` names: ``numbered``, or the next one when a MERGE
    of updates only found a window gone and the run's rows were MERGEd again with an insert clause."""
    table, staging = tables.batch.name, tables.staging.name
    of_run = f"run_id = '{run.run_id}'"
    if run.windows_written and not staged_here and spark.table(staging).where(of_run).isEmpty():  # staging holds another run's rows: publish nothing
        raise TidewaterError(f"batch: {staging} no longer holds the rows of run "
                             f"{run.run_id}; stage a new run with 'tidewater batch {p.name} --stage-only'")
    def rows(version: int) -> DataFrame:
        return spark.sql(served_select(p, speed_table, f"(SELECT * FROM {staging} WHERE {of_run})", version,
                                       extra=", b.op"))

    if run.mode == "full":
        replace_rows(spark, rows(numbered).where("op <> 'delete'"), table, tables.batch.column_names)
        return numbered
    ops = staged_ops(cfg, staging)
    merge_changes(spark, rows(numbered), table, p.grain, tables.batch.column_names, ops)
    if "upsert" in ops or all_matched(cfg, table, numbered):
        return numbered
    merge_changes(spark, rows(numbered + 1), table, p.grain, tables.batch.column_names)  # fail closed
    return numbered + 1


def staged_ops(cfg: TidewaterConfig, staging: str) -> tuple[str, ...]:
    """The ``op`` values staging may hold (``contracts.STAGED_OPS``, in order), from the least and greatest in
    its files' statistics; all of them when the statistics cannot tell."""
    bounds = column_bounds(table_path(cfg, staging), "op")
    if bounds is None:
        return contracts.STAGED_OPS
    return tuple(op for op in contracts.STAGED_OPS if bounds[0] <= op <= bounds[1])


def all_matched(cfg: TidewaterConfig, table: str, numbered: int) -> bool:
    """Whether the MERGE of updates (and deletes) that wrote ``table`` after version ``numbered - 1`` found
    a row for each of its source rows (its commit's metrics); if not, a window the run had read from the
    table is gone, and its row must be inserted."""
    path = table_path(cfg, table)
    metrics = commit_info(path, write_version_after(path, numbered - 1)).get("operationMetrics") or {}
    try:
        return (int(metrics["numTargetRowsUpdated"]) + int(metrics.get("numTargetRowsDeleted", 0))
                == int(metrics["numSourceRows"]))
    except (KeyError, ValueError):
        return False


def publish_staged(spark: SparkSession, cfg: TidewaterConfig, p: Pipeline, run_id: str,
             just_staged: BatchRun | None = None, recorded: Callable[[], object] | None = None) -> BatchRun:
    """MERGE, run status, serving view (the reconciliation ledger follows: ``batch.reconcile``), for a run
    with a passing gate verdict on the rows it staged (``batch_runs.require_passing_verdict``).
    ``just_staged``: the run this caller staged and gated under the batch lock it still holds, so it is the
    latest staged run and not published (``ops.batch_runs`` need not be read to know it). ``recorded``:
    waits for the caller's ``staged`` record of that run, still being committed while the publish
    prepares; called before any row of the run is written (a run is in ``ops.batch_runs`` before its
    rows are published: a crash in between leaves it ``staged``, never published and unrecorded)."""
    if just_staged is not None and just_staged.run_id == run_id:
        run = just_staged.as_read()
    else:
        done = batch_runs.already_published(spark, p.name, run_id)
        if done is not None:  # a retried or cleared publish task: its rows are live; the view is made to
            refresh_view(spark, cfg, p)  # serve them (the latest published cutoff; left alone if it does)
            return dataclasses.replace(done, already_published=True)
        run = batch_runs.require_latest_staged(spark, p.name, run_id)
    tables = BatchTables.of(p)
    staging = tables.staging.name
    batch_runs.require_passing_verdict(run, staging, latest_version(table_path(cfg, staging)))
    started = time.monotonic()
    steps = Steps()
    wait = recorded or (lambda: None)
    publish_rows(spark, cfg, p, run, tables, steps, staged_here=just_staged is not None and just_staged.run_id == run_id,
                 recorded=wait)
    wait()  # also when no row was written: the run's statuses are appended in order
    run = dataclasses.replace(run, status="published", published_at=batch_runs.now(),
                              duration_ms=int(run.duration_ms + (time.monotonic() - started) * 1000))
    recording = Background(batch_runs.save, spark, run)  # independent commits, side by side
    try:
        refresh_view(spark, cfg, p, cutoff=run.cutoff)
    except Exception as exc:
        recording.thread.join()  # the rows are published: their record too (or the run stays staged)
        raise view_not_moved(p, tables, run, exc) from exc
    steps.done("view")
    recording.join()
    steps.done("run record (beside the view)")
    steps.report(f"batch: {p.name} publish")
    return run


def view_not_moved(p: Pipeline, tables: BatchTables, run: BatchRun, exc: Exception) -> TidewaterError:
    """The run's rows are in ``batch.<p>`` but ``serving.<p>`` still shows the previous cutoff: publishing
    the run again moves the view (``publish_staged``)."""
    cause = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
    return TidewaterError(f"batch: run {run.run_id} of {p.name} is in {tables.batch.name}, but "
                          f"{tables.serving} was not moved to its cutoff ({cause}); publish it "
                          f"again to move the view: 'tidewater batch {p.name} --publish --run-id {run.run_id}'")


def publish_rows(spark: SparkSession, cfg: TidewaterConfig, p: Pipeline, run: BatchRun, tables: BatchTables,
                 steps: Steps,
                 staged_here: bool = False, recorded: Callable[[], object] = lambda: None) -> None:
    """The run's rows into ``batch.<p>``, which the serving view reads: one commit (the batch lock makes
    this the only writer of its rows). Their ``as_of`` names that commit's version, numbered before it
    (``settle_as_of``). ``recorded``: called right before that commit's write (``publish_staged``)."""
    if run.mode != "full" and not run.windows_written and not run.windows_deleted:
        return  # nothing to write (a MERGE of no rows makes no commit)
    speed = contracts.speed(p, active_version(cfg, p.name))
    contracts.ensure(spark, speed)
    add_served_columns(spark, cfg, p, speed.name, locked=True)  # before the numbering: it may commit
    numbered = latest_version(table_path(cfg, tables.batch.name)) + 1  # from the log folder
    recorded()
    numbered = merge_staged(spark, cfg, p, run, tables, speed.name, numbered, staged_here)
    steps.done("batch rows")
    if not run.windows_written and not run.windows_deleted:
        return  # no row to label: a first (full) run of no complete window overwrote an empty table, no commit
    written = settle_as_of(spark, cfg, tables.batch, run.run_id, numbered)
    if written != numbered:
        steps.done(f"as_of relabelled: v{numbered} -> v{written}")
    if run.mode == "full" and definition_guard.mismatch(cfg, tables.batch.name, p):
        definition_guard.record(spark, tables.batch.name, p)  # after the rows: a crash between refuses again
        steps.done("definition recorded")


def settle_as_of(spark: SparkSession, cfg: TidewaterConfig, batch: Contract, run_id: str, numbered: int) -> int:
    """The version the rows of ``run_id`` were written at (from the table's log files). If another commit
    came before theirs (the maintenance DAG's, say), their ``as_of`` names ``numbered``, not it:
    relabelled (one UPDATE)."""
    table = batch.name
    written = write_version_after(table_path(cfg, table), numbered - 1)
    if written != numbered:
        spark.sql(f"UPDATE {table} SET as_of = replace(as_of, '{table} v{numbered} ', '{table} v{written} ') "
                  f"WHERE run_id = '{run_id}'")
    return written
