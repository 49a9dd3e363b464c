"""The local Kafka nodes' layout: node ids, ports, folders, ``server.properties`` and KRaft storage.

``kafka.brokers: 1`` (the default) is one combined broker+controller in ``<data_dir>/kafka`` (log in
``kafka/log``), as before. ``kafka.brokers: N`` > 1 runs N nodes, ``kafka/broker-<i>`` each, node ids
1..N; the first min(3, N) are broker+controller and form the KRaft quorum (static
``controller.quorum.voters``), the others are brokers only. Ports: ``KafkaConfig.node_ports`` (broker i
on ``kafka.port + 2(i-1)``, its controller on ``kafka.controller_port + 2(i-1)``). Every node's storage
is formatted with the one cluster id kept in ``kafka/cluster.id``.
"""

from __future__ import annotations

import base64
import json
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path

from infra.jvm import require_java
from lakehouse import naming
from lakehouse.config import TidewaterConfig
from lakehouse.config_jvm_flags import selects_gc
from lakehouse.errors import ServiceError

VOTERS = 3

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
logger.state.name = state.change.logger
logger.state.level = WARN
"""


@dataclass(frozen=True)
class Node:
    node_id: int
    port: int
    controller_port: int
    voter: bool
    home: Path      # server.properties and log/ of this node
    name: str       # PID and log file name: kafka (single node) or kafka-<i>

    @property
    def log_dir(self) -> Path:
        return self.home / "log"


def kafka_home(cfg: TidewaterConfig) -> Path:
    return cfg.data_dir / "kafka"


def nodes(cfg: TidewaterConfig) -> list[Node]:
    single = cfg.kafka.brokers == 1
    return [Node(i, port, cport, i <= VOTERS, kafka_home(cfg) if single else kafka_home(cfg) / f"broker-{i}",
                 "kafka" if single else f"kafka-{i}") for i, port, cport in cfg.kafka.node_ports()]


def node(cfg: TidewaterConfig, node_id: int) -> Node:
    return next(n for n in nodes(cfg) if n.node_id == node_id)


def server_properties(cfg: TidewaterConfig, n: Node | None = None) -> str:
    k, n = cfg.kafka, n or nodes(cfg)[0]
    voters = ",".join(f"{v.node_id}@{k.host}:{v.controller_port}" for v in nodes(cfg) if v.voter)
    listeners = f"PLAINTEXT://{k.host}:{n.port}" + (f",CONTROLLER://{k.host}:{n.controller_port}" if n.voter else "")
    rf, isr = k.replication_factor, k.min_insync_replicas
    return "\n".join([
        f"process.roles={'broker,controller' if n.voter else 'broker'}",
        f"node.id={n.node_id}",
        f"controller.quorum.voters={voters}",
        f"listeners={listeners}",
        f"advertised.listeners=PLAINTEXT://{k.host}:{n.port}",
        "controller.listener.names=CONTROLLER",
        "inter.broker.listener.name=PLAINTEXT",
        "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        f"log.dirs={n.log_dir}",
        f"num.partitions={k.partitions}",
        f"log.retention.ms={k.retention_ms}",
        f"default.replication.factor={rf}",
        f"min.insync.replicas={isr}",
        "unclean.leader.election.enable=false",
        f"offsets.topic.replication.factor={rf}",
        "offsets.topic.num.partitions=4",
        f"transaction.state.log.replication.factor={rf}",
        f"transaction.state.log.min.isr={isr}",
        f"share.coordinator.state.topic.replication.factor={rf}",
        f"share.coordinator.state.topic.min.isr={isr}",
        "group.initial.rebalance.delay.ms=0",
        "auto.create.topics.enable=false",
        "log.flush.interval.messages=10000",
        "",
    ])


def java_cmd(cfg: TidewaterConfig, main: str, *args: str, heap: str = "512m") -> list[str]:
    log4j = kafka_home(cfg) / "log4j2.properties"
    return [
        require_java(), f"-Xmx{heap}", f"-Xms{heap}", *([] if selects_gc(cfg.jvm_flags) else ["-XX:+UseG1GC"]),
        *cfg.jvm_flags,
        f"-Dlog4j2.configurationFile={log4j}",
        "-cp", str(naming.jars_dir("kafka") / "*"), main, *args,
    ]


def prepare(cfg: TidewaterConfig, todo: list[Node]) -> None:
    """Write each node's ``server.properties`` and format its KRaft storage once (in parallel; an
    existing log, with its ``meta.properties``, is kept as is)."""
    _check_layout(cfg)
    kafka_home(cfg).mkdir(parents=True, exist_ok=True)
    (kafka_home(cfg) / "log4j2.properties").write_text(LOG4J2)
    formats = []
    for n in todo:
        n.home.mkdir(parents=True, exist_ok=True)
        (n.home / "server.properties").write_text(server_properties(cfg, n))
        if not (n.log_dir / "meta.properties").exists():
            argv = java_cmd(cfg, "kafka.tools.StorageTool", "format", "-t", _cluster_id(cfg), "-c",
                            str(n.home / "server.properties"), "--ignore-formatted")
            formats.append(subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    for proc in formats:
        _, err = proc.communicate()
        if proc.returncode != 0:
            raise ServiceError(f"kafka: formatting the KRaft log failed: {err.strip()[-400:]}")


def _cluster_id(cfg: TidewaterConfig) -> str:
    """The cluster id every node is formatted with, made once and kept in ``kafka/cluster.id``."""
    path = kafka_home(cfg) / "cluster.id"
    if path.exists():
        return path.read_text().strip()
    cluster_id = "-"
    while cluster_id.startswith("-"):  # a leading '-' would be read as an option by kafka-storage
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
    path.write_text(cluster_id + "\n")
    return cluster_id


def _check_layout(cfg: TidewaterConfig) -> None:
    """A log formatted for another quorum (one node, or another number of voters) cannot join this
    one: say so instead of starting a second, empty cluster next to it."""
    home, want = kafka_home(cfg), cfg.kafka.brokers
    multi = [int(p.parent.parent.name.split("-")[1]) for p in home.glob("broker-*/log/meta.properties")]
    had = 1 if (home / "log" / "meta.properties").exists() else max(multi, default=0)
    if had and (min(had, VOTERS) != min(want, VOTERS) or (had == 1) != (want == 1)):
        raise ServiceError(f"kafka: the log in {home} was made for {had} broker(s), kafka.brokers is {want}; "
                           f"set kafka.brokers back or delete {home} (its topics go too)")


def quorum_leader(cfg: TidewaterConfig) -> int | None:
    """The active KRaft controller as the voters last recorded it (``quorum-state``, highest epoch)."""
    best: tuple[int, int] | None = None
    for n in nodes(cfg):
        state = n.log_dir / "__cluster_metadata-0" / "quorum-state"
        try:
            data = json.loads(state.read_text())
        except (FileNotFoundError, ValueError):
            continue
        leader, epoch = data.get("leaderId", -1), data.get("leaderEpoch", -1)
        if leader is not None and leader >= 0 and (best is None or epoch > best[1]):
            best = (leader, epoch)
    return best[0] if best else None
