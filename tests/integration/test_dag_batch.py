"""``tidewater_batch`` end to end with ``dag.test()`` on real Spark + Delta, then the quality gate.

Bronze rows with the contract schema are written through Spark. ``dag.test()`` runs in a
subprocess with its own SQLite metadata DB (Airflow settings are process-global); every task
runs the ``tidewater`` CLI in its own process against this module's stack.
1. good data: stage -> validate -> publish -> serving refresh -> reconcile all succeed;
2. one impossible reading (1000 °C) in bronze: the run fails at ``validate``, nothing is published
   and the serving view (rows and definition) is exactly as it was.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.integration.test_quality_suites import write_bronze

pytestmark = [pytest.mark.integration, pytest.mark.timeout(3600)]  # a loaded 2-core machine: runs take minutes
REPO = Path(__file__).resolve().parents[2]

DAG_TEST = """
import json, sys
from airflow.dag_processing.dagbag import DagBag
bag = DagBag(sys.argv[1])
assert not bag.import_errors, bag.import_errors
run = bag.dags["tidewater_batch"].test(run_conf={"pipeline": "sensor_readings"})
states = {ti.task_id: str(ti.state) for ti in run.get_task_instances()}
print("DAGTEST " + json.dumps({"state": str(run.state), "tasks": states}))
"""


def run_dag_test(cfg) -> dict:  # type: ignore[no-untyped-def]
    from infra.services import airflow

    env = {**os.environ, **airflow.env(cfg)}
    env["AIRFLOW__CORE__EXECUTOR"] = "LocalExecutor"
    subprocess.run([airflow.airflow_bin(), "db", "migrate"], env=env, check=True, capture_output=True, timeout=600)
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", DAG_TEST, str(REPO / "dags")], env=env, capture_output=True,
                          text=True, timeout=1800, cwd=str(REPO))
    seconds = time.monotonic() - started
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("DAGTEST ")]
    assert lines, f"dag.test() printed no result (exit {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    result = json.loads(lines[-1][len("DAGTEST "):])
    result["seconds"] = seconds
    result["log"] = proc.stdout + proc.stderr
    print(f"\ndag.test() of tidewater_batch: {result['state']} in {seconds:.1f}s; tasks {result['tasks']}")
    return result


def serving_snapshot(spark) -> tuple[list[tuple], str]:  # type: ignore[no-untyped-def]
    spark.catalog.refreshTable("serving.sensor_readings")
    rows = sorted(tuple(r) for r in spark.table("serving.sensor_readings").collect())
    ddl = spark.sql("SHOW CREATE TABLE serving.sensor_readings").first()[0]
    return rows, ddl


def test_batch_dag_publishes_then_quality_gate_blocks_bad_data(spark, cfg) -> None:  # type: ignore[no-untyped-def]
    write_bronze(spark, cfg, [(f"s-{i % 3}", 15.0 + (i % 7)) for i in range(60)])
    good = run_dag_test(cfg)
    assert good["state"].endswith("success"), good["log"][-4000:]
    assert all(good["tasks"][f"sensor_readings.{t}"].endswith("success")
               for t in ("stage", "validate", "publish", "refresh_serving", "reconcile"))
    assert good["tasks"]["lift_rides.stage"].endswith("skipped")
    spark.catalog.refreshTable("batch.sensor_readings")
    published = spark.table("batch.sensor_readings").count()
    assert published > 0
    before = serving_snapshot(spark)
    assert any(r for r in before[0]), "serving view is empty after a published run"

    write_bronze(spark, cfg, [("s-hot", 1000.0)], first_offset=10_000)
    bad = run_dag_test(cfg)
    assert bad["state"].endswith("failed")
    assert bad["tasks"]["sensor_readings.stage"].endswith("success")
    assert bad["tasks"]["sensor_readings.validate"].endswith("failed")
    assert not bad["tasks"]["sensor_readings.publish"].endswith("success")
    assert "max_temperature" in bad["log"] and "1000" in bad["log"], "failing expectation not in the task log"
    spark.catalog.refreshTable("batch.sensor_readings")
    assert spark.table("batch.sensor_readings").count() == published
    assert serving_snapshot(spark) == before
