"""The typed values of Tidewater's configuration: the Kafka and Spark sections and the whole configuration
(the services' sections are ``lakehouse.config_services``). ``lakehouse.config`` loads them from the YAML
file and the environment; ``lakehouse.config_checks`` holds the rules they must pass.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from lakehouse.config_jvm_flags import jvm_flags
from lakehouse.config_services import (
    PORT_STRIDE,
    AirflowConfig,
    BiConfig,
    JobServiceConfig,
    MetastoreConfig,
    PostgresConfig,
    ReplayConfig,
    ThriftConfig,
)


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
    # warm-up of a speed job before its query starts (spark_jobs/speed/stream_warm_up.py): rounds on no
    # rows (plans, write path), then rounds on the topic's latest records (Kafka read, parse, partials)
    warm_up_plan_rounds: int = 4
    warm_up_record_rounds: int = 3
    # a speed micro-batch of at most this many Kafka records runs interpreted, a bigger one Spark's
    # generated code (spark_jobs/speed/execution_mode.py); 0: always generated code
    interpreted_max_records: int = 10_000


@dataclass(frozen=True)
class SpeedConfig:
    # where the speed layer runs: "per_pipeline" = one Spark application per pipeline
    # (spark_jobs/speed/job.py); "shared" = one speed host for every pipeline, one FAIR pool each
    # (spark_jobs/speed/host.py)
    host: str = "per_pipeline"


@dataclass(frozen=True)
class TidewaterConfig:
    data_dir: Path = Path(".tidewater")
    mode: str = "lambda"
    kafka: KafkaConfig = field(default_factory=KafkaConfig)
    spark: SparkConfig = field(default_factory=SparkConfig)
    speed: SpeedConfig = field(default_factory=SpeedConfig)
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
        return jvm_flags(self.jvm_options)

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["data_dir"] = str(self.data_dir)
        out["kafka"]["bootstrap_servers"] = self.kafka.bootstrap
        return out
