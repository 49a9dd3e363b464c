"""Run the benchmark scenarios on an isolated stack and write JSON, Markdown and PNG results.

``run_benchmarks(size, scenarios)`` starts its own metastore + Kafka (temp data folder, free ports),
runs the selected scenarios one after another with one Spark session for fills and checks (those in
``OWN_STACK`` each on a fresh stack of their own afterwards), stops everything and writes ``benchmarks/results/<stamp>-<size>.{json,md}`` plus charts. A scenario that
raises is recorded as FAILED with the error; a missing dependency is recorded as skipped.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import platform
import subprocess
import time
import traceback
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from benchmarks.report import write_report
from benchmarks.result import ScenarioResult
from benchmarks.results_table import write_readme
from benchmarks.run_context import cpu_probe, effective_settings
from benchmarks.sizes import SIZES
from benchmarks.stack import isolated_stack
from infra.spark_session import get_spark

RESULTS = Path(__file__).resolve().parent / "results"
SCENARIOS = {1: "s1_catchup", 2: "s2_latency", 3: "s3_batch", 4: "s4_replay", 5: "s5_serving", 6: "s6_flink",
             7: "s7_sustained", 8: "s8_flat_cost", 9: "s9_alerts_flink",
             10: "s10_many_pipelines"}
# scenarios that run on a stack of their own after the others: scenario 8 streams a day-old history that
# must be ahead of the watermark, which the live events of scenarios 2, 5 and 7 have moved to now
OWN_STACK = {8}
NAMES = {1: "Speed-layer catch-up throughput", 2: "End-to-end latency", 3: "Batch full vs incremental vs DuckDB",
         4: "Kappa replay", 5: "Serving queries over JDBC", 6: "Flink peer catch-up", 7: "Sustained rate",
         8: "Flat cost as history grows", 9: "Alerts against Flink MATCH_RECOGNIZE",
         10: "Many pipelines: shared speed host vs one JVM per pipeline"}


def save_json_result(result: dict[str, Any], kind: str) -> Path:
    """A standalone benchmark's result, stamped with its finish time, as ``results/<time>-<kind>.json``."""
    result["finished_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{kind}.json"
    path.write_text(json.dumps(result, indent=2, default=str) + "\n")
    print(f"{kind}: {path}")

    write_readme()
    return path


def save_markdown_table(kind: str, title: str, setting: str, columns: list[str], lines: list[str]) -> Path:
    """A standalone benchmark's rounds as ``results/<time>-<kind>.md``: ``title``, the git commit and
    ``setting``, then a table of ``columns`` whose rows are ``lines`` (already ``| a | b |``)."""
    facts = git_facts()
    text = (f"# {title}\n\ncommit {facts['commit']} (dirty: {facts['dirty']}); {setting}\n\n"
            f"| {' | '.join(columns)} |\n|{'---|' * len(columns)}\n" + "\n".join(lines) + "\n")
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{kind}.md"
    path.write_text(text)
    print(f"{kind}: wrote {path}")
    return path


def machine_facts() -> dict[str, Any]:
    mem_kb = next((int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                   if line.startswith("MemTotal")), 0)
    versions: dict[str, str | None] = {}
    for pkg in ("pyspark", "delta-spark", "kafka-python", "duckdb", "matplotlib"):
        try:
            versions[pkg] = version(pkg)
        except PackageNotFoundError:
            versions[pkg] = None
    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr.splitlines()[:1]
    kafka_jars = sorted(p.name for p in (RESULTS.parent.parent / ".cache" / "jars" / "kafka").glob("kafka-clients-*"))
    return {"cores": os.cpu_count(), "memory_gib": round(mem_kb / 1024 / 1024, 1), "load_avg_at_start": os.getloadavg(),
            "python": platform.python_version(), "platform": platform.platform(), "java": java[0] if java else None,
            "kafka_clients": kafka_jars[0] if kafka_jars else None, "versions": versions, "cpu_probe": cpu_probe()}


def run_scenario(number: int, context: dict[str, Any]) -> ScenarioResult:
    started = time.monotonic()
    try:
        module = importlib.import_module(f"benchmarks.{SCENARIOS[number]}")
        work = context["work"] / f"s{number}"
        work.mkdir(parents=True, exist_ok=True)
        result: ScenarioResult = module.run(context["spark"], context["cfg"], context["sizes"], work, context)
    except Exception as exc:  # a crash is a failed benchmark, recorded with its cause
        result = ScenarioResult(number, NAMES[number]).fail(f"{type(exc).__name__}: {exc}")
        result.notes.append(traceback.format_exc(limit=4)[-1500:])
    result.seconds = round(time.monotonic() - started, 1)
    context["results"][number] = result
    print(f"bench: scenario {number} {result.status} in {result.seconds:.0f} s "
          f"{json.dumps(result.ratios)} {'; '.join(result.notes[:1])[:200]}", flush=True)
    return result


def git_facts() -> dict[str, Any]:
    """The commit measured, and whether the working tree differed from it."""
    def git(*args: str) -> str:
        out = subprocess.run(["git", *args], cwd=RESULTS.parent.parent, capture_output=True, text=True)
        return out.stdout.strip() if out.returncode == 0 else ""

    return {"commit": git("rev-parse", "HEAD") or None, "dirty": bool(git("status", "--porcelain", "--", ".", ":!benchmarks/results"))}


def run_benchmarks(size: str = "full", scenarios: list[int] | None = None, write: bool = True,
                   keep_data: bool = False, batch_events: int | None = None,
                   many_modes: tuple[str, ...] | None = None) -> dict[str, Any]:
    """``batch_events``: scenario 3's bronze size instead of the size's (incremental against full as
    history grows); the result's name then ends in ``-bronze<N>``. ``many_modes``: scenario 10's modes
    instead of the size's; the name then ends in ``-<mode>-<mode>...``. A run that is not quick refreshes the
    results table in benchmarks/README.md (``benchmarks.results_table``)."""
    sizes = SIZES[size] if batch_events is None else dataclasses.replace(SIZES[size], batch_events=batch_events)
    sizes = sizes if many_modes is None else dataclasses.replace(sizes, many_modes=many_modes)
    chosen = sorted(scenarios or SCENARIOS)
    started_at = datetime.now(UTC)
    run: dict[str, Any] = {"started_at": started_at.isoformat(timespec="seconds"), "size": sizes.as_dict(),
                           "scenarios_requested": chosen, "machine": machine_facts(), "git": git_facts()}
    results: dict[int, ScenarioResult] = {}
    shared = [n for n in chosen if n not in OWN_STACK]
    for group in [shared, *([n] for n in chosen if n in OWN_STACK)]:
        if not group:
            continue
        with isolated_stack(keep=keep_data) as cfg:
            run.setdefault("settings", effective_settings(cfg))
            spark = get_spark(cfg, "tidewater-bench")
            context: dict[str, Any] = {"cfg": cfg, "spark": spark, "sizes": sizes, "results": results,
                                       "work": cfg.data_dir / "bench"}
            try:
                for number in group:
                    run_scenario(number, context)
            finally:
                spark.stop()
    run["finished_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    run["cpu_probe_at_end"] = cpu_probe()
    run["results"] = [results[n].as_dict() for n in chosen]
    run["ok"] = all(r["status"] != "FAILED" for r in run["results"])
    if write:
        stem = (f"{started_at:%Y%m%dT%H%M%SZ}-{size}" + (f"-bronze{batch_events}" if batch_events else "")
                + "".join(f"-{mode}" for mode in many_modes or ()))
        run["files"] = write_report(run, RESULTS, stem)
        if size != "quick":
            write_readme()
    return run
