"""Shared fixtures: an isolated local stack (own data folder, own free ports) per test MODULE.

``stack`` starts the real Derby metastore and the real Kafka broker (KRaft) for one test module,
so modules never see each other's tables or topics; ``spark`` is the Spark session built by
Tidewater's own factory against that stack. Environment variables are set so that subprocesses
(CLI, detached jobs, Airflow) see the same stack. ``tests/e2e/conftest.py`` shares one stack (and
one Airflow) across the e2e package with the same helpers.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent


@contextlib.contextmanager
def isolated_env() -> Iterator[dict[str, str]]:
    """A temp data folder and free ports, exported as ``TIDEWATER_*`` while the block runs."""
    from infra.services.process import free_port

    data = Path(tempfile.mkdtemp(prefix="tidewater-test-"))
    env = {
        "TIDEWATER_CONFIG": str(REPO / "tidewater.yml"),
        "TIDEWATER_DATA_DIR": str(data),
        "TIDEWATER_KAFKA_PORT": str(free_port()),
        "TIDEWATER_KAFKA_CONTROLLER_PORT": str(free_port()),
        "TIDEWATER_METASTORE_PORT": str(free_port()),
        "TIDEWATER_THRIFT_PORT": str(free_port()),
        "TIDEWATER_AIRFLOW_PORT": str(free_port()),
    }
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield env
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        if os.environ.get("TIDEWATER_KEEP_TEST_DATA") != "1":
            shutil.rmtree(data, ignore_errors=True)


@contextlib.contextmanager
def running_stack(cfg: Any) -> Iterator[Any]:
    """Real metastore + Kafka broker; stops them (and any speed job) even when a start fails."""
    from infra.jars import fetch_jars
    from infra.services import kafka_broker, metastore
    from spark_jobs.speed_control import stop_all_speed

    fetch_jars()
    try:
        metastore.start(cfg)
        kafka_broker.start(cfg)
        yield cfg
    finally:
        stop_all_speed(cfg)
        kafka_broker.stop(cfg)
        metastore.stop(cfg)


@contextlib.contextmanager
def spark_session(cfg: Any) -> Iterator[Any]:
    from infra.spark_session import get_spark

    session = get_spark(cfg, "tidewater-tests")
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture(scope="session", autouse=True)
def c1_jit_for_test_jvms() -> Iterator[None]:
    """Every JVM the tests start (stacks, CLI, jobs, the quick benchmark's) compiles with C1 only:
    they live minutes, where C2's compile threads cost more CPU than they give back (measured on
    2 cores: about half the JVM CPU of a small Delta workload). ``TIDEWATER_JVM_OPTIONS`` overrides."""
    saved = os.environ.get("TIDEWATER_JVM_OPTIONS")
    os.environ["TIDEWATER_JVM_OPTIONS"] = saved if saved is not None else "-XX:TieredStopAtLevel=1"
    yield
    if saved is None:
        os.environ.pop("TIDEWATER_JVM_OPTIONS", None)


@pytest.fixture(scope="module", autouse=True)
def host_time_zone(request: pytest.FixtureRequest) -> Iterator[str]:
    """The host time zone a module runs under: its ``HOST_TZ`` (default UTC). Tidewater must give
    the same answers in any zone (PySpark hands out local-zone datetimes), so the modules that touch
    time run under zones east and west of UTC. Subprocesses (CLI, speed job) inherit the zone."""
    import time

    zone = getattr(request.module, "HOST_TZ", "UTC")
    saved = os.environ.get("TZ")
    os.environ["TZ"] = zone
    time.tzset()
    yield zone
    if saved is None:
        os.environ.pop("TZ", None)
    else:
        os.environ["TZ"] = saved
    time.tzset()


@pytest.fixture(scope="module")
def tw_env() -> Iterator[dict[str, str]]:
    with isolated_env() as env:
        yield env


@pytest.fixture(scope="module")
def cfg(tw_env: dict[str, str]):  # type: ignore[no-untyped-def]
    from lakehouse.config import load_config

    return load_config()


@pytest.fixture(scope="module")
def stack(cfg):  # type: ignore[no-untyped-def]
    """Real metastore + Kafka broker for one test module."""
    with running_stack(cfg) as running:
        yield running


@pytest.fixture(scope="module")
def spark(stack):  # type: ignore[no-untyped-def]
    with spark_session(stack) as session:
        yield session
