"""The sections of Tidewater's configuration for the services it starts or connects to (Thrift server,
metastore, PostgreSQL, Airflow, Superset, job service) and for replays; ``lakehouse.config`` holds the
whole configuration and loads it.
"""

from __future__ import annotations

from dataclasses import dataclass

# the choices of a database setting, first = default (postgres: infra/services/postgres.py, docs/operations.md)
DATABASES = {"metastore.backend": ("derby", "postgres"), "airflow.database": ("sqlite", "postgres")}
LOOPBACK = ("127.0.0.1", "localhost", "::1")
SPEED_HOSTS = ("per_pipeline", "shared")  # speed.host (lakehouse.config_model.SpeedConfig)
MODES = ("lambda", "kappa")
DAGS = ("speed", "batch", "quality", "maintenance", "replay")  # dags/tidewater_<name>.py
MAX_BROKERS = 9
PORT_STRIDE = 2  # broker i (1..N) listens on kafka.port + 2(i-1), its controller on kafka.controller_port + 2(i-1)


@dataclass(frozen=True)
class ThriftConfig:
    """The Spark Thrift server (JDBC); loopback only. ``max_staleness_seconds``: how far behind other
    processes' commits a JDBC answer may be, in exchange for speed. ``serving.<p>`` is answered from
    the server's memory, rebuilt at most this often while its tables change (so it lags by up to this
    plus one rebuild; a publish or replay switch at once: ``spark_jobs.serving.cache``). Other tables
    are always read at their newest commit. 0: ``serving.<p>`` too (no in-memory copy). ``tls``: the
    transport is TLS with a generated self-signed certificate (``infra.services.thrift_tls``)."""
    host: str = "127.0.0.1"
    port: int = 10000
    max_staleness_seconds: int = 5
    tls: bool = False


@dataclass(frozen=True)
class MetastoreConfig:
    host: str = "127.0.0.1"
    port: int = 1527  # the Derby network server
    backend: str = DATABASES["metastore.backend"][0]


@dataclass(frozen=True)
class PostgresConfig:
    """The PostgreSQL server of a ``postgres`` backend: Tidewater's own cluster (``managed``, loopback
    only), or an existing server whose password comes from ``TIDEWATER_POSTGRES_PASSWORD``."""
    host: str = "127.0.0.1"
    port: int = 15432
    user: str = "tidewater"
    managed: bool = True


@dataclass(frozen=True)
class AirflowConfig:
    host: str = "127.0.0.1"
    port: int = 8080
    database: str = DATABASES["airflow.database"][0]  # Airflow's metadata DB
    batch_schedule: str = "@hourly"
    # DAGs (tidewater_<name>) created unpaused by the first `tidewater up`; "" keeps all of them paused
    active_dags: str = "speed,batch,quality"

    @property
    def active(self) -> tuple[str, ...]:
        return tuple(d.strip() for d in self.active_dags.split(",") if d.strip())


@dataclass(frozen=True)
class BiConfig:
    """Apache Superset (``make bi``, infra/services/superset.py); loopback only."""
    enabled: bool = False
    host: str = "127.0.0.1"
    port: int = 8088


@dataclass(frozen=True)
class JobServiceConfig:
    """The Tidewater job service (infra/job_service/__init__.py): one warm Spark driver that runs
    Spark-bound CLI commands; loopback only, token-authenticated."""
    enabled: bool = True
    host: str = "127.0.0.1"
    port: int = 10010


@dataclass(frozen=True)
class ReplayConfig:
    max_lag_records: int = 0
