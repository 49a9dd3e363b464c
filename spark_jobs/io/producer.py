"""Send records to Kafka with kafka-python, optionally paced to a fixed rate (on the wall clock).

The producer is idempotent with ``acks='all'`` (both set explicitly, so a conflicting setting raises
instead of silently turning idempotence off). Every send's outcome is counted: a record counts as
delivered only once the broker acknowledged it; anything else (no broker, a send that raised, a
batch that expired after ``timeout`` seconds, a flush that ran out of time) counts as failed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lakehouse.config import TidewaterConfig
from spark_jobs.synthetic_events import Record

if TYPE_CHECKING:
    from kafka import KafkaProducer


def producer(cfg: TidewaterConfig, timeout: float = 120.0) -> KafkaProducer:
    """``timeout`` (s) bounds the first connection, a blocked send and each record's delivery."""
    from kafka import KafkaProducer

    ms = max(1000, int(timeout * 1000))
    return KafkaProducer(
        bootstrap_servers=cfg.kafka.bootstrap, acks="all", enable_idempotence=True, linger_ms=5,
        batch_size=256 * 1024, compression_type=None, max_in_flight_requests_per_connection=1,
        delivery_timeout_ms=ms, request_timeout_ms=min(30_000, ms - 10), max_block_ms=ms, bootstrap_timeout_ms=ms,
    )


@dataclass
class SendResult:
    """Records handed to the producer per kind, how many the broker acknowledged, the first error."""

    counts: dict[str, int] = field(default_factory=dict)
    delivered: int = 0
    error: str = ""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def failed(self) -> int:
        return self.total - self.delivered

    def add(self, rec: Record) -> None:
        self.counts[rec.kind] = self.counts.get(rec.kind, 0) + 1

    def ok(self, _metadata: Any) -> None:  # producer I/O thread
        with self._lock:
            self.delivered += 1

    def fail(self, exc: BaseException) -> None:
        with self._lock:
            self.error = self.error or _describe(exc)


def _describe(exc: BaseException) -> str:
    """``Class: first line of the message`` (kafka-python's messages often start with the class)."""
    name, text = exc.__class__.__name__, (str(exc).strip().splitlines() or [""])[0]
    return (text if text.startswith(name) else f"{name}: {text}" if text else name)[:200]


def send(cfg: TidewaterConfig, topic: str, records: Iterable[Record], rate: float = 0.0,
         timeout: float = 120.0) -> SendResult:
    """Send records; ``rate`` > 0 paces them to that many per second. Never raises for a Kafka
    failure: the result tells how many records were not delivered and why."""
    from kafka.errors import KafkaError

    result, it = SendResult(), iter(records)
    try:
        prod = producer(cfg, timeout)
    except KafkaError as exc:
        result.fail(exc)
        _count_rest(result, it)
        return result
    try:
        for rec in paced(it, rate):
            result.add(rec)
            try:
                prod.send(topic, key=rec.key, value=rec.value).add_callback(result.ok).add_errback(result.fail)
            except KafkaError as exc:  # e.g. no metadata within the timeout: the rest would wait as long
                result.fail(exc)
                _count_rest(result, it)
                break
        prod.flush(timeout=timeout + 30)
    except KafkaError as exc:
        result.fail(exc)
    finally:
        prod.close(timeout=10)
    return result


def paced(records: Iterable[Record], rate: float) -> Iterator[Record]:
    """``records`` as they fall due: with ``rate`` > 0, record ``i`` comes no earlier than ``i / rate``
    seconds after the first by the wall clock, the clock that stamps Kafka arrival times, so events
    stamped one step apart from a time before the first send are never ahead of their send."""
    started = time.time()
    for i, rec in enumerate(records):
        if rate > 0:
            ahead = started + i / rate - time.time()
            if ahead > 0:
                time.sleep(ahead)
        yield rec


def _count_rest(result: SendResult, records: Iterator[Record]) -> None:
    for rec in records:
        result.add(rec)


def send_file(cfg: TidewaterConfig, topic: str, path: Path, rate: float = 0.0, timeout: float = 120.0) -> SendResult:
    """Replay a JSON-lines file: each line is sent as one record value, as is."""
    with open(path, "rb") as fh:
        lines = (line.rstrip(b"\r\n") for line in fh)
        return send(cfg, topic, (Record(None, line, "file") for line in lines if line.strip()), rate, timeout)
