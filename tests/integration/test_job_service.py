"""The job service on a real stack (metastore, Kafka, one warm Spark driver): ``tidewater`` commands
go through it with the same output and exit codes as a local run; a client killed with SIGKILL
neither kills nor wedges it; a wrong token is refused; another configuration runs locally; ``whatif`` goes
through it too."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from tests.conftest import REPO

if TYPE_CHECKING:
    from pathlib import Path

    from lakehouse.config import TidewaterConfig

pytestmark = pytest.mark.timeout(900)
SLOW_QUERY = "SELECT count(*) AS n FROM range(0, 80, 1, 2) WHERE reflect('java.lang.Thread', 'sleep', bigint(100)) IS NULL"


@pytest.fixture(scope="module")
def service(stack: TidewaterConfig) -> Iterator[TidewaterConfig]:
    from infra import job_service

    job_service.start(stack)
    try:
        yield stack
    finally:
        job_service.stop(stack)


def tw(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tidewater.cli", *args], capture_output=True, text=True,
                          timeout=300, cwd=REPO, env={**os.environ, **(env or {})})


def health(cfg: TidewaterConfig) -> dict:
    from infra import job_service

    report = job_service.health(cfg)
    assert report, "the job service answers /health"
    return report


def test_sql_runs_in_the_service(service: TidewaterConfig) -> None:
    before = health(service)
    out = tw("sql", "SELECT 1 + 1 AS two")
    assert out.returncode == 0, out.stderr
    assert [line.strip() for line in out.stdout.splitlines()] == ["two", "-----", "2", "(1 row)"], out.stdout
    for wrong in ("SELEC nonsense", "SELECT no_such_column FROM range(1)"):  # a parse and an analysis error
        bad = tw("sql", wrong)  # the CLI's own one-line error and exit code (no PySpark JSON log record)
        assert bad.returncode == 2 and bad.stdout == "", bad
        assert len(bad.stderr.strip().splitlines()) == 1 and bad.stderr.startswith("tidewater: sql: "), bad.stderr
    after = health(service)
    assert (after["pid"], after["served"]) == (before["pid"], before["served"] + 3), "all ran in the service"


def test_empty_bronze_stage_exits_nothing_to_do_before_the_service(service: TidewaterConfig) -> None:
    """An empty pipeline's stage is decided from bronze's Delta log in the client (goal: skip in
    <= 5 s): exit 3 with the one-line reason, and the service never sees the command. A local run
    (no service) gives the same answer."""
    from lakehouse.errors import NothingToDo

    served = health(service)["served"]
    for args in (("batch", "sensor_readings", "--stage-only"), ("--local", "batch", "sensor_readings")):
        out = tw(*args)
        assert out.returncode == NothingToDo.EXIT_CODE, out.stdout + out.stderr
        assert out.stderr.strip().splitlines() == [
            "tidewater: batch: bronze.sensor_readings is empty; start the speed layer "
            "('tidewater speed start sensor_readings') and produce events first"], out.stderr
        assert out.stdout == "", out.stdout  # decided before any staging started
    assert health(service)["served"] == served, "the skip did not reach the job service"


def test_whatif_runs_in_the_service(service: TidewaterConfig, tmp_path: Path) -> None:
    """``whatif`` is forwarded (its relative ``--chart`` made absolute first, tests/unit/test_whatif_words.py):
    with no events in bronze here, its one-line refusal and exit 3 come back from the service."""
    from lakehouse.errors import NothingToDo

    served = health(service)["served"]
    out = subprocess.run([sys.executable, "-m", "tidewater.cli", "whatif", "sensor_readings", "--chart", "c.png"],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert out.returncode == NothingToDo.EXIT_CODE, out.stdout + out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tidewater: whatif: bronze.sensor_readings "), out.stderr
    assert health(service)["served"] == served + 1, "whatif ran in the service"


def test_another_configuration_runs_locally(service: TidewaterConfig) -> None:
    served = health(service)["served"]
    out = tw("batch", "sensor_readings", "--stage-only", env={"TIDEWATER_MODE": "kappa"})
    assert out.returncode == 2 and "kappa" in out.stderr, out.stderr  # refused before any Spark start
    assert health(service)["served"] == served, "another configuration's command did not go to the service"


def test_client_killed_mid_command_leaves_the_service_working(service: TidewaterConfig) -> None:
    from infra import job_service

    before = health(service)
    client = subprocess.Popen([sys.executable, "-m", "tidewater.cli", "sql", SLOW_QUERY], cwd=REPO,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while health(service)["running"] == 0 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert health(service)["running"] == 1, "the command started in the service"
    os.kill(client.pid, signal.SIGKILL)
    client.wait()
    deadline = time.monotonic() + 120
    while health(service)["running"] and time.monotonic() < deadline:  # it runs to completion
        time.sleep(0.5)
    log = job_service._process(service).log_file.read_text()
    assert f"tidewater sql {SLOW_QUERY} -> exit 0" in log, log[-2000:]
    out = tw("sql", "SELECT 'still here' AS s")
    assert out.returncode == 0 and "still here" in out.stdout, out.stderr
    after = health(service)
    assert after["pid"] == before["pid"] == job_service._process(service).pid()
    assert after["served"] == before["served"] + 2


def test_wrong_token_is_refused(service: TidewaterConfig) -> None:
    from infra import job_service

    served = health(service)["served"]
    body = json.dumps({"argv": ["sql", "SELECT 1"], "fingerprint": job_service.fingerprint(service)}).encode()
    for token in ("wrong", ""):
        for path, data in (("/run", body), ("/health", None)):
            req = urllib.request.Request(f"{job_service.base_url(service)}{path}", data=data,
                                         headers={job_service.TOKEN_HEADER: token})
            with pytest.raises(urllib.error.HTTPError) as exc:
                urllib.request.urlopen(req, timeout=10)
            assert exc.value.code == 401
    stale = dict(json.loads(body), fingerprint="0" * 16)  # the right token, another config or code: 409
    with pytest.raises(urllib.error.HTTPError) as exc:
        job_service.request(service, "/run", stale)
    assert exc.value.code == 409
    assert oct(job_service.token_file(service).stat().st_mode & 0o777) == "0o600"
    assert health(service)["served"] == served, "nothing ran"


def test_a_stale_service_is_named_and_up_restarts_it(service: TidewaterConfig, monkeypatch: pytest.MonkeyPatch) -> None:
    """A service started before a change (here: another effective configuration, as after an edit or a
    pull) does not take the command: the client says so in one line and runs it here; ``status`` marks
    the service stale; ``up`` (``job_service.start``) restarts it, idle, on what the CLI now runs."""
    from infra import job_service
    from lakehouse.config import load_config

    nice = str((service.spark.speed_nice + 1) % 20)
    other = load_config(env={**os.environ, "TIDEWATER_SPEED_NICE": nice})
    assert other.data_dir == service.data_dir and job_service.fingerprint(other) != job_service.fingerprint(service)
    before = health(service)
    out = tw("sql", "SELECT 'here' AS ran", env={"TIDEWATER_SPEED_NICE": nice})
    assert out.returncode == 0 and "here" in out.stdout, out.stderr
    assert out.stderr.splitlines()[0] == (
        f"tidewater: the job service at {job_service.base_url(service)} runs another configuration or an older "
        "copy of the code; running here, with a JVM start ('tidewater up' restarts an idle service)"), out.stderr
    assert health(service)["served"] == before["served"], "the stale service ran nothing"
    assert str(job_service.status(other).get("code", "")).startswith("stale"), job_service.status(other)
    assert "code" not in job_service.status(service)
    monkeypatch.setenv("TIDEWATER_SPEED_NICE", nice)  # what a shell with the new setting passes to 'up'
    restarted = job_service.start(other)
    assert restarted != before["pid"] and health(other)["fingerprint"] == job_service.fingerprint(other)
    again = tw("sql", "SELECT 'there' AS ran")
    assert again.returncode == 0 and "there" in again.stdout and "job service" not in again.stderr, again.stderr
    assert health(other)["served"] == 1
    monkeypatch.delenv("TIDEWATER_SPEED_NICE")
    assert job_service.start(service) != restarted  # back on the module's configuration, for the next test
    assert health(service)["fingerprint"] == job_service.fingerprint(service)


def test_service_killed_mid_command_fails_closed(service: TidewaterConfig) -> None:
    """Last in the module: it kills the service. The client reports one line and exit 2; it does not
    re-run the command locally (it may have run in part)."""
    client = subprocess.Popen([sys.executable, "-m", "tidewater.cli", "sql", SLOW_QUERY], cwd=REPO,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while health(service)["running"] == 0 and time.monotonic() < deadline:
        time.sleep(0.1)
    pid = int(health(service)["pid"])
    assert pid > 1
    os.killpg(pid, signal.SIGKILL)  # the service's own session: Python and its Spark JVM
    out, err = client.communicate(timeout=120)
    assert client.returncode == 2, out + err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tidewater: job service: the connection broke"), err
