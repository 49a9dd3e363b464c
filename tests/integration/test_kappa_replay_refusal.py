"""A replay is refused, changing nothing, when Kafka retention has already dropped history."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import pytest

from lakehouse.errors import TidewaterError, TopicMissing
from lakehouse.pipeline import load_pipeline

if TYPE_CHECKING:
    from pathlib import Path

    from lakehouse.config import TidewaterConfig

pytestmark = pytest.mark.integration


def test_replay_refused_after_log_start_moved(stack: TidewaterConfig, tmp_path: Path) -> None:
    from kafka import KafkaAdminClient, KafkaProducer, TopicPartition
    from kafka.admin import NewTopic

    from lakehouse.speed_versions import active_version
    from spark_jobs import replay
    from spark_jobs.io.kafka_admin import offsets

    cfg = stack
    topic = "replay-retention-test"
    admin = KafkaAdminClient(bootstrap_servers=cfg.kafka.bootstrap)
    admin.create_topics([NewTopic(topic, 2, 1, topic_configs={"retention.ms": "60000", "segment.bytes": "1048576"})])
    prod = KafkaProducer(bootstrap_servers=cfg.kafka.bootstrap, acks="all")
    for i in range(40):
        prod.send(topic, value=b'{"i": %d}' % i, partition=i % 2)
    prod.flush()
    prod.close()
    p = dataclasses.replace(load_pipeline("sensor_readings"), topic=topic)
    assert replay.check_history(cfg, p)  # full history: accepted
    with pytest.raises(TopicMissing):  # no topic: the same exit code as 'speed start' (4)
        replay.check_history(cfg, dataclasses.replace(p, topic="no-such-topic"))
    admin.delete_records({TopicPartition(topic, 1): 5})  # what retention does to old segments
    admin.close()
    assert offsets(cfg, topic)[1][0] == 5
    checkpoints = cfg.data_dir / "checkpoints"
    before = (active_version(cfg, p.name), sorted(checkpoints.rglob("*")) if checkpoints.exists() else [])
    with pytest.raises(TidewaterError, match="partition 1 starts at offset 5.*Nothing was changed"):
        replay.replay(cfg, p, refresh=lambda v: pytest.fail("the view must not be touched"))
    after = (active_version(cfg, p.name), sorted(checkpoints.rglob("*")) if checkpoints.exists() else [])
    assert after == before
    assert not list((cfg.data_dir / "run").glob("replay-*.pid"))
