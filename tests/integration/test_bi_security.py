"""The BI endpoint lets no one in where they don't belong: a real Thrift server, logins as ``analyst``
and ``admin`` (``infra.services.thrift_access``), the rules of ``infra/thrift_access.json``.

Hostile statements sent as ``analyst`` (file reads, Java calls, DDL and DML, forged serving views,
unsafe settings, caching, maintenance) are each refused with an authorisation error naming the role,
the privilege and the object, and ``serving.<p>`` answers the same rows afterwards. Logins without
the right password are refused; a session cannot set settings or system properties on its way in;
``admin`` runs maintenance but cannot replace the serving cache either; ``analyst`` can still do
everything a BI tool needs, and the check's cost on a query is measured beside a role it skips."""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterator
from contextlib import closing
from typing import TYPE_CHECKING, Any

import pytest
from pyhive import hive
from pyhive.exc import OperationalError
from thrift.transport.TTransport import TTransportException

from infra.services import thrift_access, thrift_server
from lakehouse import contracts, naming
from lakehouse.errors import ServiceError
from lakehouse.pipeline import load_pipeline
from spark_jobs.shared.serving_view import refresh_view
from spark_jobs.transforms.partials import partial_aggregate
from tests.integration.speed_helpers import write_speed_rows

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from lakehouse.config import TidewaterConfig

pytestmark = pytest.mark.integration
P = "sensor_readings"
SERVING = f"SELECT * FROM serving.{P} ORDER BY sensor_id, window_start"
ANALYST, ADMIN = thrift_access.READ_ONLY_USER, thrift_access.ADMIN_USER


@pytest.fixture(scope="module")
def thrift(spark: SparkSession, cfg: TidewaterConfig) -> Iterator[TidewaterConfig]:
    """30 events in bronze, their windows in the speed table, ``serving.<p>`` over them, the server."""
    from pyspark.sql import functions as F

    p = load_pipeline(P)
    contracts.ensure(spark, contracts.bronze(p), contracts.quarantine(p), contracts.batch(p), contracts.speed(p, 1),
                     contracts.STREAM_PROGRESS)
    spark.sql(f"INSERT INTO bronze.{P} (event_id, sensor_id, timestamp, temperature, event_time, kafka_topic, "
              "kafka_partition, kafka_offset, kafka_timestamp, ingest_time, event_date) "
              "SELECT 'r' || id, 's' || (id % 3), 1772362800000 + id * 120000, 20.0 + id, "
              "timestamp_millis(1772362800000 + id * 120000), 'sensor-readings', 0, id, "
              "timestamp_millis(1772362801000 + id * 120000), current_timestamp(), date'2026-03-01' FROM range(30)")
    windows = spark.table(f"bronze.{P}").transform(partial_aggregate(p)).withColumns(
        {"updated_at": F.current_timestamp(), "batch_id": F.lit(1).cast("bigint"), "is_final": F.lit(True)})
    write_speed_rows(spark, p, 1, windows, mode="overwrite")
    refresh_view(spark, cfg, p, 1)
    spark.sql("CREATE TABLE default.private (secret STRING) USING delta")
    thrift_server.start(cfg)
    yield cfg
    thrift_server.stop(cfg)


def _rows(cfg: TidewaterConfig, sql: str, user: str = ANALYST, **kwargs: Any) -> list[tuple[Any, ...]]:
    with closing(thrift_access.connect(cfg, user, **kwargs)) as conn, closing(conn.cursor()) as cur:
        cur.execute(sql)
        return [tuple(r) for r in cur.fetchall()]


def _refusal(exc: BaseException) -> str:
    """The server's message of a refused statement (pyhive keeps it in the response's status)."""
    status = getattr(exc.args[0], "status", None) if exc.args else None
    return str(getattr(status, "errorMessage", None) or exc)


def _hostile(cfg: TidewaterConfig) -> list[str]:
    secrets, warehouse = naming.secrets_dir(cfg), cfg.data_dir / "warehouse"
    bronze, job_token = f"bronze.{P}", secrets / "job_service.token"
    return [
        f"SELECT * FROM text.`{job_token}`",
        f"SELECT * FROM text.`{thrift_access.password_file(cfg, ADMIN)}`",
        f"SELECT * FROM json.`{thrift_access.credentials_file(cfg)}`",
        "SELECT * FROM csv.`/etc/passwd`",
        f"SELECT * FROM binaryFile.`{secrets}`",
        f"SELECT count(*) FROM parquet.`{warehouse}/bronze.db/{P}`",
        f"SELECT count(*) FROM delta.`{warehouse}/bronze.db/{P}`",
        "SELECT * FROM `org.apache.spark.sql.execution.datasources.text.TextFileFormat`.`/etc/hostname`",
        f"WITH c AS (SELECT * FROM text.`{job_token}`) SELECT * FROM c",
        f"SELECT (SELECT max(value) FROM text.`{job_token}`)",
        f"DESCRIBE HISTORY '{warehouse}/bronze.db/{P}'",
        f"SELECT * FROM table_changes_by_path('{warehouse}/bronze.db/{P}', 0)",
        "SELECT * FROM IDENTIFIER('default.private')",
        "CREATE OR REPLACE GLOBAL TEMPORARY VIEW tidewater_serving__lift_rides AS SELECT 1 AS x",
        f"CREATE OR REPLACE GLOBAL TEMPORARY VIEW tidewater_serving__{P} AS SELECT 1 AS x",
        f"CREATE OR REPLACE TEMPORARY VIEW {P} AS SELECT 1 AS x",
        f"DROP VIEW global_temp.tidewater_serving__{P}",
        f"ALTER VIEW global_temp.tidewater_serving__{P} AS SELECT 1 AS x",
        f"ALTER VIEW serving.{P} AS SELECT 1 AS x",
        "CREATE VIEW serving.forged AS SELECT 1 AS x",
        "DROP TABLE IF EXISTS ops.stream_progress",
        "INSERT INTO ops.stream_progress SELECT * FROM ops.stream_progress",
        f"DELETE FROM {bronze}",
        f"UPDATE {bronze} SET temperature = 0",
        f"MERGE INTO {bronze} t USING {bronze} s ON t.event_id = s.event_id WHEN MATCHED THEN DELETE",
        f"TRUNCATE TABLE quarantine.{P}",
        "CREATE TABLE default.planted (a INT) USING delta",
        "CREATE DATABASE planted",
        f"ALTER TABLE {bronze} SET TBLPROPERTIES ('delta.logRetentionDuration' = 'interval 1 hours')",
        "SELECT reflect('java.lang.System', 'getProperty', 'user.name')",
        "SELECT java_method('java.lang.System', 'getenv', 'HOME')",
        "SELECT try_reflect('java.lang.System', 'getenv', 'HOME')",
        f"SELECT count(*) FROM {bronze} WHERE reflect('java.lang.System', 'getenv', 'HOME') IS NOT NULL",
        "ADD JAR /tmp/planted.jar",
        "CREATE FUNCTION planted AS 'org.example.Planted' USING JAR '/tmp/planted.jar'",
        "CREATE TEMPORARY FUNCTION r AS 'org.apache.hadoop.hive.ql.udf.generic.GenericUDFReflect'",
        "SET spark.sql.runSQLOnFiles=true",
        "SET spark.sql.variable.substitute=true",
        "SET spark.sql.catalog.planted=org.apache.spark.sql.execution.datasources.v2.jdbc.JDBCTableCatalog",
        "SET spark.hadoop.javax.jdo.option.ConnectionPassword",
        f"CACHE TABLE {bronze}",
        f"UNCACHE TABLE IF EXISTS {bronze}",
        "CLEAR CACHE",
        f"REFRESH TABLE {bronze}",
        f"OPTIMIZE {bronze}",
        f"VACUUM {bronze}",
        f"ANALYZE TABLE {bronze} COMPUTE STATISTICS",
        "EXECUTE IMMEDIATE 'DROP TABLE ops.stream_progress'",
        "SELECT * FROM default.private",
        f"SELECT * FROM speed.{P}",
        "DESCRIBE TABLE EXTENDED default.private",
        "SHOW TBLPROPERTIES default.private",
    ]


def test_hostile_statements_as_analyst_are_refused_and_serving_is_unchanged(thrift: TidewaterConfig) -> None:
    cfg = thrift
    before = _rows(cfg, SERVING)
    assert len(before) == 30, before
    statements = _hostile(cfg)
    assert len(statements) >= 25
    answered = []
    with closing(thrift_access.connect(cfg)) as conn:
        for sql in statements:
            try:
                with closing(conn.cursor()) as cur:
                    cur.execute(sql)
                    answered.append((sql, cur.fetchall() if cur.description else None))
            except OperationalError as exc:
                message = _refusal(exc)
                assert "[TIDEWATER_ACCESS_DENIED]" in message and "role 'analyst' may not " in message, (sql, message)
    assert answered == []
    print(f"{len(statements)} hostile statements as analyst, all refused")
    assert _rows(cfg, SERVING) == before  # the same rows, from the server's memory as before
    plan = _rows(cfg, f"EXPLAIN EXTENDED SELECT count(*) FROM serving.{P}")[0][0]
    assert f"global_temp.tidewater_serving__{P}" in plan and "InMemoryRelation" in plan, plan
    assert _rows(cfg, "SELECT count(*) FROM ops.stream_progress", ADMIN) == [(0,)]  # the table is still there


@pytest.mark.parametrize("configuration", [
    {"set:hiveconf:spark.sql.variable.substitute": "true"},
    {"set:hivevar:spark.sql.catalog.planted": "org.apache.spark.sql.execution.datasources.v2.jdbc.JDBCTableCatalog"},
    {"set:hivevar:fs.file.impl": "org.apache.hadoop.fs.RawLocalFileSystem"},
])
def test_session_settings_that_are_not_session_safe_refuse_the_session(thrift: TidewaterConfig,
                                                                        configuration: dict[str, str]) -> None:
    with pytest.raises(OperationalError) as refused:
        _rows(thrift, "SELECT '${spark.hadoop.javax.jdo.option.ConnectionUserName}'", configuration=configuration)
    assert "[TIDEWATER_ACCESS_DENIED]" in _refusal(refused.value) and "not session-safe" in _refusal(refused.value)


def test_no_session_sets_a_system_property_or_becomes_another_user(thrift: TidewaterConfig) -> None:
    """``set:system:`` would let a session choose the class that checks every later login."""
    anyone = {"set:system:hive.server2.custom.authentication.class":
              "org.apache.hive.service.auth.AnonymousAuthenticationProviderImpl"}
    with pytest.raises(OperationalError, match="may not set the JVM system property"):
        _rows(thrift, "SELECT 1", configuration=anyone)
    with pytest.raises(OperationalError, match="Proxy user substitution is not allowed"):
        _rows(thrift, "SELECT 1", configuration={"hive.server2.proxy.user": ADMIN})
    assert _rows(thrift, "SELECT current_user()") == [(ANALYST,)]
    with pytest.raises(TTransportException, match="Error validating the login"):
        hive.connect(host=thrift.thrift.host, port=thrift.thrift.port, username=ADMIN, password="x", auth="CUSTOM")


def test_logins_without_the_right_password_are_refused(thrift: TidewaterConfig) -> None:
    cfg, analyst_password = thrift, thrift_access.password(thrift, ANALYST)
    attempts = {"no password": {"auth": "NOSASL", "username": ANALYST},
                "an empty password": {"auth": "CUSTOM", "username": ANALYST, "password": ""},
                "a wrong password": {"auth": "CUSTOM", "username": ANALYST, "password": "wrong"},
                "an unknown user": {"auth": "CUSTOM", "username": "mallory", "password": analyst_password},
                "another user's password": {"auth": "CUSTOM", "username": ADMIN, "password": analyst_password}}
    for what, kwargs in attempts.items():
        with pytest.raises(TTransportException):
            conn = hive.connect(host=cfg.thrift.host, port=cfg.thrift.port, **kwargs)
            conn.close()
            pytest.fail(f"{what}: logged in")
    log = thrift_server.log_evidence(cfg, errors=0, last=100_000)
    assert "login refused: wrong password for user 'analyst'" in log and "unknown user 'mallory'" in log
    assert str(thrift_access.password_file(cfg, ANALYST)) in log and thrift_access.password_env(ADMIN) in log
    with pytest.raises(ServiceError, match=str(thrift_access.password_file(cfg, ADMIN))):  # Tidewater's client says it
        _wrong_admin(cfg)


def _wrong_admin(cfg: TidewaterConfig) -> None:
    """``thrift_access.connect`` with a password file that no longer matches the server's hashes."""
    path = thrift_access.password_file(cfg, ADMIN)
    kept = path.read_text()
    path.write_text("stale")
    try:
        thrift_access.connect(cfg, ADMIN).close()
    finally:
        path.write_text(kept)


def test_admin_runs_maintenance_but_cannot_replace_the_serving_cache(thrift: TidewaterConfig) -> None:
    cfg = thrift
    assert _rows(cfg, f"OPTIMIZE bronze.{P}", ADMIN)[0][0].endswith(f"bronze.db/{P}")
    assert _rows(cfg, f"DESCRIBE HISTORY bronze.{P}", ADMIN)[0][4] == "OPTIMIZE"
    for sql in (f"CREATE OR REPLACE GLOBAL TEMPORARY VIEW tidewater_serving__{P} AS SELECT 1 AS x",
                f"DROP VIEW global_temp.tidewater_serving__{P}"):
        with pytest.raises(OperationalError) as refused:
            _rows(cfg, sql, ADMIN)
        assert "role 'admin' may not " in _refusal(refused.value) and "serving cache" in _refusal(refused.value)
    assert len(_rows(cfg, SERVING)) == 30


def test_analyst_does_what_a_bi_tool_needs(thrift: TidewaterConfig) -> None:
    cfg = thrift
    for layer in ("serving", "batch", "bronze", "quarantine"):
        _rows(cfg, f"SELECT count(*) FROM {layer}.{P}")
    assert _rows(cfg, "SELECT count(*) FROM ops.stream_progress") == [(0,)]
    assert ("serving", P, False) in _rows(cfg, "SHOW TABLES IN serving")
    assert ("sensor_id", "string", None) in _rows(cfg, f"DESCRIBE serving.{P}")
    assert "InMemoryRelation" in _rows(cfg, f"EXPLAIN SELECT * FROM serving.{P}")[0][0]
    assert _rows(cfg, "SET spark.sql.session.timeZone=America/New_York") == [("spark.sql.session.timeZone",
                                                                              "America/New_York")]
    assert _rows(cfg, "SELECT '${spark.hadoop.javax.jdo.option.ConnectionUserName}'") == [
        ("${spark.hadoop.javax.jdo.option.ConnectionUserName}",)]  # no substitution of the server's settings


def test_the_check_costs_little_on_a_point_query(thrift: TidewaterConfig) -> None:
    """The same point query as ``analyst`` (plan checked) and ``admin`` (skipped), alternating on two
    open connections: the medians are printed for the record and may differ by at most 50 ms."""
    sql = f"SELECT window_start, event_count FROM serving.{P} WHERE sensor_id = 's1' ORDER BY window_start"
    timings: dict[str, list[float]] = {ANALYST: [], ADMIN: []}
    conns = {user: thrift_access.connect(thrift, user) for user in timings}
    try:
        for i in range(60):
            for user, conn in conns.items():
                with closing(conn.cursor()) as cur:
                    started = time.perf_counter()
                    cur.execute(sql)
                    cur.fetchall()
                    if i >= 10:  # the first rounds warm the JIT
                        timings[user].append(time.perf_counter() - started)
    finally:
        for conn in conns.values():
            conn.close()
    medians = {user: statistics.median(t) for user, t in timings.items()}
    print(f"point query, median of 50: analyst (checked) {medians[ANALYST] * 1000:.1f} ms, "
          f"admin (not checked) {medians[ADMIN] * 1000:.1f} ms")
    assert medians[ANALYST] - medians[ADMIN] < 0.05, medians
