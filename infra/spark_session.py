"""The one Spark session factory every Tidewater job, test and CLI command uses.

It wires in Delta Lake (extension + catalog), the Maven-fetched jars through ``spark.jars`` (no
Ivy at run time), the shared Hive metastore (on the Derby network server, or PostgreSQL with
``metastore.backend: postgres``), and the warehouse under the data folder, so
``bronze.sensor_readings`` means the same table in every process. The metastore password never goes
on the driver's command line: ``get_spark`` sets it as a JVM system property once the JVM runs.
``spark.master`` (``TIDEWATER_SPARK_MASTER``) sends every job to a standalone/k8s master instead.

In the job service (infra/job_service/server.py) each command's thread is bound to its own
``spark.newSession()`` (``bound_session``): ``get_spark`` then returns that session, so a command
runs the same code in the service as in a process of its own, on the service's warm driver.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from infra import utc
from infra.class_data_archive import java_options
from infra.jvm import require_java
from infra.jvm_scratch import scratch_folder, scratch_settings, sweep
from infra.local_fs import no_fork_settings
from infra.py4j_lookups import DEBUGGING_OFF, import_pyspark_classes
from infra.services import metastore
from lakehouse import naming
from lakehouse.config import TidewaterConfig
from lakehouse.config_jvm_flags import driver_flags
from lakehouse.errors import ServiceError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def spark_jars() -> list[str]:
    folder = naming.jars_dir("spark")
    jars = sorted(str(p) for p in folder.glob("*.jar"))
    if not any("delta-spark" in j for j in jars) or not any("spark-sql-kafka" in j for j in jars):
        raise ServiceError(f"spark: Delta/Kafka jars missing in {folder}; run 'make setup' to fetch them with Maven")
    return jars


PASSWORD_KEY = "spark.hadoop.javax.jdo.option.ConnectionPassword"
CODEGEN_CACHE_ENTRIES = 2000  # compiled classes Spark keeps (its default, 100, is less than a micro-batch uses)
LOG4J2_CONFIG = Path(__file__).resolve().parents[1] / "infra" / "log4j2.properties"
FAIR_POOLS = LOG4J2_CONFIG.with_name("fairscheduler.xml")


def metastore_drivers(configured: str) -> list[str]:
    """Every backend's JDBC driver found in the cache, in one fixed order whatever the configuration (a
    jar configured from elsewhere first): a driver JVM outlives one configuration (the tests' JVM serves
    modules on Derby and on PostgreSQL), its class path is fixed when it starts, and one class path for
    both backends lets both map the same class-data-sharing archive (``infra.class_data_archive``; JDBC picks
    the driver by URL, not by class-path order)."""
    found = [str(jar) for pattern in ("derbyclient-*.jar", "postgresql-*.jar")
             for jar in sorted(naming.jars_dir("metastore").glob(pattern))[-1:]]
    return found if configured in found else [configured, *found]


def session_conf(cfg: TidewaterConfig, app_name: str, role: str = "driver") -> dict[str, str]:
    """All Spark settings as a dict (also used to build spark-submit command lines). ``role``: which
    class-data-sharing archive the driver JVM maps (``infra.class_data_archive``; the Thrift server has its own)."""
    db = metastore.connection(cfg)  # Derby client or PostgreSQL JDBC driver, URL, user, password
    hive_extras = sorted(naming.jars_dir("hive").glob("hive-llap-common-*.jar"))  # infra/maven/hive/pom.xml
    if not db["jar"] or not hive_extras:
        raise ServiceError("spark: metastore JDBC driver or hive-llap-common jar missing in .cache/jars; run 'make setup'")
    warehouse = naming.warehouse_dir(cfg)
    own_jars, local_fs = no_fork_settings(cfg.spark.master)  # infra.local_fs: no process per local file
    class_path = [*metastore_drivers(db["jar"]), str(hive_extras[0]), *map(str, own_jars)]
    jars = spark_jars()
    return {
        "spark.app.name": app_name,
        "spark.master": cfg.spark.master,
        "spark.jars": ",".join(jars),
        "spark.driver.extraClassPath": os.pathsep.join(class_path),
        "spark.driver.extraJavaOptions": " ".join([f"-Dlog4j2.configurationFile=file:{LOG4J2_CONFIG}",
                                                   utc.JVM_FLAG, *(driver_flags(cfg.jvm_flags) if role == "driver"
                                                                   else cfg.jvm_flags),
                                                   *java_options(role, require_java(), [*class_path, *jars])]),
        "spark.executor.extraJavaOptions": utc.JVM_FLAG,
        "spark.driver.memory": cfg.spark.driver_memory,
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        "spark.sql.catalogImplementation": "hive",
        "spark.sql.warehouse.dir": str(warehouse),
        "spark.hadoop.javax.jdo.option.ConnectionURL": db["url"],
        "spark.hadoop.javax.jdo.option.ConnectionDriverName": db["driver"],
        "spark.hadoop.javax.jdo.option.ConnectionUserName": db["user"],
        PASSWORD_KEY: db["password"],  # get_spark: not on the command line; the Thrift server: a 0600 file
        "spark.hadoop.datanucleus.schema.autoCreateAll": "true",
        "spark.hadoop.hive.metastore.schema.verification": "false",
        "spark.sql.hive.metastore.version": "2.3.10",
        "spark.sql.shuffle.partitions": str(cfg.spark.shuffle_partitions),
        # Delta rebuilds a table's snapshot with 50 tasks by default: on a few cores that is most of
        # the cost of every small commit (measured: half the CPU of 15 appends + 5 MERGEs)
        "spark.databricks.delta.snapshotPartitions": str(cfg.spark.shuffle_partitions),
        # over any table's own property (an older data folder's batch tables have it on): a compaction after
        # a commit rewrites the files it marked, on the commit's critical path (contracts.MERGED)
        "spark.databricks.delta.autoCompact.enabled": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.streaming.stateStore.providerClass":
            "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
        # a state store commit writes the micro-batch's changes (a changelog), not a snapshot of the state:
        # snapshots are taken in the background; an existing checkpoint is read either way
        "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
        "spark.databricks.delta.schema.autoMerge.enabled": "false",
        "spark.sql.adaptive.enabled": "true",
        # toPandas (the quality gate's in-memory frames) through Arrow: 16,636 staged windows in 0.1-0.4 s,
        # not 0.5 s of rows converted one by one in Python; a type Arrow lacks falls back
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        # Spark keeps 100 compiled classes by default, keyed by code AND class loader (the driver's and
        # the executor's count apart); a speed job's micro-batches use more, so each evicted and compiled
        # again code it had compiled before: 56 of a speed job's first 192 compilations
        "spark.sql.codegen.cache.maxEntries": str(CODEGEN_CACHE_ENTRIES),
        # work that may wait (a stream's compaction) runs in a pool whose tasks yield to everything else
        "spark.scheduler.mode": "FAIR",
        "spark.scheduler.allocation.file": str(FAIR_POOLS),
        **DEBUGGING_OFF,  # fewer py4j calls per DataFrame call (infra.py4j_lookups)
        **local_fs,
    }


_bound = threading.local()


@contextlib.contextmanager
def bound_session(session: SparkSession) -> Iterator[SparkSession]:
    """``get_spark`` in this thread returns ``session`` (also the JVM thread's active session)."""
    from pyspark.sql import SparkSession as PySparkSession

    _bound.session = session
    jvm_session = PySparkSession._get_j_spark_session_class(session._jvm)
    jvm_session.setActiveSession(session._jsparkSession)
    try:
        yield session
    finally:
        _bound.session = None
        jvm_session.clearActiveSession()


def get_spark(cfg: TidewaterConfig, app_name: str = "tidewater", extra: dict[str, str] | None = None) -> SparkSession:
    """Build (or reuse) the session; java must be found and the metastore running (``tidewater up``).
    In a thread under ``bound_session``: that session, with ``extra`` set on its own SQL conf."""
    bound = getattr(_bound, "session", None)
    if bound is None:
        require_java()  # before the launcher: without it PySpark fails with a traceback
    if not metastore.healthy(cfg):
        raise ServiceError(
            f"spark: the metastore is not reachable at {metastore.address(cfg)}; "
            "run 'tidewater up' first"
        )
    if bound is not None:
        for key, value in (extra or {}).items():
            bound.conf.set(key, value)
        bound.sparkContext.setJobDescription(app_name)
        return bound
    driver_process_env()
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    conf = {**session_conf(cfg, app_name), **(extra or {})}
    conf.update(_own_scratch(cfg, conf["spark.driver.extraJavaOptions"]))
    _launch_without_password(conf)
    import_pyspark_classes(SparkContext._jvm)
    builder = SparkSession.builder
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.enableHiveSupport().getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    _quiet_query_context_loggers()
    ensure_databases(spark)
    return spark


def driver_process_env() -> None:
    """The environment a Spark driver needs in this process, which the processes it starts inherit: the
    UTC zone (collect() returns local-zone naive datetimes), the loopback address and this Python. Set by
    ``get_spark``, or first, in the main thread, when a driver starts on another thread while this one
    starts jobs (``spark_jobs.replay.job``): a child then inherits the same environment either way."""
    utc.pin_process_to_utc()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", _python())


def _quiet_query_context_loggers() -> None:
    """PySpark 4 logs every analysis error that has a query context (``tidewater sql`` with a misspelt
    column) as a JSON record with the JVM's stack, on stderr; Tidewater reports the error itself, in one
    line. Their level goes up; they stay PySpark's loggers, whose ``exception`` takes extra fields."""
    from pyspark.logger import PySparkLogger

    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        PySparkLogger.getLogger(name).setLevel(logging.CRITICAL)


def _own_scratch(cfg: TidewaterConfig, java_options: str) -> dict[str, str]:
    """This process's driver writes its scratch files under the data folder, not /tmp; the folders of
    drivers whose process is gone (killed with SIGKILL) are removed first (``infra.jvm_scratch``)."""
    from pyspark import SparkContext

    if SparkContext._active_spark_context is not None:
        return {}  # the running JVM keeps the folder it started with
    sweep(cfg)
    return scratch_settings(scratch_folder(cfg, f"pid-{os.getpid()}"), java_options)


def _launch_without_password(conf: dict[str, str]) -> None:
    """Start the driver JVM with every setting but the metastore password (PySpark passes settings to
    spark-submit as ``--conf`` arguments, visible in ``ps``), then hand the password to the JVM as the
    system property that the driver's SparkConf loads. ``conf`` loses the key."""
    from pyspark import SparkConf, SparkContext

    secret = conf.pop(PASSWORD_KEY)
    if SparkContext._active_spark_context is not None:
        return  # getOrCreate returns the running session, whose catalog is connected already
    SparkContext._ensure_initialized(conf=SparkConf(loadDefaults=False).setAll(list(conf.items())))
    jvm = SparkContext._jvm
    assert jvm is not None
    jvm.java.lang.System.setProperty(PASSWORD_KEY, secret)


def ensure_databases(spark: SparkSession) -> None:
    existing = {row[0] for row in spark.sql("SHOW DATABASES").collect()}
    for db in naming.LAYERS:
        if db not in existing:
            spark.sql(f"CREATE DATABASE IF NOT EXISTS {db}")


def _python() -> str:
    return sys.executable
