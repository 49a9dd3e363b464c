"""The e2e package shares ONE isolated stack, Spark session and Airflow across its modules: the
REST tests and the browser test drive the same Airflow, as a user's UI and API calls would.
Only the runs the tests trigger happen: the speed and maintenance schedules are set to manual (quality
stays on the batch Assets, so a triggered publish schedules it), and the batch DAG's to ``BACKFILLABLE``.

The shared stack runs on PostgreSQL (``airflow.database`` and ``metastore.backend``), so every e2e module
also exercises the production databases; test_postgres_backends.py proves they are really used. The
rest of the suite runs on the defaults (Derby, SQLite)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from tests.conftest import isolated_env, running_stack, spark_session

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from lakehouse.config import TidewaterConfig

# tidewater_quality keeps its data-aware schedule (batch Assets): the REST module checks a publish triggers it
SCHEDULE_KNOBS = [f"TIDEWATER_AIRFLOW_{dag}_SCHEDULE" for dag in ("SPEED", "MAINTENANCE")]
# The batch DAG's schedule here: a cron schedule, so the UI offers backfills of it (a manual-only DAG has
# none), that never fires by itself while the tests run. Its last time (2024-02-29) is before the DAG's
# start_date and its next is 2028-02-29, so catchup=False creates no run at unpause either.
BACKFILLABLE = "0 0 29 2 *"
# The modules share sensor_readings. The Superset module needs it publishable, so it runs first: the REST
# module leaves a 1000 degree reading in bronze that (by design) blocks every later batch publish, and
# the browser module triggers a Kappa replay that switches the pipeline's speed version.
# The backfill module publishes good data too, so it runs second.
FIRST = ("test_superset_dashboard.py", "test_browser_backfill.py")
POSTGRES = {"TIDEWATER_METASTORE_BACKEND": "postgres", "TIDEWATER_AIRFLOW_DATABASE": "postgres"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: FIRST.index(item.path.name) if item.path.parent.name == "e2e" and item.path.name in FIRST
               else len(FIRST))


@pytest.fixture(scope="package")
def tw_env() -> Iterator[dict[str, str]]:
    from infra.services.ports import free_port

    with isolated_env({**POSTGRES, "TIDEWATER_POSTGRES_PORT": str(free_port())}) as env:
        yield env


@pytest.fixture(scope="package")
def cfg(tw_env: dict[str, str]) -> TidewaterConfig:
    from lakehouse.config import load_config

    return load_config()


@pytest.fixture(scope="package")
def stack(cfg: TidewaterConfig) -> Iterator[TidewaterConfig]:
    """PostgreSQL first (as ``tidewater up`` starts it), then the metastore (its schema) and Kafka."""
    from infra.services import postgres

    started = time.monotonic()
    try:
        postgres.start(cfg)
        print(f"\nPostgreSQL ready in {time.monotonic() - started:.1f}s")
        with running_stack(cfg) as running:
            print(f"metastore schema and Kafka ready after {time.monotonic() - started:.1f}s")
            yield running
    finally:
        postgres.stop(cfg)


@pytest.fixture(scope="package")
def spark(stack: TidewaterConfig) -> Iterator[SparkSession]:
    with spark_session(stack) as session:
        yield session


@pytest.fixture(scope="package")
def airflow_up(stack: TidewaterConfig) -> Iterator[TidewaterConfig]:
    """The job service and Airflow started by their service modules, as ``tidewater up`` does (DAG tasks
    run their commands in the warm job service); always stopped at the end."""
    from infra import job_service
    from infra.services import airflow

    for knob in SCHEDULE_KNOBS:
        os.environ[knob] = "none"
    os.environ["TIDEWATER_AIRFLOW_BATCH_SCHEDULE"] = BACKFILLABLE
    started = time.monotonic()
    try:
        job_service.start(stack)
        airflow.start(stack)
        print(f"\nAirflow healthy in {time.monotonic() - started:.1f}s: {airflow.status(stack)['components']}")
        yield stack
    finally:
        airflow.stop(stack)
        job_service.stop(stack)
        for knob in [*SCHEDULE_KNOBS, "TIDEWATER_AIRFLOW_BATCH_SCHEDULE"]:
            os.environ.pop(knob, None)
    assert not any(airflow._process(stack, c).running() for c in airflow.COMPONENTS)
