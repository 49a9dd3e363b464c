"""One mode of scenario 10: start its pipelines, feed them, measure latency, load and micro-batches, check.

Per pipeline: ``sizes.many_seconds`` of unmeasured load (the JIT compiler settles), then as many seconds
measured; latency = the instant the Delta commit that makes the event visible in the speed table was
written - its send time (scenario 2's definition: ``benchmarks.commit_latency``; a session table's MERGEs
are read with Spark, ``many_pipelines.session_commits``). The measured window runs from the measured
feed's start until every pipeline caught up: over it, the speed layer's and the machine's busy cores
(``benchmarks.speed_layer_load``) and each pipeline's micro-batches (``benchmarks.micro_batch_demand``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from benchmarks.commit_latency import latest_version, visible_by_commit
from benchmarks.many_pipelines import copies, session_commits
from benchmarks.micro_batch_demand import COLUMNS, mode_demand, pipeline_figures, reason_note
from benchmarks.paced_producer import produce
from benchmarks.result import ScenarioResult
from benchmarks.s2_latency import percentiles
from benchmarks.sizes import Sizes
from benchmarks.speed_layer_load import LoadSampler, busy_cores
from lakehouse import contracts
from lakehouse.config import TidewaterConfig
from lakehouse.pipeline import Pipeline, load_pipeline
from spark_jobs.io.kafka_admin import ensure_topic
from spark_jobs.io.ops_reader import rows_of, table_path
from spark_jobs.speed.control import speed_process, start_speed, stop_all_speed, wait_caught_up
from spark_jobs.speed.host_control import host_process, uses_host

GOAL_P99_S = 3.0
GOAL_RSS_GIB = 3.0


def speed_pids(cfg: TidewaterConfig, pipelines: list[Pipeline]) -> list[int]:
    procs = [host_process(cfg)] if uses_host(cfg, None) else [speed_process(cfg, p) for p in pipelines]
    return [pid for pid in (proc.pid() for proc in procs) if pid]


def feed(cfg: TidewaterConfig, pipelines: list[Pipeline], rate: int, seconds: int, prefix: str) -> dict[str, Any]:
    """Every pipeline's producer at once, each on a thread: pipeline -> (chunks, windows) or the error."""
    out: dict[str, Any] = {}

    def _one(p: Pipeline) -> None:
        try:
            out[p.name] = produce(cfg, p.topic, rate, seconds, f"{prefix}{p.name}-")
        except Exception as exc:
            out[p.name] = exc

    threads = [threading.Thread(target=_one, args=(p,), daemon=True) for p in pipelines]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    failed = {name: r for name, r in out.items() if isinstance(r, Exception)}
    if failed:
        raise RuntimeError(f"scenario 10: producers failed: {failed}")
    return out


def visible(spark: Any, cfg: TidewaterConfig, p: Pipeline, before: int, prefix: str) -> list[tuple[float, int]]:
    """(commit instant, events visible) of ``p``'s speed table after version ``before``."""
    table = table_path(cfg, contracts.storage_table(p))
    if p.window.type != "session":
        return [(t, n // copies(p)) for t, n in visible_by_commit(table, before, prefix)]
    return session_commits(spark, table, before, prefix)


def measure_mode(spark: Any, cfg: TidewaterConfig, sizes: Sizes, names: list[str], res: ScenarioResult, mode: str,
                 other_roots: Callable[[], list[int]] = list, while_running: Callable[[], object] = list) -> dict[str, Any]:
    """``names``' pipelines in ``cfg``'s speed layer; ``other_roots``: more processes of that speed layer
    (a cluster's master and workers), counted in its RSS and CPU; ``while_running``: a check made once
    every pipeline caught up, before the speed layer stops."""
    pipelines = [load_pipeline(name, cfg.pipelines) for name in names]
    for p in pipelines:
        ensure_topic(cfg, p.topic)
    out: dict[str, Any] = {"pipelines": {}}
    started = time.monotonic()
    try:
        for p in pipelines:
            start_speed(cfg, p, 1, wait=600)
        out["start_all_s"] = round(time.monotonic() - started, 1)
        sampler = LoadSampler(lambda: [*speed_pids(cfg, pipelines), *other_roots()])
        feed(cfg, pipelines, sizes.many_rate, sizes.many_seconds, "warm-")  # unmeasured: the JITs settle
        before = {p.name: latest_version(table_path(cfg, contracts.storage_table(p))) for p in pipelines}
        first, window_start = sampler.mark(), datetime.now(UTC)
        sent = feed(cfg, pipelines, sizes.many_rate, sizes.many_seconds, "lat-")
        caught_up = {p.name: wait_caught_up(cfg, p, timeout=max(180.0, sizes.many_seconds * 3.0), job_must_run=True)
                     for p in pipelines}
        last, window_end = sampler.mark(), datetime.now(UTC)
        while_running()
        out["rss"] = sampler.stop()
        out["load"] = busy_cores(first, last)
    finally:
        stop_all_speed(cfg)  # a graceful stop: the last micro-batches' ops.stream_progress rows are written
    progress = rows_of(table_path(cfg, contracts.STREAM_PROGRESS.name), COLUMNS, utc=True)
    for p in pipelines:
        chunks, windows = sent[p.name]
        commits = visible(spark, cfg, p, before[p.name], f"lat-{p.name}-")
        events, seconds = chunks[-1][0], chunks[-1][1] - chunks[0][1]
        achieved = round(events / max(seconds, 1e-3))
        out["pipelines"][p.name] = {"kind": p.window.type, "events": events, "achieved_rate": achieved,
                                    "caught_up": caught_up[p.name], **percentiles(chunks, commits),
                                    "commits": len(commits), "visible_at_end": commits[-1][1] if commits else 0,
                                    "micro_batches": pipeline_figures(progress, p, window_start, window_end)}
        res.check(f"{mode} {p.name}: the producer reached >= 95% of {sizes.many_rate}/s", f">= {0.95 * sizes.many_rate:.0f}",
                  achieved, achieved >= 0.95 * sizes.many_rate)
        res.check(f"{mode} {p.name}: every produced event visible in the speed table", events,
                  out["pipelines"][p.name]["visible_at_end"])
        counted = spark.sql(f"SELECT sum(event_count) FROM {contracts.speed(p).name} "
                            f"WHERE sensor_id LIKE 'lat-{p.name}-%'").collect()[0][0]
        res.check(f"{mode} {p.name}: sum(event_count) = events x windows per event", events * copies(p), int(counted or 0))
    out["demand"] = mode_demand({n: m["micro_batches"] for n, m in out["pipelines"].items()})
    out["reason"] = reason_note(mode, out["load"], out["demand"], len(pipelines))
    p99s = [m["p99_s"] for m in out["pipelines"].values() if m["p99_s"] is not None]
    out["worst_p99_s"] = max(p99s) if len(p99s) == len(pipelines) else None
    out["goal_p99_met"] = out["worst_p99_s"] is not None and out["worst_p99_s"] <= GOAL_P99_S
    out["goal_rss_met"] = out["rss"]["peak_gib"] <= GOAL_RSS_GIB
    return out
