"""Scenario 4: Kappa replay of the topic into a new speed version, against scenario 1's catch-up rate.

The topic is first topped up (Spark batch write) towards ``sizes.batch_events`` records; the
top-up events are stamped after everything already in the topic (from two minutes after bronze's
latest event on, 1 ms apart) and spread evenly over partitions, so the watermark drops none. They
never reach more than ``max_future_skew`` less ``FILL_MARGIN_MS`` past now: the parser quarantines events
more than ``max_future_skew`` after their arrival as ``FUTURE_TIMESTAMP``. After the live events of scenario 2
that leaves room for about two minutes of events, so at medium and full size the replay reads the
records the topic holds (noted in the result) rather than ``sizes.batch_events``.
``spark_jobs.replay.job.replay`` (what ``tidewater replay`` runs) then rebuilds ``speed.<p>__v<N+1>``
from offset 0 and switches serving to it. Rate = records / (first input batch start -> end of the
batch reaching the topic end), from ``ops.stream_progress`` of the new version (JVM start excluded).
Verified: sum(event_count) in the new version == records in the topic, and every window of v1
has identical aggregates in the new version.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from benchmarks import fill
from benchmarks.progress import span_seconds
from benchmarks.replay_segments import segments
from benchmarks.result import ScenarioResult, ratio
from benchmarks.sizes import Sizes
from infra.utc import as_utc
from lakehouse import naming
from lakehouse.config import TidewaterConfig
from lakehouse.contracts import DOUBLE_TOLERANCE
from lakehouse.pipeline import load_pipeline
from spark_jobs.io.kafka_admin import ensure_topic, offsets
from spark_jobs.io.ops_reader import read_rows
from spark_jobs.replay import job as replay
from spark_jobs.shared.serving_view import refresh_view
from spark_jobs.speed.control import speed_process

PIPELINE = "sensor_readings"
FILL_MARGIN_MS = 60_000  # of max_future_skew, left for the fill itself




def run(spark: Any, cfg: TidewaterConfig, sizes: Sizes, work: Path, context: dict[str, Any]) -> ScenarioResult:
    res = ScenarioResult(4, "Kappa replay")
    if "catchup" not in context:
        return res.skip("needs scenario 1 in the same run (its catch-up rate and the speed v1 table to compare)")

    p = load_pipeline(PIPELINE, cfg.pipelines)
    ensure_topic(cfg, p.topic)
    held = sum(end for _, end in offsets(cfg, p.topic).values())
    top_up = max(0, sizes.batch_events - held)
    if top_up:
        latest = spark.sql(f"SELECT max(event_time) FROM {naming.table('bronze', PIPELINE)}").collect()[0][0]
        start = (int(as_utc(latest).timestamp() * 1000) // 60_000 + 2) * 60_000 if latest else fill.base_ms()
        ahead = max(0, p.future_skew_seconds * 1000 - FILL_MARGIN_MS)
        fits = max(0, int(time.time() * 1000) + ahead - start)  # 1 ms apart, never past the horizon
        if fits < top_up:
            res.notes.append(f"topped up {fits:,} events instead of {top_up:,}: stamped 1 ms apart after the latest "
                             f"event ({latest}, live events of earlier scenarios), more would be quarantined as "
                             "FUTURE_TIMESTAMP; the replay reads the records the topic holds")
            top_up = fits
    if top_up:
        res.metrics["top_up"] = fill.fill_topic(cfg, p.topic, fill.events(spark, top_up, sizes.sensors, start,
                                                                          prefix="r-"))
    records = sum(end for _, end in offsets(cfg, p.topic).values())
    res.settings = {"records": records, "topped_up": top_up, "trigger": f"processingTime {cfg.spark.trigger_seconds} s",
                    "maxOffsetsPerTrigger": cfg.spark.max_offsets_per_trigger, "queries": "speed only (no ingest)"}
    out = replay.replay(cfg, p, lambda v: refresh_view(spark, cfg, p, speed_version=v), timeout=3600, log=print)
    new = int(out.to_version)
    rows = [r for r in read_rows(cfg, "ops.stream_progress")
            if r["pipeline"] == PIPELINE and r["query"] == "speed" and r["query_version"] == new]
    seconds = span_seconds([(r["batch_time"], (r["batch_duration_ms"] or 0) / 1000.0, r["input_rows"] or 0) for r in rows])
    eps = round(records / seconds) if seconds else None
    res.metrics["replay"] = {"seconds": round(seconds or 0, 2), "events_per_s": eps, "records": records,
                             "catch_up_seconds_incl_startup": out.catch_up_seconds,
                             "total_seconds_incl_switch": out.total_seconds, "version": new}
    table, v1 = naming.speed_table(PIPELINE, new), naming.speed_table(PIPELINE, 1)
    total = spark.sql(f"SELECT sum(event_count) FROM {table}").collect()[0][0]
    res.check("replayed sum(event_count) == records in the topic", records, int(total or 0))
    differ = spark.sql(
        f"SELECT count(*) FROM {v1} o LEFT JOIN {table} n ON o.sensor_id = n.sensor_id AND o.window_start = "
        "n.window_start WHERE n.sensor_id IS NULL OR o.event_count != n.event_count OR o.min_temperature != "
        "n.min_temperature OR o.max_temperature != n.max_temperature OR abs(o.avg_temperature - n.avg_temperature) "
        f"> {DOUBLE_TOLERANCE} * greatest(1.0, abs(o.avg_temperature))").collect()[0][0]
    res.check("every v1 window is identical in the replayed version", 0, int(differ))
    latency = context["results"].get(2)
    if differ and latency is not None and latency.status == "FAILED":
        res.notes.append("scenario 2 failed, so v1 may lack its live events: v1's windows, not the replay's, can differ")
    catchup = context.get("catchup") or {}
    job_log = speed_process(cfg, p, f"replay-{p.name}-v{new}").log_file
    parts = res.metrics["replay_segments"] = segments(spark, PIPELINE, p.topic, rows, int(catchup.get("events") or 0), job_log)
    same = (parts.get("scenario_1_records") or {}).get("events_per_s")
    res.ratios = {"replay/catch-up(1a)": ratio(eps, catchup.get("a_events_per_s")),
                  "replay over scenario 1's records/catch-up(1a)": ratio(same, catchup.get("a_events_per_s"))}
    res.notes.append("the replay runs the speed query alone (no ingest), scenario 1a runs ingest + speed")
    res.notes += [f"replay over {name.replace('_', ' ')}: {v['records']:,} records at {v['events_per_s']} events/s, "
                  f"median micro-batch {v['median_batch_s']} s, densest event-time minute {v['densest_event_minute']:,} "
                  f"events; seconds per step {v['steps_s']}" for name, v in parts.items()]
    return res.finish()
