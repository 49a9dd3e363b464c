"""The e2e package's shared stack runs on PostgreSQL (conftest.py: ``airflow.database`` and
``metastore.backend`` = postgres): these tests prove that the running components really use it, the
Airflow components as their own processes see their settings, and the Spark catalog through the
metastore's tables, and that the password reaches no command line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from lakehouse.config import TidewaterConfig

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]


def _group_environments(pgid: int) -> list[dict[str, str]]:
    """The environment of every live process in a process group (a component and its children)."""
    out = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if os.getpgid(int(proc.name)) != pgid:
                continue
            raw = (proc / "environ").read_bytes()
        except (ProcessLookupError, FileNotFoundError, PermissionError):
            continue
        out.append(dict(item.split("=", 1) for item in raw.decode(errors="replace").split("\0") if "=" in item))
    return out


def test_airflow_components_run_on_postgres(airflow_up: TidewaterConfig) -> None:
    from infra.services import airflow, postgres

    cfg = airflow_up
    url = postgres.sqlalchemy_url(cfg, "airflow")
    assert url.startswith("postgresql+psycopg2://") and postgres.password(cfg) not in url
    for component in ("api-server", "scheduler", "dag-processor"):
        pid = airflow._process(cfg, component).pid()
        assert pid, f"{component} is not running"
        envs = [e for e in _group_environments(pid) if "AIRFLOW_HOME" in e]
        assert envs and {e.get("AIRFLOW__DATABASE__SQL_ALCHEMY_CONN") for e in envs} == {url}, component
        assert {e.get("PGPASSFILE") for e in envs} == {str(postgres.pgpass_file(cfg))}, component
    seen = subprocess.run([airflow.airflow_bin(), "config", "get-value", "database", "sql_alchemy_conn"],
                          env={**os.environ, **airflow.env(cfg)}, capture_output=True, text=True, timeout=180)
    assert seen.stdout.strip() == url, seen.stderr[-800:]
    assert not (airflow.home(cfg) / "airflow.db").exists(), "a SQLite metadata DB was created"
    # what the running components wrote: the scheduler's heartbeat and the DAGs the dag-processor parsed
    deadline = time.monotonic() + 300
    while True:
        beats = postgres.query(cfg, "airflow", "SELECT count(*) FROM job WHERE job_type = 'SchedulerJob' AND state = "
                               "'running' AND latest_heartbeat > now() - interval '2 minutes'")
        dags = {row[0] for row in postgres.query(cfg, "airflow", "SELECT dag_id FROM dag")}
        if (beats[0][0] >= 1 and "tidewater_batch" in dags) or time.monotonic() > deadline:
            break
        time.sleep(5)
    assert beats[0][0] >= 1, "no live SchedulerJob heartbeat in PostgreSQL"
    assert {"tidewater_batch", "tidewater_speed"} <= dags, dags
    sessions = postgres.query(cfg, "postgres", "SELECT count(*) FROM pg_stat_activity WHERE datname = 'airflow'")
    assert sessions[0][0] >= 1


def test_spark_catalog_is_in_postgres(spark: SparkSession, stack: TidewaterConfig) -> None:
    from infra.services import metastore, postgres

    conf = spark.sparkContext.getConf()
    assert conf.get("spark.hadoop.javax.jdo.option.ConnectionURL") == postgres.jdbc_url(stack, "metastore")
    assert conf.get("spark.hadoop.javax.jdo.option.ConnectionDriverName") == "org.postgresql.Driver"
    assert not metastore._process(stack).running(), "Derby runs although the backend is postgres"
    name = f"pg_probe_{os.getpid()}"
    spark.sql(f"CREATE TABLE ops.{name} (id BIGINT) USING delta")
    try:
        spark.sql(f"INSERT INTO ops.{name} VALUES (1), (2)")
        rows = postgres.query(stack, "metastore", 'SELECT d."NAME", t."TBL_NAME" FROM "TBLS" t '
                              'JOIN "DBS" d ON t."DB_ID" = d."DB_ID"')
        assert ("ops", name) in rows, rows
        databases = {row[0] for row in postgres.query(stack, "metastore", 'SELECT "NAME" FROM "DBS"')}
        assert {"bronze", "quarantine", "speed", "batch", "serving", "ops"} <= databases, databases
        assert spark.sql(f"SELECT sum(id) FROM ops.{name}").collect()[0][0] == 3
    finally:
        spark.sql(f"DROP TABLE IF EXISTS ops.{name}")
    assert ("ops", name) not in postgres.query(stack, "metastore", 'SELECT d."NAME", t."TBL_NAME" FROM "TBLS" t '
                                               'JOIN "DBS" d ON t."DB_ID" = d."DB_ID"')


def test_status_loopback_and_no_password_on_a_command_line(stack: TidewaterConfig) -> None:
    from infra.services import postgres

    out = subprocess.run([sys.executable, "-m", "tidewater.cli", "status", "--json"], capture_output=True,
                         text=True, timeout=180)
    rows = {row["service"]: row for row in json.loads(out.stdout)}
    assert rows["postgres"]["healthy"] and rows["postgres"]["pid"], rows.get("postgres")
    assert rows["metastore"]["healthy"] and rows["metastore"]["address"].startswith("jdbc:postgresql://127.0.0.1:")
    assert postgres.query(stack, "postgres", "SHOW listen_addresses") == [("127.0.0.1",)]
    assert postgres.query(stack, "postgres", "SHOW unix_socket_directories") == [("",)]
    secret = postgres.password(stack).encode()
    for path in ("postgres.password", "postgres.pgpass"):
        assert (stack.data_dir / "secrets" / path).stat().st_mode & 0o777 == 0o600
    leaks = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and secret in (proc / "cmdline").read_bytes():
                leaks.append((proc / "cmdline").read_bytes()[:120])
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
    assert not leaks, leaks


LOOPBACK = {"127.0.0.1", "::1", "::ffff:127.0.0.1"}


def test_every_process_of_the_stack_listens_on_loopback_only(airflow_up: TidewaterConfig) -> None:
    """Every managed process (PID files: Kafka, PostgreSQL, Airflow's components, the job service) and
    whatever it started (its process group): no TCP listener outside loopback. Airflow's scheduler and
    triggerer used to start log servers on 0.0.0.0:8793/8794 (and a second stack on the host lost them)."""
    import psutil

    from infra.services import airflow
    from lakehouse import naming

    groups = {int(f.read_text().split()[0]) for f in naming.run_dir(airflow_up).glob("*.pid") if f.read_text().strip()}
    assert {airflow._process(airflow_up, c).pid() for c in ("scheduler", "triggerer")} <= groups
    listening, outside = 0, []
    for proc in psutil.process_iter():
        try:
            if os.getpgid(proc.pid) not in groups:
                continue
            for conn in proc.net_connections(kind="tcp"):
                if conn.status == psutil.CONN_LISTEN:
                    listening += 1
                    if conn.laddr.ip not in LOOPBACK:
                        outside.append((proc.pid, " ".join(proc.cmdline())[:80], f"{conn.laddr.ip}:{conn.laddr.port}"))
        except (psutil.Error, ProcessLookupError):
            continue
    assert listening >= 3, "the check saw too few listeners to mean anything"
    assert not outside, outside
