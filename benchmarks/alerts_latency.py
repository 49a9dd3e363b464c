"""Scenario 9's latency phase: live events at 1,000/s, each alert timed in both engines.

Tidewater's alerts query keeps running after the backlog; Flink's ``MATCH_RECOGNIZE`` job starts on the
live records (from the topic's end offsets, bounded at the ones the paced producer will reach) and hands
each match to its client (``--collect``) as soon as it exists. The producer sends ``seconds`` plus the
watermark plus ``TAIL_S`` of events, each stamped with its send time, so the watermark passes every alert
whose closing event was sent in the first ``seconds``.

Per alert: **send → alert**, from the send time of its last event to the moment it is visible (Tidewater:
the ``<topic>.alerts`` record's timestamp, written after the ``alerts.<p>`` commit; Flink: when its client
received it); and **watermark → alert**, from the send time of the first event that moved the watermark past
the alert's last event (its time + the watermark delay: the earliest moment either engine may decide it) to
that same moment: the engine's own decision delay. Only alerts whose last event is more than ``TAIL_S``
before the final watermark count (Flink decides the rest at the end of its bounded input); each engine's are
checked against the oracle first.
"""

from __future__ import annotations

import bisect
import json
import os
import subprocess
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from benchmarks.alerts_bench import AlertsRun, flink_command, offsets_option, watermark_ms
from benchmarks.alerts_oracle import expected_alerts
from benchmarks.paced_producer import produce, sent_events
from benchmarks.s5_serving import percentile
from lakehouse import naming
from lakehouse.config import TidewaterConfig
from lakehouse.pipeline import Pipeline
from spark_jobs.io.kafka_admin import offsets

RATE = 1_000
TAIL_S = 5
PREFIX = "L"
Matched = tuple[str, str, str]  # key, first event id, then event id


def summary(seconds: list[float]) -> dict[str, Any]:
    if not seconds:
        return {"n": 0, "p50_s": None, "p99_s": None, "max_s": None}
    return {"n": len(seconds), "p50_s": percentile(seconds, 0.5), "p99_s": percentile(seconds, 0.99),
            "max_s": round(max(seconds), 4)}


def passage_ms(sent_ms: list[int], then_ms: int, delay_ms: int) -> int | None:
    """Send time of the first event (``sent_ms`` sorted) whose time is past ``then_ms + delay_ms``: the
    watermark (largest time - delay) is past ``then_ms`` once it is read."""
    i = bisect.bisect_right(sent_ms, then_ms + delay_ms)
    return sent_ms[i] if i < len(sent_ms) else None


def latencies(visible: dict[Matched, float], then_ms: dict[Matched, int], sent_ms: list[int],
              delay_ms: int) -> dict[str, Any]:
    """send → alert and watermark → alert (seconds) of each timed alert (``visible``: epoch s)."""
    send, decide = [], []
    for m, at in visible.items():
        send.append(at - then_ms[m] / 1000.0)
        passed = passage_ms(sent_ms, then_ms[m], delay_ms)
        if passed is not None:
            decide.append(at - passed / 1000.0)
    return {"send_to_alert": summary(send), "watermark_to_alert": summary(decide)}


def topic_since(cfg: TidewaterConfig, topic: str, start: dict[int, int]) -> list[tuple[dict[str, Any], int]]:
    """(decoded value, record timestamp ms) of ``topic``'s records from ``start`` to its end offsets."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=cfg.kafka.bootstrap, enable_auto_commit=False)
    try:
        parts = [TopicPartition(topic, n) for n in sorted(consumer.partitions_for_topic(topic) or [])]
        consumer.assign(parts)
        for tp in parts:
            consumer.seek(tp, start.get(tp.partition, 0))
        ends, out, deadline = consumer.end_offsets(parts), [], time.monotonic() + 300
        while any(consumer.position(tp) < ends[tp] for tp in parts) and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=1000).values():
                out += [(json.loads(m.value), m.timestamp) for m in records]
        return out
    finally:
        consumer.close()


def ends(cfg: TidewaterConfig, topic: str) -> dict[int, int]:
    return {part: end for part, (_, end) in offsets(cfg, topic).items()}


class FlinkCollect:
    """The Flink job in ``--collect`` mode in the background, its output lines gathered as they come."""

    def __init__(self, cmd: list[str], work: Path) -> None:
        self.log = (work / "flink-latency.log").open("w")
        env = {**os.environ, "FLINK_LOG_DIR": str(work / "flink-latency-logs")}
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.log, text=True, cwd=work, env=env)
        self.lines: list[dict[str, Any]] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("{"):
                self.lines.append(json.loads(line))

    def wait_submitted(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not any(x.get("submitted") for x in self.lines):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the Flink latency job did not start (exit {self.proc.poll()}; see flink-latency.log)")
            time.sleep(0.5)

    def finish(self, timeout: float) -> dict[Matched, float]:
        try:
            code = self.proc.wait(timeout=timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
            self.reader.join(timeout=10)
            self.log.close()
        if code != 0:
            raise RuntimeError(f"the Flink latency job exited {code} (see flink-latency.log)")
        return {(x["match"][0], x["match"][1], x["match"][2]): float(x["at"]) for x in self.lines if "match" in x}


def measure(cfg: TidewaterConfig, p: Pipeline, run: AlertsRun, seconds: int, work: Path) -> dict[str, Any]:
    """The latency phase; returns its figures and the oracle's checks of both engines' timed alerts."""
    delay = watermark_ms(p)
    total_s = seconds + delay // 1000 + TAIL_S
    start, partitions = ends(cfg, p.topic), cfg.kafka.partitions
    until = {part: end + len(range(part, RATE * total_s, partitions)) for part, end in start.items()}
    alerts_start = ends(cfg, naming.alerts_topic(p.topic))
    flink = FlinkCollect(flink_command(cfg, p, until, ["--from", offsets_option(start), "--collect"]), work)
    flink.wait_submitted(timeout=300)
    time.sleep(3)  # the submitted job's tasks deploy
    chunks, _ = produce(cfg, p.topic, RATE, total_s, PREFIX)
    events = sent_events(chunks, PREFIX)
    final = max(int(e["timestamp"]) for e in events) - delay
    run.wait_watermark(final, timeout=600)
    batches = micro_batches(run.query.recentProgress, chunks[0][1])
    flink_seen = flink.finish(timeout=180)
    cutoff = final - TAIL_S * 1000
    times = {str(e["event_id"]): int(e["timestamp"]) for e in events}
    expected = {(a[2], a[3][0], a[3][-1]) for a in expected_alerts(p, events, cutoff)}
    tidewater_seen: dict[Matched, float] = {}
    for value, ts in topic_since(cfg, naming.alerts_topic(p.topic), alerts_start):
        m = (value["key"], value["event_ids"][0], value["event_ids"][-1])
        tidewater_seen[m] = min(tidewater_seen.get(m, ts / 1000.0), ts / 1000.0)
    timed = {engine: {m: at for m, at in seen.items() if times.get(m[2], cutoff) < cutoff}
             for engine, seen in (("tidewater", tidewater_seen), ("flink", flink_seen))}
    sent_ms = sorted(int(at * 1000) for _, at in chunks)
    then_ms = {m: times[m[2]] for m in expected}
    return {
        "rate": RATE, "seconds_sent": total_s, "events": len(events),
        "achieved_rate": round(len(events) / max(1e-9, chunks[-1][1] - chunks[0][1])) if len(chunks) > 1 else None,
        "timed_alerts": len(expected), "watermark_ms": delay,
        "tidewater": latencies({m: at for m, at in timed["tidewater"].items() if m in then_ms}, then_ms, sent_ms, delay),
        "flink": latencies({m: at for m, at in timed["flink"].items() if m in then_ms}, then_ms, sent_ms, delay),
        "tidewater_micro_batches": batches,
        "checks": [{"name": f"latency phase: {engine}'s timed alerts == the oracle's", "expected": len(expected),
                    "actual": len(set(seen)), "ok": set(seen) == expected} for engine, seen in timed.items()],
    }


def micro_batches(progress: list[Any], since_s: float) -> dict[str, Any]:
    """Where the alerts query's time goes while it runs at the live rate: its micro-batches that started
    after ``since_s`` (epoch s), their median duration and input rows, and the median milliseconds of each
    phase Spark reports (``durationMs``) and of each stateful operator's state updates and commit."""
    rows = [json.loads(p.json) for p in progress]
    rows = [r for r in rows if datetime.fromisoformat(r["timestamp"].replace("Z", "+00:00")).timestamp() >= since_s]
    if not rows:
        return {"n": 0}

    def median(values: list[float]) -> float:
        return sorted(values)[len(values) // 2]

    phases = {k: median([r["durationMs"].get(k, 0) for r in rows]) for k in rows[-1]["durationMs"]}
    operators = {f"{op['operatorName']}#{i}": {k: median([r["stateOperators"][i].get(k, 0) for r in rows
                                                          if len(r["stateOperators"]) > i])
                                               for k in ("allUpdatesTimeMs", "commitTimeMs", "numRowsTotal")}
                 for i, op in enumerate(rows[-1]["stateOperators"])}
    return {"n": len(rows), "median_s": round(median([r["durationMs"].get("triggerExecution", 0) for r in rows]) / 1000, 2),
            "median_input_rows": median([r.get("numInputRows", 0) for r in rows]),
            "no_data": sum(1 for r in rows if not r.get("numInputRows")),
            "phases_ms": phases, "state_operators_ms": operators}
