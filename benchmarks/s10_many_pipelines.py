"""Scenario 10: many pipelines on one machine, the shared speed host against one JVM per pipeline.

``sizes.many_pipelines`` pipelines generated from the three shipped window kinds
(``benchmarks.many_pipelines``), each fed ``sizes.many_rate`` events/s by a paced producer of its own,
first with ``speed.host: shared`` (one Spark application, one FAIR pool per pipeline), then with
``per_pipeline`` (one Spark application per pipeline, each with the stack's driver settings: the same
work, not capped). Each mode has pipelines of its own (new topics and tables). Per mode and pipeline:
``sizes.many_seconds`` of unmeasured load (the JIT compiler settles), then as many seconds measured;
latency = the instant the Delta commit that makes the event visible in the speed table was written -
its send time (scenario 2's definition: ``benchmarks.commit_latency``; a session table's MERGEs are
read with Spark, ``many_pipelines.session_commits``). The speed layer's resident memory (every speed
process and its JVM) is sampled every ``RSS_EVERY_S``. Goals: p99 <= 3 s for every pipeline, total RSS
<= 3 GiB. Checks: every producer reached 95% of its rate, every event visible, and each pipeline's
``sum(event_count)`` in its speed table equals the events sent times the windows each falls in.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks.commit_latency import latest_version, visible_by_commit
from benchmarks.many_pipelines import copies, definitions, session_commits, tree_rss_bytes, write_folder
from benchmarks.paced_producer import produce
from benchmarks.result import ScenarioResult, ratio
from benchmarks.s2_latency import percentiles
from benchmarks.sizes import Sizes
from lakehouse import contracts
from lakehouse.config import TidewaterConfig
from lakehouse.config_model import SpeedConfig
from lakehouse.pipeline import PIPELINES_DIR, PIPELINES_DIR_ENV, Pipeline, load_pipeline
from spark_jobs.io.kafka_admin import ensure_topic
from spark_jobs.io.ops_reader import table_path
from spark_jobs.speed.control import speed_process, start_speed, stop_all_speed, wait_caught_up
from spark_jobs.speed.host_control import host_process, uses_host

MODES = {"shared": "host", "per_pipeline": "jvm"}  # mode -> its pipelines' name prefix
RSS_EVERY_S = 2.0
GOAL_P99_S = 3.0
GOAL_RSS_GIB = 3.0
GIB = 1024**3


def speed_pids(cfg: TidewaterConfig, pipelines: list[Pipeline]) -> list[int]:
    procs = [host_process(cfg)] if uses_host(cfg, None) else [speed_process(cfg, p) for p in pipelines]
    return [pid for pid in (proc.pid() for proc in procs) if pid]


class RssSampler:
    """The speed layer's total resident memory every ``RSS_EVERY_S`` on a thread: its peak and samples."""

    def __init__(self, cfg: TidewaterConfig, pipelines: list[Pipeline]) -> None:
        self.cfg, self.pipelines = cfg, pipelines
        self.samples: list[int] = []
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stopping.wait(RSS_EVERY_S):
            self.samples.append(sum(tree_rss_bytes(pid) for pid in speed_pids(self.cfg, self.pipelines)))

    def stop(self) -> dict[str, Any]:
        self.stopping.set()
        self.thread.join(timeout=30)
        peak = max(self.samples, default=0)
        return {"peak_gib": round(peak / GIB, 2), "median_gib": round(sorted(self.samples)[len(self.samples) // 2] / GIB, 2)
                if self.samples else None, "samples": len(self.samples)}


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


def measure_mode(spark: Any, cfg: TidewaterConfig, sizes: Sizes, names: list[str], res: ScenarioResult) -> dict[str, Any]:
    mode = cfg.speed.host
    pipelines = [load_pipeline(name, cfg.pipelines) for name in names]
    for p in pipelines:
        ensure_topic(cfg, p.topic)
    out: dict[str, Any] = {"pipelines": {}}
    started = time.monotonic()
    try:
        for p in pipelines:
            start_speed(cfg, p, 1, wait=600)
        out["start_all_s"] = round(time.monotonic() - started, 1)
        sampler = RssSampler(cfg, pipelines)
        feed(cfg, pipelines, sizes.many_rate, sizes.many_seconds, "warm-")  # unmeasured: the JITs settle
        before = {p.name: latest_version(table_path(cfg, contracts.storage_table(p))) for p in pipelines}
        sent = feed(cfg, pipelines, sizes.many_rate, sizes.many_seconds, "lat-")
        caught_up = {p.name: wait_caught_up(cfg, p, timeout=max(180.0, sizes.many_seconds * 3.0), job_must_run=True)
                     for p in pipelines}
        out["rss"] = sampler.stop()
    finally:
        stop_all_speed(cfg)
    for p in pipelines:
        chunks, windows = sent[p.name]
        commits = visible(spark, cfg, p, before[p.name], f"lat-{p.name}-")
        events, seconds = chunks[-1][0], chunks[-1][1] - chunks[0][1]
        achieved = round(events / max(seconds, 1e-3))
        out["pipelines"][p.name] = {"kind": p.window.type, "events": events, "achieved_rate": achieved,
                                    "caught_up": caught_up[p.name], **percentiles(chunks, commits),
                                    "commits": len(commits), "visible_at_end": commits[-1][1] if commits else 0}
        res.check(f"{mode} {p.name}: the producer reached >= 95% of {sizes.many_rate}/s", f">= {0.95 * sizes.many_rate:.0f}",
                  achieved, achieved >= 0.95 * sizes.many_rate)
        res.check(f"{mode} {p.name}: every produced event visible in the speed table", events,
                  out["pipelines"][p.name]["visible_at_end"])
        counted = spark.sql(f"SELECT sum(event_count) FROM {contracts.speed(p).name} "
                            f"WHERE sensor_id LIKE 'lat-{p.name}-%'").collect()[0][0]
        res.check(f"{mode} {p.name}: sum(event_count) = events x windows per event", events * copies(p), int(counted or 0))
    p99s = [m["p99_s"] for m in out["pipelines"].values() if m["p99_s"] is not None]
    out["worst_p99_s"] = max(p99s) if len(p99s) == len(pipelines) else None
    out["goal_p99_met"] = out["worst_p99_s"] is not None and out["worst_p99_s"] <= GOAL_P99_S
    out["goal_rss_met"] = out["rss"]["peak_gib"] <= GOAL_RSS_GIB
    return out


def run(spark: Any, cfg: TidewaterConfig, sizes: Sizes, work: Path, context: dict[str, Any]) -> ScenarioResult:
    res = ScenarioResult(10, "Many pipelines: shared speed host vs one JVM per pipeline")
    res.settings = {"pipelines_per_mode": sizes.many_pipelines, "rate_per_pipeline": sizes.many_rate,
                    "seconds_warm": sizes.many_seconds, "seconds_measured": sizes.many_seconds,
                    "driver_memory": cfg.spark.driver_memory, "trigger": f"processingTime {cfg.spark.trigger_seconds} s",
                    "goals": {"p99_s": GOAL_P99_S, "total_rss_gib": GOAL_RSS_GIB}}
    generated = {mode: definitions(sizes.many_pipelines, prefix) for mode, prefix in MODES.items()}
    folder = write_folder(work / "pipelines", {k: v for g in generated.values() for k, v in g.items()}, PIPELINES_DIR)
    previous = os.environ.get(PIPELINES_DIR_ENV)
    os.environ[PIPELINES_DIR_ENV] = str(folder)  # the speed processes started from here inherit it
    try:
        for mode in MODES:
            mode_cfg = dataclasses.replace(cfg, speed=SpeedConfig(host=mode))
            res.metrics[mode] = measure_mode(spark, mode_cfg, sizes, list(generated[mode]), res)
    finally:
        if previous is None:
            os.environ.pop(PIPELINES_DIR_ENV, None)
        else:
            os.environ[PIPELINES_DIR_ENV] = previous
    shared, own = res.metrics["shared"], res.metrics["per_pipeline"]
    res.ratios = {"worst_p99_shared_vs_per_pipeline": ratio(shared["worst_p99_s"], own["worst_p99_s"]),
                  "peak_rss_shared_vs_per_pipeline": ratio(shared["rss"]["peak_gib"], own["rss"]["peak_gib"]),
                  "start_all_shared_vs_per_pipeline": ratio(shared["start_all_s"], own["start_all_s"])}
    for mode in MODES:
        m = res.metrics[mode]
        res.notes.append(f"{mode}: p99 per pipeline " + ", ".join(f"{n} {v['p99_s']} s" for n, v in m["pipelines"].items())
                         + f"; peak speed-layer RSS {m['rss']['peak_gib']} GiB; all started in {m['start_all_s']} s")
    res.notes.append(f"goals: p99 <= {GOAL_P99_S} s for every pipeline, speed-layer RSS <= {GOAL_RSS_GIB} GiB; met: "
                     + ", ".join(f"{m} p99 {res.metrics[m]['goal_p99_met']} rss {res.metrics[m]['goal_rss_met']}"
                                 for m in MODES))
    return res.finish()
