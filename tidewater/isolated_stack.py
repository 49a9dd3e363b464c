"""An isolated local stack for tests and benchmarks: own temp data folder, own free ports, real services.

``isolated_env`` exports ``TIDEWATER_*`` variables (data folder, every service port) so that every
subprocess (CLI, detached jobs, Airflow) sees the same stack, and restores them on exit;
``running_stack`` starts the real Derby metastore and Kafka broker and, even when a start fails,
stops them and anything the run started (speed and replay jobs, the Thrift server, the job service).
The test fixtures (tests/conftest.py) and the benchmark harness (benchmarks/stack.py) both use it.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from infra import job_service
from infra.jars import fetch_jars
from infra.process_env import exported
from infra.services import kafka_broker, metastore, thrift_server
from infra.services.ports import free_port, free_port_block
from spark_jobs.speed.control import stop_all_speed

if TYPE_CHECKING:
    from lakehouse.config import TidewaterConfig

REPO = Path(__file__).resolve().parent.parent
PORT_VARS = ("TIDEWATER_METASTORE_PORT", "TIDEWATER_THRIFT_PORT", "TIDEWATER_AIRFLOW_PORT", "TIDEWATER_JOB_SERVICE_PORT")
KAFKA_PORT_BLOCK = 6  # up to 3 brokers: client ports base, base+2, base+4; controllers base+1, base+3, base+5
# For stacks whose JVMs live minutes and measure no latency (the tests, ``make chaos``): C1 only and the
# parallel collector (why: tests/conftest.py ``c1_jit_for_test_jvms``), and one warm-up round of each
# kind per speed job (default 4 and 3): every warm-up path still runs, each start 4-40 s shorter
SHORT_LIVED_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseParallelGC"
ONE_WARM_UP_ROUND = {"TIDEWATER_WARM_UP_PLAN_ROUNDS": "1", "TIDEWATER_WARM_UP_RECORD_ROUNDS": "1"}


@contextmanager
def isolated_env(prefix: str, extra: dict[str, str] | None = None, keep: bool = False) -> Iterator[dict[str, str]]:
    """A temp data folder and free ports, exported as ``TIDEWATER_*`` while the block runs; the folder
    is deleted afterwards unless ``keep``."""
    data = Path(tempfile.mkdtemp(prefix=prefix))
    kafka = free_port_block(KAFKA_PORT_BLOCK)  # kafka.brokers (config) <= 3 fits; see KafkaConfig.node_ports
    env = {"TIDEWATER_CONFIG": str(REPO / "tidewater.yml"), "TIDEWATER_DATA_DIR": str(data),
           "TIDEWATER_KAFKA_PORT": str(kafka), "TIDEWATER_KAFKA_CONTROLLER_PORT": str(kafka + 1),
           **{var: str(_port_outside(kafka)) for var in PORT_VARS}, **(extra or {})}
    try:
        with exported(env):
            yield env
    finally:
        if not keep:
            shutil.rmtree(data, ignore_errors=True)


def _port_outside(kafka: int) -> int:
    port = free_port()
    while kafka <= port < kafka + KAFKA_PORT_BLOCK:
        port = free_port()
    return port


@contextmanager
def running_stack(cfg: TidewaterConfig) -> Iterator[TidewaterConfig]:
    """Real metastore + Kafka broker; stops them (and any speed job, Thrift server or job service) even
    when a start fails. The job service is not started here: a module that needs it starts it."""
    fetch_jars()
    try:
        metastore.start(cfg)
        kafka_broker.start(cfg)
        yield cfg
    finally:
        stop_all_speed(cfg)
        job_service.stop(cfg)
        thrift_server.stop(cfg)
        kafka_broker.stop(cfg)
        metastore.stop(cfg)
