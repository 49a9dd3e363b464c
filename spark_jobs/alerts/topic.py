"""The alerts topic ``<topic>.alerts``: compacted, so the duplicates of an at-least-once write (same key,
same value) collapse to one record per ``alert_id``; otherwise the pipeline topics' settings."""

from __future__ import annotations

from lakehouse.config import TidewaterConfig
from spark_jobs.io.kafka_admin import topic_configs

COMPACTED = {"cleanup.policy": "compact"}


def ensure_alerts_topic(cfg: TidewaterConfig, topic: str) -> None:
    """Create ``topic`` compacted if missing (an existing one is left as it is)."""
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic
    from kafka.errors import TopicAlreadyExistsError

    admin = KafkaAdminClient(bootstrap_servers=cfg.kafka.bootstrap, request_timeout_ms=15000)
    try:
        if topic in admin.list_topics():
            return
        configs = {**topic_configs(cfg), **COMPACTED}
        try:
            admin.create_topics([NewTopic(topic, num_partitions=cfg.kafka.partitions,
                                          replication_factor=cfg.kafka.replication_factor, topic_configs=configs)])
        except TopicAlreadyExistsError:
            return
    finally:
        admin.close()
