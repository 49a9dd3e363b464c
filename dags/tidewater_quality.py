"""``tidewater_quality``: the expectation suites (bronze, quarantine rate, speed, batch, serving) for
each pipeline, then the Data Docs location (``<data_dir>/docs/index.html``). Data-aware: in lambda mode
it runs whenever a batch run publishes a ``batch.<p>`` Asset (``quality_schedule``)."""

from __future__ import annotations

from datetime import datetime

from airflow.sdk import XComArg, dag, task

from dags.tidewater_common import DEFAULT_ARGS, paused_at_creation, pipelines, quality_schedule, run_tidewater
from expectations.context import docs_index
from lakehouse.config import load_config


def check_task(p: str) -> XComArg:
    @task(task_id=f"check_{p}")
    def check(pipeline: str = p) -> str:
        out = run_tidewater("check", pipeline).stdout.strip()
        return out.splitlines()[-1] if out else "checked"

    return check()


@dag(
    dag_id="tidewater_quality",
    schedule=quality_schedule(),
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,
    is_paused_upon_creation=paused_at_creation("quality"),
    default_args=DEFAULT_ARGS,
    tags=["tidewater", "quality"],
    doc_md=__doc__,
)
def tidewater_quality() -> None:
    @task(trigger_rule="all_done")
    def data_docs() -> str:
        index = docs_index(load_config())
        print(f"Data Docs: {index} ({'present' if index.exists() else 'not built yet'})")
        return str(index)

    checks = [check_task(name) for name in pipelines()]
    checks >> data_docs()


tidewater_quality()
