"""Every listener of the stack, reviewed on one isolated stack started once for this module: Kafka, the
metastore, PostgreSQL, the job service, the Thrift server with ``thrift.tls`` on, Airflow and Superset.

Each check sends the same request twice, once without (or with a wrong) credential, which must be
refused, and once with the right one, which must succeed: a listener that let everyone in, or no one,
fails. Every listener binds loopback only: the listening sockets are on 127.0.0.1 and a connection to
the host's own outside address is refused. Secrets are generated (not defaults), 0600, and on no
process's command line. The Thrift server speaks TLS only: a plain TCP client is refused, a TLS client
that does not trust the generated certificate is refused, and pyhive, SQLAlchemy and beeline connect as
the documentation writes them (tests/integration/listener_checks.py holds the shared helpers)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.conftest import isolated_env
from tests.integration.listener_checks import (
    LOOPBACK,
    REPO,
    assert_loopback_only,
    command_lines_holding,
    http,
    jwt_signed_with,
    listening_sockets,
    readme_block,
    superset_default_secret_key,
)

if TYPE_CHECKING:
    from lakehouse.config import TidewaterConfig

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1200)]
PLAIN_PATH = "/usr/local/bin:/usr/bin:/bin"


@pytest.fixture(scope="module")
def tw_env() -> Iterator[dict[str, str]]:
    from infra.services.ports import free_port

    extra = {"TIDEWATER_THRIFT_TLS": "true", "TIDEWATER_POSTGRES_PORT": str(free_port()),
             "TIDEWATER_BI_PORT": str(free_port())}
    with isolated_env(extra) as env:
        yield env


@pytest.fixture(scope="module")
def listeners(stack: TidewaterConfig) -> Iterator[TidewaterConfig]:
    """Every service of the stack, started at once (their starts wait on different things); stopped after."""
    from infra import job_service
    from infra.services import airflow, postgres, superset, thrift_server

    if not (superset.VENV / "bin" / "superset").exists():
        pytest.fail(f"{superset.VENV} is missing: 'make test' builds it ('make bi-venv')")
    starts = (postgres.start, job_service.start, thrift_server.start, airflow.start, superset.start)
    try:
        with ThreadPoolExecutor(len(starts)) as pool:
            for started in [pool.submit(start, stack) for start in starts]:
                started.result()
        yield stack
    finally:
        for stop in (superset.stop, airflow.stop, postgres.stop):
            stop(stack)


def test_every_listener_binds_loopback_only(listeners: TidewaterConfig) -> None:
    from infra import job_service
    from infra.services import airflow, superset, thrift_server
    from infra.services.kafka_nodes import server_properties

    cfg = listeners
    ports = {"kafka": cfg.kafka.port, "kafka controller": cfg.kafka.controller_port, "metastore": cfg.metastore.port,
             "postgres": cfg.postgres.port, "thrift": cfg.thrift.port, "job service": cfg.job_service.port,
             "airflow": cfg.airflow.port, "superset": cfg.bi.port}
    for name, port in ports.items():
        assert_loopback_only(name, port)
    for url in (job_service.base_url(cfg), airflow.base_url(cfg), superset.base_url(cfg), thrift_server.jdbc_url(cfg)):
        assert "//127.0.0.1:" in url, url
    kafka = dict(line.split("=", 1) for line in server_properties(cfg).splitlines() if "=" in line)
    assert kafka["listeners"] == f"PLAINTEXT://127.0.0.1:{cfg.kafka.port},CONTROLLER://127.0.0.1:{cfg.kafka.controller_port}"
    assert kafka["advertised.listeners"] == f"PLAINTEXT://127.0.0.1:{cfg.kafka.port}"


def test_no_process_of_the_stack_listens_outside_loopback(listeners: TidewaterConfig) -> None:
    """Every managed process (its PID file) and whatever it started (its process group), the Spark UIs,
    block managers and Py4J gateways of the job service and the Thrift server included: no TCP listener
    outside loopback, and at least one per service."""
    from lakehouse import naming

    groups = {int(f.read_text().split()[0]) for f in naming.run_dir(listeners).glob("*.pid") if f.read_text().strip()}
    sockets = listening_sockets(groups)
    outside = [(command, address) for command, address in sockets if address.rpartition(":")[0] not in LOOPBACK]
    assert len(groups) >= 10 and len(sockets) >= len(groups), (groups, sockets)
    assert not outside, outside


def test_kafka_answers_on_loopback(listeners: TidewaterConfig) -> None:
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=listeners.kafka.bootstrap, request_timeout_ms=15000)
    try:
        brokers = admin.describe_cluster()["brokers"]
    finally:
        admin.close()
    assert [(b["host"], b["port"]) for b in brokers] == [("127.0.0.1", listeners.kafka.port)]


def test_job_service_needs_its_token(listeners: TidewaterConfig) -> None:
    from infra import job_service

    cfg, token = listeners, job_service.token(listeners)
    assert token and len(token) >= 32 and oct(job_service.token_file(cfg).stat().st_mode & 0o777) == "0o600"
    run = json.dumps({"argv": ["sql", "SELECT 41 + 1 AS answer"], "fingerprint": job_service.fingerprint(cfg)}).encode()
    served = json.loads(http(f"{job_service.base_url(cfg)}/health", {job_service.TOKEN_HEADER: token})[1])["served"]
    for headers in ({}, {job_service.TOKEN_HEADER: "wrong"}, {job_service.TOKEN_HEADER: token[:-1]}):
        for path, body in (("/health", None), ("/run", run)):
            status, _ = http(f"{job_service.base_url(cfg)}{path}", headers, body)
            assert status == 401, (path, headers.keys())
    status, out = http(f"{job_service.base_url(cfg)}/run", {job_service.TOKEN_HEADER: token}, run)
    lines = [json.loads(line) for line in out.splitlines()]
    assert status == 200 and {"exit": 0} in lines and "42" in "".join(m.get("out", "") for m in lines), out[-1000:]
    after = json.loads(http(f"{job_service.base_url(cfg)}/health", {job_service.TOKEN_HEADER: token})[1])["served"]
    assert after == served + 1, "only the command with the token ran"


def test_airflow_has_no_anonymous_access_and_a_generated_password(listeners: TidewaterConfig) -> None:
    from infra.services import airflow

    cfg, password = listeners, airflow.password(listeners)
    assert len(password) >= 12 and password.lower() not in ("admin", "airflow", "password")
    assert oct(airflow.passwords_file(cfg).stat().st_mode & 0o777) == "0o600"
    for path in ("/api/v2/dags", "/api/v2/connections", "/api/v2/variables", "/api/v2/config"):
        status, _ = http(f"{airflow.base_url(cfg)}{path}")
        assert status in (401, 403), path
    login = f"{airflow.base_url(cfg)}/auth/token"
    for wrong in ("admin", "airflow", password + "x"):
        status, _ = http(login, {"Content-Type": "application/json"},
                         json.dumps({"username": airflow.USER, "password": wrong}).encode())
        assert status == 401, wrong
    status, body = http(login, {"Content-Type": "application/json"},
                        json.dumps({"username": airflow.USER, "password": password}).encode())
    assert status in (200, 201), body[:300]
    status, body = http(f"{airflow.base_url(cfg)}/api/v2/dags?limit=100",
                        {"Authorization": f"Bearer {json.loads(body)['access_token']}"})
    assert status == 200 and isinstance(json.loads(body)["dags"], list), body[:300]
    assert not command_lines_holding(password), "the Airflow password is on a command line"


def test_superset_has_no_anonymous_access_and_its_own_secret_key(listeners: TidewaterConfig) -> None:
    import sqlite3

    from infra.services import superset

    cfg = listeners
    for path in ("/api/v1/dashboard/", "/api/v1/database/", "/api/v1/chart/", "/api/v1/me/"):
        status, _ = http(f"{superset.base_url(cfg)}{path}")
        assert status == 401, path
    status, body = http(f"{superset.base_url(cfg)}/api/v1/security/login", {"Content-Type": "application/json"},
                        json.dumps({"username": superset.USER, "password": superset.password(cfg), "provider": "db"}).encode())
    assert status == 200, body[:300]
    token = json.loads(body)["access_token"]
    status, body = http(f"{superset.base_url(cfg)}/api/v1/database/", {"Authorization": f"Bearer {token}"})
    assert status == 200 and json.loads(body)["count"] == 1, body[:300]
    key = json.loads(superset.secrets_file(cfg).read_text())["secret_key"]
    assert len(key) >= 32 and oct(superset.secrets_file(cfg).stat().st_mode & 0o777) == "0o600"
    assert key != superset_default_secret_key(superset.VENV)
    assert jwt_signed_with(token, key), "the running Superset signs with another key than the generated one"
    tracked = subprocess.run(["git", "grep", "-l", "-F", key], cwd=REPO, capture_output=True, text=True)
    assert tracked.returncode == 1 and not tracked.stdout, "the SECRET_KEY is in the repository"
    with closing(sqlite3.connect(superset.home(cfg) / "superset.db")) as db:
        public = db.execute("SELECT count(*) FROM ab_permission_view_role pvr JOIN ab_role r ON r.id = pvr.role_id "
                            "WHERE r.name = 'Public'").fetchone()[0]
        admin = db.execute("SELECT count(*) FROM ab_permission_view_role pvr JOIN ab_role r ON r.id = pvr.role_id "
                           "WHERE r.name = 'Admin'").fetchone()[0]
    assert public == 0 and admin > 100, (public, admin)


def test_superset_reaches_the_thrift_server_over_tls(listeners: TidewaterConfig) -> None:
    """Superset's database connection (as ``analyst``) lists the schemas through a TLS transport: the
    server refuses plain TCP, so an answer proves it (``?force=true``: not from Superset's cache)."""
    from infra.services import superset

    cfg = listeners
    _, body = http(f"{superset.base_url(cfg)}/api/v1/security/login", {"Content-Type": "application/json"},
                   json.dumps({"username": superset.USER, "password": superset.password(cfg), "provider": "db"}).encode())
    auth = {"Authorization": f"Bearer {json.loads(body)['access_token']}"}
    [database] = json.loads(http(f"{superset.base_url(cfg)}/api/v1/database/", auth)[1])["result"]
    status, body = http(f"{superset.base_url(cfg)}/api/v1/database/{database['id']}/schemas/?q=(force:!t)", auth)
    assert status == 200 and "default" in json.loads(body)["result"], (body[:500], superset._process(cfg).tail(20))


def test_postgres_needs_the_password(listeners: TidewaterConfig) -> None:
    import psycopg2

    from infra.services import postgres

    cfg, pg = listeners, listeners.postgres
    target = {"host": pg.host, "port": pg.port, "user": pg.user, "dbname": "postgres", "connect_timeout": 10}
    for refused in ({"passfile": os.devnull}, {"password": "wrong", "passfile": os.devnull}):
        with pytest.raises(psycopg2.OperationalError) as exc:
            psycopg2.connect(**target, **refused).close()
        assert "password" in str(exc.value), exc.value
    with closing(psycopg2.connect(**target, password=postgres.password(cfg))) as conn, conn.cursor() as cur:
        cur.execute("SELECT type, auth_method FROM pg_hba_file_rules WHERE error IS NULL")
        rules = cur.fetchall()
        cur.execute("SHOW listen_addresses")
        assert cur.fetchone() == ("127.0.0.1",)
    assert rules and all(method in ("scram-sha-256", "reject") for _, method in rules), rules
    assert ("host", "scram-sha-256") in rules
    hba = (postgres.cluster_dir(cfg) / "pg_hba.conf").read_text().splitlines()
    methods = [line.split()[-1] for line in hba if line.strip() and not line.lstrip().startswith("#")]
    assert methods and "trust" not in methods and "password" not in methods, methods
    assert not command_lines_holding(postgres.password(cfg)), "the PostgreSQL password is on a command line"


def test_thrift_tls_refuses_plain_tcp_and_untrusted_clients(listeners: TidewaterConfig) -> None:
    import socket
    import ssl

    from pyhive import hive
    from thrift.transport.TTransport import TTransportException

    from infra.services import thrift_access, thrift_server, thrift_tls

    cfg = listeners
    with closing(thrift_access.connect(cfg)) as conn, closing(conn.cursor()) as cur:
        cur.execute("SELECT 41 + 1")
        assert cur.fetchall() == [(42,)]
    with pytest.raises(TTransportException):  # the same login without TLS: the server drops the connection
        hive.connect(host=cfg.thrift.host, port=cfg.thrift.port, username=thrift_access.READ_ONLY_USER,
                     password=thrift_access.password(cfg, thrift_access.READ_ONLY_USER), auth=thrift_access.AUTH).close()
    with socket.create_connection((cfg.thrift.host, cfg.thrift.port), timeout=10) as raw, \
            pytest.raises(ssl.SSLCertVerificationError):
        ssl.create_default_context().wrap_socket(raw, server_hostname=cfg.thrift.host)  # the system's CAs only
    with socket.create_connection((cfg.thrift.host, cfg.thrift.port), timeout=10) as raw, \
            thrift_tls.ssl_context(cfg).wrap_socket(raw, server_hostname=cfg.thrift.host) as tls:
        assert tls.version() in ("TLSv1.2", "TLSv1.3")
    secrets = [thrift_tls.password_file(cfg), thrift_tls.keystore(cfg), thrift_tls.certificate(cfg),
               thrift_tls.truststore(cfg), thrift_server.properties_file(cfg)]
    assert {oct(path.stat().st_mode & 0o777) for path in secrets} == {"0o600"}
    keystore_password = thrift_tls.password_file(cfg).read_text().strip()
    assert keystore_password in thrift_server.properties_file(cfg).read_text()
    assert not command_lines_holding(keystore_password), "the keystore password is on a command line"


def test_beeline_over_tls_from_a_plain_shell(listeners: TidewaterConfig, tw_env: dict[str, str]) -> None:
    """``tidewater beeline`` as the README writes it: the URL it defaults to carries the truststore."""
    from infra.services import thrift_server

    assert ";ssl=true;sslTrustStore=" in thrift_server.jdbc_url(listeners)
    env = {"PATH": PLAIN_PATH, "HOME": str(Path.home()), "LANG": "C.UTF-8", **tw_env,  # a worktree's code: its own
           **({"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {})}
    out = subprocess.run(["bash", "-c", ".venv/bin/tidewater beeline -e 'SELECT 41 + 1 AS answer'"], cwd=REPO, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and "| 42 " in out.stdout, (out.stdout[-1500:], out.stderr[-3000:])


def test_the_documented_tls_python_example(listeners: TidewaterConfig, tw_env: dict[str, str], tmp_path: Path) -> None:
    """docs/operations.md's pyhive and SQLAlchemy example over TLS, run as written (the data folder and
    port of this stack put in) by the venv's Python from a plain shell."""
    from lakehouse import naming

    code = readme_block(REPO / "docs" / "operations.md", "### TLS for the Thrift server", "python")
    code = code.replace(".tidewater/secrets", str(naming.secrets_dir(listeners))).replace("10000", str(listeners.thrift.port))
    code = code.replace("count(*) FROM serving.sensor_readings", "41 + 1").replace("count(*) FROM bronze.sensor_readings", "40 + 2")
    script = tmp_path / "example.py"
    script.write_text(code)
    env = {"PATH": PLAIN_PATH, "HOME": str(Path.home()), "LANG": "C.UTF-8"}
    out = subprocess.run([str(REPO / ".venv" / "bin" / "python"), str(script)], cwd=REPO, env=env,
                         capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, (out.stdout[-1500:], out.stderr[-3000:])
    assert out.stdout.split() == ["[(42,)]", "42"], out.stdout


def test_up_restarts_the_server_when_tls_is_turned_off(listeners: TidewaterConfig) -> None:
    """Last: ``thrift.tls: false`` on the running TLS server (``up`` calls ``thrift_server.start``) restarts
    it with plain TCP, and the same pyhive client logs in without TLS."""
    import dataclasses

    from infra.services import thrift_access, thrift_server

    plain = dataclasses.replace(listeners, thrift=dataclasses.replace(listeners.thrift, tls=False))
    before = thrift_server._process(listeners).pid()
    after = thrift_server.start(plain)
    assert after and after != before
    assert ";ssl=" not in thrift_server.jdbc_url(plain)
    with closing(thrift_access.connect(plain)) as conn, closing(conn.cursor()) as cur:
        cur.execute("SELECT 41 + 1")
        assert cur.fetchall() == [(42,)]
    assert thrift_server.start(plain) == after, "an unchanged transport is no reason to restart"
