"""One plain ``local[1]`` Spark session for the pure-transform tests: no metastore, no Kafka, no Delta.

The transforms here are DataFrame -> DataFrame functions, so they need nothing but Spark SQL; the
stack-backed ``spark`` fixture of ``tests/conftest.py`` (Derby + Kafka per module) stays for the
integration tests. Package scope: one JVM for every module here, stopped when the package is done
so that ``getOrCreate`` in a later module's Hive/Delta session never returns this plain one.
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
    from lakehouse import utc

    utc.pin_process_to_utc()  # collect() returns local-zone naive datetimes: make that zone UTC
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    leftover = SparkContext._active_spark_context  # getOrCreate would hand back an earlier module's Hive session
    if leftover is not None:
        leftover.stop()
    session = (SparkSession.builder.master("local[1]").appName("tidewater-pure-transforms")
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


def _jvm_options() -> list[str]:
    from lakehouse.jvm_options import jvm_flags

    return jvm_flags(os.environ.get("TIDEWATER_JVM_OPTIONS", ""))
