"""Kafka topic administration and offset queries (kafka-python), for the CLI and replay checks."""

from __future__ import annotations

from lakehouse.config import TidewaterConfig
from lakehouse.errors import TidewaterError

TIMESTAMP_TYPE = "message.timestamp.type"


def topic_retention_ms(cfg: TidewaterConfig) -> int:
    """Kappa mode keeps the log forever (the log is the source of truth)."""
    return -1 if cfg.mode == "kappa" else cfg.kafka.retention_ms


def topic_configs(cfg: TidewaterConfig) -> dict[str, str]:
    """Retention, and record timestamps from the broker's clock (``LogAppendTime``): Tidewater's
    reference for "when did this event arrive" (future-skew check, first-copy-wins dedup) must not
    come from the producer clock it is checking. Durability: an acks=all write needs
    ``min.insync.replicas`` copies (2 of 3 in a cluster), and an out-of-sync replica never becomes leader."""
    return {"retention.ms": str(topic_retention_ms(cfg)), TIMESTAMP_TYPE: "LogAppendTime",
            "min.insync.replicas": str(cfg.kafka.min_insync_replicas), "unclean.leader.election.enable": "false"}


def ensure_topic(cfg: TidewaterConfig, topic: str, partitions: int | None = None) -> bool:
    """Create ``topic`` if missing. True if it was created. In kappa mode an existing topic is set
    to keep its records forever too (a stack switched from lambda to kappa keeps its history)."""
    from kafka import KafkaAdminClient
    from kafka.admin import ConfigResource, ConfigResourceType, NewTopic
    from kafka.errors import TopicAlreadyExistsError

    admin = KafkaAdminClient(bootstrap_servers=cfg.kafka.bootstrap, request_timeout_ms=15000)
    try:
        if topic in admin.list_topics():
            if cfg.mode == "kappa":
                admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic, configs={"retention.ms": "-1"})])
            return False
        new = NewTopic(topic, num_partitions=partitions or cfg.kafka.partitions,
                       replication_factor=cfg.kafka.replication_factor,
                       topic_configs=topic_configs(cfg))
        try:
            admin.create_topics([new])
        except TopicAlreadyExistsError:
            return False
        return True
    finally:
        admin.close()


def offsets(cfg: TidewaterConfig, topic: str) -> dict[int, tuple[int, int]]:
    """partition -> (earliest retained offset, end offset)."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=cfg.kafka.bootstrap, enable_auto_commit=False)
    try:
        parts = consumer.partitions_for_topic(topic) or set()
        tps = [TopicPartition(topic, p) for p in sorted(parts)]
        begin = consumer.beginning_offsets(tps)
        end = consumer.end_offsets(tps)
        return {tp.partition: (begin[tp], end[tp]) for tp in tps}
    finally:
        consumer.close()


def timestamp_type(cfg: TidewaterConfig, topic: str) -> str:
    """The topic's effective ``message.timestamp.type`` (its own setting, else the broker's default)."""
    from kafka import KafkaAdminClient
    from kafka.admin import ConfigResource, ConfigResourceType

    admin = KafkaAdminClient(bootstrap_servers=cfg.kafka.bootstrap, request_timeout_ms=15000)
    try:
        resource = ConfigResource(ConfigResourceType.TOPIC, topic, configs={TIMESTAMP_TYPE: None})
        described = admin.describe_configs([resource], config_filter="all")
    finally:
        admin.close()
    entry = described.get("topic", {}).get(topic, {}).get(TIMESTAMP_TYPE) or {}
    return str(entry.get("value") or "CreateTime")  # Kafka's own default


def require_log_append_time(cfg: TidewaterConfig, topic: str) -> None:
    """Refuse a topic whose records carry the producer's clock: the future-skew check and the batch
    cutoff's arrival bound would then trust the very clock they check (``topic_configs``)."""
    found = timestamp_type(cfg, topic)
    if found != "LogAppendTime":
        raise TidewaterError(
            f"kafka: topic '{topic}' has {TIMESTAMP_TYPE}={found}, so record times come from the producers' clocks; "
            f"set it to the broker's clock: kafka-configs.sh --bootstrap-server {cfg.kafka.bootstrap} --alter "
            f"--entity-type topics --entity-name {topic} --add-config {TIMESTAMP_TYPE}=LogAppendTime")


def topic_config(cfg: TidewaterConfig, topic: str) -> dict[str, str]:
    """The topic's non-default settings (e.g. ``retention.ms``), as the broker reports them."""
    from kafka import KafkaAdminClient
    from kafka.admin import ConfigResource, ConfigResourceType

    admin = KafkaAdminClient(bootstrap_servers=cfg.kafka.bootstrap, request_timeout_ms=15000)
    try:
        described = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
    finally:
        admin.close()
    entries = described.get("topic", {}).get(topic, {})
    return {key: str(data.get("value")) for key, data in entries.items() if isinstance(data, dict)}
