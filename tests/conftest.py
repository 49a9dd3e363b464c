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
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tidewater.isolated_stack import ONE_WARM_UP_ROUND, SHORT_LIVED_JVM_OPTIONS

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from lakehouse.config import TidewaterConfig

REPO = Path(__file__).resolve().parent.parent
# C1 only (short-lived JVMs); Tidewater adds a tiered JVM's code cache size (lakehouse.config_jvm_flags).
# The parallel collector: the same quick-benchmark work in about 4% less time than G1 (two
# runs each); it has no concurrent marking threads to share the 2 cores with.
TEST_JVM_OPTIONS = SHORT_LIVED_JVM_OPTIONS
# one warm-up round of each kind per speed job (default 4 and 3): the tests measure no latency, and
# start dozens of speed jobs; one round of each still runs every warm-up path
TEST_WARM_UP_ROUNDS = ONE_WARM_UP_ROUND


@contextlib.contextmanager
def isolated_env(extra: dict[str, str] | None = None) -> Iterator[dict[str, str]]:
    """A temp data folder and free ports (a block of them for Kafka: up to 3 brokers), exported as
    ``TIDEWATER_*`` while the block runs, with ``extra`` variables (e.g. ``TIDEWATER_KAFKA_BROKERS``)."""
    from tidewater.isolated_stack import isolated_env as tidewater_isolated_env

    keep = os.environ.get("TIDEWATER_KEEP_TEST_DATA") == "1"
    with tidewater_isolated_env("tidewater-test-", extra=extra, keep=keep) as env:
        yield env


@contextlib.contextmanager
def running_stack(cfg: TidewaterConfig) -> Iterator[TidewaterConfig]:
    """Real metastore + Kafka broker; stops them (and any speed job) even when a start fails."""
    from tidewater.isolated_stack import running_stack as tidewater_running_stack

    with tidewater_running_stack(cfg) as running:
        yield running


@contextlib.contextmanager
def spark_session(cfg: TidewaterConfig) -> Iterator[SparkSession]:
    from infra.spark_session import get_spark

    _forget_exited_test_jvm()
    session = get_spark(cfg, "tidewater-tests")
    try:
        yield session
    finally:
        session.stop()
        _forget_exited_test_jvm()


def _forget_exited_test_jvm() -> None:
    """The test process's Spark JVM outlives each module's session; if it has exited (a CI run once
    lost it during the e2e package, and every later module failed with ``Connection refused``), say
    how it ended, with the JVM's crash file if it wrote one, and let the next session start a new one."""
    import glob
    import warnings

    from pyspark import SparkContext

    gateway = SparkContext._gateway
    proc = getattr(gateway, "proc", None)
    if proc is None or proc.poll() is None:
        return
    crash_files = sorted(glob.glob(str(REPO / "hs_err_pid*.log")))
    warnings.warn(f"the tests' Spark JVM (pid {proc.pid}) exited with {proc.returncode} "
                  f"(negative: killed by that signal); crash files: {crash_files or 'none'}; starting a new one",
                  stacklevel=2)
    SparkContext._gateway = None
    SparkContext._jvm = None


@pytest.fixture(scope="session", autouse=True)
def c1_jit_for_test_jvms() -> Iterator[None]:
    """Every JVM the tests start (stacks, CLI, jobs, the quick benchmark's) compiles with C1 only:
    they live minutes, where C2's compile threads cost more CPU than they give back (measured on
    2 cores: about half the JVM CPU of a small Delta workload). C1 alone also shrinks the JIT's code
    cache to 48 MB, which a long-running driver (a speed job, the Thrift server) filled in CI runs:
    ``VirtualMachineError: Out of space in CodeCache for adapters`` in a task, and Spark stopped its
    context; ``lakehouse.config_jvm_flags`` keeps the tiered size. They collect with the parallel
    collector (Kafka's JVM then leaves out its own G1 choice). ``TIDEWATER_JVM_OPTIONS`` overrides."""
    with _env_defaults({"TIDEWATER_JVM_OPTIONS": TEST_JVM_OPTIONS}):
        yield


@pytest.fixture(scope="session", autouse=True)
def short_warm_up_for_test_jobs() -> Iterator[None]:
    """``TEST_WARM_UP_ROUNDS`` for every speed job the tests start; the environment overrides."""
    with _env_defaults(TEST_WARM_UP_ROUNDS):
        yield


@contextlib.contextmanager
def _env_defaults(defaults: dict[str, str]) -> Iterator[None]:
    """Set each variable not already set, for the block's duration."""
    added = [name for name in defaults if name not in os.environ]
    os.environ.update({name: defaults[name] for name in added})
    try:
        yield
    finally:
        for name in added:
            os.environ.pop(name, None)


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
def cfg(tw_env: dict[str, str]) -> TidewaterConfig:
    from lakehouse.config import load_config

    return load_config()


@pytest.fixture(scope="module")
def stack(cfg: TidewaterConfig) -> Iterator[TidewaterConfig]:
    """Real metastore + Kafka broker for one test module."""
    with running_stack(cfg) as running:
        yield running


@pytest.fixture(scope="module")
def spark(stack: TidewaterConfig) -> Iterator[SparkSession]:
    with spark_session(stack) as session:
        yield session
