"""Scenario 10's measured reasons (benchmarks/micro_batch_demand.py, benchmarks/speed_layer_load.py), the
cluster's private configuration (benchmarks/local_cluster.py) and the modes' ratios."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from benchmarks.local_cluster import write_conf
from benchmarks.many_pipelines import definitions
from benchmarks.micro_batch_demand import mode_demand, pipeline_figures, reason_note
from benchmarks.s10_many_pipelines import ratios
from benchmarks.speed_layer_load import Mark, busy_cores, cpu_seconds, machine_busy_seconds, process_tree
from lakehouse.pipeline import Pipeline, parse_pipeline

pytestmark = pytest.mark.unit

T0 = datetime(2026, 12, 7, 4, 0, tzinfo=UTC)


def pipeline(name: str) -> Pipeline:
    return parse_pipeline(definitions(3, "x")[name])


def row(p: str, query: str, run: str, batch: int, second: float, ms: int | None, rows: int) -> dict[str, Any]:
    return {"pipeline": p, "query": query, "run_id": run, "batch_id": batch, "batch_time": T0 + timedelta(seconds=second),
            "input_rows": rows, "batch_duration_ms": ms}


def test_a_stream_query_counts_each_micro_batch_once_and_a_session_pipeline_counts_both_queries() -> None:
    rows = [*(row("x_t0", role, "r1", b, b * 2.0, 1000 + 500 * b, 1000) for b in range(4) for role in ("ingest", "speed")),
            row("x_t0", "speed", "r1", 9, 30.0, 9000, 1000),     # after the window
            row("x_t0", "speed", "r0", 1, 1.0, None, 1000),      # recovered: no duration
            row("x_g2", "ingest", "i1", 0, 0.0, 2000, 800), row("x_g2", "speed", "s1", 0, 0.5, 4000, 800)]
    stream = pipeline_figures(rows, pipeline("x_t0"), T0, T0 + timedelta(seconds=10))
    assert stream == {"stream": {"micro_batches": 4, "median_batch_s": 1.75, "p90_batch_s": 2.5,
                                 "median_input_rows": 1000, "busy_share": 0.7}}
    session = pipeline_figures(rows, pipeline("x_g2"), T0, T0 + timedelta(seconds=10))
    assert {q: (f["micro_batches"], f["busy_share"]) for q, f in session.items()} == {"ingest": (1, 0.2), "speed": (1, 0.4)}
    demand = mode_demand({"x_t0": stream, "x_g2": session})
    assert demand == {"queries": 3, "batch_seconds_per_second": 1.3, "median_batch_s": 2.0, "p90_batch_s": 4.0,
                      "median_input_rows": 800}
    load = {"window_s": 10.0, "speed_layer_busy_cores": 1.5, "machine_busy_cores": 1.9, "cores": 2}
    assert reason_note("shared", load, demand, 2) == (
        "shared: speed layer busy 1.50 of 2 cores (machine 1.90) over 10 s; micro-batches median 2.00 s (worst "
        "query's p90 4.00 s) for 800 events each; 2 pipelines' 3 queries spent 1.30 micro-batch seconds per second")
    assert reason_note("cluster", load, mode_demand({}), 2).endswith("; no micro-batch recorded in the window")


def test_busy_cores_count_a_process_born_in_the_window_from_zero() -> None:
    start = Mark(100.0, {1: 50.0, 2: 10.0}, 1000.0)
    end = Mark(110.0, {1: 58.0, 2: 12.0, 3: 5.0}, 1018.0)
    assert busy_cores(start, end) == {"window_s": 10.0, "speed_layer_busy_cores": 1.5, "machine_busy_cores": 1.8,
                                      "cores": os.cpu_count()}


def test_a_busy_child_is_in_the_tree_and_its_cpu_time_grows() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time\nt = time.time()\nwhile time.time() - t < 3: pass"])
    try:
        time.sleep(0.3)
        assert child.pid in process_tree([os.getpid()])
        machine, first = machine_busy_seconds(), cpu_seconds(child.pid)
        time.sleep(1.0)
        assert cpu_seconds(child.pid) - first >= 0.1  # it spins (on a core shared with other work)
        assert machine_busy_seconds() - machine >= 0.1
    finally:
        child.kill()
        child.wait()
    assert cpu_seconds(child.pid) == 0.0  # gone


def test_the_clusters_secret_is_written_for_this_user_only(tmp_path: Path) -> None:
    secret = write_conf(tmp_path / "conf")
    path = tmp_path / "conf" / "spark-defaults.conf"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    settings = dict(line.split(" ", 1) for line in path.read_text().splitlines())
    assert settings["spark.authenticate"] == "true" and settings["spark.authenticate.secret"] == secret
    assert len(secret) == 64 and write_conf(tmp_path / "other") != secret  # generated, 256 bits


def test_the_ratios_put_each_mode_against_its_baseline() -> None:
    def mode(p99: float, rss: float, start: float) -> dict[str, Any]:
        return {"worst_p99_s": p99, "rss": {"peak_gib": rss}, "start_all_s": start}

    out = ratios({"shared": mode(10.0, 2.0, 30.0), "per_pipeline": mode(20.0, 8.0, 60.0), "cluster": mode(15.0, 4.0, 45.0)})
    assert out == {"worst_p99_shared_vs_per_pipeline": 0.5, "peak_rss_shared_vs_per_pipeline": 0.25,
                   "start_all_shared_vs_per_pipeline": 0.5, "worst_p99_cluster_vs_shared": 1.5,
                   "peak_rss_cluster_vs_shared": 2.0, "start_all_cluster_vs_shared": 1.5}
    assert ratios({"shared": mode(10.0, 2.0, 30.0)}) == {}
