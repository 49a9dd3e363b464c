"""Real browser: headless Debian Chromium driven by Playwright logs in to the local Airflow UI,
sees the five Tidewater DAGs, triggers ``tidewater_replay`` from its params form and sees the run
succeed. Screenshots go to ``tests/artifacts/`` (git-ignored)."""

from __future__ import annotations

import subprocess
import sys
import time
from typing import TYPE_CHECKING

import pytest

from tests.e2e.browser import ARTIFACTS, logged_in_page
from tests.e2e.test_airflow_rest import api, token, wait_for_dag, wait_for_run

if TYPE_CHECKING:
    from lakehouse.config import TidewaterConfig

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(3600)]  # a loaded 2-core machine: runs take minutes
DAG_IDS = ("tidewater_batch", "tidewater_speed", "tidewater_replay", "tidewater_quality", "tidewater_maintenance")


def test_login_see_dags_trigger_replay(airflow_up: TidewaterConfig) -> None:
    from infra.services import airflow
    from tidewater.commands.stack import create_topics

    cfg = airflow_up
    create_topics(cfg)  # a history to replay
    subprocess.run([sys.executable, "-m", "tidewater.cli", "produce", "sensor_readings", "--count", "200",
                    "--rate", "0"], check=True, capture_output=True, timeout=300)
    url = airflow.base_url(cfg)
    tok = token(cfg)
    for dag_id in DAG_IDS:
        wait_for_dag(cfg, tok, dag_id)
    with logged_in_page(cfg) as page:
        page.goto(f"{url}/dags?tags=tidewater", timeout=60_000)
        for dag_id in DAG_IDS:
            page.wait_for_selector(f"text={dag_id}", timeout=60_000)
        page.screenshot(path=str(ARTIFACTS / "airflow-dags.png"))

        page.goto(f"{url}/dags/tidewater_replay", timeout=60_000)
        page.get_by_role("button", name="Trigger").first.click()
        dialog = page.locator("[role=dialog][data-state=open]")
        dialog.get_by_text("Run Parameters").wait_for(timeout=30_000)
        assert "sensor_readings" in dialog.inner_text()
        page.screenshot(path=str(ARTIFACTS / "airflow-replay-form.png"))
        started = time.monotonic()
        dialog.get_by_role("button", name="Trigger").last.click()
        page.wait_for_timeout(3000)

        runs = api(cfg, "GET", "/api/v2/dags/tidewater_replay/dagRuns?order_by=-start_date&limit=1", tok)["dag_runs"]
        assert runs and runs[0]["run_type"] == "manual"
        assert runs[0]["conf"].get("pipeline") == "sensor_readings" and runs[0]["conf"].get("rollback") is False
        done = wait_for_run(cfg, tok, "tidewater_replay", runs[0]["dag_run_id"])
        print(f"\ntidewater_replay from the browser: {done['state']} in {time.monotonic() - started:.1f}s")
        page.goto(f"{url}/dags/tidewater_replay/runs/{runs[0]['dag_run_id']}", timeout=60_000)
        page.wait_for_selector("text=/success/i", timeout=60_000)
        page.screenshot(path=str(ARTIFACTS / "airflow-replay-success.png"))
    assert done["state"] == "success"
