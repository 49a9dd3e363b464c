"""A Delta table written by one Spark process is readable by name from another (shared metastore)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
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
    """``make test`` runs ``tidewater setup`` first, which builds the archive (``tidewater/class_data_archive_build.py``):
    a driver JVM that does not map it pays ~5 s more for every start (``infra/class_data_archive.py``)."""
    from pathlib import Path

    from infra.class_data_archive import ARCHIVE_DIR

    pid = spark.sparkContext._jvm.ProcessHandle.current().pid()  # type: ignore[union-attr]
    mapped = {line.split()[-1] for line in Path(f"/proc/{pid}/maps").read_text().splitlines() if line.endswith(".jsa")}
    ours = [m for m in mapped if Path(m).parent == ARCHIVE_DIR and Path(m).name.startswith("driver-")]
    assert ours, f"the driver JVM maps no archive of {ARCHIVE_DIR} ({sorted(mapped)}); run 'tidewater setup'"


def test_tagged_appends_go_to_the_catalog_tables_log_and_follow_a_drop(spark: SparkSession, stack: TidewaterConfig) -> None:
    """The stream's appends write by location (no metastore lookup per write): the commit lands in the
    catalog table's own log with its tag, and once the table is dropped the next append goes by name
    again (recreating the table in the catalog) instead of writing a table the catalog does not know."""
    from spark_jobs.io.delta_io import table_log_dir, tagged_append

    name = "bronze.tagged_append_probe"
    spark.range(3).write.format("delta").saveAsTable(name)
    location = spark.sql(f"DESCRIBE DETAIL {name}").collect()[0].location
    log_dir = table_log_dir(spark, name)
    assert log_dir is not None and location.endswith(str(log_dir.parent))
    tagged_append(spark.range(3, 5), name, "lineage-x/7")
    last = spark.sql(f"DESCRIBE HISTORY {name} LIMIT 1").collect()[0]
    assert (last.operation, last.userMetadata) == ("WRITE", "lineage-x/7")
    assert spark.table(name).count() == 5
    spark.sql(f"DROP TABLE {name}")
    assert not log_dir.is_dir() and table_log_dir(spark, name) is None  # a managed table's files go with it
    tagged_append(spark.range(2), name, "lineage-y/0")
    assert spark.catalog.tableExists(name) and spark.table(name).count() == 2


def test_dataframe_calls_send_no_call_sites_and_find_pyspark_classes_by_full_name(spark: SparkSession) -> None:
    """``infra.py4j_lookups``: a session from ``get_spark`` sends no Python call site per PySpark call,
    and py4j finds the classes PySpark names by their simple names among its single imports (no failed
    class load per lookup)."""
    from py4j.java_gateway import JavaClass
    from pyspark.sql import functions as F

    from infra.py4j_lookups import SIMPLE_NAMES

    client = spark.sparkContext._gateway._gateway_client  # type: ignore[union-attr]
    sent: list[str] = []
    send = client.send_command

    def counted(command: str, *args: object, **kwargs: object) -> object:
        sent.append(command)
        return send(command, *args, **kwargs)

    client.send_command = counted
    try:
        df = spark.range(3).select(F.col("id").alias("a"), (F.col("id") + 1).alias("b")).select("a", "b")
    finally:
        del client.send_command  # the instance attribute goes; the class's method is back
    assert sorted(r.b for r in df.collect()) == [1, 2, 3]
    assert sent, "the select sent no py4j command at all: this test no longer sees the gateway's calls"
    assert not [c for c in sent if "PySparkCurrentOrigin" in c]
    jvm = spark.sparkContext._jvm
    for full_name in SIMPLE_NAMES:  # each a real class, which its simple name now names (py4j: single imports first)
        simple = full_name.rsplit(".", 1)[1]
        assert isinstance(getattr(jvm, full_name), JavaClass), f"{full_name} is not a class of this JVM"
        assert getattr(jvm, simple)._fqn == full_name


def test_local_delta_writes_and_stream_commits_start_no_process(spark: SparkSession, tmp_path: Path) -> None:
    """``infra.local_fs``: ``file:`` paths go to Tidewater's local file system, which sets permissions and
    answers ``getFileLinkStatus`` without a ``chmod``/``readlink`` process. JFR's ``jdk.ProcessStart``
    events of this JVM, over Delta appends and a checkpointed micro-batch, count none but the probe's own."""
    from infra import local_fs
    from infra.jvm import require_java

    jvm, conf = spark._jvm, spark._jsc.hadoopConfiguration()
    assert jvm is not None
    folder = jvm.org.apache.hadoop.fs.Path(tmp_path.as_uri())
    fs = folder.getFileSystem(conf)
    assert fs.getClass().getName() == local_fs.FILE_SYSTEM
    file_context = jvm.org.apache.hadoop.fs.FileContext.getFileContext(folder.toUri(), conf)
    assert file_context.getDefaultFileSystem().getClass().getName() == local_fs.FILE_CONTEXT
    bin_dir = Path(require_java()).resolve().parent
    pid, recording = str(jvm.java.lang.ProcessHandle.current().pid()), tmp_path / "processes.jfr"
    jcmd = [str(bin_dir / "jcmd"), pid]
    subprocess.run([*jcmd, "JFR.start", "name=processes", "settings=default", f"filename={recording}"], check=True)
    try:
        table, out = str(tmp_path / "table"), str(tmp_path / "copy")
        spark.range(100).write.format("delta").save(table)
        spark.range(100, 200).write.format("delta").mode("append").save(table)
        query = (spark.readStream.format("delta").load(table).writeStream.format("delta")
                 .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(availableNow=True).start(out))
        query.awaitTermination()
        jvm.java.lang.Runtime.getRuntime().exec("true").waitFor()  # the one process the recording must show
    finally:
        subprocess.run([*jcmd, "JFR.stop", "name=processes"], check=True, capture_output=True)
    events = subprocess.run([str(bin_dir / "jfr"), "print", "--events", "jdk.ProcessStart", str(recording)],
                            check=True, capture_output=True, text=True).stdout
    assert spark.read.format("delta").load(out).count() == 200
    assert events.count("jdk.ProcessStart") == 1 and 'command = "true"' in events, events[:3000]
    probe = tmp_path / "mode-probe"
    probe.write_text("x")
    fs.setPermission(jvm.org.apache.hadoop.fs.Path(probe.as_uri()), jvm.org.apache.hadoop.fs.permission.FsPermission("640"))
    assert probe.stat().st_mode & 0o7777 == 0o640
