"""Apache Superset: the BI dashboards over the Thrift server (``make bi``; ``tidewater up`` when ``bi.enabled``).

* Its own virtualenv ``.venv-bi`` (``make bi-venv``, pins in ``infra/superset/constraints.txt``):
  Superset 6.1 needs SQLAlchemy < 2, Airflow 3 needs SQLAlchemy 2.
* ``SUPERSET_HOME`` is ``<data_dir>/superset``; metadata DB: SQLite there. Config file:
  ``infra/superset/superset_config.py`` (reads the paths below from the environment).
* Secrets, generated once into ``<data_dir>/secrets/superset.json`` (0600): ``SECRET_KEY`` and the
  ``admin`` password (or ``TIDEWATER_BI_PASSWORD`` if set). Neither ever reaches a command line:
  ``infra/superset/provision.py`` reads the file itself.
* ``start`` provisions (DB migration and role sync when Superset's version changed; then admin user,
  database connection, datasets, charts, dashboard: an import by UUID with overwrite, so
  idempotent), then serves with gunicorn on ``bi.host:bi.port`` (127.0.0.1 only) and waits for ``/health``.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import urllib.request
from pathlib import Path

from infra.services import thrift_tls
from infra.services.process import ManagedProcess, port_open, wait_until
from lakehouse import naming
from lakehouse.config import TidewaterConfig
from lakehouse.errors import ServiceError

REPO = Path(__file__).resolve().parents[2]
VENV = REPO / ".venv-bi"
ASSETS = REPO / "infra" / "superset"
USER = "admin"
DASHBOARD_SLUG = "sensor-readings"


def home(cfg: TidewaterConfig) -> Path:
    return cfg.data_dir / "superset"


def secrets_file(cfg: TidewaterConfig) -> Path:
    return naming.secrets_dir(cfg) / "superset.json"


def base_url(cfg: TidewaterConfig) -> str:
    return f"http://{cfg.bi.host}:{cfg.bi.port}"


def dashboard_url(cfg: TidewaterConfig) -> str:
    return f"{base_url(cfg)}/superset/dashboard/{DASHBOARD_SLUG}/"


def sqlalchemy_uri(cfg: TidewaterConfig) -> str:
    """pyhive's ``hive://`` dialect, without a user: provisioning logs it in as ``analyst``
    (``thrift_access.logged_in``); with ``thrift.tls``, Superset's config adds the TLS transport."""
    return f"hive://{cfg.thrift.host}:{cfg.thrift.port}/default"


def _bin(name: str) -> str:
    return str(VENV / "bin" / name)


def _secrets(cfg: TidewaterConfig) -> dict[str, str]:
    path = secrets_file(cfg)
    data = json.loads(path.read_text()) if path.exists() else {}
    wanted = {"secret_key": data.get("secret_key") or secrets.token_urlsafe(42),
              "admin_password": os.environ.get("TIDEWATER_BI_PASSWORD") or data.get("admin_password")
              or secrets.token_urlsafe(16)}
    if wanted != data:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            json.dump(wanted, fh)
    os.chmod(path, 0o600)
    return wanted


def password(cfg: TidewaterConfig) -> str:
    try:
        return str(json.loads(secrets_file(cfg).read_text())["admin_password"])
    except (FileNotFoundError, KeyError, ValueError):
        raise ServiceError(f"superset: no password in {secrets_file(cfg)}; run 'make bi' first") from None


def env(cfg: TidewaterConfig) -> dict[str, str]:
    return {"SUPERSET_HOME": str(home(cfg)), "SUPERSET_CONFIG_PATH": str(ASSETS / "superset_config.py"),
            "TIDEWATER_SUPERSET_SECRETS": str(secrets_file(cfg)), "FLASK_APP": "superset",
            "PATH": f"{VENV / 'bin'}:{os.environ.get('PATH', '/usr/bin:/bin')}", "PYTHONPATH": "",
            "TIDEWATER_SUPERSET_URI": sqlalchemy_uri(cfg), "TIDEWATER_SUPERSET_USER": USER,
            **({"TIDEWATER_THRIFT_TLS_CA": str(thrift_tls.certificate(cfg))} if cfg.thrift.tls else {})}


def _process(cfg: TidewaterConfig) -> ManagedProcess:
    return ManagedProcess("superset", naming.run_dir(cfg), naming.logs_dir(cfg))


def _prepare(cfg: TidewaterConfig) -> None:
    if not Path(_bin("superset")).exists():
        raise ServiceError(f"superset: {VENV} is missing; run 'make bi' (it installs Superset there)")
    home(cfg).mkdir(parents=True, exist_ok=True)
    _secrets(cfg)


def provision(cfg: TidewaterConfig) -> list[str]:
    """Metadata DB, roles, admin user, database connection, datasets, charts, dashboard (idempotent).
    ``start`` does the same inside the server process (infra/superset/wsgi.py)."""
    _prepare(cfg)
    out = subprocess.run([_bin("python"), str(ASSETS / "provision.py")], env={**os.environ, **env(cfg)},
                         cwd=home(cfg), capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        raise ServiceError(f"superset: provisioning (infra/superset/provision.py) failed:\n"
                           f"{(out.stdout + out.stderr)[-2000:]}")
    return [line for line in out.stdout.splitlines() if line.startswith("provision:")]


def start(cfg: TidewaterConfig, timeout: float = 300) -> int:
    proc = _process(cfg)
    if proc.running():
        return proc.pid() or 0
    if cfg.bi.host not in ("127.0.0.1", "localhost", "::1"):
        raise ServiceError(f"superset: bi.host is {cfg.bi.host!r}; Superset binds to loopback only (127.0.0.1)")
    if port_open(cfg.bi.host, cfg.bi.port):
        raise ServiceError(f"superset: port {cfg.bi.port} is already in use; set bi.port or TIDEWATER_BI_PORT")
    first = not secrets_file(cfg).exists()
    _prepare(cfg)
    argv = [_bin("gunicorn"), "--bind", f"{cfg.bi.host}:{cfg.bi.port}", "--workers", "1", "--threads", "8",
            "--worker-class", "gthread", "--timeout", "300", "--pythonpath", str(ASSETS), "wsgi:application"]
    pid = proc.start(argv, env=env(cfg), cwd=home(cfg), marker=str(ASSETS))
    if not wait_until(lambda: healthy(cfg) or not proc.running(), timeout, interval=1) or not proc.running():
        raise ServiceError(f"superset: not healthy after {timeout:.0f}s; log {proc.log_file}:\n{proc.tail(15)}")
    if first:
        print(f"Superset {dashboard_url(cfg)}  login: {USER} / password in {secrets_file(cfg)} (admin_password)",
              flush=True)
    return pid


def stop(cfg: TidewaterConfig) -> bool:
    return _process(cfg).stop(timeout=30)


def healthy(cfg: TidewaterConfig) -> bool:
    try:
        with urllib.request.urlopen(f"{base_url(cfg)}/health", timeout=5) as resp:
            return resp.status == 200
    except OSError:
        return False


def enabled(cfg: TidewaterConfig) -> bool:
    return cfg.bi.enabled


def status(cfg: TidewaterConfig) -> dict[str, object]:
    proc = _process(cfg)
    return {"service": "superset", "pid": proc.pid(), "address": dashboard_url(cfg), "healthy": healthy(cfg),
            "login": f"{USER} (password in {secrets_file(cfg)})", "log": str(proc.log_file)}
