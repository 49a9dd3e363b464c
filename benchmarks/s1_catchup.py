"""Scenario 1: speed-layer catch-up throughput over a pre-filled topic.

(a) the full Tidewater speed layer (``python -m spark_jobs.speed.job``: ingest -> bronze/quarantine,
speed -> MERGE), (b) the minimal PySpark baseline (``benchmarks.baseline_job``), (d) the same work
as (a) hand-written in one plain PySpark script (``benchmarks.same_work_job``; a/d is Tidewater's
overhead), (c) Kafka's ``ConsumerPerformance`` tool, one after another on the same topic. Each is verified: bronze count,
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
from benchmarks.progress import (
    batch_growth,
    event_log_args,
    reached,
    span_seconds,
    spark_progress_batches,
    sql_breakdown,
)
from benchmarks.result import ScenarioResult, ratio
from benchmarks.sizes import Sizes
from benchmarks.stack import REPO
from lakehouse import naming
from lakehouse.config import TidewaterConfig
from lakehouse.pipeline import load_pipeline
from spark_jobs.io.kafka_admin import offsets
from spark_jobs.io.ops_reader import read_rows
from spark_jobs.speed.lag import parse_offsets

PIPELINE = "sensor_readings"


def _ops_batches(cfg: TidewaterConfig, query: str) -> list[dict[str, Any]]:
    return [r for r in read_rows(cfg, "ops.stream_progress")
            if r["pipeline"] == PIPELINE and r["query"] == query and r["query_version"] == 1]


def _caught_up(cfg: TidewaterConfig, topic: str, target: dict[int, int]) -> bool:
    """Both speed-layer queries recorded end offsets at the topic end in ops.stream_progress."""
    for query in ("ingest", "speed"):
        rows = _ops_batches(cfg, query)
        if not any(reached(parse_offsets(r["end_offsets"]).get(topic, {}), target) for r in rows):
            return False
    return True


def phases(progress: list[dict[str, Any]]) -> dict[str, float]:
    """Seconds per durationMs phase (addBatch, getBatch, walCommit, ...) summed over input batches."""
    out: dict[str, float] = {}
    for prog in progress:
        if int(prog.get("numInputRows") or 0) > 0:
            for phase, ms in (prog.get("durationMs") or {}).items():
                out[phase] = out.get(phase, 0.0) + ms / 1000.0
    return {k: round(v, 2) for k, v in sorted(out.items(), key=lambda kv: -kv[1])}


def run_job(module: str, args: list[str], events: int, work: Path, name: str, timeout: float) -> dict[str, Any]:
    """Run a catch-up job subprocess; rate from its dumped progress (first input batch -> target)."""
    progress_file = work / f"{name}-progress.json"
    logs = work / f"eventlog-{name}"
    env = {**os.environ, "PYSPARK_SUBMIT_ARGS": event_log_args(logs)}
    cmd = [sys.executable, "-m", module, *args, "--progress", str(progress_file)]
    started = time.monotonic()
    with open(work / f"{name}.log", "w") as log:
        subprocess.run(cmd, env=env, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, timeout=timeout, check=True)
    wall = time.monotonic() - started
    dumped = json.loads(progress_file.read_text())
    per_query = dumped if isinstance(dumped, dict) else {name: dumped}
    batches = [b for prog in per_query.values() for b in spark_progress_batches(prog)]
    seconds = span_seconds(batches)
    return {"seconds": round(seconds or 0, 2), "events_per_s": round(events / seconds) if seconds else None,
            "wall_seconds_incl_startup": round(wall, 1),
            "micro_batches": max(sum(1 for p in prog if p.get("numInputRows")) for prog in per_query.values()),
            "batch_growth": batch_growth(batches, max((b[2] for b in batches), default=0)),
            "phases_s": {q: phases(prog) for q, prog in per_query.items()}, "sql_s": sql_breakdown(logs)}


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

    target_arg = json.dumps({str(k): v for k, v in target.items()})
    a = res.metrics["a_tidewater"] = run_job("benchmarks.tidewater_job", ["--target", target_arg], n, work,
                                             "tidewater", timeout)
    res.check("a: bronze count == produced valid events", n,
              spark.sql(f"SELECT count(*) FROM {naming.table('bronze', PIPELINE)}").collect()[0][0])
    res.check("a: quarantine is empty", 0,
              spark.sql(f"SELECT count(*) FROM {naming.table('quarantine', PIPELINE)}").collect()[0][0])
    res.add_checks(fill.compare_totals(expected, fill.table_totals(spark, naming.speed_table(PIPELINE)), "a: speed"))

    b = res.metrics["b_baseline"] = run_job(
        "benchmarks.baseline_job", ["--topic", p.topic, "--target", target_arg, "--out", str(work / "baseline")], n,
        work, "baseline", timeout)
    latest = (f"(SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY sensor_id, window_start ORDER BY batch_id DESC)"
              f" AS rn FROM delta.`{work / 'baseline' / 'table'}`) WHERE rn = 1)")
    res.add_checks(fill.compare_totals(expected, fill.table_totals(spark, latest), "b: baseline"))

    d = res.metrics["d_same_work"] = run_job(
        "benchmarks.same_work_job", ["--topic", p.topic, "--target", target_arg, "--out", str(work / "same-work")], n,
        work, "same-work", timeout)
    res.check("d: same-work bronze count == produced valid events", n,
              spark.sql(f"SELECT count(*) FROM delta.`{work / 'same-work' / 'bronze'}`").collect()[0][0])
    res.add_checks(fill.compare_totals(expected, fill.table_totals(spark, f"delta.`{work / 'same-work' / 'windows'}`"),
                                       "d: same-work"))

    c = res.metrics["c_consumer_perf"] = run_consumer_perf(cfg, p.topic, n)
    res.check("c: ConsumerPerformance consumed every event", n, c["consumed"])
    context["catchup"] = {"topic": p.topic, "events": n, "expected": expected, "a_events_per_s": a["events_per_s"],
                          "b_events_per_s": b["events_per_s"], "d_events_per_s": d["events_per_s"], "offsets": target}
    res.ratios = {"a/b": ratio(a["events_per_s"], b["events_per_s"]), "a/c": ratio(a["events_per_s"], c["events_per_s"]),
                  "a/d": ratio(a["events_per_s"], d["events_per_s"])}
    cap = cfg.spark.max_offsets_per_trigger / max(1, cfg.spark.trigger_seconds)
    if b["events_per_s"] and b["events_per_s"] >= 0.9 * cap:
        res.notes.append(f"the baseline ran at the trigger cap (maxOffsetsPerTrigger / trigger = {cap:,.0f} events/s):"
                         " its batches finish inside the trigger interval, so a/b overstates Tidewater's share")
    res.notes.append("events/s = events / (end of the batch reaching the topic end - start of the first input batch);"
                     " JVM start-up excluded (wall time incl. start-up is also reported)")
    return res.finish()
