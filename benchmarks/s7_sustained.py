"""Scenario 7: a sustained rate (the size's rate, 20,000 events/s at full size, for 10 minutes, consumer lag bounded).

The speed job runs as ``tidewater speed start`` would run it; a paced producer (scenario 2's) sends
``rate`` events/s for ``seconds``; a sampler records, every ``SAMPLE_S``, the consumer lag: records in
the topic (Kafka's end offsets) minus the offsets the speed job's checkpoint has committed. After a
warm-up (the first minute, or the first third of a shorter run) the lag must not grow: over the rest of
the run, the least-squares slope of lag over time times its length must stay below what the rate
brings in ``max(10 s, 2 micro-batches)`` (the saw-tooth of a job that keeps up: each micro-batch
drains what arrived during the previous one). A job that cannot keep up grows its lag by the rate
minus its capacity every second, which over 9 minutes exceeds that bound by far. Every event must be in the speed
view at the end, and the micro-batch durations of the last 10% are compared with the first 10%.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.paced_producer import produce
from benchmarks.progress import speed_batches
from benchmarks.result import ScenarioResult
from benchmarks.s1_catchup import PIPELINE
from benchmarks.s2_latency import _require_running
from benchmarks.sizes import Sizes
from lakehouse import naming
from lakehouse.config import TidewaterConfig
from lakehouse.pipeline import load_pipeline
from spark_jobs.io import lineage
from spark_jobs.io.kafka_admin import ensure_topic, offsets
from spark_jobs.speed.control import start_speed, stop_speed

SAMPLE_S = 2.0


def consumer_lag(cfg: TidewaterConfig, topic: str) -> int:
    ends = {str(part): end for part, (_, end) in offsets(cfg, topic).items()}
    done = lineage.last_committed_offsets(naming.checkpoint_dir(cfg, PIPELINE, "stream", 1), topic) or {}
    return sum(end - int(done.get(part, 0)) for part, end in ends.items())


def slope(points: list[tuple[float, int]]) -> float:
    """Least-squares slope (records/s) of lag over time."""
    n = len(points)
    if n < 2:
        return 0.0
    mt, ml = sum(t for t, _ in points) / n, sum(v for _, v in points) / n
    var = sum((t - mt) ** 2 for t, _ in points)
    return sum((t - mt) * (v - ml) for t, v in points) / var if var else 0.0


def batch_durations(cfg: TidewaterConfig, since: float, until: float) -> list[float]:
    lo, hi = (datetime.fromtimestamp(t, UTC).replace(tzinfo=None) for t in (since, until))
    return [seconds for at, seconds, rows in speed_batches(cfg, PIPELINE, lo) if rows and at <= hi]


def run(spark: Any, cfg: TidewaterConfig, sizes: Sizes, work: Path, context: dict[str, Any]) -> ScenarioResult:
    res = ScenarioResult(7, "Sustained rate")
    p = load_pipeline(PIPELINE, cfg.pipelines)
    ensure_topic(cfg, p.topic)
    rate, seconds = sizes.sustained_rate, sizes.sustained_seconds
    warm_up = min(60.0, seconds / 3)
    res.settings = {"rate": rate, "seconds": seconds, "warm_up_s": warm_up, "sample_s": SAMPLE_S,
                    "trigger": f"processingTime {cfg.spark.trigger_seconds} s",
                    "maxOffsetsPerTrigger": cfg.spark.max_offsets_per_trigger}
    samples: list[tuple[float, int]] = []
    stop = threading.Event()

    def _sample() -> None:
        while not stop.wait(SAMPLE_S):
            samples.append((time.time(), consumer_lag(cfg, p.topic)))

    prefix = f"sus{rate}-s-"
    try:
        start_speed(cfg, p, 1)
        deadline = time.time() + 900
        while consumer_lag(cfg, p.topic) > 0 and time.time() < deadline:  # earlier scenarios' records first
            _require_running(cfg)
            time.sleep(2)
        sampler = threading.Thread(target=_sample, daemon=True)
        t0 = time.time()
        sampler.start()
        chunks, _ = produce(cfg, p.topic, rate, seconds, prefix)
        produced_s = time.time() - t0
        stop.set()
        sampler.join(timeout=30)
        deadline = time.time() + max(300.0, chunks[-1][0] / 1000)
        while consumer_lag(cfg, p.topic) > 0 and time.time() < deadline:
            time.sleep(1)
        drained_s = time.time() - t0 - produced_s
    finally:
        stop_speed(cfg, p)
    total = chunks[-1][0]
    steady = [(t - t0, lag) for t, lag in samples if t - t0 >= warm_up]
    growth = slope(steady)
    durations = batch_durations(cfg, t0, t0 + produced_s)
    k = max(1, len(durations) // 10)
    m = res.metrics[f"rate_{rate}"] = {"events": total, "achieved_rate": round(total / produced_s), "lag_samples": len(samples),
                   "lag_max": max((v for _, v in samples), default=None),
                   "lag_max_after_warm_up": max((v for _, v in steady), default=None),
                   "lag_slope_per_s": round(growth, 1), "drain_after_produce_s": round(drained_s, 1),
                   "micro_batches": len(durations),
                   "batch_first_10pct_s": round(sum(durations[:k]) / k, 2) if durations else None,
                   "batch_last_10pct_s": round(sum(durations[-k:]) / k, 2) if durations else None,
                   "lag_series": [(round(t, 1), v) for t, v in ((t - t0, v) for t, v in samples)]}
    res.check("the producer reached >= 95% of the asked rate", f">= {0.95 * rate:,.0f}/s",
              m["achieved_rate"], m["achieved_rate"] >= 0.95 * rate)
    window = (steady[-1][0] - steady[0][0]) if len(steady) > 1 else 0.0
    mean_batch = sum(durations) / len(durations) if durations else 0.0
    allowed = rate * max(10.0, 2 * mean_batch)
    m["lag_growth_after_warm_up"] = round(growth * window)
    m["lag_growth_allowed"] = round(allowed)
    if sizes.name == "quick":  # a slope over ~13 s of a few micro-batches is noise, not a trend
        res.notes.append(f"lag growth {m['lag_growth_after_warm_up']:,} records (bound {allowed:,.0f}) recorded,"
                         " not judged at the quick size")
    else:
        res.check("lag bounded after the warm-up (growth over the run < the rate x max(10 s, 2 micro-batches))",
                  f"< {allowed:,.0f} records", round(growth * window), growth * window < allowed)
    visible = spark.sql(f"SELECT sum(event_count) FROM {naming.speed_table(PIPELINE)} "
                        f"WHERE sensor_id LIKE '{prefix}%'").collect()[0][0]
    res.check("every produced event in the speed view", total, int(visible or 0))
    res.notes.append("lag = topic end offsets - offsets committed by the speed job's checkpoint, sampled every "
                     f"{SAMPLE_S} s; growth = least-squares slope over the samples after the warm-up x their span")
    return res.finish()
