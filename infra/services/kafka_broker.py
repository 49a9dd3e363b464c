"""Apache Kafka in KRaft mode on loopback: one broker (the default) or a cluster of ``kafka.brokers``.

Layout, ports and properties: ``infra/services/kafka_nodes.py``. The logs live under
``<data_dir>/kafka`` so topics and records survive broker restarts. Jars come from
``.cache/jars/kafka`` (``org.apache.kafka:kafka_2.13`` through Maven). With ``kafka.bootstrap_servers``
set, Tidewater uses that external cluster: ``start`` only checks that it answers, ``stop`` has
nothing to stop there.
"""

from __future__ import annotations

import re
import signal
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from infra.services.kafka_nodes import Node, java_cmd, kafka_home, node, nodes, prepare, server_properties
from infra.services.process import ManagedProcess, port_open, wait_until
from lakehouse import naming
from lakehouse.config import TidewaterConfig
from lakehouse.errors import ServiceError

MAIN_CLASS = "kafka.Kafka"
__all__ = ["kafka_home", "server_properties", "start", "stop", "healthy", "status", "status_rows",
           "start_node", "stop_node", "node_process", "under_replicated", "listening"]


def node_process(cfg: TidewaterConfig, node_id: int = 1) -> ManagedProcess:
    return _process(cfg, node(cfg, node_id))


def _process(cfg: TidewaterConfig, n: Node) -> ManagedProcess:
    return ManagedProcess(n.name, naming.run_dir(cfg), naming.logs_dir(cfg))


def _external(cfg: TidewaterConfig) -> bool:
    return bool(cfg.kafka.bootstrap_servers)


def start(cfg: TidewaterConfig, timeout: float = 90) -> int:
    """Start every local broker that is not running (all at once: a quorum needs a majority of its
    voters up before any node serves) and wait until each serves metadata. Returns node 1's PID."""
    if _external(cfg):
        if not wait_until(lambda: healthy(cfg), min(timeout, 30), 2):
            raise ServiceError(f"kafka: no broker of kafka.bootstrap_servers {cfg.kafka.bootstrap} answers; "
                               "check that cluster or unset kafka.bootstrap_servers to run local brokers")
        return 0
    _start_nodes(cfg, [n for n in nodes(cfg) if not _process(cfg, n).running()], timeout)
    return _process(cfg, nodes(cfg)[0]).pid() or 0


def start_node(cfg: TidewaterConfig, node_id: int, timeout: float = 90) -> int:
    """(Re)start one broker of the local cluster and wait until it is back in the cluster."""
    n = node(cfg, node_id)
    if not _process(cfg, n).running():
        _start_nodes(cfg, [n], timeout)
    return _process(cfg, n).pid() or 0


def _start_nodes(cfg: TidewaterConfig, todo: list[Node], timeout: float) -> None:
    if not todo:
        return
    if not (naming.jars_dir("kafka") / f"kafka_2.13-{_kafka_version()}.jar").exists():
        raise ServiceError("kafka: broker jars are missing; run 'make setup' (mvn fetches them into .cache/jars)")
    for n in todo:
        for port in (n.port, n.controller_port) if n.voter else (n.port,):
            if port_open(cfg.kafka.host, port):
                key = "kafka.port" if port == n.port else "kafka.controller_port"
                raise ServiceError(f"kafka: port {port} (node {n.node_id}) is already in use by another process; "
                                   f"set {key} in tidewater.yml or TIDEWATER_{key.replace('.', '_').upper()}")
    prepare(cfg, todo)
    heap = "768m" if cfg.kafka.brokers == 1 else "512m"
    for n in todo:
        _process(cfg, n).start(java_cmd(cfg, MAIN_CLASS, str(n.home / "server.properties"), heap=heap))
    procs = [_process(cfg, n) for n in todo]
    wait_until(lambda: all(_node_healthy(cfg, n) for n in todo) or not all(p.running() for p in procs), timeout)
    for n, proc in zip(todo, procs, strict=True):
        if not proc.running() or not _node_healthy(cfg, n):
            raise ServiceError(f"kafka: broker {n.node_id} did not become healthy; log {proc.log_file}:\n{proc.tail(15)}")


def stop(cfg: TidewaterConfig) -> bool:
    """Stop every local broker, all at once: each JVM shuts its broker down before its controller, so
    the brokers' controlled shutdowns still find a quorum (stopped one by one, the last voters wait
    for a quorum that is gone until the SIGKILL timeout). Brokers started under another
    ``kafka.brokers`` (their PID files) are stopped too."""
    names = {n.name for n in nodes(cfg)} | {p.stem for p in naming.run_dir(cfg).glob("kafka*.pid")}
    procs = [ManagedProcess(name, naming.run_dir(cfg), naming.logs_dir(cfg)) for name in sorted(names)]
    with ThreadPoolExecutor(max_workers=len(procs)) as pool:
        return any(list(pool.map(lambda proc: proc.stop(timeout=60), procs)))


def stop_node(cfg: TidewaterConfig, node_id: int, sig: int = signal.SIGTERM, timeout: float = 60) -> bool:
    """Stop one broker: SIGTERM (controlled shutdown), or ``sig=SIGKILL`` for a crash."""
    return _process(cfg, node(cfg, node_id)).stop(timeout=0 if sig == signal.SIGKILL else timeout, sig=sig)


def _node_healthy(cfg: TidewaterConfig, n: Node) -> bool:
    """The broker accepts connections, answers a metadata request, and (in a cluster) is registered
    with the controller (an unfenced broker in the cluster's metadata)."""
    if not port_open(cfg.kafka.host, n.port):
        return False
    ids = _broker_ids(f"{cfg.kafka.host}:{n.port}")
    return ids is not None and (cfg.kafka.brokers == 1 or n.node_id in ids)


def listening(bootstrap: str, timeout: float = 3) -> bool:
    """Some ``host:port`` of a comma-separated bootstrap list accepts TCP connections."""
    servers = [s.strip().rpartition(":") for s in bootstrap.split(",")]
    return any(port.isdigit() and port_open(host.strip("[]"), int(port), timeout) for host, _, port in servers)


def _broker_ids(bootstrap: str) -> set[int] | None:
    """The broker ids in the cluster's metadata, as a broker of ``bootstrap`` reports them; None if none answers."""
    if not listening(bootstrap, 1):
        return None
    try:
        from kafka import KafkaAdminClient

        admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=5000, bootstrap_timeout_ms=5000)
        try:
            return {int(b["broker_id"]) for b in admin.describe_cluster()["brokers"]}
        finally:
            admin.close()
    except Exception:
        return None


def healthy(cfg: TidewaterConfig) -> bool:
    """Every local broker is healthy; an external cluster answers a metadata request."""
    if _external(cfg):
        return _broker_ids(cfg.kafka.bootstrap) is not None
    return all(_node_healthy(cfg, n) for n in nodes(cfg))


def status(cfg: TidewaterConfig) -> dict[str, object]:
    """One row for the whole of Kafka (node 1's PID and log); ``status_rows`` has one per broker."""
    if _external(cfg):
        return {"service": "kafka", "pid": None, "address": cfg.kafka.bootstrap, "healthy": healthy(cfg),
                "external": True}
    rows = status_rows(cfg)
    if len(rows) == 1:
        return rows[0]
    up = sum(1 for r in rows if r["healthy"])
    return {"service": "kafka", "pid": rows[0]["pid"], "address": cfg.kafka.bootstrap, "healthy": up == len(rows),
            "brokers": f"{up}/{len(rows)} healthy", "log": rows[0]["log"]}


def status_rows(cfg: TidewaterConfig) -> list[dict[str, object]]:
    """``tidewater status``: one row per local broker (one row for an external cluster)."""
    if _external(cfg):
        return [status(cfg)]
    rows: list[dict[str, object]] = []
    for n in nodes(cfg):
        proc = _process(cfg, n)
        row: dict[str, object] = {"service": n.name, "pid": proc.pid(), "address": f"{cfg.kafka.host}:{n.port}",
                                  "healthy": _node_healthy(cfg, n), "log": str(proc.log_file)}
        if cfg.kafka.brokers > 1:
            row["role"] = "broker+controller" if n.voter else "broker"
        rows.append(row)
    return rows


def under_replicated(cfg: TidewaterConfig, topics: list[str] | None = None) -> list[str]:
    """``topic/partition`` of every partition whose in-sync replicas are fewer than its replicas (all
    topics, or ``topics``): a rolling restart waits for none before it stops the next broker."""
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=cfg.kafka.bootstrap, request_timeout_ms=10000)
    try:
        described = admin.describe_topics(topics)
    finally:
        admin.close()
    return [f"{t['name']}/{p['partition_index']}" for t in described for p in t["partitions"]
            if set(p["isr_nodes"]) != set(p["replica_nodes"]) or p["leader_id"] < 0]


def _kafka_version() -> str:
    pom = (Path(__file__).resolve().parents[1] / "pom.xml").read_text()
    match = re.search(r"<kafka.version>([^<]+)</kafka.version>", pom)
    return match.group(1) if match else "4.1.1"
