"""The PostgreSQL settings: defaults keep the demo on Derby/SQLite, a bad value is one line naming the
key and the allowed values, and the connection strings carry no password."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from lakehouse.config import TidewaterConfig, load_config
from lakehouse.errors import ConfigError

pytestmark = pytest.mark.unit


def _load(tmp_path: Path, text: str, env: dict[str, str] | None = None) -> TidewaterConfig:
    """The configuration of a ``tidewater.yml`` holding ``text``, with ``env`` as the whole environment."""
    (tmp_path / "tidewater.yml").write_text(text)
    return load_config(tmp_path / "tidewater.yml", env=env or {})


def test_defaults_need_no_postgres(tmp_path: Path) -> None:
    cfg = _load(tmp_path, "{}")
    assert (cfg.metastore.backend, cfg.airflow.database) == ("derby", "sqlite")
    assert (cfg.postgres.host, cfg.postgres.port, cfg.postgres.managed) == ("127.0.0.1", 15432, True)
    assert not cfg.uses_postgres
    from infra.services import SERVICE_MODULES, postgres

    assert SERVICE_MODULES[0] == "infra.services.postgres" and not postgres.enabled(cfg)


def test_file_and_environment_select_postgres(tmp_path: Path) -> None:
    cfg = _load(tmp_path, "metastore: {backend: postgres}\n")
    assert cfg.metastore.backend == "postgres" and cfg.airflow.database == "sqlite" and cfg.uses_postgres
    cfg = _load(tmp_path, "{}", {"TIDEWATER_AIRFLOW_DATABASE": "postgres", "TIDEWATER_METASTORE_BACKEND": "postgres",
                                "TIDEWATER_POSTGRES_PORT": "25432"})
    assert (cfg.airflow.database, cfg.metastore.backend, cfg.postgres.port) == ("postgres", "postgres", 25432)
    assert cfg.metastore.port == 1527  # the Derby port is untouched


@pytest.mark.parametrize(("text", "env", "message"), [
    ("airflow: {database: mysql}\n", {}, "config error: 'airflow.database' is 'mysql'; expected 'sqlite' or 'postgres'"),
    ("{}", {"TIDEWATER_METASTORE_BACKEND": "mysql"},
     "config error: 'metastore.backend' is 'mysql' (from TIDEWATER_METASTORE_BACKEND); expected 'derby' or 'postgres'"),
    ("postgres: {port: 70000}\n", {}, "config error: 'postgres.port' is 70000; expected a TCP port between 1 and 65535"),
    ("postgres: {host: 0.0.0.0}\n", {}, "config error: 'postgres.host' is '0.0.0.0'; expected a loopback address"),
    ("postgres: {user: 'a b'}\n", {}, "config error: 'postgres.user' is 'a b'; expected a role name"),
    ("postgres: {managed: maybe}\n", {}, "config error: 'postgres.managed' is 'maybe'; expected true or false"),
])
def test_bad_values_name_the_key_and_allowed_values(tmp_path: Path, text: str, env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        _load(tmp_path, text, env)
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


def test_an_external_server_may_be_remote(tmp_path: Path) -> None:
    cfg = _load(tmp_path, "postgres: {host: db.internal, port: 5432, managed: false}\n")
    assert (cfg.postgres.host, cfg.postgres.port, cfg.postgres.managed) == ("db.internal", 5432, False)


def test_cli_prints_one_line_and_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "tidewater.yml"
    path.write_text("airflow: {database: oracle}\n")
    out = subprocess.run([sys.executable, "-m", "tidewater.cli", "--config", str(path), "config", "show"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        "tidewater: config error: 'airflow.database' is 'oracle'; expected 'sqlite' or 'postgres'"]


def test_connection_strings_hold_no_password(tmp_path: Path) -> None:
    from infra.services import postgres

    cfg = _load(tmp_path, "postgres: {port: 25432}\n")
    secret = postgres.password(cfg)
    assert postgres.sqlalchemy_url(cfg, "airflow") == "postgresql+psycopg2://tidewater@127.0.0.1:25432/airflow"
    assert postgres.jdbc_url(cfg, "metastore") == "jdbc:postgresql://127.0.0.1:25432/metastore"
    pgpass = postgres.pgpass_file(cfg)
    assert pgpass.read_text() == f"127.0.0.1:25432:*:tidewater:{secret}\n"
    assert pgpass.stat().st_mode & 0o777 == 0o600
    assert secret not in postgres.sqlalchemy_url(cfg, "airflow") + postgres.jdbc_url(cfg, "metastore")
