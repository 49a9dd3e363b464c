"""Typed Tidewater configuration: one YAML file plus environment overrides.

The file is ``tidewater.yml`` in the working directory, or the path in ``TIDEWATER_CONFIG``.
Environment variables override single keys (see ``ENV_OVERRIDES``). Every problem raises
:class:`ConfigError` naming the key, what it holds and the form that is expected, or, for a file that does
not parse, :class:`YamlSyntaxError` naming its line and column. The raw values
become these dataclasses (the services' sections: ``lakehouse.config_services``) in
``lakehouse.config_parse``; the checks they must pass are ``lakehouse.config_checks``.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from lakehouse.config_parse import build, set_dotted
from lakehouse.config_services import (
    AirflowConfig,
    BiConfig,
    JobServiceConfig,
    MetastoreConfig,
    PostgresConfig,
    ReplayConfig,
    ThriftConfig,
)
from lakehouse.errors import ConfigError
from lakehouse.yaml_file import read_yaml

MODES = ("lambda", "kappa")
DAGS = ("speed", "batch", "quality", "maintenance", "replay")  # dags/tidewater_<name>.py
ENV_OVERRIDES = {
    "TIDEWATER_DATA_DIR": "data_dir",
    "TIDEWATER_MODE": "mode",
    "TIDEWATER_KAFKA_BOOTSTRAP": "kafka.bootstrap_servers",
    "TIDEWATER_KAFKA_PORT": "kafka.port",
    "TIDEWATER_KAFKA_CONTROLLER_PORT": "kafka.controller_port",
    "TIDEWATER_KAFKA_BROKERS": "kafka.brokers",
    "TIDEWATER_SPARK_MASTER": "spark.master",
    "TIDEWATER_SPEED_NICE": "spark.speed_nice",
    "TIDEWATER_WARM_UP_PLAN_ROUNDS": "spark.warm_up_plan_rounds",
    "TIDEWATER_WARM_UP_RECORD_ROUNDS": "spark.warm_up_record_rounds",
    "TIDEWATER_INTERPRETED_MAX_RECORDS": "spark.interpreted_max_records",
    "TIDEWATER_MAX_OFFSETS_PER_TRIGGER": "spark.max_offsets_per_trigger",
    "TIDEWATER_METASTORE_PORT": "metastore.port",
    "TIDEWATER_METASTORE_BACKEND": "metastore.backend",
    "TIDEWATER_AIRFLOW_DATABASE": "airflow.database",
    "TIDEWATER_POSTGRES_PORT": "postgres.port",
    "TIDEWATER_THRIFT_PORT": "thrift.port",
    "TIDEWATER_THRIFT_MAX_STALENESS_SECONDS": "thrift.max_staleness_seconds",
    "TIDEWATER_AIRFLOW_PORT": "airflow.port",
    "TIDEWATER_AIRFLOW_ACTIVE_DAGS": "airflow.active_dags",
    "TIDEWATER_BI_ENABLED": "bi.enabled",
    "TIDEWATER_BI_PORT": "bi.port",
    "TIDEWATER_JOB_SERVICE_ENABLED": "job_service.enabled",
    "TIDEWATER_JOB_SERVICE_PORT": "job_service.port",
    "TIDEWATER_JVM_OPTIONS": "jvm_options",
}
MAX_BROKERS = 9
PORT_STRIDE = 2  # broker i (1..N) listens on kafka.port + 2(i-1), its controller on kafka.controller_port + 2(i-1)


@dataclass(frozen=True)
class KafkaConfig:
    host: str = "127.0.0.1"
    port: int = 9092
    controller_port: int = 9093
    partitions: int = 4
    retention_ms: int = 604_800_000
    starting_offsets: str = "earliest"
    bootstrap_servers: str = ""
    brokers: int = 1  # local brokers (KRaft); with bootstrap_servers: the size of that external cluster

    def node_ports(self) -> list[tuple[int, int, int]]:
        """(node id, client port, controller port) of each local broker: node ids 1..N, ports by
        ``PORT_STRIDE`` from ``port`` and ``controller_port`` (the defaults give 9092/9093, 9094/9095, …)."""
        return [(i, self.port + PORT_STRIDE * (i - 1), self.controller_port + PORT_STRIDE * (i - 1))
                for i in range(1, self.brokers + 1)]

    @property
    def bootstrap(self) -> str:
        """The one bootstrap list every client gets: ``bootstrap_servers``, else every local broker."""
        return self.bootstrap_servers or ",".join(f"{self.host}:{port}" for _, port, _ in self.node_ports())

    @property
    def replication_factor(self) -> int:
        """Of every topic Tidewater creates and of Kafka's internal topics."""
        return min(3, self.brokers)

    @property
    def min_insync_replicas(self) -> int:
        """An acks=all write needs this many replicas: 2 of 3 survive one broker down without data loss."""
        return 2 if self.brokers >= 3 else 1


@dataclass(frozen=True)
class SparkConfig:
    master: str = "local[*]"
    driver_memory: str = "2g"
    shuffle_partitions: int = 4
    trigger_seconds: int = 1
    max_offsets_per_trigger: int = 500_000
    # CPU priority of speed and replay jobs (0 to 19, like nice): interactive queries first on busy cores
    speed_nice: int = 10
    # warm-up of a speed job before its query starts (spark_jobs/io/stream_warm_up.py): rounds on no
    # rows (plans, write path), then rounds on the topic's latest records (Kafka read, parse, partials)
    warm_up_plan_rounds: int = 4
    warm_up_record_rounds: int = 3
    # a speed micro-batch of at most this many Kafka records runs interpreted, a bigger one Spark's
    # generated code (spark_jobs/io/execution_mode.py); 0: always generated code
    interpreted_max_records: int = 10_000


@dataclass(frozen=True)
class TidewaterConfig:
    data_dir: Path = Path(".tidewater")
    mode: str = "lambda"
    kafka: KafkaConfig = field(default_factory=KafkaConfig)
    spark: SparkConfig = field(default_factory=SparkConfig)
    metastore: MetastoreConfig = field(default_factory=MetastoreConfig)
    postgres: PostgresConfig = field(default_factory=PostgresConfig)
    thrift: ThriftConfig = field(default_factory=ThriftConfig)
    airflow: AirflowConfig = field(default_factory=AirflowConfig)
    replay: ReplayConfig = field(default_factory=ReplayConfig)
    bi: BiConfig = field(default_factory=BiConfig)
    job_service: JobServiceConfig = field(default_factory=JobServiceConfig)
    pipelines: dict[str, dict[str, Any]] = field(default_factory=dict)
    jvm_options: str = ""       # extra flags for every JVM Tidewater starts (Spark, Kafka, metastore)
    source: str = "<defaults>"

    @property
    def uses_postgres(self) -> bool:
        return "postgres" in (self.metastore.backend, self.airflow.database)

    @property
    def jvm_flags(self) -> list[str]:
        from lakehouse.jvm_options import jvm_flags

        return jvm_flags(self.jvm_options)

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["data_dir"] = str(self.data_dir)
        out["kafka"]["bootstrap_servers"] = self.kafka.bootstrap
        return out


def load_config(path: str | os.PathLike[str] | None = None, env: dict[str, str] | None = None) -> TidewaterConfig:
    """Load ``tidewater.yml`` (or ``path``/``$TIDEWATER_CONFIG``), apply env overrides, validate."""
    from lakehouse.config_checks import validate  # it reads this module's constants

    env = dict(os.environ if env is None else env)
    explicit = path or env.get("TIDEWATER_CONFIG")
    cfg_path = Path(explicit) if explicit else Path("tidewater.yml")
    raw: dict[str, Any] = {}
    if cfg_path.exists():
        loaded = read_yaml(cfg_path) or {}
        if not isinstance(loaded, dict):
            raise ConfigError(str(cfg_path), type(loaded).__name__, "a YAML mapping of keys")
        raw = loaded
    elif explicit:
        raise ConfigError("TIDEWATER_CONFIG", str(cfg_path), "the path of an existing YAML file")
    from_env = {dotted: var for var, dotted in ENV_OVERRIDES.items() if env.get(var)}
    for dotted, var in from_env.items():
        set_dotted(raw, dotted, env[var])
    try:
        cfg = build(TidewaterConfig, raw)
        data_dir = cfg.data_dir if cfg.data_dir.is_absolute() else (cfg_path.resolve().parent / cfg.data_dir)
        cfg = TidewaterConfig(**{**{f.name: getattr(cfg, f.name) for f in fields(cfg)}, "data_dir": data_dir,
                                 "source": str(cfg_path.resolve()) if cfg_path.exists() else "<defaults>"})
        validate(cfg)
    except ConfigError as exc:  # a value set by an environment variable: the error names the variable to fix
        if exc.key not in from_env or exc.source:
            raise
        raise ConfigError(exc.key, exc.value, exc.expected, source=from_env[exc.key]) from None
    return cfg
