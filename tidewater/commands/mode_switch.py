"""``tidewater up`` after the mode changed (``mode:`` in ``tidewater.yml``, or ``TIDEWATER_MODE``).

The mode is read by each process at its start: the speed jobs (how long bronze keeps its Delta log: the
batch layer of Lambda reads it by version), the serving views' definitions (Lambda merges batch and speed,
Kappa serves the speed table alone) and Airflow (which DAGs exist; ``infra.services.airflow`` restarts it on
its own). So that one switch changes the whole stack, ``up`` keeps the mode it last brought the stack up
in (``<data_dir>/run/stack-mode``) and, when it differs from the configured one, restarts the running
speed jobs and re-creates the serving view of every pipeline whose speed layer has run.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from lakehouse import naming
from lakehouse.config import TidewaterConfig
from lakehouse.errors import TidewaterError
from lakehouse.pipeline import available_pipelines, load_pipeline
from spark_jobs.speed.control import speed_running, start_speed, stop_speed
from tidewater.commands import progress

if TYPE_CHECKING:
    from lakehouse.pipeline import Pipeline


def mode_file(cfg: TidewaterConfig) -> Path:
    return naming.run_dir(cfg) / "stack-mode"


def previous_mode(cfg: TidewaterConfig) -> str | None:
    """The mode ``up`` last brought this data folder's stack up in; None before the first ``up``."""
    try:
        return mode_file(cfg).read_text().strip() or None
    except FileNotFoundError:
        return None


def apply_mode(cfg: TidewaterConfig) -> None:
    """After a mode change: restart the running speed jobs and re-create the serving views; then record
    the mode (the caller holds the stack lock)."""
    before = previous_mode(cfg)
    if before is not None and before != cfg.mode:
        progress(f"mode changed from {before} to {cfg.mode}: restarting the speed jobs and re-creating the serving views …")
        for name in available_pipelines():
            p = load_pipeline(name, cfg.pipelines)
            restart_speed(cfg, p)
            if naming.checkpoint_dir(cfg, p.name, "speed", 1).parent.is_dir():  # its speed layer ran: serving.<p> exists
                refresh_serving(p.name)
    mode_file(cfg).parent.mkdir(parents=True, exist_ok=True)
    mode_file(cfg).write_text(cfg.mode + "\n")


def restart_speed(cfg: TidewaterConfig, p: Pipeline) -> None:
    if speed_running(cfg, p):
        stop_speed(cfg, p)
        start_speed(cfg, p)
        progress(f"restarted the speed job of {p.name} in {cfg.mode} mode")


def refresh_serving(pipeline: str) -> None:
    """``tidewater serving refresh <p>``, as a user would run it (in the job service when it serves)."""
    out = subprocess.run([sys.executable, "-m", "tidewater.cli", "serving", "refresh", pipeline],
                         capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise TidewaterError(f"up: re-creating serving.{pipeline} for the new mode failed (exit {out.returncode}): "
                             f"{(out.stderr.strip().splitlines() or ['no message'])[-1]}; "
                             f"run 'tidewater serving refresh {pipeline}'")
    progress(out.stdout.strip().splitlines()[-1] if out.stdout.strip() else f"serving.{pipeline} re-created")
