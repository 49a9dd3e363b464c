"""Scenario 8: flat cost as history grows (goal: over a 20M-event run, the last 10% of the
micro-batches take <= 1.2x the first 10% at equal batch size).

It runs on a stack of its own (``harness.OWN_STACK``): the topic gets ``sizes.flat_events`` generator
events (``benchmarks.fill``) from a day ago on, 1 ms apart (20M events: 5.6 hours of event time, none
in the future, which the parser quarantines, and none behind the watermark of earlier live events);
the speed job runs as ``tidewater speed start`` runs it and catches up. Its micro-batches
(``ops.stream_progress``: duration and input rows) give the flatness figure (``progress.batch_growth``:
full-size batches, the first one left out) and the series of duration against the history the job
had already written (bronze rows before the batch), charted by ``benchmarks.report``. Checks:
every event in bronze, and the speed view's windows of this range equal the generator's totals.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks import fill
from benchmarks.progress import batch_growth, speed_batches
from benchmarks.result import ScenarioResult
from benchmarks.s1_catchup import PIPELINE
from benchmarks.sizes import Sizes
from lakehouse import naming
from lakehouse.config import TidewaterConfig
from lakehouse.pipeline import load_pipeline
from spark_jobs.speed.control import start_speed, stop_speed, wait_caught_up

GOAL_LAST_OVER_FIRST = 1.2
PREFIX = "flat-"


def history_series(batches: list[tuple[datetime, float, int]], before: int) -> list[tuple[int, float]]:
    """(rows the job had written before the micro-batch, its duration) for every batch that read input."""
    out, seen = [], before
    for _, seconds, rows in batches:
        if rows:
            out.append((seen, round(seconds, 2)))
            seen += rows
    return out


def run(spark: Any, cfg: TidewaterConfig, sizes: Sizes, work: Path, context: dict[str, Any]) -> ScenarioResult:
    res = ScenarioResult(8, "Flat cost as history grows")
    p = load_pipeline(PIPELINE, cfg.pipelines)
    n = sizes.flat_events
    start_ms = fill.base_ms()
    res.settings = {"events": n, "sensors": sizes.sensors, "event_time_from": start_ms, "step_ms": 1,
                    "trigger": f"processingTime {cfg.spark.trigger_seconds} s",
                    "maxOffsetsPerTrigger": cfg.spark.max_offsets_per_trigger,
                    "goal_last_over_first_max": GOAL_LAST_OVER_FIRST}
    bronze = naming.table("bronze", PIPELINE)
    before = spark.sql(f"SELECT count(*) FROM {bronze}").collect()[0][0] if spark.catalog.tableExists(bronze) else 0
    if before:
        return res.fail(f"{bronze} already holds {before} events: scenario 8 needs a stack of its own (harness.OWN_STACK)")
    gen = fill.events(spark, n, sizes.sensors, start_ms, prefix=PREFIX)
    res.metrics["fill"] = fill.fill_topic(cfg, p.topic, gen)
    expected = fill.expected_totals(gen)
    since = datetime.now(UTC).replace(tzinfo=None)
    started = time.monotonic()
    try:
        start_speed(cfg, p, 1, wait=300)
        caught_up = wait_caught_up(cfg, p, timeout=max(900.0, n / 5_000))
    finally:
        stop_speed(cfg, p)
    res.check("the speed job caught up", True, caught_up)
    batches = speed_batches(cfg, PIPELINE, since)
    series = history_series(batches, 0)
    busy = [b for b in batches if b[2]]
    span = (max(t.timestamp() + d for t, d, _ in busy) - min(t.timestamp() for t, _, _ in busy)) if busy else 0.0
    growth = batch_growth(batches, max((b[2] for b in batches), default=0))
    res.metrics["flat"] = {**growth, "events_per_s": round(n / span) if span else None, "seconds": round(span, 1),
                           "wall_seconds_incl_startup": round(time.monotonic() - started, 1),
                           "micro_batches": len(busy),
                           "goal_met": (growth.get("last_over_first") is not None
                                        and growth["last_over_first"] <= GOAL_LAST_OVER_FIRST),
                           "series": series}
    res.check("every event in bronze", n, spark.sql(f"SELECT count(*) FROM {bronze} "
                                                    f"WHERE event_id LIKE '{PREFIX}%'").collect()[0][0])
    since_window = f"window_start >= timestamp_millis({start_ms})"
    res.add_checks(fill.compare_totals(expected, fill.table_totals(spark, naming.speed_table(PIPELINE), since_window),
                                       "speed view"))
    res.ratios = {"last_10pct/first_10pct": growth.get("last_over_first")}
    res.notes.append("flatness = mean duration of the last 10% of the full-size micro-batches / the first 10% "
                     "(the first full batch left out: JVM warm-up); durations from ops.stream_progress")
    return res.finish()
