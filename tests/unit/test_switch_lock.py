"""A replay or rollback freezes the main speed job on purpose: nothing else may restart it meanwhile."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit


def test_main_job_start_is_refused_while_another_process_switches_versions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from lakehouse.config import load_config
    from lakehouse.errors import TidewaterError
    from lakehouse.pipeline import load_pipeline
    from lakehouse.speed_versions import set_active_version
    from spark_jobs.shared.locks import held_elsewhere, lock_path, switch_lock_name
    from spark_jobs.speed.control import start_speed

    monkeypatch.setenv("TIDEWATER_DATA_DIR", str(tmp_path))
    cfg = load_config()
    path = lock_path(cfg, switch_lock_name("sensor_readings"))
    holder = subprocess.Popen([sys.executable, "-c", (
        "import fcntl, sys, time; h = open(sys.argv[1], 'w'); fcntl.flock(h, fcntl.LOCK_EX); print('held', flush=True);"
        "time.sleep(60)"), str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        assert held_elsewhere(cfg, switch_lock_name("sensor_readings"))
        with pytest.raises(TidewaterError, match="switching versions"):
            start_speed(cfg, load_pipeline("sensor_readings", cfg.pipelines))
    finally:
        holder.kill()
        holder.wait()
    time.sleep(0.1)
    assert not held_elsewhere(cfg, switch_lock_name("sensor_readings"))  # kill -9 released it

    set_active_version(cfg, "sensor_readings", 2, previous=1)
    versions = tmp_path / "versions"
    assert (versions / "sensor_readings.active").read_text() == "2\n"
    assert (versions / "sensor_readings.previous").read_text() == "1\n"
    assert not list(versions.glob("*.tmp"))


def test_supervisor_does_nothing_during_a_switch() -> None:
    from dags.tidewater_common import speed_decision

    assert speed_decision({"running": False, "switch_in_progress": True}, 5)[0] == "none"
    assert speed_decision({"running": False, "switch_in_progress": False}, 5)[0] == "start"


def test_a_lock_held_by_another_thread_is_held_elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The job service runs commands on threads of one process: a lock one of them holds must count as
    held for the others (it did not while the held-here set was process-wide), and they must wait for it."""
    import threading

    from lakehouse.config import load_config
    from spark_jobs.shared.locks import exclusive, held_elsewhere

    monkeypatch.setenv("TIDEWATER_DATA_DIR", str(tmp_path))
    cfg = load_config()
    taken, release, order = threading.Event(), threading.Event(), []

    def holder() -> None:
        with exclusive(cfg, "batch-x", 5):
            assert not held_elsewhere(cfg, "batch-x"), "the holder itself is not 'elsewhere'"
            taken.set()
            release.wait(10)
            order.append("holder released")

    thread = threading.Thread(target=holder)
    thread.start()
    assert taken.wait(10)
    assert held_elsewhere(cfg, "batch-x")
    release.set()
    with exclusive(cfg, "batch-x", 10):  # waits for the holder thread
        order.append("second acquired")
    thread.join(10)
    assert order == ["holder released", "second acquired"]
    assert not held_elsewhere(cfg, "batch-x")


def test_the_supervisor_refuses_what_speed_start_would_refuse() -> None:
    """A status ``problem`` (a changed definition) turns a start or a restart into ``refuse`` with that
    line, so a stalled job is not stopped for a start that cannot happen; a running job is left alone."""
    from datetime import UTC, datetime, timedelta

    from dags.tidewater_common import speed_decision

    line = "the definition of sensor_readings changed since speed.sensor_readings__partials was computed (…)"
    assert speed_decision({"running": False, "problem": line}, 5) == ("refuse", line)
    now = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)
    stalled = {"running": True, "pid": 7, "lag": {"0": 40}, "last_batch_time": (now - timedelta(hours=1)).isoformat(),
               "started_at": (now - timedelta(hours=2)).isoformat(), "problem": line}
    assert speed_decision(stalled, 5, now) == ("refuse", line)
    assert speed_decision({**stalled, "problem": None}, 5, now)[0] == "restart"
    assert speed_decision({**stalled, "lag": {"0": 0}}, 5, now)[0] == "none"

