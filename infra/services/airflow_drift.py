"""The settings a running Airflow was started with, against the ones ``tidewater up`` has now.

Airflow's processes get the configuration once, in their environment (``airflow_settings.env``: the mode,
the data folder, the schedules, the pipelines), and every DAG file and task reads it from there. A
``tidewater.yml`` edited after ``up`` (``mode: kappa``, say) therefore did not reach Airflow: its batch DAG
went on publishing in a stack switched to Kappa. ``up`` now compares the two and restarts Airflow when
they differ (``airflow.start``); ``status`` names the difference meanwhile.
"""

from __future__ import annotations

import json
from pathlib import Path

from infra.services.airflow_settings import SECRET_ENV, env
from lakehouse import naming
from lakehouse.config import TidewaterConfig
from lakehouse.settings_diff import differences

NOT_RECORDED = "its settings were not recorded as they are now (started by an older Tidewater)"


def settings_file(cfg: TidewaterConfig) -> Path:
    return naming.run_dir(cfg) / "airflow-settings.json"


def applied(cfg: TidewaterConfig) -> dict[str, str]:
    """What Airflow's processes and their tasks get at a start now and keep until they stop: their
    environment (``airflow_settings.env``: ``TIDEWATER_MODE``, the schedules, the pipelines, the ports,
    the database, every ``TIDEWATER_*`` variable of the shell), as ``{"$NAME": value}``, without its secrets
    and ``PATH`` (a shell's own). The other configuration keys are not among them: each task's ``tidewater``
    command reads them from ``TIDEWATER_CONFIG`` when it runs, so changing one needs no restart."""
    return {f"${k}": v for k, v in sorted(env(cfg).items()) if k not in (*SECRET_ENV, "PATH")}


def record(cfg: TidewaterConfig) -> None:
    """Keep what the Airflow just started runs with (called once it is healthy)."""
    settings_file(cfg).write_text(json.dumps(applied(cfg), indent=1, sort_keys=True))


def changes(cfg: TidewaterConfig) -> list[str]:
    """How the running Airflow's settings differ from the ones a start now would pass; [] when equal."""
    try:
        recorded = json.loads(settings_file(cfg).read_text())
    except (FileNotFoundError, ValueError):
        return [NOT_RECORDED]
    if any(not key.startswith("$") for key in recorded):  # configuration keys: recorded by an older Tidewater
        return [NOT_RECORDED]
    return differences(recorded, applied(cfg))


