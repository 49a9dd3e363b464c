"""A Delta table written by one Spark process is readable by name from another (shared metastore)."""

from __future__ import annotations

import subprocess
import sys
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from lakehouse.config import TidewaterConfig

pytestmark = pytest.mark.integration

WRITER = """
from lakehouse.config import load_config
from infra.spark_session import get_spark
spark = get_spark(load_config(), "writer")
spark.range(0, 1000).selectExpr("id", "id % 7 AS bucket").write.format("delta").mode("overwrite") \\
    .saveAsTable("bronze.cross_process_probe")
spark.stop()
"""


def test_table_written_in_subprocess_is_readable_by_name(spark: SparkSession, stack: TidewaterConfig) -> None:
    out = subprocess.run([sys.executable, "-c", WRITER], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    spark.catalog.refreshTable("bronze.cross_process_probe")
    row = spark.sql("SELECT count(*) AS n, sum(id) AS s, count(DISTINCT bucket) AS b "
                    "FROM bronze.cross_process_probe").collect()[0]
    assert (row.n, row.s, row.b) == (1000, 499500, 7)
    detail = spark.sql("DESCRIBE DETAIL bronze.cross_process_probe").collect()[0]
    assert detail.format == "delta"
    assert detail.location.startswith("file:" + str(stack.data_dir / "warehouse"))


def test_driver_jvms_map_the_class_data_sharing_archive(spark: SparkSession, stack: TidewaterConfig) -> None:
    """``make test`` runs ``tidewater setup`` first, which builds the archive (``tidewater/jvm_archive.py``):
    a driver JVM that does not map it pays ~5 s more for every start (``infra/jvm_archive.py``)."""
    from pathlib import Path

    from infra.jvm_archive import ARCHIVE_DIR

    pid = spark.sparkContext._jvm.ProcessHandle.current().pid()  # type: ignore[union-attr]
    mapped = {line.split()[-1] for line in Path(f"/proc/{pid}/maps").read_text().splitlines() if line.endswith(".jsa")}
    ours = [m for m in mapped if Path(m).parent == ARCHIVE_DIR and Path(m).name.startswith("driver-")]
    assert ours, f"the driver JVM maps no archive of {ARCHIVE_DIR} ({sorted(mapped)}); run 'tidewater setup'"
