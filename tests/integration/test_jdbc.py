"""BI access: the Spark Thrift Server shares the catalog and works for pyhive, SQLAlchemy's ``hive://``
and the Hive JDBC driver (beeline, exactly as the README writes it, from a plain shell); its Delta jars
are on the driver's own class path; queries survive a Delta table change on new and old connections;
sequential and concurrent clients see zero failures. Also: ``tidewater sql`` prints a table."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from lakehouse import contracts, naming
from lakehouse.pipeline import load_pipeline

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from lakehouse.config import TidewaterConfig
    from lakehouse.pipeline import Pipeline

Row = tuple[Any, ...]
pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
PLAIN_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
CLASS_ERRORS = ("ClassNotFoundException", "NoClassDefFoundError", "Cannot find catalog plugin")


@pytest.fixture(scope="module")
def thrift(spark: SparkSession, cfg: TidewaterConfig) -> Iterator[TidewaterConfig]:
    from infra.services import thrift_server

    thrift_server.start(cfg)
    yield cfg
    thrift_server.stop(cfg)


def _connect(cfg: TidewaterConfig, user: str = "analyst") -> Any:  # pyhive is untyped
    from pyhive import hive

    return hive.connect(host=cfg.thrift.host, port=cfg.thrift.port, auth="NOSASL", username=user)


def _query(conn: Any, sql: str) -> list[Row]:
    with closing(conn.cursor()) as cur:
        cur.execute(sql)
        return list(cur.fetchall())


def _once(cfg: TidewaterConfig, sql: str, user: str = "analyst") -> list[Row]:
    """A new connection for one query."""
    with closing(_connect(cfg, user)) as conn:
        return _query(conn, sql)


def _assert_no_class_errors(cfg: TidewaterConfig) -> None:
    from infra.services import thrift_server

    log = Path(str(thrift_server.status(cfg)["log"])).read_text(errors="replace")
    assert not [e for e in CLASS_ERRORS if e in log], log[-3000:]


def _speed_frame(spark: SparkSession, p: Pipeline, rows: list[Row]) -> DataFrame:
    """Rows (sensor, window minute from, to, count, avg, batch_id, is_final) in the speed table's
    current contract; columns this test does not know (e.g. partial state) follow from them or are null."""
    columns = contracts.speed(p, 1).columns
    out = []
    for sensor, start, end, n, avg, batch_id, final in rows:
        w0, w1 = datetime(2026, 3, 1, 12, start), datetime(2026, 3, 1, 12, end)
        known = {"sensor_id": sensor, "window_start": w0, "window_end": w1, "event_count": n, "avg_temperature": avg,
                 "min_temperature": avg - 1, "max_temperature": avg + 1, "max_event_time": w0, "updated_at": w0,
                 "batch_id": batch_id, "is_final": final, "_sum_avg_temperature": avg * n, "_n_avg_temperature": n}
        out.append(tuple(known.get(c) for c, _ in columns))
    return spark.createDataFrame(out, ", ".join(f"`{c}` {t}" for c, t in columns))


def test_pyhive_reads_serving_view_with_filter(spark: SparkSession, cfg: TidewaterConfig, thrift: TidewaterConfig) -> None:
    from spark_jobs.serving import refresh_view

    p = load_pipeline("sensor_readings")
    contracts.ensure(spark, contracts.speed(p, 1))
    rows = [("s1", 0, 1, 3, 20.0, 1, True), ("s2", 0, 1, 1, 5.5, 1, True), ("s1", 2, 3, 2, 30.0, 2, False)]
    _speed_frame(spark, p, rows).write.format("delta").mode("append").saveAsTable(naming.speed_table(p.name))
    refresh_view(spark, cfg, p)
    got = _once(cfg, "SELECT sensor_id, window_start, event_count, source, finality FROM serving.sensor_readings "
                     "WHERE sensor_id = 's1' ORDER BY window_start")
    assert [(r[0], r[2], r[3], r[4]) for r in got] == [("s1", 3, "speed", "provisional"), ("s1", 2, "speed", "provisional")]
    assert str(got[0][1]).startswith("2026-03-01 12:00:00")


def test_delta_jars_on_the_servers_own_class_path(cfg: TidewaterConfig, thrift: TidewaterConfig) -> None:
    """Jars only in spark.jars live in a child class loader that HiveServer2's threads do not use.
    And the metastore password is not on the command line (a 0600 properties file instead)."""
    from infra.services import metastore, thrift_server

    pid = thrift_server.status(cfg)["pid"]
    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    assert metastore.password(cfg).encode() not in b" ".join(cmdline)
    assert thrift_server.properties_file(cfg).stat().st_mode & 0o777 == 0o600
    launched = cmdline[cmdline.index(b"-cp") + 1].decode()
    [(class_path,)] = _once(cfg, "SELECT reflect('java.lang.System', 'getProperty', 'java.class.path')")
    for jar in ("delta-spark_", "delta-storage-", "spark-sql-kafka-", "derbyclient-"):
        assert re.search(rf"/{jar}[^/:]*\.jar(:|$)", class_path), (jar, class_path)
        assert jar in launched


def test_readme_beeline_commands_from_a_plain_shell(cfg: TidewaterConfig, thrift: TidewaterConfig, tw_env: dict[str, str]) -> None:
    """The Hive JDBC driver (beeline) with a database in the URL, pasted as written into a shell
    without the venv: PATH has no .venv/bin, no SPARK_HOME, no user name given."""
    section = (REPO / "README.md").read_text().split("## BI access (JDBC)", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```bash\n(.*?)```", section, flags=re.S)
    commands = [line for block in blocks for line in block.splitlines() if "beeline" in line]
    assert any("/default;auth=noSasl" in c for c in commands), commands
    env = {"PATH": PLAIN_PATH, "HOME": str(Path.home()), "LANG": "C.UTF-8", **tw_env}
    for line in commands:
        line = line.replace("127.0.0.1:10000", f"127.0.0.1:{cfg.thrift.port}")
        out = subprocess.run(["bash", "-c", line], cwd=REPO, env=env, capture_output=True, text=True, timeout=180)
        assert out.returncode == 0 and "Error" not in out.stdout + out.stderr, (line, out.stdout[-1500:], out.stderr[-3000:])
        rows = [[c.strip() for c in r.split("|")[1:-1]] for r in out.stdout.splitlines() if r.startswith("| ")]
        assert len(rows) > 1, (line, out.stdout)
        if "SHOW TABLES IN serving" in line:
            assert ["serving", "sensor_readings", "false"] in rows, out.stdout
    _assert_no_class_errors(cfg)


def test_sqlalchemy_hive_dialect(cfg: TidewaterConfig, thrift: TidewaterConfig) -> None:
    from sqlalchemy import create_engine, inspect, text

    engine = create_engine(f"hive://analyst@{cfg.thrift.host}:{cfg.thrift.port}/default",
                           connect_args={"auth": "NOSASL"})
    try:
        with engine.connect() as conn:
            n = conn.execute(text("SELECT count(*) FROM serving.sensor_readings WHERE sensor_id = :s"),
                             {"s": "s1"}).scalar()
        assert n == 2
        schemas = inspect(engine).get_schema_names()
        assert {"bronze", "serving", "ops"} <= set(schemas), schemas
        columns = [c["name"] for c in inspect(engine).get_columns("sensor_readings", schema="serving")]
        assert {"sensor_id", "source", "finality", "as_of"} <= set(columns), columns
    finally:
        engine.dispose()


def test_queries_across_a_delta_table_change(spark: SparkSession, cfg: TidewaterConfig, thrift: TidewaterConfig) -> None:
    """Another process changes a table (a MERGE, as a batch publish does): the next queries see it, on
    a new connection and on one opened before the change (before the fix: NoClassDefFoundError
    ``Protocol$$anonfun$1`` / ``INTERNAL_ERROR ... phase optimization failed``)."""
    p = load_pipeline("sensor_readings")
    table = naming.speed_table(p.name)
    sql = f"SELECT count(*), sum(event_count) FROM {table}"
    with closing(_connect(cfg)) as old:
        assert _query(old, sql) == [(3, 6)]
        _speed_frame(spark, p, [("s3", 10, 11, 4, 20.0, 3, True), ("s3", 11, 12, 4, 21.0, 3, True)]
                     ).createOrReplaceTempView("changed")
        spark.sql(f"MERGE INTO {table} t USING changed s ON t.sensor_id = s.sensor_id AND t.window_start = s.window_start "
                  "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
        with closing(_connect(cfg)) as new:
            assert _query(new, sql) == [(5, 14)]
            assert _query(new, f"SELECT count(*), sum(event_count) FROM serving.{p.name}") == [(5, 14)]
        assert _query(old, sql) == [(5, 14)]
        assert _query(old, f"DESCRIBE HISTORY {table}")[0][4] == "MERGE"


def test_sequential_and_concurrent_clients_zero_failures(spark: SparkSession, cfg: TidewaterConfig, thrift: TidewaterConfig) -> None:
    """20 new connections one after another, then 4 clients at once, over bronze and ops tables."""
    p = load_pipeline("sensor_readings")
    contracts.ensure(spark, contracts.bronze(p), contracts.STREAM_PROGRESS)
    spark.sql(f"INSERT INTO {naming.table('bronze', p.name)} (event_id, sensor_id, timestamp, temperature, event_time, "
              "kafka_topic, kafka_partition, kafka_offset, kafka_timestamp, ingest_time, event_date) "
              "SELECT 'e' || id, 's' || (id % 3), 1772366400000 + id, 20.0, timestamp'2026-03-01 12:00:00', "
              "'sensor-readings', 0, id, timestamp'2026-03-01 12:00:01', current_timestamp(), date'2026-03-01' "
              "FROM range(30)")
    queries = [(f"SELECT count(*) FROM bronze.{p.name}", 30), ("SELECT count(*) FROM ops.stream_progress", 0),
               (f"SELECT count(*) FROM bronze.{p.name} WHERE sensor_id = 's1' AND event_date = '2026-03-01'", 10)]

    def client(i: int, rounds: int) -> list[str]:
        failures = []
        for r in range(rounds):
            sql, want = queries[(i + r) % len(queries)]
            try:
                got = _once(cfg, sql, f"client{i}")
                if got != [(want,)]:
                    failures.append(f"{sql}: {got}")
            except Exception as exc:  # noqa: BLE001 - every failure is counted, none may happen
                status = getattr(exc.args[0], "status", None) if exc.args else None  # pyhive: the server's answer
                failures.append(f"{sql}: {type(exc).__name__}: {getattr(status, 'errorMessage', None) or str(exc)[:300]}")
        return failures

    failures = client(0, 20)
    with ThreadPoolExecutor(4) as pool:
        for found in pool.map(lambda i: client(i, 3), range(4)):
            failures += found
    assert failures == [], failures
    _assert_no_class_errors(cfg)


def test_tidewater_sql_prints_a_table(spark: SparkSession, cfg: TidewaterConfig) -> None:
    spark.sql("SELECT 1").collect()
    out = subprocess.run([sys.executable, "-m", "tidewater.cli", "sql",
                          "SELECT sensor_id, count(*) AS n FROM serving.sensor_readings GROUP BY sensor_id ORDER BY 1"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.strip().splitlines()
    assert lines[0].split() == ["sensor_id", "|", "n"]
    assert [line.split() for line in lines[2:5]] == [["s1", "|", "2"], ["s2", "|", "1"], ["s3", "|", "2"]]
    assert lines[-1] == "(3 rows)"
    bad = subprocess.run([sys.executable, "-m", "tidewater.cli", "sql", "SELEC nonsense"],
                         capture_output=True, text=True, timeout=300)
    last = bad.stderr.strip().splitlines()[-1]
    assert bad.returncode == 2 and last.startswith("tidewater: sql: [PARSE_SYNTAX_ERROR]")
