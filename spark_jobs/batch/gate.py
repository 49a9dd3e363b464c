"""The quality gate of an incremental run that stages, audits and publishes as one unit (``batch.recompute``),
run on the rows being staged while they are written.

The run's staging rows are computed once, into Spark's cache. The write to ``batch.<p>__staging`` (Spark
jobs and a Delta commit) and the gate (GX on a pandas copy of the rows: mostly Python work, on the other
core) then read that cache side by side, on two threads, so the verdict is ready about when the write
is, instead of after it and a read of the staging table back. What is audited is what is written: one
computation, one cached frame (its ``computed_at`` included). Publish still waits for both; a failed
gate still publishes nothing. A full run stages every window (its rows are the whole table, not a few
thousand), so it keeps the gate after the write, on the staging table; so do the Airflow DAG's separate
stage and validate tasks: ``check_staged`` (``tidewater check <p> --kind staging``) audits the staging
version the latest run wrote and records the verdict with that run, in the form ``batch.recompute``
records its own (``batch_runs.with_verdict``). Publish requires a passing one on the run's own rows.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from lakehouse import contracts, naming
from lakehouse.config import TidewaterConfig
from lakehouse.errors import TidewaterError
from lakehouse.pipeline import Pipeline
from spark_jobs.io import batch_runs
from spark_jobs.shared.background import Background

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

Audit = Callable[["DataFrame", int], Any]
"""The gate on a frame of staging rows and its count of written (not deleted) rows: returns the gate's
outcome, raises ``TidewaterError`` when it fails."""


class GateAlongside:
    """``audit`` of ``rows`` on a thread of its own, from a cache that ``rows`` (the same frame, persisted)
    shares with the caller's write of them."""

    def __init__(self, audit: Audit, rows: DataFrame) -> None:
        self.rows = rows.persist()
        # one job computes the cache before both read it (two jobs at once would each compute the shuffles
        # under it); it also gives the gate its row count, which chooses its engine without a job
        written = self.rows.where("op <> 'delete'").count()
        self.outcome: Any = None
        self.run = Background(self._audit, audit, written)

    def _audit(self, audit: Audit, written: int) -> None:
        self.outcome = audit(self.rows, written)

    def verdict(self) -> Any:
        """Wait for the gate: its outcome, or its error. Releases the cached rows."""
        try:
            self.run.join()
        finally:
            self.rows.unpersist()
        return self.outcome

    def abandon(self) -> None:
        """The write failed: wait for the gate without its verdict, and release the cached rows."""
        with contextlib.suppress(Exception):  # the write's error is the one the caller raises
            self.verdict()


class StagedVerdict(NamedTuple):
    outcome: Any  # the gate's ``ValidationOutcome``
    version: int  # the version of ``batch.<p>__staging`` it audited
    run: dict[str, Any] | None  # the run that wrote that version, with the verdict recorded; None: no such run


def check_staged(spark: SparkSession, cfg: TidewaterConfig, p: Pipeline, build_docs: bool = True) -> StagedVerdict:
    """The staging suite on ``batch.<p>__staging`` as its latest version holds it (read at that version: a
    run staged meanwhile changes nothing audited), and the verdict recorded with the staged run that wrote
    that version. Nothing is recorded when no such run is waiting to be published, or when it holds the
    same passing verdict already."""
    from expectations.runner import validate_table
    from spark_jobs.io.delta_io import latest_version
    from spark_jobs.io.ops_reader import table_path

    staging = naming.staging_table("batch", p.name)
    version = latest_version(table_path(cfg, staging))
    if version < 0:
        raise TidewaterError(f"check: {staging} has no Delta log at {table_path(cfg, staging)}; stage a run with "
                             f"'tidewater batch {p.name} --stage-only'")
    rows = spark.sql(f"SELECT * FROM {staging} VERSION AS OF {version}")
    outcome = validate_table(cfg, p, "staging", staging, spark=spark, build_docs=build_docs, frame=rows)
    contracts.ensure(spark, contracts.BATCH_RUNS)
    run = batch_runs.wrote(spark, p.name, version)
    if run is None:
        return StagedVerdict(outcome, version, None)
    verdict = batch_runs.with_verdict(run, outcome.success, version, "" if outcome.success else outcome.summary())
    if (run["status"], run.get("gated_version")) != (verdict["status"], version):
        batch_runs.save(spark, verdict)
    return StagedVerdict(outcome, version, verdict)
