"""The local Kafka broker (KRaft) really starts, keeps records across a restart and serves them; a
producer run that the broker stops in the middle counts every record it did not acknowledge."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from lakehouse.config import TidewaterConfig

pytestmark = pytest.mark.integration


def test_record_survives_broker_restart(stack: TidewaterConfig) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    from infra.services import kafka_broker
    from spark_jobs.io.kafka_admin import ensure_topic, offsets
    from spark_jobs.io.producer import send
    from spark_jobs.synthetic_events import Record

    cfg = stack
    assert ensure_topic(cfg, "durability-check") is True
    assert ensure_topic(cfg, "durability-check") is False  # idempotent
    assert sorted(offsets(cfg, "durability-check")) == [0, 1, 2, 3]  # partitions from config (default 4)

    producer = KafkaProducer(bootstrap_servers=cfg.kafka.bootstrap, acks="all")
    producer.send("durability-check", key=b"k", value=b"hello tidewater", partition=2).get(timeout=30)
    producer.close()

    # the broker stops in the middle of a producer run: what it did not acknowledge is counted as failed
    assert ensure_topic(cfg, "producer-failures") is True
    stopped = []

    def records() -> Iterator[Record]:
        yield from (Record(f"k{i}".encode(), f"before {i}".encode(), "valid") for i in range(20))
        stopped.append(kafka_broker.stop(cfg))
        yield from (Record(f"k{i}".encode(), f"after {i}".encode(), "valid") for i in range(30))

    old_pid = kafka_broker.status(cfg)["pid"]
    result = send(cfg, "producer-failures", records(), timeout=3)
    assert stopped == [True]
    assert not kafka_broker.healthy(cfg)
    assert result.total == 50 and result.failed >= 30 and result.error, result
    kafka_broker.start(cfg)
    assert kafka_broker.status(cfg)["pid"] != old_pid
    assert kafka_broker.healthy(cfg)
    in_log = sum(end - begin for begin, end in offsets(cfg, "producer-failures").values())
    assert result.delivered <= in_log <= 20, (result, in_log)  # nothing acknowledged is lost

    consumer = KafkaConsumer(bootstrap_servers=cfg.kafka.bootstrap, enable_auto_commit=False,
                             consumer_timeout_ms=20000)
    tp = TopicPartition("durability-check", 2)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    values = [m.value for m in consumer]
    consumer.close()
    assert values == [b"hello tidewater"]


def test_broker_listens_on_loopback_only(stack: TidewaterConfig) -> None:
    from infra.services.kafka_broker import server_properties

    props = server_properties(stack)
    assert f"listeners=PLAINTEXT://127.0.0.1:{stack.kafka.port},CONTROLLER://127.0.0.1:" in props
    port_hex = f"{stack.kafka.port:04X}"
    listening = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            if local.endswith(":" + port_hex) and state == "0A":  # 0A = LISTEN
                listening.append(local.split(":")[0])
    loopback = ("0100007F", "0000000000000000FFFF00000100007F", "00000000000000000000000001000000")
    assert listening and all(addr in loopback for addr in listening), listening
