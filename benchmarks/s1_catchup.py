"""Scenario 1: speed-layer catch-up throughput over a pre-filled topic.

(a) the full Tidewater speed layer (``python -m spark_jobs.speed``: ingest -> bronze/quarantine,
speed -> MERGE), (b) the minimal PySpark baseline (``benchmarks.baseline_job``), (c) Kafka's
``ConsumerPerformance`` tool, one after another on the same topic. Each is verified: bronze count,
speed-window totals and baseline-window totals against totals computed from the generator.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks import fill
from benchmarks.progress import event_log_args, phase_breakdown, reached, span_seconds, spark_progress_batches
from benchmarks.result import ScenarioResult, ratio
from benchmarks.sizes import Sizes
from benchmarks.stack import REPO
from lakehouse import naming
from lakehouse.config import TidewaterConfig

PIPELINE = "sensor_readings"


def _ops_batches(cfg: TidewaterConfig, query: str) -> list[dict[str, Any]]:
    from spark_jobs.io.ops_reader import read_rows

    return [r for r in read_rows(cfg, "ops.stream_progress")
            if r["pipeline"] == PIPELINE and r["query"] == query and r["query_version"] == 1]


def _caught_up(cfg: TidewaterConfig, topic: str, target: dict[int, int]) -> bool:
    from lakehouse.commands.speed import parse_offsets

    for query in ("ingest", "speed"):
        rows = _ops_batches(cfg, query)
        if not any(reached(parse_offsets(r["end_offsets"]).get(topic, {}), target) for r in rows):
            return False
    return True


def run_tidewater(cfg: TidewaterConfig, topic: str, target: dict[int, int], events: int, logs: Path,
                  timeout: float) -> dict[str, Any]:
    from lakehouse.commands.speed import start_speed, stop_speed

    os.environ["PYSPARK_SUBMIT_ARGS"] = event_log_args(logs)
    started = time.monotonic()
    try:
        start_speed(cfg, PIPELINE, 1)
        while not _caught_up(cfg, topic, target):
            if time.monotonic() - started > timeout:
                raise TimeoutError(f"speed layer did not catch up within {timeout:.0f} s")
            time.sleep(2)
        wall = time.monotonic() - started
    finally:
        stop_speed(cfg, PIPELINE)
        os.environ.pop("PYSPARK_SUBMIT_ARGS", None)
    batches = [(r["batch_time"], r["batch_duration_ms"] / 1000.0, r["input_rows"])
               for q in ("ingest", "speed") for r in _ops_batches(cfg, q) if r["batch_time"]]
    seconds = span_seconds(batches)
    return {"seconds": round(seconds or 0, 2), "events_per_s": round(events / seconds) if seconds else None,
            "wall_seconds_incl_startup": round(wall, 1), "phases_s": phase_breakdown(logs),
            "micro_batches": max(len(_ops_batches(cfg, "ingest")), len(_ops_batches(cfg, "speed")))}


def run_baseline(topic: str, target: dict[int, int], events: int, work: Path, timeout: float) -> dict[str, Any]:
    progress_file = work / "baseline-progress.json"
    env = {**os.environ, "PYSPARK_SUBMIT_ARGS": event_log_args(work / "eventlog-baseline")}
    cmd = [sys.executable, "-m", "benchmarks.baseline_job", "--topic", topic, "--target",
           json.dumps({str(k): v for k, v in target.items()}), "--out", str(work / "baseline"),
           "--progress", str(progress_file)]
    started = time.monotonic()
    with open(work / "baseline.log", "w") as log:
        subprocess.run(cmd, env=env, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, timeout=timeout, check=True)
    wall = time.monotonic() - started
    seconds = span_seconds(spark_progress_batches(json.loads(progress_file.read_text())))
    return {"seconds": round(seconds or 0, 2), "events_per_s": round(events / seconds) if seconds else None,
            "wall_seconds_incl_startup": round(wall, 1), "phases_s": phase_breakdown(work / "eventlog-baseline")}


def run_consumer_perf(cfg: TidewaterConfig, topic: str, events: int) -> dict[str, Any]:
    cmd = ["java", "-Xmx512m", "-cp", str(naming.jars_dir("kafka") / "*"), "org.apache.kafka.tools.ConsumerPerformance",
           "--bootstrap-server", cfg.kafka.bootstrap, "--topic", topic, "--messages", str(events),
           "--timeout", "60000", "--group", f"bench-perf-{int(time.time())}"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=True).stdout.strip().splitlines()
    header, values = [h.strip() for h in out[-2].split(",")], [v.strip() for v in out[-1].split(",")]
    row = dict(zip(header, values, strict=False))
    consumed, fetch_s = int(row["data.consumed.in.nMsg"]), float(row["fetch.time.ms"]) / 1000.0
    return {"consumed": consumed, "seconds": round(fetch_s, 2),
            "events_per_s": round(float(row["fetch.nMsg.sec"])), "raw": row}


def run(spark: Any, cfg: TidewaterConfig, sizes: Sizes, work: Path, context: dict[str, Any]) -> ScenarioResult:
    from lakehouse.pipeline import load_pipeline
    from spark_jobs.io.kafka_admin import offsets

    res = ScenarioResult(1, "Speed-layer catch-up throughput")
    p = load_pipeline(PIPELINE, cfg.pipelines)
    n = sizes.catchup_events
    res.settings = {"events": n, "sensors": sizes.sensors, "partitions": cfg.kafka.partitions,
                    "trigger": f"processingTime {cfg.spark.trigger_seconds} s",
                    "maxOffsetsPerTrigger": cfg.spark.max_offsets_per_trigger, "spark.master": cfg.spark.master}
    gen = fill.events(spark, n, sizes.sensors, fill.base_ms())
    res.metrics["fill"] = fill.fill_topic(cfg, p.topic, gen)
    target = {part: end for part, (_, end) in offsets(cfg, p.topic).items()}
    res.check("topic holds every produced event", n, sum(target.values()))
    expected = fill.expected_totals(gen)
    timeout = max(600.0, n / 2_000)

    a = res.metrics["a_tidewater"] = run_tidewater(cfg, p.topic, target, n, work / "eventlog-tidewater", timeout)
    res.check("a: bronze count == produced valid events", n,
              spark.sql(f"SELECT count(*) FROM {naming.table('bronze', PIPELINE)}").collect()[0][0])
    res.check("a: quarantine is empty", 0,
              spark.sql(f"SELECT count(*) FROM {naming.table('quarantine', PIPELINE)}").collect()[0][0])
    res.add_checks(fill.compare_totals(expected, fill.table_totals(spark, naming.speed_table(PIPELINE)), "a: speed"))

    b = res.metrics["b_baseline"] = run_baseline(p.topic, target, n, work, timeout)
    latest = (f"(SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY sensor_id, window_start ORDER BY batch_id DESC)"
              f" AS rn FROM delta.`{work / 'baseline' / 'table'}`) WHERE rn = 1)")
    res.add_checks(fill.compare_totals(expected, fill.table_totals(spark, latest), "b: baseline"))

    c = res.metrics["c_consumer_perf"] = run_consumer_perf(cfg, p.topic, n)
    res.check("c: ConsumerPerformance consumed every event", n, c["consumed"])
    context["catchup"] = {"topic": p.topic, "events": n, "expected": expected, "a_events_per_s": a["events_per_s"]}
    res.ratios = {"a/b": ratio(a["events_per_s"], b["events_per_s"]), "a/c": ratio(a["events_per_s"], c["events_per_s"])}
    res.notes.append("events/s = events / (end of the batch reaching the topic end - start of the first input batch);"
                     " JVM start-up excluded (wall time incl. start-up is also reported)")
    return res.finish()
