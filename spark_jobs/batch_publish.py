"""Batch publish: a staged run's rows into ``batch.<p>`` and the serving side, then its status and the view.

One transaction per table: an incremental run is a MERGE of its upserts and deletes; a full run, which
stages every window and no delete, replaces the table's rows (one overwrite commit, no join with the old
rows). ``batch.<p>``, then ``serving.<p>__published``, then the run record beside the serving view. An
interrupted publish leaves the previous results intact; the run stays ``staged`` and publishing it again
writes the same absolute values. ``batch_lock`` makes one writer of the batch tables at a time (see
``spark_jobs.batch`` for stage).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from lakehouse import contracts, naming
from lakehouse.config import TidewaterConfig
from lakehouse.errors import TidewaterError
from lakehouse.pipeline import Pipeline
from spark_jobs import batch_runs
from spark_jobs.step_timer import Steps

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


LOCK_WAIT_SECONDS = 1800.0


def batch_lock(cfg: TidewaterConfig, p: Pipeline) -> Any:
    """One writer of ``batch.<p>__staging`` and ``batch.<p>`` at a time: staging is overwritten by
    each run, so a second run staging between another's stage and publish would otherwise leave a
    full publish without its rows (and delete ``batch.<p>``). Runs that start together queue here;
    the one staged last is the only one that can publish (``batch_runs.require_latest_staged``)."""
    from spark_jobs.locks import exclusive

    return exclusive(cfg, f"batch-{p.name}", LOCK_WAIT_SECONDS)


def merge_staged(spark: SparkSession, p: Pipeline, run: dict[str, Any]) -> None:
    """One transaction: a MERGE of the upserts and deletes (incremental runs), or the staged rows as the
    table's new content (full runs, which stage every window and no delete)."""
    from spark_jobs.io.delta_io import merge_changes, replace_rows

    staged = spark.table(naming.staging_table("batch", p.name)).where(f"run_id = '{run['run_id']}'")
    if run["windows_written"] and staged.isEmpty():  # staging holds another run's rows: publish nothing
        raise TidewaterError(f"batch: {naming.staging_table('batch', p.name)} no longer holds the rows of run "
                             f"{run['run_id']}; stage a new run with 'tidewater batch {p.name} --stage-only'")
    if run["mode"] == "full":
        replace_rows(spark, staged.where("op = 'upsert'"), naming.table("batch", p.name))
    else:
        merge_changes(spark, staged, naming.table("batch", p.name), p.grain, contracts.batch(p).column_names)


def publish(spark: SparkSession, cfg: TidewaterConfig, p: Pipeline, run_id: str) -> dict[str, Any]:
    """Publish the latest staged run (under the batch lock)."""
    with batch_lock(cfg, p):
        return publish_staged(spark, cfg, p, run_id)


def publish_staged(spark: SparkSession, cfg: TidewaterConfig, p: Pipeline, run_id: str,
             just_staged: dict[str, Any] | None = None) -> dict[str, Any]:
    """MERGE, run status, serving view (the reconciliation ledger follows: ``reconcile_job``).
    ``just_staged``: the run this caller staged under the batch lock it still holds, so it is the
    latest staged run and not published (``ops.batch_runs`` need not be read to know it)."""
    from spark_jobs.io.background import Background
    from spark_jobs.serving import refresh_view

    if just_staged is not None and just_staged["run_id"] == run_id:
        run = batch_runs.as_read(just_staged)
    else:
        done = batch_runs.already_published(spark, p.name, run_id)
        if done is not None:  # a retried or cleared publish task: the run is live, nothing to redo
            return {**done, "already_published": True}
        run = batch_runs.require_latest_staged(spark, p.name, run_id)
    started = time.monotonic()
    steps = Steps()
    publish_rows(spark, cfg, p, run, steps)
    run.update(status="published", published_at=batch_runs.now(),
               duration_ms=int(run["duration_ms"] + (time.monotonic() - started) * 1000))
    recording = Background(batch_runs.save, spark, run)  # independent commits, side by side
    refresh_view(spark, cfg, p, cutoff=run["cutoff"])
    steps.done("view")
    recording.join()
    steps.done("run record (beside the view)")
    steps.report(f"batch: {p.name} publish")
    return run


def publish_rows(spark: SparkSession, cfg: TidewaterConfig, p: Pipeline, run: dict[str, Any], steps: Steps) -> None:
    """The run's rows into ``batch.<p>``, then into ``serving.<p>__published``: two commits, in turn (the
    batch lock makes this the only writer of both). A ``__published`` row names the ``batch.<p>``
    version that publishes it (``last_write_version``: an auto compaction's commit after it is not it).
    Not side by side: on a thread of its own inside the job service, the second write took 7-12 s more
    (stop 32: a DAG publish task 17.6 s instead of 9.6 s), against 0.4 s gained in a process of its own."""
    from spark_jobs.io.delta_io import last_write_version
    from spark_jobs.serving import publish_batch_rows

    merge_staged(spark, p, run)
    steps.done("batch rows")
    publish_batch_rows(spark, cfg, p, run, last_write_version(spark, naming.table("batch", p.name)))
    steps.done("serving rows")
