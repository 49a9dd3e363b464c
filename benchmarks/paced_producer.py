"""The benchmarks' paced producer: ``rate`` events/s for ``seconds``, in 10 ms chunks, each event
stamped with its send time (its ``timestamp`` field, epoch ms).

It uses librdkafka (``confluent-kafka``), not kafka-python: at 10,000 events/s kafka-python's
per-record Python work took most of one of the machine's two cores, so the measured Spark job ran on
what was left (the producer is load generator, not the system under test). Same settings as the
platform's producer: ``acks=all``, idempotent. Delivery failures fail the scenario.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from typing import Any

from lakehouse.config import TidewaterConfig

CHUNK_S = 0.01
SENSORS = 100


def event(sent: int, prefix: str, ms: int) -> dict[str, Any]:
    """The ``sent``-th event (from 0) of a run with ``prefix``, sent at ``ms``: a sensor's temperatures cycle
    through ten values 5 °C apart, so sensors see hot and cold readings in turn."""
    temp = round(((sent * 7919) % 1000) / 20.0 - 10.0, 2)
    return {"event_id": f"{prefix}e{sent}", "sensor_id": f"{prefix}{sent % SENSORS:03d}", "timestamp": ms,
            "temperature": temp}


def sent_events(chunks: list[tuple[int, float]], prefix: str) -> list[dict[str, Any]]:
    """Every event of a run, as ``produce`` sent it, from the chunks it returned."""
    out, sent = [], 0
    for upto, at in chunks:
        ms = int(at * 1000)
        out += [event(n, prefix, ms) for n in range(sent, upto)]
        sent = upto
    return out


def produce(cfg: TidewaterConfig, topic: str, rate: int, seconds: int, prefix: str) -> tuple[list[tuple[int, float]],
                                                                                          dict[str, list[float]]]:
    """Paced send; returns chunks (cumulative count, send time) and expected per-window temperatures."""
    from confluent_kafka import Producer

    failures: list[str] = []

    def _delivered(err: object, _msg: object) -> None:
        if err is not None:
            failures.append(str(err))

    prod = Producer({"bootstrap.servers": cfg.kafka.bootstrap, "acks": "all", "enable.idempotence": True,
                     "linger.ms": 5, "client.id": f"tidewater-bench-{prefix}"})
    partitions = cfg.kafka.partitions  # round-robin: every partition keeps the same mix of old and new events
    chunks: list[tuple[int, float]] = []
    windows: dict[str, list[float]] = defaultdict(list)
    total, per_chunk = rate * seconds, max(1, round(rate * CHUNK_S))
    start, sent = time.time(), 0
    while sent < total:
        ahead = start + sent / rate - time.time()
        if ahead > 0:
            time.sleep(ahead)
        now = time.time()
        ms = int(now * 1000)
        for _ in range(min(per_chunk, total - sent)):
            value = event(sent, prefix, ms)
            sensor, temp = value["sensor_id"], value["temperature"]
            prod.produce(topic, key=sensor.encode(), value=json.dumps(value).encode(), partition=sent % partitions,
                         on_delivery=_delivered)
            windows[f"{sensor}|{ms // 60_000}"].append(temp)
            sent += 1
        prod.poll(0)
        chunks.append((sent, now))
    left = prod.flush(120)
    if left or failures:
        raise RuntimeError(f"paced producer: {left} events undelivered, {len(failures)} failed "
                           f"({'; '.join(failures[:3])})")
    return chunks, windows
