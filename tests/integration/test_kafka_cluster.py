"""Broker failures on a real 3-broker Kafka cluster (KRaft, loopback) while the speed layer runs and
events flow: the stream goes on without manual action, and after each failure every Kafka offset is
in bronze or quarantine exactly once and the speed table equals the oracle.

One stack, one producer and ONE speed job serve the scenarios, in this order: the leader of a
partition killed (-9) and restarted; a rolling restart of all three brokers; the active KRaft
controller killed (-9); a broker down longer than the speed layer's trigger and its Kafka consumer's
request timeout. The producer is idempotent with acks=all, the topic has replication factor 3 and
min.insync.replicas 2, so a send never fails while one broker is down.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from tests.conftest import isolated_env
from tests.integration.exactly_once import PIPELINE, TOPIC, EventProducer, assert_exactly_once

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from lakehouse.config import TidewaterConfig

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1200)]
HOST_TZ = "Asia/Kolkata"  # east of UTC: see the host_time_zone fixture

BROKERS = 3
DOWN = 12            # seconds a killed broker stays down while events flow
# > the trigger (1 s) and the Kafka consumer's request.timeout.ms (30 s); 130 passed too (> Spark's
# kafkaConsumer.pollTimeoutMs, 120 s by default) but costs CI 85 s more
DOWN_LONG = int(os.environ.get("TIDEWATER_TEST_BROKER_DOWN_SECONDS", "45"))


@pytest.fixture(scope="module")
def tw_env() -> Iterator[dict[str, str]]:
    with isolated_env({"TIDEWATER_KAFKA_BROKERS": str(BROKERS)}) as env:
        yield env


@pytest.fixture(scope="module")
def flowing(stack: TidewaterConfig) -> Iterator[tuple[TidewaterConfig, Any, EventProducer]]:
    """Events flowing at 100/s into the pipeline's topic, and the speed job reading them."""
    from lakehouse.pipeline import load_pipeline
    from spark_jobs.io.kafka_admin import ensure_topic
    from spark_jobs.speed.control import start_speed, stop_speed

    cfg = stack
    p = load_pipeline(PIPELINE, cfg.pipelines)
    ensure_topic(cfg, TOPIC)
    producer = EventProducer(cfg)
    producer.start()
    try:
        start_speed(cfg, p, wait=300)
        yield cfg, p, producer
    finally:
        producer.finish()
        stop_speed(cfg, p)


def _partitions(cfg: TidewaterConfig) -> dict[int, tuple[int, list[int]]]:
    """partition -> (leader, replicas) of the pipeline's topic, as the cluster reports them."""
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=cfg.kafka.bootstrap, request_timeout_ms=10000)
    try:
        (topic,) = admin.describe_topics([TOPIC])
    finally:
        admin.close()
    return {int(part["partition_index"]): (int(part["leader_id"]), list(part["replica_nodes"]))
            for part in topic["partitions"]}


def _leader(cfg: TidewaterConfig, partition: int) -> int:
    return _partitions(cfg)[partition][0]


def _committed(cfg: TidewaterConfig) -> int:
    """Micro-batches the speed job's stream query committed so far (it runs one only on new data)."""
    from lakehouse.naming import checkpoint_dir
    from spark_jobs.io.lineage import committed_batches

    return len(committed_batches(checkpoint_dir(cfg, PIPELINE, "stream", 1)))


def _stream_goes_on(cfg: TidewaterConfig, p: Any, seconds: float, what: str) -> None:
    """While the caller keeps a failure in place, the speed job stays up and, after ``seconds`` (long
    enough for the cluster to fence a killed broker), still commits new micro-batches: not just the
    one that was in flight when the failure struck. Prints when the first one after the failure came."""
    from infra.services.process import wait_until
    from spark_jobs.speed.control import speed_process

    before, started, proc = _committed(cfg), time.monotonic(), speed_process(cfg, p)
    if wait_until(lambda: _committed(cfg) > before or not proc.running(), seconds, 0.5):
        print(f"first micro-batch {time.monotonic() - started:.1f}s after the failure {what}")
    time.sleep(max(0.0, started + seconds - time.monotonic()))
    steady = _committed(cfg)
    assert wait_until(lambda: _committed(cfg) > steady or not proc.running(), 120, 1) and proc.running(), \
        f"the stream committed no micro-batch {seconds:.0f}s or later {what}:\n{proc.tail(30)}"
    print(f"a micro-batch committed {time.monotonic() - started:.1f}s after the failure {what}")


def _back(cfg: TidewaterConfig, node_id: int) -> None:
    """Restart a broker and wait until every partition has all its replicas in sync again."""
    from infra.services import kafka_broker
    from infra.services.process import wait_until

    started = time.monotonic()
    kafka_broker.start_node(cfg, node_id)
    up = time.monotonic() - started
    assert wait_until(lambda: not kafka_broker.under_replicated(cfg, [TOPIC]), 120, 1), \
        f"partitions still under-replicated: {kafka_broker.under_replicated(cfg, [TOPIC])}"
    print(f"broker {node_id}: healthy {up:.1f}s after its start, all replicas in sync after {time.monotonic() - started:.1f}s")


def _exactly_once(spark: SparkSession, cfg: TidewaterConfig, p: Any, producer: EventProducer) -> None:
    from spark_jobs.speed.control import speed_process, wait_caught_up

    started = time.monotonic()
    with producer.paused_and_flushed():
        assert wait_caught_up(cfg, p, timeout=300), f"speed job did not catch up:\n{speed_process(cfg, p).tail(40)}"
        caught_up = time.monotonic() - started
        assert_exactly_once(spark, cfg, producer)
    print(f"{len(producer.valid)} valid records sent: caught up in {caught_up:.1f}s, checked in "
          f"{time.monotonic() - started - caught_up:.1f}s")
    assert len(producer.valid) > 500, "events really flowed"


def test_three_brokers_with_replicated_topics(flowing: tuple[TidewaterConfig, Any, EventProducer]) -> None:
    from infra.services import kafka_broker
    from infra.services.kafka_nodes import quorum_leader
    from spark_jobs.io.kafka_admin import topic_config

    cfg, _, _ = flowing
    rows = kafka_broker.status_rows(cfg)
    assert [r["service"] for r in rows] == ["kafka-1", "kafka-2", "kafka-3"] and all(r["healthy"] for r in rows), rows
    assert cfg.kafka.bootstrap == ",".join(str(r["address"]) for r in rows)
    assert len({r["pid"] for r in rows}) == BROKERS
    assert quorum_leader(cfg) in (1, 2, 3)
    settings = topic_config(cfg, TOPIC)
    assert settings["min.insync.replicas"] == "2" and settings["unclean.leader.election.enable"] == "false", settings
    parts = _partitions(cfg)
    assert sorted(parts) == list(range(cfg.kafka.partitions))
    assert all(sorted(replicas) == [1, 2, 3] and leader in replicas for leader, replicas in parts.values()), parts
    assert not kafka_broker.under_replicated(cfg)  # every topic, the internal ones too: replication 3, all in sync


def test_partition_leader_killed_and_restarted(spark: SparkSession, flowing: tuple[TidewaterConfig, Any, EventProducer]) -> None:
    from infra.services import kafka_broker
    from infra.services.process import wait_until

    cfg, p, producer = flowing
    time.sleep(5)
    victim = _leader(cfg, 0)
    assert kafka_broker.stop_node(cfg, victim, sig=signal.SIGKILL)
    _stream_goes_on(cfg, p, DOWN, f"while broker {victim}, leader of partition 0, was killed")
    assert wait_until(lambda: _leader(cfg, 0) not in (-1, victim), 30), "another in-sync replica took over partition 0"
    _back(cfg, victim)
    _exactly_once(spark, cfg, p, producer)


def test_rolling_restart_of_all_brokers(spark: SparkSession, flowing: tuple[TidewaterConfig, Any, EventProducer]) -> None:
    from infra.services import kafka_broker

    cfg, p, producer = flowing
    before = _committed(cfg)
    for node_id in range(1, BROKERS + 1):
        old = kafka_broker.node_process(cfg, node_id).pid()
        assert kafka_broker.stop_node(cfg, node_id)  # SIGTERM: controlled shutdown
        _stream_goes_on(cfg, p, 3, f"while broker {node_id} restarted")
        _back(cfg, node_id)
        assert kafka_broker.node_process(cfg, node_id).pid() not in (None, old)
    assert _committed(cfg) > before
    _exactly_once(spark, cfg, p, producer)


def test_active_controller_killed(spark: SparkSession, flowing: tuple[TidewaterConfig, Any, EventProducer]) -> None:
    from infra.services import kafka_broker
    from infra.services.kafka_nodes import quorum_leader
    from infra.services.process import wait_until

    cfg, p, producer = flowing
    controller = quorum_leader(cfg)
    assert controller in (1, 2, 3)
    assert kafka_broker.stop_node(cfg, controller, sig=signal.SIGKILL)
    _stream_goes_on(cfg, p, DOWN, f"while the active controller (node {controller}) was killed")
    assert wait_until(lambda: quorum_leader(cfg) not in (None, controller), 30), "the other voters elected a leader"
    _back(cfg, controller)
    _exactly_once(spark, cfg, p, producer)


def test_broker_down_longer_than_trigger_and_fetch_timeouts(
        spark: SparkSession, flowing: tuple[TidewaterConfig, Any, EventProducer]) -> None:
    from infra.services import kafka_broker

    cfg, p, producer = flowing
    victim = _leader(cfg, 1)
    assert kafka_broker.stop_node(cfg, victim, sig=signal.SIGKILL)
    _stream_goes_on(cfg, p, DOWN_LONG, f"while broker {victim} was down for {DOWN_LONG}s")
    _back(cfg, victim)
    _exactly_once(spark, cfg, p, producer)
