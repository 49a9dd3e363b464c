"""Shared helpers of the Tidewater DAGs: run the ``tidewater`` CLI in a subprocess, decide on speed jobs.

Every Spark job runs through the ``tidewater`` CLI in a subprocess, never inside the Airflow worker;
the CLI hands Spark-bound commands to the warm job service when it runs (no JVM start per task),
with the same output and exit codes. Nothing here imports Spark; module import costs only a glob of
the pipeline definitions.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from infra.services.airflow_assets import LAYERS
from lakehouse import naming
from lakehouse.errors import TopicMissing
from lakehouse.pipeline import available_pipelines

REPO = Path(__file__).resolve().parent.parent
DEFAULT_ARGS: dict[str, Any] = {"owner": "tidewater", "retries": 2, "retry_delay": timedelta(minutes=1)}
STALL_TRIGGERS = 12          # progress older than this many trigger intervals (while lag > 0) = stalled
STALL_MIN_SECONDS = 180


def pipelines() -> list[str]:
    """Names of the pipelines the stack runs (``lakehouse.pipeline.available_pipelines``)."""
    return available_pipelines()


def mode() -> str:
    return os.environ.get("TIDEWATER_MODE", "lambda")


def schedule_knob(dag: str, default: str) -> str | None:
    """The schedule of DAG ``tidewater_<dag>``: ``TIDEWATER_AIRFLOW_<DAG>_SCHEDULE`` (a cron expression or
    preset), else ``default``; ``none`` (or empty) = manual runs only."""
    value = os.environ.get(f"TIDEWATER_AIRFLOW_{dag.upper()}_SCHEDULE", default).strip()
    return None if value.lower() in ("", "none", "null") else value


def batch_schedule() -> str | None:
    """``airflow.batch_schedule`` (exported by the Airflow service as ``TIDEWATER_AIRFLOW_BATCH_SCHEDULE``)."""
    return schedule_knob("batch", "@hourly")


def speed_schedule() -> str | None:
    """How often ``tidewater_speed`` supervises (default every 5 minutes)."""
    return schedule_knob("speed", "*/5 * * * *")


def paused_at_creation(dag: str) -> bool:
    """Whether ``tidewater_<dag>`` is created paused: the ones named in ``airflow.active_dags``
    (exported as ``TIDEWATER_AIRFLOW_ACTIVE_DAGS``; default speed, batch, quality) start active on the
    first ``tidewater up``, so the supervisor keeps the speed layer alive without a click. Airflow
    applies this once, when it first sees the DAG: a DAG paused later in the UI stays paused."""
    active = os.environ.get("TIDEWATER_AIRFLOW_ACTIVE_DAGS", "speed,batch,quality")
    return dag not in {d.strip() for d in active.split(",")}


def quality_schedule() -> Any:
    """``tidewater_quality`` runs when a batch run publishes (data-aware: any ``batch.<p>`` Asset) in
    lambda mode, hourly at :30 in kappa mode (nothing publishes there); ``TIDEWATER_AIRFLOW_QUALITY_SCHEDULE``
    (a cron expression, or ``none``) overrides either."""
    knob = os.environ.get("TIDEWATER_AIRFLOW_QUALITY_SCHEDULE")
    if knob is not None or mode() == "kappa":
        return schedule_knob("quality", "30 * * * *")
    from airflow.sdk import AssetAny

    return AssetAny(*(batch_asset(p) for p in pipelines()))


def asset(layer: str, pipeline: str) -> Any:
    """The Airflow Asset of table ``<layer>.<p>`` (its name and URI: ``lakehouse.naming``)."""
    from airflow.sdk import Asset

    return Asset(name=naming.table(layer, pipeline), uri=naming.asset_uri(layer, pipeline), group="tidewater")


def batch_asset(pipeline: str) -> Any:
    return asset("batch", pipeline)


def published_assets(pipeline: str) -> list[Any]:
    """The Assets one batch publish updates (``airflow_assets.LAYERS``): the publish task's outlets."""
    return [asset(layer, pipeline) for layer in LAYERS]


def tidewater_bin() -> str:
    here = Path(sys.executable).parent / "tidewater"
    return str(here) if here.exists() else "tidewater"


def run_tidewater(*args: str, check: bool = True, timeout: float = 3600) -> subprocess.CompletedProcess[str]:
    """Run ``tidewater <args>``; its output goes to the task log. Non-zero exit fails the task."""
    argv = [tidewater_bin(), *args]
    print(f"$ {' '.join(argv)}", flush=True)
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=str(REPO))
    if proc.stdout:
        print(proc.stdout, flush=True)
    if proc.stderr:
        print(proc.stderr[-20000:], file=sys.stderr, flush=True)
    if check and proc.returncode != 0:
        raise failed(proc)
    return proc


def failed(proc: subprocess.CompletedProcess[str]) -> RuntimeError:
    """The error of a ``tidewater`` run that exited non-zero: the command, its exit status and its last
    output lines (Airflow retries the task)."""
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
    return RuntimeError(f"'tidewater {' '.join(proc.args[1:])}' exited {proc.returncode}: {' | '.join(tail)}")


def last_json(stdout: str) -> dict[str, Any]:
    """The last stdout line that parses as a JSON object (the CLI's machine-readable result)."""
    for line in reversed(stdout.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return dict(json.loads(line))
            except ValueError:
                continue
    raise RuntimeError(f"no JSON result line in the command output: {stdout[-300:]!r}")


def total_lag(status: dict[str, Any]) -> int:
    lag = status.get("lag")
    return sum(int(v) for v in lag.values()) if isinstance(lag, dict) else 0


def speed_decision(status: dict[str, Any], trigger_seconds: int, now: datetime | None = None) -> tuple[str, str]:
    """What the supervisor does for one pipeline: (``start``|``restart``|``none``|``refuse``, reason). Nothing
    while a replay or rollback switches versions (it froze the job on purpose). ``refuse`` (the reason is
    the status's ``problem``, e.g. a changed definition): a start would be refused, so nothing is stopped
    or started and the task fails with that line."""
    decision, reason = _job_decision(status, trigger_seconds, now)
    if decision in ("start", "restart") and status.get("problem"):
        return "refuse", str(status["problem"])
    return decision, reason


def _job_decision(status: dict[str, Any], trigger_seconds: int, now: datetime | None) -> tuple[str, str]:
    """``speed_decision`` before the status's ``problem``.

    ``status`` is ``tidewater speed status --json``. Stalled = running, consumer lag > 0 and neither
    a micro-batch recorded, nor the job started, nor its Spark work advanced (``advanced_at``:
    ``spark_jobs/speed/liveness.py``) within ``STALL_TRIGGERS`` trigger intervals (min 3 minutes). A job
    restarted after a crash finds its last batch as old as the crash; its first micro-batch may take
    minutes (warm-up, a backlog on a busy machine) while its tasks advance: that is not a stall, and
    restarting it there would stop it inside the batch it must finish.
    """
    if status.get("switch_in_progress"):
        return "none", "a replay or rollback is switching versions; it restarts the job itself"
    if not status.get("running"):
        return "start", "not running"
    lag = total_lag(status)
    last = status.get("last_batch_time")
    limit = max(STALL_TRIGGERS * max(trigger_seconds, 1), STALL_MIN_SECONDS)
    if last is None or lag <= 0:
        return "none", f"running (pid {status.get('pid')}), lag {lag}"
    last_dt = _utc(last)
    started = status.get("started_at")
    since_start = ((now or datetime.now(UTC)) - _utc(started)).total_seconds() if started else None
    age = ((now or datetime.now(UTC)) - last_dt).total_seconds()
    if since_start is not None and since_start <= limit:
        return "none", f"started {since_start:.0f}s ago (pid {status.get('pid')}), last batch {age:.0f}s ago, lag {lag}"
    advanced = status.get("advanced_at")
    advanced_age = ((now or datetime.now(UTC)) - _utc(advanced)).total_seconds() if advanced else None
    if age > limit and advanced_age is not None and advanced_age <= limit:
        return "none", (f"working (pid {status.get('pid')}): last batch {age:.0f}s ago, its Spark tasks advanced "
                        f"{advanced_age:.0f}s ago, lag {lag}")
    if age > limit:
        return "restart", f"stalled: last batch {age:.0f}s ago (> {limit}s) with lag {lag}"
    return "none", f"running (pid {status.get('pid')}), last batch {age:.0f}s ago, lag {lag}"


def _utc(value: Any) -> datetime:
    moment = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def speed_status(pipeline: str) -> dict[str, Any]:
    """``tidewater speed status --json``: exit 0 = running, 1 = not running. Exit 4 (``TopicMissing``)
    fails the task with the status's one-line ``problem``: a job on a missing topic would idle, so
    there is nothing to start or restart until someone creates the topic or fixes the definition."""
    proc = run_tidewater("speed", "status", pipeline, "--json", check=False, timeout=120)
    if proc.returncode not in (0, 1, TopicMissing.EXIT_CODE):
        raise RuntimeError(f"speed status {pipeline} failed ({proc.returncode}): {proc.stderr[-500:]}")
    status = dict(json.loads(proc.stdout[proc.stdout.index("{"):]))
    if proc.returncode == TopicMissing.EXIT_CODE:
        raise RuntimeError(f"supervisor: {status['problem']}")
    return status
