"""``tidewater_maintenance``: daily Delta OPTIMIZE + VACUUM (retention >= 168 h), retention of the
``ops.*`` tables and removal of checkpoints of retired speed-query versions (``tidewater maintenance``)."""

from __future__ import annotations

from datetime import datetime

from airflow.sdk import XComArg, dag, task

from dags.tidewater_common import DEFAULT_ARGS, paused_at_creation, run_tidewater, schedule_knob


def maintenance_task(part: str) -> XComArg:
    @task(task_id=part)
    def run(only: str = part) -> str:
        out = run_tidewater("maintenance", "--only", only, timeout=7200).stdout.strip()
        return out.splitlines()[-1] if out else "done"

    return run()


@dag(
    dag_id="tidewater_maintenance",
    schedule=schedule_knob("maintenance", "@daily"),
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,
    is_paused_upon_creation=paused_at_creation("maintenance"),
    default_args=DEFAULT_ARGS,
    tags=["tidewater", "maintenance"],
    doc_md=__doc__,
)
def tidewater_maintenance() -> None:
    maintenance_task("tables") >> maintenance_task("ops") >> maintenance_task("checkpoints")


tidewater_maintenance()
