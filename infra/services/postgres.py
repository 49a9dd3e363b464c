"""PostgreSQL for ``airflow.database: postgres`` and ``metastore.backend: postgres``.

A cluster of its own (``initdb``) in ``<data_dir>/postgres/data``, run from Debian's ``postgresql``
package as a managed process: ``postgres -D`` listening on ``postgres.host:postgres.port``
(loopback only, no Unix socket), stopped with a fast shutdown (SIGINT). PostgreSQL refuses to run as
root, so as root the cluster belongs to the ``postgres`` user and every server command runs as that
user (``setpriv``, with a clean environment).

One login role (``postgres.user``, the cluster's superuser) owns the databases ``airflow`` and
``metastore``. Its password comes from ``TIDEWATER_POSTGRES_PASSWORD`` or is generated on first start
into ``<data_dir>/secrets/postgres.password``; clients get it from ``secrets/postgres.pgpass``
(``PGPASSFILE``, 0600), never from a command line. ``postgres.managed: false`` uses an existing server
instead: ``up`` starts nothing and only creates the two databases if they are missing.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any

from infra.secret_files import generated_password
from infra.services.process import ManagedProcess, port_open, wait_until
from lakehouse import naming
from lakehouse.config import TidewaterConfig
from lakehouse.errors import ServiceError

DATABASES = ("airflow", "metastore")
OS_USER = "postgres"  # Debian's package creates it; the server's owner when Tidewater runs as root
SETTINGS = {"shared_buffers": "64MB", "max_connections": "200", "unix_socket_directories": ""}


def enabled(cfg: TidewaterConfig) -> bool:
    return cfg.uses_postgres


def cluster_dir(cfg: TidewaterConfig) -> Path:
    return cfg.data_dir / "postgres" / "data"


def _process(cfg: TidewaterConfig) -> ManagedProcess:
    return ManagedProcess("postgres", naming.run_dir(cfg), naming.logs_dir(cfg))


def password(cfg: TidewaterConfig) -> str:
    return generated_password(naming.secrets_dir(cfg) / "postgres.password", "TIDEWATER_POSTGRES_PASSWORD")


def pgpass_file(cfg: TidewaterConfig) -> Path:
    """``secrets/postgres.pgpass`` (libpq's password file format, 0600) for this host, port and user."""
    def esc(value: str) -> str:
        return value.replace("\\", "\\\\").replace(":", "\\:")

    pg = cfg.postgres
    line = f"{esc(pg.host)}:{pg.port}:*:{esc(pg.user)}:{esc(password(cfg))}\n"
    path = naming.secrets_dir(cfg) / "postgres.pgpass"
    if not path.exists() or path.read_text() != line:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(line)
    return path


def jdbc_url(cfg: TidewaterConfig, database: str) -> str:
    return f"jdbc:postgresql://{cfg.postgres.host}:{cfg.postgres.port}/{database}"


def sqlalchemy_url(cfg: TidewaterConfig, database: str) -> str:
    """Without the password: libpq reads it from ``PGPASSFILE`` (``pgpass_file``)."""
    return f"postgresql+psycopg2://{cfg.postgres.user}@{cfg.postgres.host}:{cfg.postgres.port}/{database}"


def connect(cfg: TidewaterConfig, database: str = "postgres", timeout: int = 5) -> Any:
    import psycopg2

    pg = cfg.postgres
    return psycopg2.connect(host=pg.host, port=pg.port, user=pg.user, dbname=database,
                            passfile=str(pgpass_file(cfg)), connect_timeout=timeout)


def query(cfg: TidewaterConfig, database: str, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    conn = connect(cfg, database)
    try:
        with conn.cursor() as cur:
            cur.execute(sql, params)
            return list(cur.fetchall()) if cur.description else []
    finally:
        conn.close()


def _binary(name: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), key=lambda p: int(Path(p).parts[-3]))
    if found:
        return found[-1]
    if shutil.which(name):
        return str(shutil.which(name))
    raise ServiceError(f"postgres: '{name}' not found; install Debian's postgresql package "
                       "(bash infra/install_system_deps.sh, or apt-get install postgresql)")


def _as_owner(argv: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return argv
    return ["setpriv", f"--reuid={OS_USER}", f"--regid={OS_USER}", "--init-groups", "--reset-env", "--", *argv]


def _owned_dir(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    if os.geteuid() == 0:
        owner = pwd.getpwnam(OS_USER)
        os.chown(path, owner.pw_uid, owner.pw_gid)
        data = path.parent
        os.chmod(data, os.stat(data).st_mode | 0o001)  # the owner must traverse the data folder (search only)


def _initdb(cfg: TidewaterConfig) -> None:
    """A new cluster whose superuser is ``postgres.user`` with the password (scram-sha-256 over TCP)."""
    parent = cluster_dir(cfg).parent
    _owned_dir(parent)
    pwfile = parent / ".pwfile"
    fd = os.open(pwfile, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(password(cfg) + "\n")
    try:
        if os.geteuid() == 0:
            owner = pwd.getpwnam(OS_USER)
            os.chown(pwfile, owner.pw_uid, owner.pw_gid)
        result = subprocess.run(_as_owner([_binary("initdb"), "-D", str(cluster_dir(cfg)), "-U", cfg.postgres.user,
                                           f"--pwfile={pwfile}", "--auth-host=scram-sha-256", "--auth-local=reject",
                                           "-E", "UTF8", "--locale=C.UTF-8"]),
                                capture_output=True, text=True, timeout=300)
    finally:
        pwfile.unlink(missing_ok=True)
    if result.returncode != 0:
        raise ServiceError(f"postgres: initdb failed:\n{(result.stdout + result.stderr)[-1500:]}")


def start(cfg: TidewaterConfig, timeout: float = 60) -> int:
    """Start the cluster (initdb on first start) and create the databases; idempotent."""
    proc = _process(cfg)
    if cfg.postgres.managed and not proc.running():
        if port_open(cfg.postgres.host, cfg.postgres.port):
            raise ServiceError(f"postgres: port {cfg.postgres.port} is already in use; set postgres.port "
                               "or TIDEWATER_POSTGRES_PORT")
        if not (cluster_dir(cfg) / "PG_VERSION").exists():
            _initdb(cfg)
        settings = {**SETTINGS, "listen_addresses": cfg.postgres.host, "port": str(cfg.postgres.port)}
        argv = [_binary("postgres"), "-D", str(cluster_dir(cfg))]
        for key, value in settings.items():
            argv += ["-c", f"{key}={value}"]
        proc.start(_as_owner(argv), marker=str(cluster_dir(cfg)))
    if not wait_until(lambda: healthy(cfg) or (cfg.postgres.managed and not proc.running()), timeout, 0.5) \
            or not healthy(cfg):
        where = f"; log {proc.log_file}:\n{proc.tail(10)}" if cfg.postgres.managed else ""
        raise ServiceError(f"postgres: no answer at {cfg.postgres.host}:{cfg.postgres.port}{where}")
    ensure_databases(cfg)
    return int(proc.pid() or 0)


def ensure_databases(cfg: TidewaterConfig) -> None:
    conn = connect(cfg)
    conn.autocommit = True  # CREATE DATABASE cannot run in a transaction
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT datname FROM pg_database")
            existing = {row[0] for row in cur.fetchall()}
            for name in DATABASES:
                if name not in existing:
                    cur.execute(f'CREATE DATABASE "{name}"')
    finally:
        conn.close()


def stop(cfg: TidewaterConfig) -> bool:
    """Fast shutdown: open sessions are rolled back, the cluster stays consistent."""
    return _process(cfg).stop(timeout=60, sig=signal.SIGINT, group=False)


def healthy(cfg: TidewaterConfig) -> bool:
    if not port_open(cfg.postgres.host, cfg.postgres.port):
        return False
    try:
        connect(cfg, timeout=3).close()
    except Exception:  # starting up, a wrong password, …: not healthy
        return False
    return True


def status(cfg: TidewaterConfig) -> dict[str, object]:
    proc = _process(cfg)
    return {"service": "postgres", "pid": proc.pid(), "address": f"{cfg.postgres.host}:{cfg.postgres.port}",
            "healthy": healthy(cfg), "external": not cfg.postgres.managed, "databases": ",".join(DATABASES),
            "log": str(proc.log_file)}
