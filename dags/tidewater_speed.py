"""``tidewater_speed``: supervise each pipeline's streaming job every few minutes.

Starts the job if it is down, restarts it if its progress stalled (``ops.stream_progress``: last
micro-batch older than 12 trigger intervals while Kafka lag > 0) and returns what it did (XCom).
Never two copies: ``tidewater speed start`` is idempotent (PID file) and every query holds a flock.
A manual run with ``action=stop`` stops a pipeline's job gracefully.
"""

from __future__ import annotations

from datetime import datetime

from airflow.sdk import Param, XComArg, dag, get_current_context, task

from dags.tidewater_common import (
    DEFAULT_ARGS,
    paused_at_creation,
    pipelines,
    run_tidewater,
    speed_decision,
    speed_schedule,
    speed_status,
)
from lakehouse.config import load_config


def supervise_task(p: str) -> XComArg:
    @task(task_id=f"supervise_{p}")
    def supervise(pipeline: str = p) -> dict:
        params = get_current_context()["params"]
        if params.get("pipeline", "all") not in ("all", pipeline):
            return {"pipeline": pipeline, "did": "nothing", "reason": "not selected"}
        if params.get("action") == "stop":
            out = run_tidewater("speed", "stop", pipeline).stdout.strip()
            return {"pipeline": pipeline, "did": "stop", "reason": out}
        status = speed_status(pipeline)
        decision, reason = speed_decision(status, load_config().spark.trigger_seconds)
        if decision == "refuse":  # 'speed start' would refuse it: the running job (if any) is left as it is
            raise RuntimeError(f"supervisor: {reason}")
        if decision == "restart":
            run_tidewater("speed", "stop", pipeline)
        if decision in ("start", "restart"):
            run_tidewater("speed", "start", pipeline)
            status = speed_status(pipeline)
        record = {"pipeline": pipeline, "did": decision, "reason": reason, "pid": status.get("pid"),
                  "running": status.get("running")}
        print(f"supervisor: {record}")
        return record

    return supervise()


@dag(
    dag_id="tidewater_speed",
    schedule=speed_schedule(),
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,
    is_paused_upon_creation=paused_at_creation("speed"),
    default_args=DEFAULT_ARGS,
    tags=["tidewater", "speed"],
    params={
        "action": Param("ensure", enum=["ensure", "stop"], description="ensure = start/restart if needed"),
        "pipeline": Param("all", enum=["all", *pipelines()]),
    },
    doc_md=__doc__,
)
def tidewater_speed() -> None:
    for name in pipelines():
        supervise_task(name)


tidewater_speed()
