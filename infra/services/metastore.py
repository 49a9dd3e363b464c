"""The shared Hive metastore database: Apache Derby in network-server mode on loopback.

Embedded Derby admits one JVM at a time; the network server lets the speed jobs, batch jobs,
the Thrift server and the CLI share one catalog. Authentication is on, with a password that is
generated on first start into ``<data_dir>/secrets/metastore.password`` (mode 0600), or taken
from ``TIDEWATER_METASTORE_PASSWORD``.
"""

from __future__ import annotations

import os
import secrets

from infra.jvm import require_java
from infra.secret_files import create_once
from infra.services.process import ManagedProcess, port_open, start_healthy
from lakehouse import naming
from lakehouse.config import TidewaterConfig
from lakehouse.errors import ServiceError

USER = "tidewater"


def _process(cfg: TidewaterConfig) -> ManagedProcess:
    return ManagedProcess("metastore", naming.run_dir(cfg), naming.logs_dir(cfg))


def password(cfg: TidewaterConfig) -> str:
    """The metastore password: from the environment, else generated once and kept in secrets/."""
    if os.environ.get("TIDEWATER_METASTORE_PASSWORD"):
        return os.environ["TIDEWATER_METASTORE_PASSWORD"]
    path = naming.secrets_dir(cfg) / "metastore.password"
    create_once(path, lambda: secrets.token_urlsafe(24))
    return path.read_text().strip()


def jdbc_url(cfg: TidewaterConfig) -> str:
    return f"jdbc:derby://{cfg.metastore.host}:{cfg.metastore.port}/metastore_db;create=true"


def start(cfg: TidewaterConfig, timeout: float = 60) -> int:
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
    return _process(cfg).stop(timeout=30)


def healthy(cfg: TidewaterConfig) -> bool:
    return port_open(cfg.metastore.host, cfg.metastore.port)


def status(cfg: TidewaterConfig) -> dict[str, object]:
    proc = _process(cfg)
    return {"service": "metastore", "pid": proc.pid(), "address": jdbc_url(cfg),
            "healthy": healthy(cfg), "log": str(proc.log_file)}
