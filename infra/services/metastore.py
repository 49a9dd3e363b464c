"""The shared Hive metastore database: Apache Derby in network-server mode on loopback, or PostgreSQL.

Embedded Derby admits one JVM at a time; the network server lets the speed jobs, batch jobs,
the Thrift server and the CLI share one catalog. Authentication is on, with a password that is
generated on first start into ``<data_dir>/secrets/metastore.password`` (mode 0600), or taken
from ``TIDEWATER_METASTORE_PASSWORD``.

``metastore.backend: postgres``: the catalog is the ``metastore`` database of the PostgreSQL service
(infra/services/postgres.py, its own user and password); ``start`` makes sure that server runs and
creates the whole schema once (infra/services/metastore_schema.py), and Derby is not started.
"""

from __future__ import annotations

import os

from infra.jvm import require_java
from infra.secret_files import generated_password
from infra.services import metastore_schema, postgres
from infra.services.process import ManagedProcess, port_open, start_healthy
from lakehouse import naming
from lakehouse.config import TidewaterConfig
from lakehouse.errors import ServiceError

USER = "tidewater"
DERBY_DRIVER = "org.apache.derby.jdbc.ClientDriver"


def on_postgres(cfg: TidewaterConfig) -> bool:
    return cfg.metastore.backend == "postgres"


def _process(cfg: TidewaterConfig) -> ManagedProcess:
    return ManagedProcess("metastore", naming.run_dir(cfg), naming.logs_dir(cfg))


def connection(cfg: TidewaterConfig) -> dict[str, str]:
    """What a Spark driver needs: JDBC URL, driver class, driver jar, user and password."""
    if on_postgres(cfg):
        return {"url": postgres.jdbc_url(cfg, "metastore"), "driver": metastore_schema.PG_DRIVER,
                "jar": str(metastore_schema.driver_jar()), "user": cfg.postgres.user, "password": postgres.password(cfg)}
    jars = sorted(naming.jars_dir("metastore").glob("derbyclient-*.jar"))
    return {"url": jdbc_url(cfg), "driver": DERBY_DRIVER, "jar": str(jars[0]) if jars else "", "user": USER,
            "password": password(cfg)}


def address(cfg: TidewaterConfig) -> str:
    pg = cfg.postgres
    return f"{pg.host}:{pg.port} (PostgreSQL)" if on_postgres(cfg) else f"{cfg.metastore.host}:{cfg.metastore.port}"


def password(cfg: TidewaterConfig) -> str:
    """The Derby metastore password."""
    return generated_password(naming.secrets_dir(cfg) / "metastore.password", "TIDEWATER_METASTORE_PASSWORD")


def jdbc_url(cfg: TidewaterConfig) -> str:
    return f"jdbc:derby://{cfg.metastore.host}:{cfg.metastore.port}/metastore_db;create=true"


def start(cfg: TidewaterConfig, timeout: float = 60) -> int:
    if on_postgres(cfg):
        pid = postgres.start(cfg)  # a no-op when `up` started it already
        metastore_schema.ensure_schema(cfg)
        return pid
    proc = _process(cfg)
    if proc.running():
        return proc.pid() or 0
    if port_open(cfg.metastore.host, cfg.metastore.port):
        raise ServiceError(
            f"metastore: port {cfg.metastore.port} is already in use; set metastore.port or TIDEWATER_METASTORE_PORT"
        )
    home = cfg.data_dir / "metastore"
    home.mkdir(parents=True, exist_ok=True)
    (home / "derby.properties").write_text(
        "derby.connection.requireAuthentication=true\n"
        "derby.authentication.provider=BUILTIN\n"
        f"derby.user.{USER}={password(cfg)}\n"
        "derby.database.sqlAuthorization=false\n"
    )
    os.chmod(home / "derby.properties", 0o600)
    argv = [
        require_java(), "-Xmx384m", *cfg.jvm_flags, f"-Dderby.system.home={home}",
        "-cp", str(naming.jars_dir("metastore") / "*"),
        "org.apache.derby.drda.NetworkServerControl", "start",
        "-h", cfg.metastore.host, "-p", str(cfg.metastore.port), "-noSecurityManager",
    ]
    return start_healthy(proc, argv, lambda: healthy(cfg), timeout, "metastore: Derby did not start", tail=10)


def stop(cfg: TidewaterConfig) -> bool:
    return _process(cfg).stop(timeout=30)  # on PostgreSQL: Derby is not running; `down` stops postgres


def healthy(cfg: TidewaterConfig) -> bool:
    if on_postgres(cfg):
        return postgres.healthy(cfg)
    return port_open(cfg.metastore.host, cfg.metastore.port)


def status(cfg: TidewaterConfig) -> dict[str, object]:
    if on_postgres(cfg):
        row = postgres.status(cfg)
        return {"service": "metastore", "pid": row["pid"], "address": postgres.jdbc_url(cfg, "metastore"),
                "healthy": row["healthy"], "log": row["log"]}
    proc = _process(cfg)
    return {"service": "metastore", "pid": proc.pid(), "address": jdbc_url(cfg),
            "healthy": healthy(cfg), "log": str(proc.log_file)}
