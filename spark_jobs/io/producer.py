"""Send records to Kafka with kafka-python (acks=all), optionally paced to a fixed rate."""

from __future__ import annotations

import time
from collections.abc import Iterable
from pathlib import Path

from lakehouse.config import TidewaterConfig
from spark_jobs.io.event_generator import Record


def producer(cfg: TidewaterConfig):  # type: ignore[no-untyped-def]
    from kafka import KafkaProducer

    return KafkaProducer(
        bootstrap_servers=cfg.kafka.bootstrap, acks="all", linger_ms=5, batch_size=256 * 1024,
        compression_type=None, retries=5, max_in_flight_requests_per_connection=1,
    )


def send(cfg: TidewaterConfig, topic: str, records: Iterable[Record], rate: float = 0.0) -> dict[str, int]:
    """Send records; ``rate`` > 0 paces them to that many per second. Returns counts per kind."""
    prod = producer(cfg)
    counts: dict[str, int] = {}
    started = time.monotonic()
    try:
        for i, rec in enumerate(records):
            if rate > 0:
                ahead = started + i / rate - time.monotonic()
                if ahead > 0:
                    time.sleep(ahead)
            prod.send(topic, key=rec.key, value=rec.value)
            counts[rec.kind] = counts.get(rec.kind, 0) + 1
        prod.flush(timeout=120)
    finally:
        prod.close(timeout=30)
    return counts


def send_file(cfg: TidewaterConfig, topic: str, path: Path, rate: float = 0.0) -> dict[str, int]:
    """Replay a JSON-lines file: each line is sent as one record value, as is."""
    with open(path, "rb") as fh:
        lines = (line.rstrip(b"\r\n") for line in fh)
        return send(cfg, topic, (Record(None, line, "file") for line in lines if line.strip()), rate)
