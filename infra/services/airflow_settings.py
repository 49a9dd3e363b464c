"""The settings every local Airflow process runs with (``infra.services.airflow`` starts them):
its home, URL, login, generated secrets, metadata database and environment.
"""

from __future__ import annotations

import json
import os
import secrets
import sys
from pathlib import Path

from infra import utc
from infra.secret_files import create_once
from infra.services import postgres
from lakehouse import naming
from lakehouse.config import TidewaterConfig
from lakehouse.errors import ServiceError

REPO = Path(__file__).resolve().parents[2]
USER = "admin"


def home(cfg: TidewaterConfig) -> Path:
    return cfg.data_dir / "airflow"


def passwords_file(cfg: TidewaterConfig) -> Path:
    return home(cfg) / "simple_auth_manager_passwords.json.generated"


def base_url(cfg: TidewaterConfig) -> str:
    return f"http://{cfg.airflow.host}:{cfg.airflow.port}"


def airflow_bin() -> str:
    return str(Path(sys.executable).parent / "airflow")


def _secrets(cfg: TidewaterConfig) -> dict[str, str]:
    path = naming.secrets_dir(cfg) / "airflow.json"
    if not path.exists():
        from cryptography.fernet import Fernet

        create_once(path, lambda: json.dumps({"jwt_secret": secrets.token_urlsafe(32),
                                              "secret_key": secrets.token_urlsafe(32),
                                              "fernet_key": Fernet.generate_key().decode()}))
    return dict(json.loads(path.read_text()))


# the environment variables of ``env`` that hold a secret (from ``_secrets``): never written anywhere else
SECRET_ENV = ("AIRFLOW__CORE__FERNET_KEY", "AIRFLOW__API__SECRET_KEY", "AIRFLOW__API_AUTH__JWT_SECRET")


# The password is a secret; the host zone is what the starting process was pinned from (infra.utc), which
# depends on whether that process had started Spark, not on any setting.
NOT_PASSED_ON = ("TIDEWATER_AIRFLOW_PASSWORD", utc.HOST_ZONE_ENV)


def env(cfg: TidewaterConfig) -> dict[str, str]:
    """Environment of every Airflow process (and, inherited, of every task)."""
    keys = _secrets(cfg)
    venv_bin = str(Path(sys.executable).parent)
    tidewater = {k: v for k, v in os.environ.items() if k.startswith("TIDEWATER_") and k not in NOT_PASSED_ON}
    tidewater["TIDEWATER_DATA_DIR"] = str(cfg.data_dir)
    if cfg.source != "<defaults>":
        tidewater["TIDEWATER_CONFIG"] = cfg.source
    url = base_url(cfg)
    return {
        **_database(cfg),
        **tidewater,
        "PATH": f"{venv_bin}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "PYTHONPATH": str(REPO),
        "AIRFLOW_HOME": str(home(cfg)),
        "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
        "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
        "AIRFLOW__CORE__PARALLELISM": "2",
        "AIRFLOW__CORE__MAX_ACTIVE_TASKS_PER_DAG": "2",
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__FERNET_KEY": keys["fernet_key"],
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{USER}:admin",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords_file(cfg)),
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{url}/execution/",
        "AIRFLOW__API__HOST": cfg.airflow.host,
        "AIRFLOW__API__PORT": str(cfg.airflow.port),
        "AIRFLOW__API__BASE_URL": url,
        "AIRFLOW__API__WORKERS": "1",
        "AIRFLOW__API__SECRET_KEY": keys["secret_key"],
        "AIRFLOW__API__EXPOSE_CONFIG": "False",
        "AIRFLOW__API_AUTH__JWT_SECRET": keys["jwt_secret"],
        # A worker notices a finished task process by its exit; when the task's sockets close first, it
        # sleeps this long before looking again: with the default 5 s, skipped tasks linger that long
        "AIRFLOW__WORKERS__MIN_HEARTBEAT_INTERVAL": "1",
        "AIRFLOW__DAG_PROCESSOR__PARSING_PROCESSES": "1",
        "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "30",
        "AIRFLOW__SCHEDULER__USE_JOB_SCHEDULE": "True",
        "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(home(cfg) / "logs"),
        "TIDEWATER_AIRFLOW_BATCH_SCHEDULE": os.environ.get("TIDEWATER_AIRFLOW_BATCH_SCHEDULE", cfg.airflow.batch_schedule),
        "TIDEWATER_AIRFLOW_ACTIVE_DAGS": cfg.airflow.active_dags,
        "TIDEWATER_MODE": cfg.mode,
    }


def _database(cfg: TidewaterConfig) -> dict[str, str]:
    """Airflow's metadata DB: SQLite in AIRFLOW_HOME, or PostgreSQL (password in the pgpass file)."""
    if cfg.airflow.database == "postgres":
        return {"AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": postgres.sqlalchemy_url(cfg, "airflow"),
                "PGPASSFILE": str(postgres.pgpass_file(cfg))}
    return {"AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home(cfg) / 'airflow.db'}"}


def prepare_password(cfg: TidewaterConfig) -> None:
    """Write the env-provided password for SimpleAuthManager (else Airflow generates one)."""
    wanted = os.environ.get("TIDEWATER_AIRFLOW_PASSWORD")
    path = passwords_file(cfg)
    if wanted and (not path.exists() or json.loads(path.read_text() or "{}").get(USER) != wanted):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            json.dump({USER: wanted}, fh)


def password(cfg: TidewaterConfig) -> str:
    try:
        return str(json.loads(passwords_file(cfg).read_text())[USER])
    except (FileNotFoundError, KeyError, ValueError):
        raise ServiceError(f"airflow: no password in {passwords_file(cfg)}; run 'tidewater up' first") from None
