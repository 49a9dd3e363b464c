"""Scenario 10: many pipelines on one machine, the shared speed host against one JVM per pipeline and
against the shared host on a Spark standalone cluster.

``sizes.many_pipelines`` pipelines generated from the three shipped window kinds
(``benchmarks.many_pipelines``), each fed ``sizes.many_rate`` events/s by a paced producer of its own, in
the modes of ``sizes.many_modes``, each with pipelines of its own (new topics and tables):

* ``shared``: ``speed.host: shared``, one Spark application with a FAIR pool per pipeline;
* ``per_pipeline``: one Spark application per pipeline, each with the stack's driver settings (the same
  work, not capped);
* ``cluster``: the shared host unchanged, with ``spark.master`` (``TIDEWATER_SPARK_MASTER``) on a local
  standalone cluster of one master and 2 one-core workers (``benchmarks.local_cluster``: authenticated,
  the secret in a 0600 ``spark-defaults.conf`` of a private ``SPARK_CONF_DIR``). Its speed layer is the
  host's driver plus the master, the workers and their executors.

The quick size (CI's) runs ``shared`` alone: the other modes are comparisons, and each would cost CI's quick
run a minute or more (a speed JVM per pipeline is the product's default, which the end-to-end tests run;
``tests/integration/test_standalone_cluster.py`` is CI's proof of the cluster path). Medium and full run
all three; ``python -m benchmarks.bench --quick --scenarios 10 --many-modes shared,cluster`` runs any of
them at quick size.

Per mode (``benchmarks.many_pipelines_mode``): latency from send to the Delta commit that makes each
event visible, the speed layer's peak RSS, and why: the speed layer's and the machine's busy cores over the
measured window and each pipeline's micro-batches (count, median and p90 duration, median input rows,
micro-batch seconds per second), stated in one note line per mode. Goals: p99 <= 3 s for every
pipeline, total RSS <= 3 GiB. Checks: every producer reached 95% of its rate, every event visible,
each pipeline's ``sum(event_count)`` equals the events sent times the windows each falls in, and in the
cluster mode the cluster's secret is on no process's command line.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from benchmarks.local_cluster import standalone_cluster
from benchmarks.many_pipelines import definitions, write_folder
from benchmarks.many_pipelines_mode import GOAL_P99_S, GOAL_RSS_GIB, measure_mode
from benchmarks.result import ScenarioResult, ratio
from benchmarks.sizes import MANY_MODES, Sizes
from infra.process_env import exported
from lakehouse import naming
from lakehouse.config import ENV_OVERRIDES, TidewaterConfig
from lakehouse.config_model import SpeedConfig
from lakehouse.pipeline import PIPELINES_DIR, PIPELINES_DIR_ENV

PREFIXES = dict(zip(MANY_MODES, ("host", "jvm", "clu"), strict=True))  # mode -> its pipelines' name prefix
MASTER_ENV = next(var for var, field in ENV_OVERRIDES.items() if field == "spark.master")  # TIDEWATER_SPARK_MASTER
__all__ = ["GOAL_P99_S", "GOAL_RSS_GIB", "PREFIXES", "run"]


def on_no_command_line(secret: str) -> list[int]:
    """PIDs of this user's processes whose command line holds ``secret`` (none expected)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and secret.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def run_mode(spark: Any, cfg: TidewaterConfig, sizes: Sizes, names: list[str], res: ScenarioResult,
             mode: str, work: Path) -> dict[str, Any]:
    host = "per_pipeline" if mode == "per_pipeline" else "shared"
    mode_cfg = dataclasses.replace(cfg, speed=SpeedConfig(host=host))
    if mode != "cluster":
        return measure_mode(spark, mode_cfg, sizes, names, res, mode)
    cluster_at = (work / "cluster", naming.run_dir(cfg), naming.logs_dir(cfg), cfg.spark.speed_nice)
    with standalone_cluster(*cluster_at) as cluster:
        mode_cfg = dataclasses.replace(mode_cfg, spark=dataclasses.replace(cfg.spark, master=cluster.master_url))
        with exported({**cluster.env, MASTER_ENV: cluster.master_url}):
            out = measure_mode(spark, mode_cfg, sizes, names, res, mode, cluster.pids, lambda: res.check(
                "cluster: while the executors run, the cluster's secret is on no process's command line", [],
                on_no_command_line(cluster.secret)))
    out["master"] = cluster.master_url
    return out


def run(spark: Any, cfg: TidewaterConfig, sizes: Sizes, work: Path, context: dict[str, Any]) -> ScenarioResult:
    res = ScenarioResult(10, "Many pipelines: shared speed host vs one JVM per pipeline")
    modes = list(sizes.many_modes)
    res.settings = {"pipelines_per_mode": sizes.many_pipelines, "rate_per_pipeline": sizes.many_rate,
                    "seconds_warm": sizes.many_seconds, "seconds_measured": sizes.many_seconds, "modes": modes,
                    "driver_memory": cfg.spark.driver_memory, "trigger": f"processingTime {cfg.spark.trigger_seconds} s",
                    "goals": {"p99_s": GOAL_P99_S, "total_rss_gib": GOAL_RSS_GIB}}
    generated = {mode: definitions(sizes.many_pipelines, PREFIXES[mode]) for mode in modes}
    folder = write_folder(work / "pipelines", {k: v for g in generated.values() for k, v in g.items()}, PIPELINES_DIR)
    with exported({PIPELINES_DIR_ENV: str(folder)}):
        for mode in modes:
            res.metrics[mode] = run_mode(spark, cfg, sizes, list(generated[mode]), res, mode, work)
    res.ratios = ratios(res.metrics)
    for mode in modes:
        m = res.metrics[mode]
        res.notes.append(f"{mode}: p99 per pipeline " + ", ".join(f"{n} {v['p99_s']} s" for n, v in m["pipelines"].items())
                         + f"; peak speed-layer RSS {m['rss']['peak_gib']} GiB; all started in {m['start_all_s']} s")
        res.notes.append(f"why, {m['reason']}")
    res.notes.append(f"goals: p99 <= {GOAL_P99_S} s for every pipeline, speed-layer RSS <= {GOAL_RSS_GIB} GiB; met: "
                     + ", ".join(f"{m} p99 {res.metrics[m]['goal_p99_met']} rss {res.metrics[m]['goal_rss_met']}"
                                 for m in modes))
    return res.finish()


RATIOS = (("shared", "per_pipeline"), ("cluster", "shared"))  # (mode, the mode it is divided by)
FIGURES = {"worst_p99": lambda m: m["worst_p99_s"], "peak_rss": lambda m: m["rss"]["peak_gib"],
           "start_all": lambda m: m["start_all_s"]}


def ratios(metrics: dict[str, Any]) -> dict[str, float | None]:
    """``<figure>_<mode>_vs_<other>`` for each pair of ``RATIOS`` that ran."""
    return {f"{figure}_{a}_vs_{b}": ratio(read(metrics[a]), read(metrics[b]))
            for a, b in RATIOS if a in metrics and b in metrics for figure, read in FIGURES.items()}
