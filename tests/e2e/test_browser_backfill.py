"""A backfill of ``tidewater_batch`` over a range of dates, started from the Airflow UI in a real
browser, completes: the UI's Backfill form (dates typed into its date pickers) previews and creates
the runs, the scheduler runs them one at a time, and the data they find is published. Each run
recomputes what changed since the last published run (docs/airflow.md), so the first publishes the
readings written below and the second finds nothing new and skips with the CLI's reason."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest

from tests.e2e.browser import ARTIFACTS, logged_in_page
from tests.e2e.conftest import BACKFILLABLE
from tests.e2e.test_airflow_rest import api, task_log, token, wait_for_dag, wait_for_run
from tests.integration.test_quality_suites import write_bronze

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from lakehouse.config import TidewaterConfig

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(3600)]  # a loaded 2-core machine: runs take minutes
DAG = "tidewater_batch"
FROM, TO = "2019/01/01", "2025/01/01"  # BACKFILLABLE's times in that range: 2020-02-29 and 2024-02-29
EXPECTED_LOGICAL = ["2020-02-29T00:00:00Z", "2024-02-29T00:00:00Z"]


def pick_date(page: Any, picker_index: int, date: str) -> None:
    """Type ``date`` (YYYY/MM/DD) into the ``picker_index``-th date-time picker of the open dialog."""
    dialog = page.locator("[role=dialog][data-state=open]").first
    dialog.get_by_test_id("datetime-input").nth(picker_index).click()
    field = page.get_by_placeholder("YYYY/MM/DD").last
    field.wait_for(timeout=30_000)
    field.fill(date)
    page.keyboard.press("Escape")  # closes the picker's popover, not the dialog


def backfill_runs(cfg: TidewaterConfig, tok: str) -> list[dict]:
    return list(api(cfg, "GET", f"/api/v2/dags/{DAG}/dagRuns?run_type=backfill&order_by=logical_date", tok)["dag_runs"])


def asset_graph_shows_producer_and_consumer(page: Any, cfg: TidewaterConfig, tok: str) -> None:
    """The Asset ``batch.sensor_readings`` in the UI: its graph links the producing ``publish`` task of
    ``tidewater_batch`` to ``tidewater_quality``, which it schedules (data-aware scheduling)."""
    from infra.services import airflow

    assets = api(cfg, "GET", "/api/v2/assets?name_pattern=batch.sensor_readings", tok)["assets"]
    asset = next(a for a in assets if a["name"] == "batch.sensor_readings")
    assert [d["dag_id"] for d in asset["scheduled_dags"]] == ["tidewater_quality"], asset
    assert {(t["dag_id"], t["task_id"]) for t in asset["producing_tasks"]} == {
        ("tidewater_batch", "sensor_readings.publish")}, asset
    page.goto(f"{airflow.base_url(cfg)}/assets/{asset['id']}", timeout=60_000)
    graph = page.locator(".react-flow").first
    graph.wait_for(timeout=60_000)
    for node in ("tidewater_batch", "batch.sensor_readings", "tidewater_quality"):
        graph.get_by_text(node).first.wait_for(timeout=60_000)
    page.screenshot(path=str(ARTIFACTS / "airflow-asset-graph.png"))


def test_a_backfill_started_in_the_ui_completes(airflow_up: TidewaterConfig, spark: SparkSession) -> None:
    from infra.services import airflow

    cfg = airflow_up
    start = datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(hours=2)
    readings = [(f"s-backfill-{i % 3}", 15.0 + i % 4) for i in range(30)]
    write_bronze(spark, cfg, readings, start=start, first_offset=50_000)  # new since the last publish
    tok = token(cfg)
    wait_for_dag(cfg, tok, DAG)
    dag = api(cfg, "GET", f"/api/v2/dags/{DAG}", tok)
    assert BACKFILLABLE in str(dag.get("timetable_summary")), dag.get("timetable_summary")
    assert not backfill_runs(cfg, tok)
    url = airflow.base_url(cfg)
    with logged_in_page(cfg) as page:
        page.goto(f"{url}/dags/{DAG}", timeout=60_000)
        page.get_by_role("button", name="Trigger").first.click()
        dialog = page.locator("[role=dialog][data-state=open]").first
        dialog.get_by_text("Backfill", exact=True).click()
        dialog.get_by_text("Date Range").wait_for(timeout=30_000)
        pick_date(page, 0, FROM)
        pick_date(page, 1, TO)
        dialog.get_by_text("2 runs will be triggered.").wait_for(timeout=60_000)  # the UI's dry run
        page.screenshot(path=str(ARTIFACTS / "airflow-backfill-form.png"))
        started = time.monotonic()
        dialog.get_by_role("button", name="Run Backfill").click()
        deadline = time.monotonic() + 120
        while len(runs := backfill_runs(cfg, tok)) < 2 and time.monotonic() < deadline:
            time.sleep(2)
        assert [r["logical_date"].replace("+00:00", "Z") for r in runs] == EXPECTED_LOGICAL, runs
        done = [wait_for_run(cfg, tok, DAG, r["dag_run_id"]) for r in runs]
        print(f"\nbackfill of {DAG} from the browser: {[d['state'] for d in done]} in "
              f"{time.monotonic() - started:.1f}s")
        page.goto(f"{url}/dags/{DAG}/runs/{runs[0]['dag_run_id']}", timeout=60_000)
        page.wait_for_selector("text=/success/i", timeout=60_000)
        page.screenshot(path=str(ARTIFACTS / "airflow-backfill-run.png"))
        asset_graph_shows_producer_and_consumer(page, cfg, tok)
    assert [d["state"] for d in done] == ["success", "success"], done
    states = [{t["task_id"]: t["state"] for t in api(
        cfg, "GET", f"/api/v2/dags/{DAG}/dagRuns/{d['dag_run_id']}/taskInstances", tok)["task_instances"]}
        for d in done]
    assert all(states[0][f"sensor_readings.{t}"] == "success" for t in ("stage", "validate", "publish", "reconcile")), \
        states[0]
    assert states[1]["sensor_readings.stage"] == "skipped", states[1]  # nothing new since the first run's publish
    log = task_log(cfg, tok, DAG, done[1]["dag_run_id"], "sensor_readings.stage")
    assert "nothing to recompute" in log, log[-2000:]
    spark.catalog.refreshTable("batch.sensor_readings")
    published = {r[0] for r in spark.table("batch.sensor_readings").select("sensor_id").distinct().collect()}
    assert {f"s-backfill-{i}" for i in range(3)} <= published, published
    deadline = time.monotonic() + 120  # the scheduler marks a backfill completed every 30 s
    while not (backfills := api(cfg, "GET", f"/api/v2/backfills?dag_id={DAG}", tok)["backfills"])[0]["completed_at"] \
            and time.monotonic() < deadline:
        time.sleep(2)
    assert len(backfills) == 1 and backfills[0]["completed_at"], backfills
