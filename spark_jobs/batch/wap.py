"""Write-audit-publish of the batch layer: the one path from bronze to ``batch.<p>``, whoever drives it.

* ``stage`` (``tidewater batch <p> --stage-only``, the DAG's ``stage`` task): the run's rows into
  ``batch.<p>__staging`` (``batch.job``), recorded ``staged`` in ``ops.batch_runs``.
* ``audit`` (``tidewater batch <p> --audit --run-id ID``, the DAG's ``validate`` task; ``tidewater check <p>
  --kind staging`` audits the latest staged version): the Great Expectations ``staging`` suite on the run's
  exact rows (staging as of the version the run wrote), its verdict recorded with the run.
* ``publish`` (``tidewater batch <p> --publish --run-id ID``, the DAG's ``publish`` task): ``batch.publish``,
  which refuses a run without a passing verdict on the rows it staged, staging still at them.
* ``run`` (plain ``tidewater batch <p>``): the three in one process under one batch lock, then the ledger.

The verdict has one owner: ``gate_outcome`` is the one call of the suite on staged rows and ``verdict`` the
one form it is recorded in, for every driver. ``run`` differs only in when the steps happen: an incremental
run's audit reads the rows while they are written (``batch.gate``), and its passing verdict is recorded on
its ``published`` row (no row of its own on the critical path); a failed one on a ``failed`` row.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, NamedTuple

from expectations.runner import ValidationOutcome, validate_table
from lakehouse import contracts, naming
from lakehouse.config import TidewaterConfig
from lakehouse.errors import NothingToDo, TidewaterError
from lakehouse.pipeline import Pipeline
from lakehouse.run_records import BatchRun
from spark_jobs.batch.job import compute_stage, refuse_in_kappa
from spark_jobs.batch.publish import publish_staged
from spark_jobs.batch.reconcile import record_ledger
from spark_jobs.io import batch_runs
from spark_jobs.io.delta_io import latest_version
from spark_jobs.io.ops_reader import table_path
from spark_jobs.shared.background import Background
from spark_jobs.shared.locks import batch_lock
from spark_jobs.shared.step_timer import Steps

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


class StagedVerdict(NamedTuple):
    outcome: ValidationOutcome
    version: int  # the version of ``batch.<p>__staging`` it audited
    run: BatchRun | None  # the run that wrote that version, with the verdict recorded; None: no such run


def stage(spark: SparkSession, cfg: TidewaterConfig, p: Pipeline, full: bool = False) -> BatchRun:
    """Compute a run into ``batch.<p>__staging`` and record it as ``staged`` (under the batch lock)."""
    with batch_lock(cfg, p.name):
        run, known, _ = compute_stage(spark, cfg, p, full)
        batch_runs.save(spark, run, supersede_staged=True, known=known)
        return run


def gate_outcome(spark: SparkSession, cfg: TidewaterConfig, p: Pipeline, rows: DataFrame, written: int | None = None,
                 build_docs: bool = True, docs_later: bool = False) -> ValidationOutcome:
    """The ``staging`` suite on ``rows`` (the staged rows of one run; ``written``: their upserts, when known).
    Fails closed: a suite that cannot run raises, and nothing is published without a verdict."""
    return validate_table(cfg, p, "staging", naming.staging_table("batch", p.name), spark=spark, rows=written,
                          build_docs=build_docs, docs_later=docs_later, frame=rows)


def verdict(run: BatchRun, outcome: ValidationOutcome, version: int) -> BatchRun:
    """``run`` with ``outcome`` as its verdict on version ``version`` of its staging table (``BatchRun.with_verdict``)."""
    return run.with_verdict(outcome.success, version, "" if outcome.success else outcome.summary())


def audit(spark: SparkSession, cfg: TidewaterConfig, p: Pipeline, run_id: str | None = None,
          build_docs: bool = True) -> StagedVerdict:
    """The suite on the rows staged run ``run_id`` wrote (staging as of its version), or, without ``run_id``,
    on staging's latest version, and the verdict recorded with the pending run that wrote them. Nothing is
    recorded when no such run waits to be published, or when it holds that verdict already. A run that a
    later one superseded is ``NothingToDo``: its successor is audited in its place."""
    staging = naming.staging_table("batch", p.name)
    contracts.ensure(spark, contracts.BATCH_RUNS)
    if run_id is None:
        version = latest_version(table_path(cfg, staging))
        if version < 0:
            raise TidewaterError(f"check: {staging} has no Delta log at {table_path(cfg, staging)}; stage a run "
                                 f"with 'tidewater batch {p.name} --stage-only'")
        run = batch_runs.wrote(spark, p.name, version)
    else:
        run = pending_run(spark, p.name, run_id)
        version = run.written_version()
    rows = spark.sql(f"SELECT * FROM {staging} VERSION AS OF {version}")
    outcome = gate_outcome(spark, cfg, p, rows, build_docs=build_docs)
    if run is None:
        return StagedVerdict(outcome, version, None)
    judged = verdict(run, outcome, version)
    if (run.status, run.gate, run.gated_version) != (judged.status, judged.gate, version):
        batch_runs.save(spark, judged)
    return StagedVerdict(outcome, version, judged)


def pending_run(spark: SparkSession, pipeline: str, run_id: str) -> BatchRun:
    """Run ``run_id``, staged and not yet published; NothingToDo when a later run superseded it or it is
    published already; a TidewaterError when there is no such run."""
    run = batch_runs.require_known(batch_runs.runs(spark, pipeline), pipeline, run_id)
    if run.status == "published":
        raise NothingToDo(f"batch: run {run_id} of {pipeline} is published already; nothing to audit")
    return run


def publish(spark: SparkSession, cfg: TidewaterConfig, p: Pipeline, run_id: str) -> BatchRun:
    """Publish staged run ``run_id`` (under the batch lock): ``batch.publish.publish_staged``."""
    with batch_lock(cfg, p.name):
        return publish_staged(spark, cfg, p, run_id)


def run(spark: SparkSession, cfg: TidewaterConfig, p: Pipeline, full: bool = False) -> BatchRun:
    """``write_audit_publish``, then the published run's reconciliation ledger (``batch.reconcile``)."""
    published = write_audit_publish(spark, cfg, p, full)
    record_ledger(spark, cfg, p, published.run_id)
    return published


def write_audit_publish(spark: SparkSession, cfg: TidewaterConfig, p: Pipeline, full: bool = False,
                        steps: Steps | None = None) -> BatchRun:
    """Stage, audit and publish as one unit under the batch lock (nobody restages in between; refused in
    kappa mode). The ``staged`` record is written while the audit
    runs or is awaited and the publish prepares (independent Spark jobs, side by side), and is in
    ``ops.batch_runs`` before anything is published; the audit's Data Docs pages are written while the
    publish runs. ``steps``: receives the seconds of stage, validate and publish."""
    refuse_in_kappa(cfg, p)
    steps = steps or Steps()

    def audit_rows(rows: DataFrame, written: int) -> ValidationOutcome:
        return passing(gate_outcome(spark, cfg, p, rows, written, docs_later=True), p)

    with batch_lock(cfg, p.name):
        staged, known, alongside = compute_stage(spark, cfg, p, full, audit_rows)
        steps.done("stage")
        recording = Background(batch_runs.save, spark, staged, True, known)
        version = staged.written_version()
        try:
            outcome = alongside.verdict() if alongside is not None else audit_rows(
                spark.sql(f"SELECT * FROM {naming.staging_table('batch', p.name)} VERSION AS OF {version}"),
                staged.windows_written)
        except TidewaterError as exc:  # a failed suite, or one that could not run: a ``failed`` verdict
            recording.join()
            batch_runs.save(spark, staged.with_verdict(False, version, str(exc)))
            raise
        steps.done("validate")
        try:  # the staged record's commit goes on while the publish prepares, and ends before its rows' commit
            published = publish_staged(spark, cfg, p, staged.run_id, just_staged=verdict(staged, outcome, version),
                                       recorded=recording.join)
        finally:
            recording.thread.join()
            wait_for_report(outcome)
        steps.done("publish")
        return published


def passing(outcome: ValidationOutcome, p: Pipeline) -> ValidationOutcome:
    """``outcome`` if it passed, else a TidewaterError (once the Data Docs pages it names are written)."""
    if outcome.success:
        return outcome
    outcome.wait_for_docs()
    raise TidewaterError(f"batch: quality gate failed on {naming.staging_table('batch', p.name)}; not published. "
                         f"{outcome.summary()}")


def wait_for_report(outcome: Any) -> None:
    """Wait for the audit's Data Docs pages. They report a verdict already acted on: if they fail, one
    line on stderr says so, and neither a done publish nor a publish's own error becomes another error."""
    try:
        outcome.wait_for_docs()
    except Exception as exc:
        print(f"batch: the quality gate's Data Docs pages were not written ({type(exc).__name__}: {exc}); "
              "the verdict stands; 'tidewater check' writes new pages", file=sys.stderr, flush=True)
