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
    from spark_jobs.io.kafka_admin import offsets
    from spark_jobs.replay import job as replay

    cfg = stack
    topic = "replay-retention-test"
    admin = KafkaAdminClient(bootstrap_servers=cfg.kafka.bootstrap)
    admin.create_topics([NewTopic(topic, 2, 1, topic_configs={"retention.ms": "60000", "segment.bytes": "1048576",
                                                         "message.timestamp.type": "LogAppendTime"})])
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


@pytest.mark.parametrize("rollback", [False, True])
def test_a_second_replay_is_refused_before_spark(stack: TidewaterConfig, rollback: bool) -> None:
    """While a replay or rollback holds the switch lock, another ``tidewater replay`` (a real CLI process)
    is refused in one line, exit 2, before it starts a JVM (whose start prints a warning on stderr: there is
    none) and without changing the active version. Before, it started Spark first (10-14 s) and then named
    only the lock file. The CLI now starts Spark under that lock, so a replay started a second after another
    is refused the same way (tried on the demo stack). A rollback is refused the same way (before, one
    during a first replay said there was no previous version)."""
    import subprocess
    import sys

    from lakehouse.speed_versions import active_version
    from spark_jobs.io.kafka_admin import ensure_topic
    from spark_jobs.shared.locks import exclusive, switch_lock_name

    cfg = stack
    ensure_topic(cfg, "sensor-readings")  # past the history check, to the lock
    before = active_version(cfg, "sensor_readings")
    with exclusive(cfg, switch_lock_name("sensor_readings"), wait_seconds=0):  # as a replay under way holds it
        out = subprocess.run([sys.executable, "-m", "tidewater.cli", "replay", "sensor_readings",
                              *(["--rollback"] if rollback else [])], capture_output=True, text=True, timeout=120)
    assert out.returncode == TidewaterError.EXIT_CODE, out.stdout + out.stderr
    assert out.stderr.strip().splitlines() == [
        "tidewater: replay: a replay or rollback of sensor_readings is already running; wait for it to finish (it "
        "prints its result), or see 'tidewater speed status sensor_readings'"], out.stderr
    assert active_version(cfg, "sensor_readings") == before
