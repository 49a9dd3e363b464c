"""``tidewater_batch``: write-audit-publish of the batch layer, per pipeline.

stage (``tidewater batch <p> --stage-only``) -> validate (GX ``staging`` suite) -> publish (atomic,
``batch.<p>`` Asset) -> refresh the serving view (``serving.<p>`` Asset) -> reconcile. A failed
validation fails the run before publish: the serving view is left exactly as it was. Absent in
Kappa mode. Param ``pipeline`` limits a manual run to one pipeline; backfills run from the UI.
"""

from __future__ import annotations

from datetime import datetime

from airflow.sdk import Asset, Param, TaskGroup, dag, get_current_context, task

from dags.tidewater_common import DEFAULT_ARGS, batch_schedule, last_json, mode, pipelines, run_tidewater
from lakehouse.errors import NothingToDo


def _selected(pipeline: str) -> None:
    from airflow.sdk.exceptions import AirflowSkipException

    chosen = get_current_context()["params"].get("pipeline", "all")
    if chosen not in ("all", pipeline):
        raise AirflowSkipException(f"run is for pipeline {chosen!r}, not {pipeline!r}")


def pipeline_steps(p: str) -> None:
    @task(task_id="stage")
    def stage(pipeline: str = p) -> dict:
        _selected(pipeline)
        from airflow.sdk.exceptions import AirflowSkipException

        full = bool(get_current_context()["params"].get("full"))
        proc = run_tidewater("batch", pipeline, *(["--full"] if full else []), "--stage-only", check=False)
        if proc.returncode == NothingToDo.EXIT_CODE:
            raise AirflowSkipException(f"bronze.{pipeline} has no events yet: nothing to publish")
        if proc.returncode != 0:
            raise RuntimeError(f"'tidewater batch {pipeline} --stage-only' exited {proc.returncode}")
        staged = last_json(proc.stdout)
        print(f"staged {staged}")
        return staged

    @task(task_id="validate")
    def validate(staged: dict, pipeline: str = p) -> str:
        from airflow.sdk.exceptions import AirflowFailException

        proc = run_tidewater("check", pipeline, "--kind", "staging", check=False)
        if proc.returncode == 1:  # expectations failed: bad data does not heal by retrying
            failing = [f for fs in last_json(proc.stdout).get("failures", {}).values() for f in fs]
            raise AirflowFailException(f"quality gate: {staged['staging_table']} not published; " + " | ".join(failing))
        if proc.returncode != 0:  # infrastructure trouble: let Airflow retry
            raise RuntimeError(f"'tidewater check {pipeline} --kind staging' exited {proc.returncode}")
        return proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else "validated"

    @task(task_id="publish", outlets=[Asset(name=f"batch.{p}", uri=f"tidewater://batch/{p}", group="tidewater")])
    def publish(staged: dict, _validated: str, pipeline: str = p) -> dict:
        run_tidewater("batch", pipeline, "--publish", "--run-id", str(staged["run_id"]))
        return staged

    @task(task_id="refresh_serving",
          outlets=[Asset(name=f"serving.{p}", uri=f"tidewater://serving/{p}", group="tidewater")])
    def refresh(published: dict, pipeline: str = p) -> str:
        run_tidewater("serving", "refresh", pipeline)
        return f"serving.{pipeline} refreshed after run {published['run_id']}"

    @task(task_id="reconcile")
    def reconcile(_refreshed: str, pipeline: str = p) -> str:
        out = run_tidewater("reconcile", pipeline).stdout.strip()
        return out.splitlines()[-1] if out else "reconciled"

    staged = stage()
    published = publish(staged, validate(staged))
    reconcile(refresh(published))


if mode() != "kappa":

    @dag(
        dag_id="tidewater_batch",
        schedule=batch_schedule(),
        start_date=datetime(2026, 1, 1),
        catchup=False,
        max_active_runs=1,
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
