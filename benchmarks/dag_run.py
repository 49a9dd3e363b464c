"""DAG-run benchmark ("no JVM start per task"): the same commands without and with the job service.

``python -m benchmarks.dag_run [--events N]`` on an isolated stack (own data folder and ports) with Airflow:

* ``tidewater sql 'SELECT 1'`` (median of 3), the wall time of the client process;
* an empty pipeline's skip: ``tidewater batch lift_rides --stage-only`` (exit 3, NothingToDo);
* one ``tidewater_batch`` run for all pipelines through the Airflow REST API, after appending an
  increment of N events (default 100K) to ``bronze.sensor_readings`` (the first, full, run is made
  beforehand in-process, so both measured runs are incremental); per-task durations included. With the
  job service a second run follows, after an increment of its own (``dag_next``): the first DAG run
  after Airflow starts is the cold one.

First with no job service (each command starts its own JVM: the client runs locally), then with it.
Writes ``benchmarks/results/<stamp>-dag_run.json`` with the git commit; prints a summary.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request
from datetime import UTC, datetime
from typing import Any

from benchmarks import fill
from benchmarks.dag_chart import draw
from benchmarks.harness import git_facts, machine_facts, save_json_result
from benchmarks.stack import isolated_stack
from infra import job_service
from infra.services import airflow
from infra.spark_session import get_spark
from lakehouse import contracts
from lakehouse.config import TidewaterConfig
from lakehouse.pipeline import load_pipeline
from spark_jobs.batch import wap as batch

PIPELINE, EMPTY = "sensor_readings", "lift_rides"


def cli_seconds(*args: str, expect: int = 0) -> float:
    started = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "tidewater.cli", *args], capture_output=True, text=True, timeout=900)
    took = time.monotonic() - started
    if out.returncode != expect:
        raise RuntimeError(f"tidewater {' '.join(args)} exited {out.returncode}, not {expect}: {out.stderr[-500:]}")
    return round(took, 2)


def api(cfg: TidewaterConfig, method: str, path: str, token: str | None = None, body: Any = None) -> Any:
    req = urllib.request.Request(f"{airflow.base_url(cfg)}{path}", method=method,
                                 data=None if body is None else json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json",
                                          **({"Authorization": f"Bearer {token}"} if token else {})})
    with urllib.request.urlopen(req, timeout=30) as resp:  # noqa: S310 - loopback URL from the config
        return json.loads(resp.read() or b"{}")


def dag_run(cfg: TidewaterConfig) -> dict[str, Any]:
    """Trigger ``tidewater_batch`` for all pipelines, wait; wall seconds and each task's duration."""
    tok = api(cfg, "POST", "/auth/token", body={"username": airflow.USER, "password": airflow.password(cfg)})["access_token"]
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            api(cfg, "GET", "/api/v2/dags/tidewater_batch", tok)
            break
        except urllib.error.HTTPError:
            time.sleep(3)
    api(cfg, "PATCH", "/api/v2/dags/tidewater_batch", tok, {"is_paused": False})
    started = time.monotonic()
    run = api(cfg, "POST", "/api/v2/dags/tidewater_batch/dagRuns", tok, {"logical_date": None, "conf": {}})
    path = f"/api/v2/dags/tidewater_batch/dagRuns/{run['dag_run_id']}"
    while (state := api(cfg, "GET", path, tok)["state"]) not in ("success", "failed"):
        time.sleep(1)
    wall = round(time.monotonic() - started, 1)
    done = api(cfg, "GET", path, tok)
    tis = api(cfg, "GET", f"{path}/taskInstances", tok)["task_instances"]
    return {"state": state, "wall_seconds": wall,
            "run_seconds": round((datetime.fromisoformat(done["end_date"]) -
                                  datetime.fromisoformat(done["start_date"])).total_seconds(), 1),
            "tasks": {t["task_id"]: [t["state"], round(t["duration"] or 0, 1)] for t in tis}}


def append_increment(spark: Any, cfg: TidewaterConfig, n: int, round_no: int) -> None:
    p = load_pipeline(PIPELINE, cfg.pipelines)
    contracts.ensure(spark, contracts.bronze(p))
    start = fill.base_ms(0) - 3 * 3_600_000 + round_no * n * 20
    df = fill.events(spark, n, 200, start, step_ms=20, first=round_no * n)
    fill.as_bronze(df, p.topic).write.format("delta").mode("append").saveAsTable(contracts.bronze(p).name)


def measure(spark: Any, cfg: TidewaterConfig, events: int, round_no: int, runs: int = 1) -> dict[str, Any]:
    """``runs`` > 1: further DAG runs, each after an increment of its own (``dag_next``: Airflow's
    workers and API server are warm then, as they are between the supervisor's runs in a real stack)."""
    sql = [cli_seconds("sql", "SELECT 1") for _ in range(3)]
    out: dict[str, Any] = {"sql_select_1_seconds": statistics.median(sql), "sql_runs": sql,
                           "empty_skip_seconds": cli_seconds("batch", EMPTY, "--stage-only", expect=3)}
    append_increment(spark, cfg, events, round_no)
    out["dag"] = dag_run(cfg)
    for extra in range(1, runs):
        append_increment(spark, cfg, events, round_no + 10 * extra)
        out.setdefault("dag_next", []).append(dag_run(cfg))
    print(json.dumps(out), flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=100_000, help="events in each increment")
    args = parser.parse_args(argv)

    result: dict[str, Any] = {"benchmark": "dag_run", "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
                              "git": git_facts(), "machine": machine_facts(), "events_per_increment": args.events}
    for dag in ("BATCH", "SPEED", "QUALITY", "MAINTENANCE"):  # only the runs measured here: no speed jobs
        os.environ[f"TIDEWATER_AIRFLOW_{dag}_SCHEDULE"] = "none"
    with isolated_stack() as cfg:
        spark = get_spark(cfg, "tidewater-bench-dag")
        result["airflow_database"] = cfg.airflow.database
        append_increment(spark, cfg, args.events, 0)
        batch.run(spark, cfg, load_pipeline(PIPELINE, cfg.pipelines), False)  # the first (full) run
        try:
            airflow.start(cfg)
            result["without_service"] = measure(spark, cfg, args.events, 1)
            started = time.monotonic()
            job_service.start(cfg)
            result["service_start_seconds"] = round(time.monotonic() - started, 1)
            result["with_service"] = measure(spark, cfg, args.events, 2, runs=2)
        finally:
            airflow.stop(cfg)
            job_service.stop(cfg)
            spark.stop()
    path = save_json_result(result, "dag_run")
    try:
        print(f"dag_run: chart {draw(result, path.with_suffix('.png'))}")
    except ImportError as exc:  # matplotlib is in the `bench` extra
        print(f"dag_run: no chart ({exc}); install with: .venv/bin/pip install -e '.[bench]'")
    return 0


if __name__ == "__main__":
    sys.exit(main())
