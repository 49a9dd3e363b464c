"""``tidewater_replay``: manual only. Replays a pipeline from Kafka into a new speed version
(``tidewater replay <p>``) and switches serving to it, or rolls back to the previous version."""

from __future__ import annotations

from datetime import datetime

from airflow.sdk import Param, dag, get_current_context, task

from dags.tidewater_common import DEFAULT_ARGS, pipelines, run_tidewater


@dag(
    dag_id="tidewater_replay",
    schedule=None,
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,
    is_paused_upon_creation=False,
    default_args={**DEFAULT_ARGS, "retries": 0},
    tags=["tidewater", "replay", "kappa"],
    params={
        "pipeline": Param("sensor_readings", enum=pipelines(), title="Pipeline"),
        "rollback": Param(False, type="boolean", title="Roll back to the previous speed version"),
    },
    doc_md=__doc__,
)
def tidewater_replay() -> None:
    @task
    def replay() -> str:
        params = get_current_context()["params"]
        args = ["replay", params["pipeline"], *(["--rollback"] if params.get("rollback") else [])]
        out = run_tidewater(*args, timeout=7200).stdout.strip()
        return out.splitlines()[-1] if out else "done"

    replay()


tidewater_replay()
