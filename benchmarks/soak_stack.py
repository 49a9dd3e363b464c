"""The soak's stack: an isolated one (temp data folder, free ports) with everything ``tidewater up`` runs.

Three Kafka brokers, the Derby metastore, the Thrift server, the job service and Airflow (its
``tidewater_speed`` supervisor every minute, ``tidewater_batch`` on ``batch_schedule``), and the speed
job of the soaked pipeline (the only one the stack runs, ``TIDEWATER_PIPELINES``): the supervisor
supervises it, so the soak starts it itself first (several would start one after the other: JVMs that
create their tables at once can deadlock the Derby metastore), while the Thrift server, the job service
and Airflow (its DAGs paused) start beside it; then it unpauses
``tidewater_speed`` and ``tidewater_batch``.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from infra import job_service
from infra.services import airflow, thrift_access, thrift_server
from lakehouse import naming
from lakehouse.config import TidewaterConfig, load_config
from lakehouse.pipeline import available_pipelines, load_pipeline
from spark_jobs.io.kafka_admin import ensure_topic
from spark_jobs.speed.control import start_speed
from tidewater.isolated_stack import isolated_env, running_stack

BROKERS = 3
SUPERVISOR_SCHEDULE = "* * * * *"  # tidewater_speed: a killed speed job waits at most a minute for it
# A task whose process died with a killed scheduler counts as failed after this long (Airflow's
# default 300 s would hold the next supervisor or batch run that long: both DAGs run one at a time).
TASK_HEARTBEAT_TIMEOUT_S = 90
ACTIVE_DAGS = ("tidewater_speed", "tidewater_batch")


def soak_env(batch_schedule: str, pipeline: str) -> dict[str, str]:
    """The environment of the soak's stack (every subprocess, Airflow and its tasks inherit it). The stack
    runs the soaked pipeline only (``TIDEWATER_PIPELINES``): the idle ones' speed jobs, supervisor and batch
    tasks had taken two of the 2-core machine's JVMs and delayed the soaked job's recovery past 270 s."""
    return {"TIDEWATER_MODE": "lambda", "TIDEWATER_KAFKA_BROKERS": str(BROKERS), "TIDEWATER_PIPELINES": pipeline,
            "TIDEWATER_AIRFLOW_BATCH_SCHEDULE": batch_schedule,
            "TIDEWATER_AIRFLOW_SPEED_SCHEDULE": SUPERVISOR_SCHEDULE,
            "TIDEWATER_AIRFLOW_QUALITY_SCHEDULE": "none", "TIDEWATER_AIRFLOW_MAINTENANCE_SCHEDULE": "none",
            "TIDEWATER_AIRFLOW_ACTIVE_DAGS": "replay",  # (manual only) speed and batch: unpaused once every speed job runs
            "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT": str(TASK_HEARTBEAT_TIMEOUT_S)}


@contextmanager
def soak_stack(batch_schedule: str, pipeline: str, keep: bool = False) -> Iterator[TidewaterConfig]:
    """Everything up and the soaked pipeline's speed job running; everything stopped afterwards, even after a failure."""
    with isolated_env("tidewater-soak-", soak_env(batch_schedule, pipeline), keep=keep), \
            running_stack(load_config()) as cfg:
        try:
            _start_services_and_jobs(cfg)
            yield cfg
        finally:
            airflow.stop(cfg)


def _start_services_and_jobs(cfg: TidewaterConfig) -> None:
    pipes = [load_pipeline(name, cfg.pipelines) for name in available_pipelines()]
    for p in pipes:
        ensure_topic(cfg, p.topic)
    failures: list[BaseException] = []

    def _services() -> None:
        try:
            thrift_server.start(cfg)
            job_service.start(cfg)
            airflow.start(cfg)
        except BaseException as exc:  # re-raised in the caller's thread
            failures.append(exc)

    services = threading.Thread(target=_services, daemon=True)
    services.start()
    for p in pipes:
        start_speed(cfg, p, wait=300)
    services.join()
    if failures:
        raise failures[0]
    for dag in ACTIVE_DAGS:  # now: the supervisor would have started the missing speed jobs in parallel
        _unpause(cfg, dag)


def _unpause(cfg: TidewaterConfig, dag: str, timeout: float = 240) -> None:
    """Unpause ``dag`` once the dag-processor has parsed it (until then the command fails)."""
    deadline, out = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        out = subprocess.run([airflow.airflow_bin(), "dags", "unpause", dag], env={**os.environ, **airflow.env(cfg)},
                             capture_output=True, text=True, timeout=300)
        if out.returncode == 0:
            return
        time.sleep(5)
    raise RuntimeError(f"soak: 'airflow dags unpause {dag}' failed: {(out.stdout + out.stderr)[-500:] if out else ''}")


def process_names(cfg: TidewaterConfig) -> list[str]:
    """The managed processes of the stack (their PID files): services, brokers, Airflow components, jobs."""
    return sorted(f.stem for f in naming.run_dir(cfg).glob("*.pid"))


TASK_RUN_TITLE = "airflow worker -- "  # the process title of an Airflow task run (airflow.sdk task_runner)


def tree_memory_mb(pid: int) -> tuple[float, float] | None:
    """Memory of a process and its descendants, MiB of PSS: (long-lived processes, Airflow task runs).

    PSS, not RSS: forked workers (Airflow's executor) share copy-on-write pages with their parent,
    and RSS would count those pages once per worker. Task runs (and what they start) come apart:
    they live for one task, so whether one runs at the moment of a sample is noise, not growth.
    """
    import psutil

    try:
        root = psutil.Process(pid)
        procs: list[Any] = [root, *root.children(recursive=True)]
    except psutil.Error:
        return None
    task_runs: set[int] = set()
    for proc in procs:
        try:
            if " ".join(proc.cmdline()).startswith(TASK_RUN_TITLE):
                task_runs |= {proc.pid, *(c.pid for c in proc.children(recursive=True))}
        except psutil.Error:
            continue
    long_lived = transient = 0
    for proc in procs:
        try:
            pss = proc.memory_full_info().pss
        except psutil.Error:
            continue
        if proc.pid in task_runs:
            transient += pss
        else:
            long_lived += pss
    return round(long_lived / 2**20, 1), round(transient / 2**20, 1)


def jdbc_query(cfg: TidewaterConfig, sql: str) -> list[tuple[Any, ...]]:
    """Rows of ``sql`` through the Thrift server, logged in as the BI user, as a BI tool reads them."""
    conn = thrift_access.connect(cfg)
    try:
        cur = conn.cursor()
        cur.execute(sql)
        return [tuple(r) for r in cur.fetchall()]
    finally:
        conn.close()
