"""The settings a running Airflow was started with, against the ones ``tidewater up`` has now.

Airflow's processes get the configuration once, in their environment (``airflow_settings.env``: the mode,
the data folder, the schedules, the pipelines), and every DAG file and task reads it from there. A
``tidewater.yml`` edited after ``up`` (``mode: kappa``, say) therefore did not reach Airflow: its batch DAG
went on publishing in a stack switched to Kappa. ``up`` now compares the two and restarts Airflow when
they differ (``airflow.start``); ``status`` names the difference meanwhile.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from lakehouse import naming
from lakehouse.config import TidewaterConfig
from lakehouse.pipeline import PIPELINES_ENV
from lakehouse.settings_diff import differences, flatten

NOT_RECORDED = "its settings were not recorded (started by an older Tidewater)"


def settings_file(cfg: TidewaterConfig) -> Path:
    return naming.run_dir(cfg) / "airflow-settings.json"


def applied(cfg: TidewaterConfig) -> dict[str, str]:
    """What Airflow's DAGs and tasks depend on, as a start now would pass it: every configuration key
    (dotted, e.g. ``mode``, ``airflow.batch_schedule``) and the environment variables the DAG files read
    (``TIDEWATER_AIRFLOW_<DAG>_SCHEDULE``, ``TIDEWATER_PIPELINES``). No secret is among them."""
    config = cfg.as_dict()
    config.pop("source", None)
    out = flatten(config)
    out.update({f"${k}": v for k, v in sorted(os.environ.items())
                if k == PIPELINES_ENV or (k.startswith("TIDEWATER_AIRFLOW_") and k.endswith("_SCHEDULE"))})
    return out


def record(cfg: TidewaterConfig) -> None:
    """Keep what the Airflow just started runs with (called once it is healthy)."""
    settings_file(cfg).write_text(json.dumps(applied(cfg), indent=1, sort_keys=True))


def changes(cfg: TidewaterConfig) -> list[str]:
    """How the running Airflow's settings differ from the ones a start now would pass; [] when equal."""
    try:
        recorded = json.loads(settings_file(cfg).read_text())
    except (FileNotFoundError, ValueError):
        return [NOT_RECORDED]
    return differences(recorded, applied(cfg))


