"""The checks a loaded config must pass (``validate``): every bad setting raises one
:class:`ConfigError` that names the key, what it holds and the form that is expected.

Hosts: a wildcard bind address (0.0.0.0, ::, *) is never a host's value. The services Tidewater starts
itself bind a loopback address; only an external service may be elsewhere: a Kafka cluster given by
``kafka.bootstrap_servers`` (``kafka.host`` is then unused) and a PostgreSQL server with
``postgres.managed: false``.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from typing import TYPE_CHECKING

from lakehouse.config_services import DAGS, DATABASES, LOOPBACK, MAX_BROKERS, MODES, PORT_STRIDE, SPEED_HOSTS
from lakehouse.errors import ConfigError

if TYPE_CHECKING:
    from lakehouse.config_model import KafkaConfig, TidewaterConfig

_MASTER = re.compile(r"^(local(\[(\*|\d+)(,\d+)?\])?|spark://[\w.\-]+:\d+(,[\w.\-]+:\d+)*|k8s://\S+|yarn)$")
_OFFSETS = ("earliest", "latest")


def validate(cfg: TidewaterConfig) -> None:
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
    _validate_hosts(cfg)
    if cfg.spark.max_offsets_per_trigger < 1:
        raise ConfigError("spark.max_offsets_per_trigger", cfg.spark.max_offsets_per_trigger, "an integer >= 1")
    if cfg.speed.host not in SPEED_HOSTS:
        raise ConfigError("speed.host", cfg.speed.host, "'per_pipeline' (one Spark application per pipeline) or "
                          "'shared' (one speed host for every pipeline)")
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


def is_wildcard(host: str) -> bool:
    """A wildcard address: 0.0.0.0, ::, * or another spelling of them ('0', '[::]'): every address of the
    machine, for a bind only."""
    bare = host.strip().strip("[]")
    if bare in ("", "*"):
        return True
    try:
        return ipaddress.ip_address(bare).is_unspecified
    except ValueError:
        pass
    try:
        return socket.inet_aton(bare) == bytes(4)
    except OSError:
        return False


def _validate_hosts(cfg: TidewaterConfig) -> None:
    hosts = {"kafka.host": cfg.kafka.host, "metastore.host": cfg.metastore.host, "thrift.host": cfg.thrift.host,
             "airflow.host": cfg.airflow.host, "postgres.host": cfg.postgres.host, "bi.host": cfg.bi.host,
             "job_service.host": cfg.job_service.host}
    servers = [s.strip() for s in cfg.kafka.bootstrap_servers.split(",") if s.strip()]
    loopback = "a loopback address (127.0.0.1)"
    local_only = {  # key -> the form expected of it; a key without one may name another host
        "kafka.host": "" if servers else f"{loopback}: Tidewater's own brokers listen on it; for an external "
                                         "cluster set kafka.bootstrap_servers",
        "metastore.host": f"{loopback}: Tidewater starts the Derby metastore itself, without authentication",
        "thrift.host": f"{loopback}: the Thrift server is for BI tools on this machine",
        "airflow.host": f"{loopback}: Tidewater starts Airflow's API server itself",
        "postgres.host": "" if not cfg.postgres.managed else f"{loopback} while postgres.managed is true; set "
                                                             "postgres.managed: false for an existing server",
        "bi.host": f"{loopback}: the service is local only",
        "job_service.host": f"{loopback}: the service is local only",
    }
    for key, expected in local_only.items():
        if expected and hosts[key] not in LOOPBACK:
            raise ConfigError(key, hosts[key], expected)
    for key, host in hosts.items():
        if is_wildcard(host):
            raise ConfigError(key, host, "the address of one host, not a wildcard bind address (0.0.0.0, ::), "
                              "e.g. 127.0.0.1")
    if any(is_wildcard(server.rpartition(":")[0] if ":" in server else server) for server in servers):
        raise ConfigError("kafka.bootstrap_servers", cfg.kafka.bootstrap_servers,
                          "HOST:PORT pairs of the cluster's brokers, not a wildcard bind address (0.0.0.0, ::)")


def _validate_databases(cfg: TidewaterConfig) -> None:
    for key, value in (("metastore.backend", cfg.metastore.backend), ("airflow.database", cfg.airflow.database)):
        if value not in DATABASES[key]:
            raise ConfigError(key, value, " or ".join(f"'{choice}'" for choice in DATABASES[key]))
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
