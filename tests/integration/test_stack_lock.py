"""``tidewater up`` and ``down`` of one data folder run in turn, so two started at the same time never both
spawn a service (each checks a PID file, then starts a process and writes it: two checks before either
write left a PID file naming the process that lost the port). The test holds the stack lock as a first
``up`` would, so the order is certain rather than a race that a build without the lock could win by luck."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from tests.conftest import REPO

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]
SERVICES = ("metastore", "kafka_broker")


def tidewater(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "tidewater.cli", *args], cwd=REPO, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def finished(proc: subprocess.Popen[str]) -> str:
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, out + err
    return out


def test_up_and_down_started_together_run_in_turn() -> None:
    from infra.services import kafka_broker, metastore
    from lakehouse.config import load_config
    from spark_jobs.shared.locks import exclusive
    from tidewater.commands.stack import STACK_LOCK
    from tidewater.isolated_stack import isolated_env

    with isolated_env("tidewater-stack-lock-"):
        cfg = load_config()
        try:
            with exclusive(cfg, STACK_LOCK, 10):  # another 'up' or 'down' of this folder is under way
                waiting = tidewater("up", "--only", *SERVICES)
                time.sleep(8)
                assert waiting.poll() is None, "up ran while another stack command held the folder"
                assert metastore.status(cfg)["pid"] is None, "a service started under another command's lock"
            finished(waiting)
            pids = {"metastore": metastore.status(cfg)["pid"], "kafka": [r["pid"] for r in kafka_broker.status_rows(cfg)]}
            assert metastore.status(cfg)["healthy"] and pids["metastore"], metastore.status(cfg)
            both = [tidewater("up", "--only", *SERVICES) for _ in range(2)]  # two at the same time
            for proc in both:
                finished(proc)
            assert {"metastore": metastore.status(cfg)["pid"],
                    "kafka": [r["pid"] for r in kafka_broker.status_rows(cfg)]} == pids, "no second copy"
        finally:
            downs = [tidewater("down") for _ in range(2)]
            outputs = [finished(proc) for proc in downs]
        stopped = [line for out in outputs for line in out.splitlines() if line.startswith("stopped")]
        assert sorted(stopped) == ["stopped kafka_broker", "stopped metastore"], outputs  # each stopped once
        assert metastore.status(cfg)["pid"] is None
