"""Apache Kafka, single node, KRaft mode (broker + controller in one JVM), on loopback.

The log lives in ``<data_dir>/kafka`` so topics and records survive broker restarts.
Jars come from ``.cache/jars/kafka`` (``org.apache.kafka:kafka_2.13`` through Maven).
"""

from __future__ import annotations

import base64
import subprocess
import uuid
from pathlib import Path

from infra.jvm import require_java
from infra.services.process import ManagedProcess, port_open, start_healthy
from lakehouse import naming
from lakehouse.config import TidewaterConfig
from lakehouse.errors import ServiceError

MAIN_CLASS = "kafka.Kafka"


def _process(cfg: TidewaterConfig) -> ManagedProcess:
    return ManagedProcess("kafka", naming.run_dir(cfg), naming.logs_dir(cfg))


def kafka_home(cfg: TidewaterConfig) -> Path:
    return cfg.data_dir / "kafka"


def server_properties(cfg: TidewaterConfig) -> str:
    k = cfg.kafka
    log_dir = kafka_home(cfg) / "log"
    return "\n".join([
        "process.roles=broker,controller",
        "node.id=1",
        f"controller.quorum.voters=1@{k.host}:{k.controller_port}",
        f"listeners=PLAINTEXT://{k.host}:{k.port},CONTROLLER://{k.host}:{k.controller_port}",
        f"advertised.listeners=PLAINTEXT://{k.host}:{k.port}",
        "controller.listener.names=CONTROLLER",
        "inter.broker.listener.name=PLAINTEXT",
        "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        f"log.dirs={log_dir}",
        f"num.partitions={k.partitions}",
        f"log.retention.ms={k.retention_ms}",
        "offsets.topic.replication.factor=1",
        "offsets.topic.num.partitions=4",
        "transaction.state.log.replication.factor=1",
        "transaction.state.log.min.isr=1",
        "share.coordinator.state.topic.replication.factor=1",
        "share.coordinator.state.topic.min.isr=1",
        "group.initial.rebalance.delay.ms=0",
        "auto.create.topics.enable=false",
        "log.flush.interval.messages=10000",
        "",
    ])


def _java_cmd(cfg: TidewaterConfig, main: str, *args: str, heap: str = "512m") -> list[str]:
    log4j = kafka_home(cfg) / "log4j2.properties"
    return [
        require_java(), f"-Xmx{heap}", f"-Xms{heap}", "-XX:+UseG1GC", *cfg.jvm_flags,
        f"-Dlog4j2.configurationFile={log4j}",
        "-cp", str(naming.jars_dir("kafka") / "*"), main, *args,
    ]


LOG4J2 = """status = error
appender.console.type = Console
appender.console.name = STDOUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.stdout.ref = STDOUT
logger.kafka.name = kafka
logger.kafka.level = WARN
logger.apache.name = org.apache.kafka
logger.apache.level = WARN
"""


def _format_storage(cfg: TidewaterConfig, props: Path) -> None:
    """Format the KRaft log dir once; an existing log (meta.properties) is kept as is."""
    if (kafka_home(cfg) / "log" / "meta.properties").exists():
        return
    cluster_id = "-"
    while cluster_id.startswith("-"):  # a leading '-' would be read as an option by kafka-storage
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
    result = subprocess.run(
        _java_cmd(cfg, "kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", str(props), "--ignore-formatted"),
        capture_output=True, text=True,
    )
    if result.returncode != 0:
        raise ServiceError(f"kafka: formatting the KRaft log failed: {result.stderr.strip()[-400:]}")


def start(cfg: TidewaterConfig, timeout: float = 90) -> int:
    """Start the broker (idempotent) and wait until it serves metadata requests."""
    if not (naming.jars_dir("kafka") / f"kafka_2.13-{_kafka_version()}.jar").exists():
        raise ServiceError("kafka: broker jars are missing; run 'make setup' (mvn fetches them into .cache/jars)")
    proc = _process(cfg)
    if proc.running():
        return proc.pid() or 0
    if port_open(cfg.kafka.host, cfg.kafka.port):
        raise ServiceError(
            f"kafka: port {cfg.kafka.port} is already in use by another process; "
            "set kafka.port in tidewater.yml or TIDEWATER_KAFKA_PORT"
        )
    home = kafka_home(cfg)
    home.mkdir(parents=True, exist_ok=True)
    props = home / "server.properties"
    props.write_text(server_properties(cfg))
    (home / "log4j2.properties").write_text(LOG4J2)
    _format_storage(cfg, props)
    return start_healthy(proc, _java_cmd(cfg, MAIN_CLASS, str(props), heap="768m"), lambda: healthy(cfg), timeout,
                         "kafka: broker did not become healthy")


def stop(cfg: TidewaterConfig) -> bool:
    return _process(cfg).stop(timeout=60)


def healthy(cfg: TidewaterConfig) -> bool:
    """The broker accepts connections and answers a metadata request."""
    if not port_open(cfg.kafka.host, cfg.kafka.port):
        return False
    try:
        from kafka import KafkaAdminClient

        admin = KafkaAdminClient(bootstrap_servers=cfg.kafka.bootstrap, request_timeout_ms=5000)
        try:
            admin.list_topics()
        finally:
            admin.close()
        return True
    except Exception:
        return False


def status(cfg: TidewaterConfig) -> dict[str, object]:
    proc = _process(cfg)
    return {"service": "kafka", "pid": proc.pid(), "address": cfg.kafka.bootstrap,
            "healthy": healthy(cfg), "log": str(proc.log_file)}


def _kafka_version() -> str:
    import re

    pom = (Path(__file__).resolve().parents[1] / "pom.xml").read_text()
    match = re.search(r"<kafka.version>([^<]+)</kafka.version>", pom)
    return match.group(1) if match else "4.1.1"
