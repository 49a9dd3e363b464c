"""``tidewater_batch``: write-audit-publish of the batch layer, per pipeline, one ``tidewater batch`` step a task.

stage (``tidewater batch <p> --stage-only``) -> validate (``tidewater batch <p> --audit --run-id ID``: the GX
``staging`` suite on the rows that run staged; its verdict is recorded with the run in ``ops.batch_runs``) ->
publish (``--publish --run-id ID``: one MERGE into ``batch.<p>``, then the serving view moves to the new
cutoff: the ``batch.<p>`` and ``serving.<p>`` Assets, which schedule ``tidewater_quality``) -> reconcile (the
published run's speed-vs-batch ledger in ``ops.reconciliation``, recorded once, and the summary). The steps
are ``spark_jobs.batch.wap``'s, the ones plain ``tidewater batch <p>`` runs in one process. A failed validation
fails the run before publish: the serving view is left exactly as it was. Publish itself refuses a run
without a passing verdict on its staged rows, so a validate task marked successful publishes nothing.
Re-running a published run's publish task writes no row; it moves the serving view to the latest published
cutoff if a failed refresh left it behind. Absent in Kappa mode. Param ``pipeline`` limits a manual run to
one pipeline; backfills run from the UI (each run recomputes what changed since the last published run).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from airflow.sdk import Param, TaskGroup, dag, get_current_context, task

from dags.tidewater_common import (
    DEFAULT_ARGS,
    batch_schedule,
    failed,
    last_json,
    mode,
    paused_at_creation,
    pipelines,
    published_assets,
    run_tidewater,
)
from lakehouse.errors import NothingToDo


def _selected(pipeline: str) -> None:
    from airflow.sdk.exceptions import AirflowSkipException

    chosen = get_current_context()["params"].get("pipeline", "all")
    if chosen not in ("all", pipeline):
        raise AirflowSkipException(f"run is for pipeline {chosen!r}, not {pipeline!r}")


def skip_if_nothing_to_do(proc: Any, otherwise: str) -> None:
    """Exit 3 (NothingToDo) skips the task and those after it, with the CLI's reason; another non-zero
    exit fails it (Airflow retries)."""
    from airflow.sdk.exceptions import AirflowSkipException

    if proc.returncode == NothingToDo.EXIT_CODE:
        reason = proc.stderr.strip().splitlines()[-1:] or [otherwise]
        raise AirflowSkipException(reason[0].removeprefix("tidewater: "))
    if proc.returncode != 0:
        raise failed(proc)


def pipeline_steps(p: str) -> None:
    @task(task_id="stage")
    def stage(pipeline: str = p) -> dict:
        _selected(pipeline)
        full = bool(get_current_context()["params"].get("full"))
        proc = run_tidewater("batch", pipeline, *(["--full"] if full else []), "--stage-only", check=False)
        skip_if_nothing_to_do(proc, f"nothing new in bronze.{pipeline}")  # empty, or unchanged since the last publish
        staged = last_json(proc.stdout)
        print(f"staged {staged}")
        return staged

    @task(task_id="validate")
    def validate(staged: dict, pipeline: str = p) -> str:
        from airflow.sdk.exceptions import AirflowFailException

        proc = run_tidewater("batch", pipeline, "--audit", "--run-id", str(staged["run_id"]), check=False)
        if proc.returncode == 1:  # expectations failed: bad data does not heal by retrying
            failing = last_json(proc.stdout).get("failures", [])
            raise AirflowFailException(f"quality gate: {staged['staging_table']} not published; " + " | ".join(failing))
        skip_if_nothing_to_do(proc, f"run {staged['run_id']} was superseded")  # another failure: Airflow retries
        return proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else "validated"

    @task(task_id="publish", outlets=published_assets(p))  # their events: this task's success records them
    def publish(staged: dict, _validated: str, pipeline: str = p) -> dict:
        proc = run_tidewater("batch", pipeline, "--publish", "--run-id", str(staged["run_id"]), "--by-dag", check=False)
        skip_if_nothing_to_do(proc, f"run {staged['run_id']} was superseded")  # a later run took its place
        return last_json(proc.stdout)

    @task(task_id="reconcile")
    def reconcile(published: dict, pipeline: str = p) -> dict:
        proc = run_tidewater("reconcile", pipeline, "--run-id", str(published["run_id"]), "--json")
        result = last_json(proc.stdout)
        print(f"ledger {result['ledger']}; speed exact in {result['exact_windows']} of {result['windows']} windows")
        return {"ledger": result["ledger"], "windows": result["windows"], "exact_windows": result["exact_windows"]}

    staged = stage()
    reconcile(publish(staged, validate(staged)))  # type: ignore[arg-type]  # XComArgs, resolved at run time


if mode() != "kappa":

    @dag(
        dag_id="tidewater_batch",
        schedule=batch_schedule(),
        start_date=datetime(2026, 1, 1),
        catchup=False,
        max_active_runs=1,
        is_paused_upon_creation=paused_at_creation("batch"),
        default_args=DEFAULT_ARGS,
        tags=["tidewater", "batch", "lambda"],
        params={
            "pipeline": Param("all", enum=["all", *pipelines()], description="Pipeline to run (all by default)"),
            "full": Param(False, type="boolean", description="Recompute every window, not only changed ones"),
        },
        doc_md=__doc__,
    )
    def tidewater_batch() -> None:
        for name in pipelines():
            with TaskGroup(group_id=name):
                pipeline_steps(name)

    tidewater_batch()
