"""Typed Tidewater configuration: one YAML file plus environment overrides.

The file is ``tidewater.yml`` in the working directory, or the path in ``TIDEWATER_CONFIG``.
Environment variables override single keys (see ``ENV_OVERRIDES``). Every problem raises
:class:`ConfigError` naming the key, what it holds and the form that is expected.
"""

from __future__ import annotations

import os
import re
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any

from lakehouse.errors import ConfigError

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
_MASTER = re.compile(r"^(local(\[(\*|\d+)(,\d+)?\])?|spark://[\w.\-]+:\d+(,[\w.\-]+:\d+)*|k8s://\S+|yarn)$")
_OFFSETS = ("earliest", "latest")
MAX_BROKERS = 9
# the choices of a database setting, first = default (postgres: infra/services/postgres.py, docs/operations.md)
DATABASES = {"metastore.backend": ("derby", "postgres"), "airflow.database": ("sqlite", "postgres")}
LOOPBACK = ("127.0.0.1", "localhost", "::1")
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
class ThriftConfig:
    """The Spark Thrift server (JDBC); loopback only. ``max_staleness_seconds``: how far behind other
    processes' commits a JDBC answer may be, in exchange for speed. ``serving.<p>`` is answered from
    the server's memory, rebuilt at most this often while its tables change (so it lags by up to this
    plus one rebuild; a publish or replay switch at once: ``spark_jobs.serving_cache``). Other tables
    are always read at their newest commit. 0: ``serving.<p>`` too (no in-memory copy)."""
    host: str = "127.0.0.1"
    port: int = 10000
    max_staleness_seconds: int = 5


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
    """The Tidewater job service (infra/services/job_service.py): one warm Spark driver that runs
    Spark-bound CLI commands; loopback only, token-authenticated."""
    enabled: bool = True
    host: str = "127.0.0.1"
    port: int = 10010


@dataclass(frozen=True)
class ReplayConfig:
    max_lag_records: int = 0


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


def _coerce(key: str, value: Any, typ: Any, default: Any) -> Any:
    """Convert one raw value to the field's type, or raise a ConfigError that names the key."""
    type_name = typ if isinstance(typ, str) else getattr(typ, "__name__", str(typ))
    if type_name == "int":
        if isinstance(value, bool):
            raise ConfigError(key, value, "an integer, e.g. 4")
        try:
            return int(value)
        except (TypeError, ValueError):
            raise ConfigError(key, value, "an integer, e.g. 4") from None
    if type_name == "bool":
        if isinstance(value, bool) or str(value).lower() in ("true", "false", "1", "0"):
            return value if isinstance(value, bool) else str(value).lower() in ("true", "1")
        raise ConfigError(key, value, "true or false")
    if type_name == "str":
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            raise ConfigError(key, value, "a string")
        return str(value)
    if type_name == "Path":
        if not isinstance(value, (str, Path)) or not str(value):
            raise ConfigError(key, value, "a folder path, e.g. .tidewater")
        return Path(value)
    if is_dataclass(default):
        if not isinstance(value, dict):
            raise ConfigError(key, value, f"a mapping with keys {[f.name for f in fields(default)]}")
        return _build(type(default), value, prefix=f"{key}.", base=default)
    if "dict" in type_name:
        if not isinstance(value, dict):
            raise ConfigError(key, value, "a mapping, e.g. {sensor_readings: {watermark: '5 minutes'}}")
        return value
    return value


def _build(cls: type, raw: dict[str, Any], prefix: str = "", base: Any = None) -> Any:
    base = base if base is not None else cls()
    known = {f.name: f for f in fields(cls)}
    kwargs = {}
    for key, value in raw.items():
        if key not in known or key == "source":
            raise ConfigError(
                f"{prefix}{key}", value, f"one of the known keys: {', '.join(k for k in known if k != 'source')}"
            )
        kwargs[key] = _coerce(f"{prefix}{key}", value, known[key].type, getattr(base, key))
    return cls(**{**{f.name: getattr(base, f.name) for f in fields(cls)}, **kwargs})


def _set_dotted(raw: dict[str, Any], dotted: str, value: str) -> None:
    node = raw
    *parents, leaf = dotted.split(".")
    for part in parents:
        node = node.setdefault(part, {}) if isinstance(node.get(part, {}), dict) else {}
    node[leaf] = value


def _validate(cfg: TidewaterConfig) -> None:
    if cfg.mode not in MODES:
        raise ConfigError("mode", cfg.mode, "'lambda' or 'kappa'")
    if not _MASTER.match(cfg.spark.master):
        raise ConfigError(
            "spark.master", cfg.spark.master, "local[*], local[N], spark://HOST:PORT, k8s://URL or yarn"
        )
    if cfg.kafka.starting_offsets not in _OFFSETS:
        raise ConfigError("kafka.starting_offsets", cfg.kafka.starting_offsets, "'earliest' or 'latest'")
    if cfg.kafka.partitions < 1:
        raise ConfigError("kafka.partitions", cfg.kafka.partitions, "an integer >= 1")
    for key, port in (
        ("kafka.port", cfg.kafka.port),
        ("kafka.controller_port", cfg.kafka.controller_port),
        ("metastore.port", cfg.metastore.port),
        ("thrift.port", cfg.thrift.port),
        ("airflow.port", cfg.airflow.port),
        ("bi.port", cfg.bi.port),
        ("job_service.port", cfg.job_service.port),
        ("postgres.port", cfg.postgres.port),
    ):
        if not 1 <= port <= 65535:
            raise ConfigError(key, port, "a TCP port between 1 and 65535")
    _validate_brokers(cfg.kafka)
    _validate_databases(cfg)
    unknown = sorted(set(cfg.airflow.active) - set(DAGS))
    if unknown:
        raise ConfigError("airflow.active_dags", cfg.airflow.active_dags, f"comma-separated DAG names out of {', '.join(DAGS)}")
    for key, host in (("bi.host", cfg.bi.host), ("job_service.host", cfg.job_service.host)):
        if host not in LOOPBACK:
            raise ConfigError(key, host, "a loopback address (127.0.0.1): the service is local only")
    if cfg.spark.max_offsets_per_trigger < 1:
        raise ConfigError("spark.max_offsets_per_trigger", cfg.spark.max_offsets_per_trigger, "an integer >= 1")
    if not 0 <= cfg.spark.speed_nice <= 19:
        raise ConfigError("spark.speed_nice", cfg.spark.speed_nice, "an integer from 0 (no change) to 19 (lowest priority)")
    for key in ("warm_up_plan_rounds", "warm_up_record_rounds"):
        if not 0 <= getattr(cfg.spark, key) <= 10:
            raise ConfigError(f"spark.{key}", getattr(cfg.spark, key), "an integer from 0 (no warm-up) to 10")
    if not 0 <= cfg.spark.interpreted_max_records <= 1_000_000:
        raise ConfigError("spark.interpreted_max_records", cfg.spark.interpreted_max_records,
                          "an integer from 0 (always Spark's generated code) to 1000000")
    if not 0 <= cfg.thrift.max_staleness_seconds <= 60:
        raise ConfigError("thrift.max_staleness_seconds", cfg.thrift.max_staleness_seconds,
                          "an integer from 0 (every JDBC query reads the newest commit) to 60")
    if cfg.spark.trigger_seconds < 0:
        raise ConfigError("spark.trigger_seconds", cfg.spark.trigger_seconds, "an integer >= 0")
    try:
        flags = cfg.jvm_flags
    except ValueError:
        flags = ["<unbalanced quotes>"]
    if any(not flag.startswith("-") for flag in flags):
        raise ConfigError("jvm_options", cfg.jvm_options, "JVM flags separated by spaces, e.g. -XX:TieredStopAtLevel=1")
    for name, over in cfg.pipelines.items():
        if over is not None and not isinstance(over, dict):
            raise ConfigError(f"pipelines.{name}", over, "a mapping of overrides, e.g. {watermark: '5 minutes'}")
    if not re.match(r"^\d+[gmk]$", cfg.spark.driver_memory):
        raise ConfigError("spark.driver_memory", cfg.spark.driver_memory, "a JVM size such as 2g or 512m")


def _validate_databases(cfg: TidewaterConfig) -> None:
    for key, value in (("metastore.backend", cfg.metastore.backend), ("airflow.database", cfg.airflow.database)):
        if value not in DATABASES[key]:
            raise ConfigError(key, value, " or ".join(f"'{choice}'" for choice in DATABASES[key]))
    if cfg.postgres.managed and cfg.postgres.host not in LOOPBACK:
        raise ConfigError("postgres.host", cfg.postgres.host, "a loopback address (127.0.0.1) while postgres.managed "
                          "is true; set postgres.managed: false for an existing server")
    if not re.match(r"^[a-z_][a-z0-9_]{0,62}$", cfg.postgres.user):
        raise ConfigError("postgres.user", cfg.postgres.user, "a role name: lower-case letters, digits and _")


def _validate_brokers(k: KafkaConfig) -> None:
    if not 1 <= k.brokers <= MAX_BROKERS:
        raise ConfigError("kafka.brokers", k.brokers, f"an integer from 1 to {MAX_BROKERS} (3 survives one broker down)")
    ports = k.node_ports()
    clients, controllers = {p for _, p, _ in ports}, {c for _, _, c in ports}
    if max(clients | controllers) > 65535:
        raise ConfigError("kafka.port", k.port, f"a port low enough for {k.brokers} brokers ({PORT_STRIDE} apart)")
    if clients & controllers:
        raise ConfigError("kafka.controller_port", k.controller_port,
                          f"a port whose series (+{PORT_STRIDE} per broker) misses the broker ports "
                          f"{', '.join(map(str, sorted(clients)))}, e.g. kafka.port + 1")


def load_config(path: str | os.PathLike[str] | None = None, env: dict[str, str] | None = None) -> TidewaterConfig:
    """Load ``tidewater.yml`` (or ``path``/``$TIDEWATER_CONFIG``), apply env overrides, validate."""
    import yaml

    env = dict(os.environ if env is None else env)
    explicit = path or env.get("TIDEWATER_CONFIG")
    cfg_path = Path(explicit) if explicit else Path("tidewater.yml")
    raw: dict[str, Any] = {}
    if cfg_path.exists():
        try:
            loaded = yaml.safe_load(cfg_path.read_text()) or {}
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" at line {mark.line + 1}" if mark else ""
            raise ConfigError(str(cfg_path), "<file>", f"valid YAML (parse error{where})") from None
        if not isinstance(loaded, dict):
            raise ConfigError(str(cfg_path), type(loaded).__name__, "a YAML mapping of keys")
        raw = loaded
    elif explicit:
        raise ConfigError("TIDEWATER_CONFIG", str(cfg_path), "the path of an existing YAML file")
    for var, dotted in ENV_OVERRIDES.items():
        if env.get(var):
            _set_dotted(raw, dotted, env[var])
    cfg = _build(TidewaterConfig, raw)
    data_dir = cfg.data_dir if cfg.data_dir.is_absolute() else (cfg_path.resolve().parent / cfg.data_dir)
    cfg = TidewaterConfig(**{**{f.name: getattr(cfg, f.name) for f in fields(cfg)}, "data_dir": data_dir,
                             "source": str(cfg_path.resolve()) if cfg_path.exists() else "<defaults>"})
    _validate(cfg)
    return cfg
