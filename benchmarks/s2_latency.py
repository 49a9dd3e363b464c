"""Scenario 2: end-to-end latency, from the moment an event is produced to the moment it is visible.

A paced producer (``benchmarks.paced_producer``) sends events of its own sensors (``lat<rate>-s-<k>``)
in 10 ms chunks and records (cumulative count, send time) per chunk; the event's ``timestamp`` is its
send time. Event ``i`` is visible once the partials table behind ``speed.<p>`` counts >= ``i`` of the
prefix's events (micro-batches expose events in produce order: Kafka offsets per batch). Two clocks:

* the goal's latency (``p50_s``...): until the Delta commit that makes the event visible was written
  (``benchmarks.commit_latency``, the commits' log files);
* ``poll_p50_s``...: until a reader polling every ``POLL_S`` (the log, then the Parquet files, with
  DuckDB) first counts it (an upper bound, resolution ``POLL_S``).

``serving.<p>`` in lambda mode shows speed rows for windows after the batch cutoff, so fresh events
appear there exactly when they appear in the speed table; the end check verifies it through SQL.

Two measurements per rate: ``rate_<r>`` right after the speed job (a new JVM) caught up, and
``rate_<r>_steady`` after as many seconds again of load at the rate (sensors ``warm<r>-s-*``, not
measured): the latency of a job that has run for minutes, which a continuously running speed layer serves.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.commit_latency import latest_version, visible_by_commit
from benchmarks.paced_producer import produce
from benchmarks.result import ScenarioResult
from benchmarks.s1_catchup import PIPELINE, _caught_up
from benchmarks.sizes import Sizes
from infra.services.log_evidence import job_evidence
from lakehouse import naming
from lakehouse.config import TidewaterConfig
from lakehouse.pipeline import load_pipeline
from spark_jobs.io.kafka_admin import ensure_topic, offsets
from spark_jobs.io.ops_reader import live_files, read_rows, table_path
from spark_jobs.speed.control import speed_process, start_speed, stop_speed

POLL_S = 0.5
STEADY = "steady"  # the second measurement of each rate, after as many seconds again of load (unmeasured)


def visible_count(cfg: TidewaterConfig, prefix: str) -> int:
    import duckdb

    files = [str(f) for f in live_files(table_path(cfg, naming.speed_partials_table(PIPELINE)))]
    if not files:
        return 0
    row = duckdb.execute("SELECT sum(event_count) FROM read_parquet(?) WHERE starts_with(sensor_id, ?)",
                         [files, prefix]).fetchone()
    return int(row[0] or 0) if row else 0


def percentiles(chunks: list[tuple[int, float]], polls: list[tuple[float, int]]) -> dict[str, float | None]:
    """Weighted latency percentiles: each chunk's events become visible at the first poll covering them."""
    lat: list[tuple[float, int]] = []
    j, prev = 0, 0
    for count, sent_at in chunks:
        while j < len(polls) and polls[j][1] < count:
            j += 1
        if j == len(polls):
            return {"p50_s": None, "p95_s": None, "p99_s": None}
        lat.append((polls[j][0] - sent_at, count - prev))
        prev = count
    lat.sort()
    out: dict[str, float | None] = {}
    total, acc, k = sum(w for _, w in lat), 0, 0
    for name, q in (("p50_s", 0.50), ("p95_s", 0.95), ("p99_s", 0.99)):
        while k < len(lat) and acc + lat[k][1] < q * total:
            acc += lat[k][1]
            k += 1
        out[name] = round(lat[min(k, len(lat) - 1)][0], 2)
    return out


def batch_stats(cfg: TidewaterConfig, since: float, until: float) -> dict[str, Any]:
    """Micro-batches of the speed job between two times (ops.stream_progress): count, mean/max seconds."""
    lo, hi = (datetime.fromtimestamp(t, UTC).replace(tzinfo=None) for t in (since, until))
    out: dict[str, Any] = {}
    for query in ("ingest", "speed"):
        secs = [r["batch_duration_ms"] / 1000.0 for r in read_rows(cfg, "ops.stream_progress")
                if r["query"] == query and r["input_rows"] and r["batch_time"] and lo <= r["batch_time"] <= hi]
        if secs:
            out[query] = {"batches": len(secs), "mean_s": round(sum(secs) / len(secs), 1), "max_s": round(max(secs), 1)}
    return out


def _require_running(cfg: TidewaterConfig) -> None:
    proc = speed_process(cfg, load_pipeline(PIPELINE, cfg.pipelines))
    if not proc.running():
        raise RuntimeError(f"the speed job exited; log {proc.log_file}:\n{job_evidence(proc.tail(20_000))}")


def measure_rate(cfg: TidewaterConfig, topic: str, rate: int, seconds: int, phase: str = "") -> tuple[dict[str, Any], dict[str, Any]]:
    """Latency percentiles of ``seconds`` of events at ``rate`` (sensors ``lat<rate><phase>-s-*``)."""
    prefix = f"lat{rate}{phase}-s-"
    polls: list[tuple[float, int]] = []
    stop = threading.Event()

    def _poll() -> None:
        while not stop.is_set():
            t = time.time()
            try:
                polls.append((t, visible_count(cfg, prefix)))
            except Exception as exc:  # a file removed between log read and file read: retry next tick
                print(f"bench: latency poll retry ({type(exc).__name__})", flush=True)
            time.sleep(max(0.0, POLL_S - (time.time() - t)))

    partials = table_path(cfg, naming.speed_partials_table(PIPELINE))
    before = latest_version(partials)
    poller = threading.Thread(target=_poll, daemon=True)
    poller.start()
    t0 = time.time()
    chunks, windows = produce(cfg, topic, rate, seconds, prefix)
    produced_s = time.time() - t0
    total = chunks[-1][0]
    deadline = time.time() + max(180, total / 1000)  # a rate above capacity leaves a backlog to drain
    while time.time() < deadline and (not polls or polls[-1][1] < total):
        _require_running(cfg)
        time.sleep(POLL_S)
    stop.set()
    poller.join(timeout=30)
    commits = visible_by_commit(partials, before, prefix)
    polled = {f"poll_{k}": v for k, v in percentiles(chunks, polls).items()}
    metrics = {"events": total, "achieved_rate": round(total / produced_s), **percentiles(chunks, commits), **polled,
               "commits": len(commits), "polls": len(polls), "visible_at_end": polls[-1][1] if polls else 0,
               "speed_job_batches": batch_stats(cfg, t0, time.time())}
    return metrics, windows


def run(spark: Any, cfg: TidewaterConfig, sizes: Sizes, work: Path, context: dict[str, Any]) -> ScenarioResult:
    res = ScenarioResult(2, "End-to-end latency")
    p = load_pipeline(PIPELINE, cfg.pipelines)
    ensure_topic(cfg, p.topic)
    res.settings = {"trigger": f"processingTime {cfg.spark.trigger_seconds} s",
                    "maxOffsetsPerTrigger": cfg.spark.max_offsets_per_trigger, "rates": list(sizes.latency_rates),
                    "seconds_per_rate": sizes.latency_seconds, "poll_interval_s": POLL_S,
                    "measured_table": naming.speed_table(PIPELINE)}
    try:
        start_speed(cfg, p, 1)
        target = {part: end for part, (_, end) in offsets(cfg, p.topic).items()}
        deadline = time.time() + 600
        while sum(target.values()) and not _caught_up(cfg, p.topic, target) and time.time() < deadline:
            _require_running(cfg)
            time.sleep(2)
        time.sleep(cfg.spark.trigger_seconds + 5)  # the job is idle and warm before producing
        all_windows: dict[str, dict[str, list[float]]] = {}
        for rate in sizes.latency_rates:
            # "cold": right after the job caught up (a new JVM); "steady": after WARM_S more seconds at
            # the rate, as a job that has run for minutes (its JIT compiler settled) serves it
            for phase, label in (("", f"{rate}/s"), (STEADY, f"{rate}/s {STEADY}")):
                if phase:
                    produce(cfg, p.topic, rate, sizes.latency_seconds, f"warm{rate}-s-")
                key = f"{rate}{phase}"
                metrics, all_windows[key] = measure_rate(cfg, p.topic, rate, sizes.latency_seconds, phase)
                res.metrics[f"rate_{rate}{'_' + phase if phase else ''}"] = metrics
                # a latency measured below the asked rate says nothing about that rate: the scenario fails
                res.check(f"{label}: the producer reached >= 95% of the asked rate", f">= {0.95 * rate:,.0f}/s",
                          metrics["achieved_rate"], metrics["achieved_rate"] >= 0.95 * rate)
                res.check(f"{label}: every produced event visible", metrics["events"], metrics["visible_at_end"])
    finally:
        stop_speed(cfg, p)
    table = naming.speed_table(PIPELINE)
    for key, windows in all_windows.items():
        row = spark.sql(f"SELECT count(*), sum(min_temperature), sum(max_temperature) FROM {table} "
                        f"WHERE sensor_id LIKE 'lat{key}-s-%'").collect()[0]
        exp = (len(windows), sum(min(v) for v in windows.values()), sum(max(v) for v in windows.values()))
        res.check(f"lat{key}: windows, sum(min), sum(max) in speed", exp, tuple(row),
                  row[0] == exp[0] and abs((row[1] or 0) - exp[1]) < 1e-6 and abs((row[2] or 0) - exp[2]) < 1e-6)
        _check_serving(spark, res, key, sum(len(v) for v in windows.values()))
    res.notes.append("latency (p50_s, p95_s, p99_s) = the instant the Delta commit that makes the event visible in the"
                     " speed table was written (its log file's modification time) - the event's send time; poll_p*_s:"
                     f" the first poll of a reader showing it (every {POLL_S} s, an upper bound); trigger processingTime"
                     f" {cfg.spark.trigger_seconds} s bounds the floor")
    return res.finish()


def _check_serving(spark: Any, res: ScenarioResult, key: str, events: int) -> None:
    serving = naming.table("serving", PIPELINE)
    if not spark.catalog.tableExists(serving):
        res.notes.append(f"{serving} does not exist in this stack: latency measured on the speed table only")
        return
    got = spark.sql(f"SELECT sum(event_count) FROM {serving} WHERE sensor_id LIKE 'lat{key}-s-%'").collect()[0][0]
    res.check(f"lat{key}: same events visible through {serving}", events, int(got or 0))
