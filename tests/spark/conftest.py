"""One plain ``local[1]`` Spark session for the pure-transform tests: no metastore, no Kafka, no Delta.

The transforms here are DataFrame -> DataFrame functions, so they need nothing but Spark SQL; the
stack-backed ``spark`` fixture of ``tests/conftest.py`` (Derby + Kafka per module) stays for the
integration tests. Package scope: one JVM for every module here, ended (session and JVM) when the
package is done so that a later module's Hive/Delta session never starts on this plain one.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@pytest.fixture(scope="package")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkSession]:
    from infra import utc
    from infra.py4j_lookups import DEBUGGING_OFF

    utc.pin_process_to_utc()  # collect() returns local-zone naive datetimes: make that zone UTC
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    leftover = SparkContext._active_spark_context  # getOrCreate would hand back an earlier module's Hive session
    if leftover is not None:
        leftover.stop()
    builder = SparkSession.builder
    for key, value in DEBUGGING_OFF.items():  # fewer py4j calls per DataFrame call
        builder = builder.config(key, value)
    session = (builder.master("local[1]").appName("tidewater-pure-transforms")
               .config("spark.sql.catalogImplementation", "in-memory")
               .config("spark.sql.warehouse.dir", str(tmp_path_factory.mktemp("warehouse")))
               .config("spark.driver.extraJavaOptions", " ".join([utc.JVM_FLAG, *_jvm_options()]))
               .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.sql.session.timeZone", "UTC").config("spark.sql.shuffle.partitions", "1")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .getOrCreate())
    session.sparkContext.setLogLevel("WARN")
    try:
        yield session
    finally:
        session.stop()
        _end_plain_jvm()


def _end_plain_jvm() -> None:
    """End this package's JVM too: its class path has no Delta jars, and a later module's Delta session in
    the same pytest process would otherwise start on it (``DeltaCatalog`` not found, as the JDBC tests
    found when they ran after this package). PySpark's JVM exits when its stdin closes; the next session launches a new one."""
    import subprocess

    from pyspark import SparkContext

    gateway = SparkContext._gateway
    if gateway is None:
        return
    proc = getattr(gateway, "proc", None)
    gateway.shutdown()
    if proc is not None:
        proc.stdin.close()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    SparkContext._gateway = None
    SparkContext._jvm = None


def _jvm_options() -> list[str]:
    from lakehouse.config_jvm_flags import jvm_flags

    return jvm_flags(os.environ.get("TIDEWATER_JVM_OPTIONS", ""))
