"""Real Airflow 3 (the e2e package's shared instance, see ``conftest.py``), driven through
``/api/v2`` with a JWT from ``/auth/token`` (generated admin password): login is required; the
batch DAG publishes good data and its quality gate blocks bad data; the speed supervisor, quality
and maintenance DAGs run. Every DAG task runs the ``tidewater`` CLI on this package's stack."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest

from tests.integration.test_quality_suites import write_bronze

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from lakehouse.config import TidewaterConfig

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(3600)]  # a loaded 2-core machine: runs take minutes


def api(cfg: TidewaterConfig, method: str, path: str, token: str | None = None, body: Any = None) -> Any:
    from infra.services import airflow

    req = urllib.request.Request(f"{airflow.base_url(cfg)}{path}", method=method,
                                 data=None if body is None else json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json",
                                          **({"Authorization": f"Bearer {token}"} if token else {})})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read() or b"{}")


def asset_events(cfg: TidewaterConfig, token: str, query: str) -> list[dict[str, Any]]:
    """``GET /api/v2/assets/events?<query>``. Airflow answers 500 while a run an event created is still
    queued with no ``start_date`` (apache/airflow#71360: its response model rejects the NULL): the
    publish's events schedule ``tidewater_quality`` at once, so the read is retried for up to 60 s (CI
    hit that window once, at 15f5944); any other error, or a 500 that lasts, fails the test."""
    deadline = time.monotonic() + 60
    while True:
        try:
            return list(api(cfg, "GET", f"/api/v2/assets/events?{query}", token)["asset_events"])
        except urllib.error.HTTPError as exc:
            if exc.code != 500 or time.monotonic() > deadline:
                raise
            time.sleep(1)


def token(cfg: TidewaterConfig) -> str:
    from infra.services import airflow

    return str(api(cfg, "POST", "/auth/token", body={"username": airflow.USER, "password": airflow.password(cfg)})
               ["access_token"])


def wait_for_dag(cfg: TidewaterConfig, tok: str, dag_id: str, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            api(cfg, "GET", f"/api/v2/dags/{dag_id}", tok)
            return
        except urllib.error.HTTPError as exc:
            if exc.code != 404:
                raise
        time.sleep(3)
    raise AssertionError(f"{dag_id} not parsed by the dag-processor within {timeout}s")


def wait_for_run(cfg: TidewaterConfig, tok: str, dag_id: str, run_id: str, timeout: float = 1800) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = api(cfg, "GET", f"/api/v2/dags/{dag_id}/dagRuns/{run_id}", tok)
        if run["state"] in ("success", "failed"):
            return dict(run)
        time.sleep(5)
    raise AssertionError(f"{dag_id} run {run_id} not finished within {timeout}s")


def test_login_required(airflow_up: TidewaterConfig) -> None:
    with pytest.raises(urllib.error.HTTPError) as exc:
        api(airflow_up, "GET", "/api/v2/dags")
    assert exc.value.code in (401, 403)
    with pytest.raises(urllib.error.HTTPError):
        api(airflow_up, "POST", "/auth/token", body={"username": "admin", "password": "admin"})


def trigger(cfg: TidewaterConfig, tok: str, dag_id: str, conf: dict) -> tuple[dict, dict]:
    """Unpause, trigger with ``conf``, wait; returns the finished run and its task states."""
    wait_for_dag(cfg, tok, dag_id)
    api(cfg, "PATCH", f"/api/v2/dags/{dag_id}", tok, {"is_paused": False})
    run = api(cfg, "POST", f"/api/v2/dags/{dag_id}/dagRuns", tok, {"logical_date": None, "conf": conf})
    done = wait_for_run(cfg, tok, dag_id, run["dag_run_id"])
    tis = api(cfg, "GET", f"/api/v2/dags/{dag_id}/dagRuns/{run['dag_run_id']}/taskInstances", tok)
    return done, {t["task_id"]: t["state"] for t in tis["task_instances"]}


def serving_snapshot(spark: SparkSession) -> tuple[list[tuple], str]:
    spark.catalog.refreshTable("serving.sensor_readings")
    rows = sorted(tuple(r) for r in spark.table("serving.sensor_readings").collect())
    ddl = spark.sql("SHOW CREATE TABLE serving.sensor_readings").first()
    assert ddl is not None
    return rows, ddl[0]


def task_log(cfg: TidewaterConfig, tok: str, dag_id: str, run_id: str, task_id: str) -> str:
    path = f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}/logs/1?full_content=true"
    return json.dumps(api(cfg, "GET", path, tok))


def test_supervisor_batch_and_quality_are_active_after_up(airflow_up: TidewaterConfig) -> None:
    """``airflow.active_dags`` (default speed, batch, quality): created unpaused by the first start,
    so the supervisor keeps the speed layer alive with no click; maintenance waits for a human."""
    tok = token(airflow_up)
    paused = {}
    for dag_id in ("tidewater_speed", "tidewater_batch", "tidewater_quality", "tidewater_maintenance"):
        wait_for_dag(airflow_up, tok, dag_id)
        paused[dag_id] = api(airflow_up, "GET", f"/api/v2/dags/{dag_id}", tok)["is_paused"]
    assert paused == {"tidewater_speed": False, "tidewater_batch": False, "tidewater_quality": False,
                      "tidewater_maintenance": True}, paused


def asset_triggered_runs(cfg: TidewaterConfig, tok: str, dag_id: str) -> list[dict]:
    return list(api(cfg, "GET", f"/api/v2/dags/{dag_id}/dagRuns?run_type=asset_triggered&order_by=run_after",
                    tok)["dag_runs"])


def asset_triggered_run(cfg: TidewaterConfig, tok: str, dag_id: str, timeout: float = 600, seen: int = 0) -> dict:
    """The first run of ``dag_id`` that an Asset event created after the ``seen`` earlier ones, once it finished."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        runs = asset_triggered_runs(cfg, tok, dag_id)
        if len(runs) > seen:
            return wait_for_run(cfg, tok, dag_id, runs[seen]["dag_run_id"], timeout=deadline - time.monotonic())
        time.sleep(5)
    raise AssertionError(f"no asset-triggered run of {dag_id} after the {seen} earlier within {timeout}s")


def task_result(cfg: TidewaterConfig, tok: str, dag_run: dict, task_id: str) -> dict:
    """The XCom a task of a ``tidewater_batch`` DAG run returned."""
    path = f"/api/v2/dags/tidewater_batch/dagRuns/{dag_run['dag_run_id']}/taskInstances/{task_id}/xcomEntries/return_value"
    value = api(cfg, "GET", path, tok)["value"]
    return dict(json.loads(value) if isinstance(value, str) else value)


def staged_run_id(cfg: TidewaterConfig, tok: str, dag_run: dict) -> str:
    """The batch run id the ``stage`` task of a ``tidewater_batch`` DAG run staged."""
    return str(task_result(cfg, tok, dag_run, "sensor_readings.stage")["run_id"])


def run_cli(cfg: TidewaterConfig, *args: str) -> dict:
    """``tidewater <args>`` as the DAG tasks run it; its last JSON line."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "tidewater.cli", *args], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def test_batch_dag_publishes_then_quality_gate_blocks_bad_data(airflow_up: TidewaterConfig, spark: SparkSession) -> None:
    """Write-audit-publish through the scheduler: good data is published (Assets emitted); then one
    impossible reading (1000 °C) fails the run at ``validate``, and nothing is published: the batch
    table and the serving view (rows and definition) stay exactly as they were."""
    cfg = airflow_up
    start = datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(hours=1)
    write_bronze(spark, cfg, [(f"s-{i % 2}", 10.0 + i % 5) for i in range(40)], start=start)
    tok = token(cfg)
    started = time.monotonic()
    done, states = trigger(cfg, tok, "tidewater_batch", {"pipeline": "sensor_readings"})
    print(f"tidewater_batch via REST: {done['state']} in {time.monotonic() - started:.1f}s; {states}")
    assert done["state"] == "success", states
    assert all(states[f"sensor_readings.{t}"] == "success" for t in ("stage", "validate", "publish", "reconcile")), states
    assert "sensor_readings.refresh_serving" not in states  # publish moves the view itself
    assert states["lift_rides.stage"] == "skipped"  # the run was for one pipeline
    names = {e.get("name") or e.get("uri") for e in asset_events(cfg, tok, "limit=50")}
    assert {"batch.sensor_readings", "serving.sensor_readings"} <= names or \
        {"tidewater://batch/sensor_readings", "tidewater://serving/sensor_readings"} <= names, names
    quality = asset_triggered_run(cfg, tok, "tidewater_quality")  # data-aware: the publish scheduled it
    assert quality["state"] == "success", quality
    assert (cfg.data_dir / "docs" / "index.html").exists(), "Data Docs published"
    spark.catalog.refreshTable("batch.sensor_readings")
    published = sorted(tuple(r) for r in spark.table("batch.sensor_readings").collect())
    assert published
    again = run_cli(cfg, "batch", "sensor_readings", "--publish", "--run-id", str(staged_run_id(cfg, tok, done)))
    assert again["already_published"] is True and again["status"] == "published", again  # a re-run is a no-op
    # the reconcile task recorded the published run's ledger, once: a retry finds it and records nothing
    staged = task_result(cfg, tok, done, "sensor_readings.stage")
    run_id, windows = str(staged["run_id"]), int(staged["windows"])
    ledger = task_result(cfg, tok, done, "sensor_readings.reconcile")["ledger"]
    assert windows and ledger == {"run_id": run_id, "recorded": True, "windows": windows}, (ledger, staged)
    assert spark.table("ops.reconciliation").where(f"run_id = '{run_id}'").count() == 4 * windows
    retried = run_cli(cfg, "reconcile", "sensor_readings", "--run-id", run_id, "--json")
    assert retried["ledger"] == {"run_id": run_id, "recorded": False}, retried
    before = serving_snapshot(spark)
    assert before[0], "serving view is empty after a published run"
    # bronze unchanged since that publish (an idle pipeline's hourly run): stage is skipped with the CLI's line
    idle, states = trigger(cfg, tok, "tidewater_batch", {"pipeline": "sensor_readings"})
    assert idle["state"] == "success" and states["sensor_readings.stage"] == "skipped", states
    assert states["sensor_readings.publish"] == "skipped", states
    log = task_log(cfg, tok, "tidewater_batch", idle["dag_run_id"], "sensor_readings.stage")
    assert f"which run {run_id} published; nothing to recompute" in log, log[-2000:]

    # a publish by plain 'tidewater batch' (outside Airflow) records the Asset events the DAG's publish
    # task would: the data-aware quality DAG follows it as well
    write_bronze(spark, cfg, [("s-0", 12.5), ("s-1", 13.5)], start=start, first_offset=5_000)
    seen = len(asset_triggered_runs(cfg, tok, "tidewater_quality"))
    out = subprocess.run([sys.executable, "-m", "tidewater.cli", "batch", "sensor_readings"], capture_output=True,
                         text=True, timeout=900)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "… Asset events recorded for batch.sensor_readings, serving.sensor_readings" in out.stdout, out.stdout
    cli_run = next(line for line in out.stdout.splitlines() if line.startswith("batch sensor_readings: run ")).split()[3]
    events = asset_events(cfg, tok, "limit=100&order_by=-timestamp")
    mine = {e.get("name") or e.get("uri"): e["extra"] for e in events if (e.get("extra") or {}).get("run_id") == cli_run}
    assert set(mine) in ({"batch.sensor_readings", "serving.sensor_readings"},
                         {"tidewater://batch/sensor_readings", "tidewater://serving/sensor_readings"}), events[:4]
    assert all(extra["source"] == "tidewater batch" for extra in mine.values()), mine
    followed = asset_triggered_run(cfg, tok, "tidewater_quality", seen=seen)
    assert followed["state"] == "success", followed
    spark.catalog.refreshTable("batch.sensor_readings")
    published = sorted(tuple(r) for r in spark.table("batch.sensor_readings").collect())
    before = serving_snapshot(spark)

    # in the first window, which the published run covered: the next (incremental) run recomputes it
    write_bronze(spark, cfg, [("s-hot", 1000.0)], start=start, first_offset=10_000)
    bad, states = trigger(cfg, tok, "tidewater_batch", {"pipeline": "sensor_readings"})
    assert bad["state"] == "failed", states
    assert states["sensor_readings.stage"] == "success" and states["sensor_readings.validate"] == "failed", states
    assert states["sensor_readings.publish"] != "success", states
    log = task_log(cfg, tok, "tidewater_batch", bad["dag_run_id"], "sensor_readings.validate")
    assert "max_temperature" in log and "1000" in log, f"failing expectation not in the task log: {log[-2000:]}"
    spark.catalog.refreshTable("batch.sensor_readings")
    assert sorted(tuple(r) for r in spark.table("batch.sensor_readings").collect()) == published
    assert serving_snapshot(spark) == before


def test_speed_supervisor_and_maintenance_dags_run(airflow_up: TidewaterConfig, spark: SparkSession) -> None:
    from lakehouse.pipeline import load_pipeline
    from spark_jobs.io.kafka_admin import ensure_topic
    from spark_jobs.speed.control import speed_process

    cfg = airflow_up
    ensure_topic(cfg, "sensor-readings")
    tok = token(cfg)
    timings = {}
    started = time.monotonic()
    done, states = trigger(cfg, tok, "tidewater_speed", {"pipeline": "sensor_readings", "action": "ensure"})
    timings["speed ensure"] = time.monotonic() - started
    assert done["state"] == "success", states
    first_pid = speed_process(cfg, load_pipeline("sensor_readings", cfg.pipelines)).pid()
    assert first_pid, "the supervisor started the speed job"
    done, states = trigger(cfg, tok, "tidewater_speed", {"pipeline": "sensor_readings", "action": "ensure"})
    assert done["state"] == "success", states
    assert speed_process(cfg, load_pipeline("sensor_readings", cfg.pipelines)).pid() == first_pid, "never a second copy"
    assert not speed_process(cfg, load_pipeline("lift_rides", cfg.pipelines)).running()  # not selected: left alone
    started = time.monotonic()
    done, states = trigger(cfg, tok, "tidewater_speed", {"pipeline": "sensor_readings", "action": "stop"})
    timings["speed stop"] = time.monotonic() - started
    assert done["state"] == "success", states
    assert not speed_process(cfg, load_pipeline("sensor_readings", cfg.pipelines)).running()

    # tidewater_quality ran on the batch Asset in the batch DAG test (data-aware scheduling)
    started = time.monotonic()
    done, states = trigger(cfg, tok, "tidewater_maintenance", {})
    timings["maintenance"] = time.monotonic() - started
    assert done["state"] == "success", states
    assert set(states) == {"tables", "ops", "checkpoints"} and set(states.values()) == {"success"}
    print("DAG runs: " + ", ".join(f"{k} {v:.0f}s" for k, v in timings.items()))


def test_up_restarts_airflow_whose_settings_changed(airflow_up: TidewaterConfig,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """Airflow's DAG files read their settings from the environment they were started with: a schedule
    (or ``mode``) changed after ``tidewater up`` reached them only once ``up`` restarted Airflow, which it
    now does, naming the change; an ``up`` with unchanged settings leaves it running."""
    from infra.services import airflow

    cfg = airflow_up
    tok = token(cfg)
    paused = api(cfg, "GET", "/api/v2/dags/tidewater_maintenance", tok)["is_paused"]
    before = airflow._process(cfg, "scheduler").pid()
    airflow.start(cfg)  # unchanged: nothing restarts
    assert airflow._process(cfg, "scheduler").pid() == before and "restarting" not in capsys.readouterr().err
    os.environ["TIDEWATER_AIRFLOW_MAINTENANCE_SCHEDULE"] = "@weekly"  # was "none" (manual runs only)
    airflow.start(cfg)
    err = capsys.readouterr().err
    assert "airflow: restarting" in err and "$TIDEWATER_AIRFLOW_MAINTENANCE_SCHEDULE: none -> @weekly" in err, err
    assert airflow._process(cfg, "scheduler").pid() != before and airflow.healthy(cfg)
    assert "settings" not in airflow.status(cfg)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:  # the dag-processor parses the DAG files again with the new setting
        dag = api(cfg, "GET", "/api/v2/dags/tidewater_maintenance", tok)
        if dag.get("timetable_summary") in ("@weekly", "0 0 * * 0"):
            break
        time.sleep(5)
    assert dag.get("timetable_summary") in ("@weekly", "0 0 * * 0"), dag.get("timetable_summary")
    assert dag["is_paused"] == paused  # the restart keeps what the UI set (an earlier test unpaused it)
