"""The latest result of every benchmark goal, as a Markdown table generated from ``benchmarks/results/*.json``.

For each goal the newest result that measured it: full-size runs of ``python -m benchmarks.bench`` (scenarios 1-10),
``python -m benchmarks.dag_run`` and ``python -m benchmarks.soak`` (not ``--quick``: its figures are not judged).
``python -m benchmarks.results_table`` prints the table; ``--write`` puts it into benchmarks/README.md
between the RESULTS-TABLE markers. ``python -m benchmarks.bench`` refreshes it after every run that is not quick.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from benchmarks import goal_readings as readings
from benchmarks import miss_reasons as why
from benchmarks.goal_readings import Reading, Result, missed_because
from benchmarks.s9_alerts_flink import read_latency as alerts_latency
from benchmarks.s9_alerts_flink import read_throughput as alerts_throughput
from benchmarks.s10_many_pipelines import GOAL_P99_S as MANY_P99_S
from benchmarks.s10_many_pipelines import GOAL_RSS_GIB as MANY_RSS_GIB

RESULTS = Path(__file__).resolve().parent / "results"
README = Path(__file__).resolve().parent / "README.md"
START, END = "<!-- RESULTS-TABLE -->", "<!-- /RESULTS-TABLE -->"


@dataclass(frozen=True)
class Goal:
    name: str
    goal: str
    kind: str  # "bench", "dag_run" or "soak": which results hold it
    read: Callable[[Result], Reading | None]
    scenario: int | None = None  # bench goals: the scenario whose result ``read`` gets


GOALS = [
    Goal("1. catch-up, ingest + speed, all tables written", "≥ 30,000 events/s and ≥ 0.9x the same-work script",
         "bench", readings.catch_up, 1),
    Goal("1. catch-up against the minimal Spark job (Kafka to one Delta table)", "≥ 0.8x the minimal job", "bench",
         missed_because(readings.catch_up_minimal, why.catch_up_minimal), 1),
    Goal("2. produce → visible in speed, 1,000 events/s", "p50 ≤ 1 s, p99 ≤ 2 s", "bench",
         missed_because(readings.latency(1000, 1, 2), why.latency(1000)), 2),
    Goal("2. produce → visible in speed, 10,000 events/s", "p99 ≤ 2 s, ≥ 9,500/s sent", "bench",
         missed_because(readings.latency(10000, float("inf"), 2, min_sent=9_500), why.latency(10000)), 2),
    Goal("3. incremental batch run, 1% late windows, warm", "≤ 3 s and ≤ 0.2x the full run", "bench",
         missed_because(readings.incremental, why.incremental), 3),
    Goal("3. reconciliation ledger per incremental round", "≤ 2 s", "bench",
         missed_because(readings.ledger, why.ledger), 3),
    Goal("3. full recompute against a bare PySpark job", "≥ 0.8x the bare job's speed", "bench", readings.full_vs_bare, 3),
    Goal("4. Kappa replay from the Kafka log", "≥ 1.0x catch-up", "bench", missed_because(readings.replay, why.replay), 4),
    Goal("5. JDBC p95 under live load: point query, day scan, 8 clients", "≤ 0.5 s, ≤ 1 s, ≤ 1.5 s", "bench",
         readings.serving, 5),
    Goal("6. catch-up against a Flink SQL peer", "≥ 0.5x Flink", "bench",
         missed_because(readings.flink, why.flink), 6),
    Goal("7. sustained 20,000 events/s for 10 minutes", "consumer lag bounded after the first minute", "bench",
         readings.sustained, 7),
    Goal("8. micro-batch time as history grows, 20M events", "last 10% ≤ 1.2x the first 10%", "bench", readings.flat, 8),
    Goal("9. alerts (hot_then_cold) against Flink MATCH_RECOGNIZE, same backlog", "≥ 0.5x Flink", "bench",
         alerts_throughput, 9),
    Goal("9. alerts: send → alert at 1,000 events/s", "p99 ≤ 2 s (cannot hold: an alert waits for the watermark)",
         "bench", missed_because(alerts_latency, why.alerts_latency), 9),
    Goal("10. many pipelines, 1,000 events/s each, one shared speed host", f"every pipeline's p99 ≤ {MANY_P99_S:g} s, "
         f"speed-layer RSS ≤ {MANY_RSS_GIB:g} GiB", "bench", readings.many("shared"), 10),
    Goal("10. many pipelines, 1,000 events/s each, one speed JVM per pipeline", "(the baseline of the row above)",
         "bench", readings.many("per_pipeline"), 10),
    Goal("10. many pipelines, the shared host on a standalone master + 2 one-core workers",
         "(Tidewater unchanged on a cluster manager)", "bench", readings.many("cluster"), 10),
    Goal("`tidewater_batch` DAG run, 100K-event increment, job service", "≤ 60 s", "dag_run", readings.dag),
    Goal("an empty pipeline's batch run skips", "≤ 5 s", "dag_run", readings.skip),
    Goal("`tidewater sql` small query", "≤ 2 s", "dag_run", readings.sql),
    Goal("chaos soak: 4 components killed (-9), exactly once, serving = oracle, flat", "every check passes", "soak",
         readings.soak),
]


def kind_of(result: Result) -> str | None:
    size = result.get("size")
    if "results" in result and isinstance(size, dict) and size.get("name") == "full":
        return "bench"
    if result.get("benchmark") == "dag_run":
        return "dag_run"
    if "seed" in result and "faults" in result and (result.get("settings") or {}).get("flatness_gates"):
        return "soak"
    return None


def latest(goal: Goal, results: list[tuple[str, Result]]) -> tuple[str, Result, Reading] | None:
    """The newest result (by file name, a UTC stamp first) that measured ``goal``, with its reading."""
    for stem, result in sorted(results, key=lambda pair: pair[0], reverse=True):
        if kind_of(result) != goal.kind:
            continue
        if goal.scenario is None:
            reading = goal.read(result)
        else:
            scenario = next((s for s in result["results"] if s["id"] == goal.scenario), None)
            if scenario is None or scenario["status"] == "skipped":
                continue
            reading = goal.read(scenario)
            if scenario["status"] == "FAILED":
                reading = (reading[0], reading[1], False) if reading else ("", "", False)
        if reading is not None:
            return stem, result, reading
    return None


def table(results: list[tuple[str, Result]]) -> str:
    """The Markdown table: one row per goal, from the newest result that measured it."""
    lines = ["| scenario | goal | measured | ratio | met | commit | date | result |",
             "|---|---|---|---|---|---|---|---|"]
    for goal in GOALS:
        found = latest(goal, results)
        if found is None:
            lines.append(f"| {goal.name} | {goal.goal} | not measured | | | | | |")
            continue
        stem, result, (measured, ratio, met) = found
        git = result.get("git") or {}
        commit = (git.get("commit") or "?")[:7] + (" (uncommitted changes)" if git.get("dirty") else "")
        verdict = "-" if met is None else ("**yes**" if met else "**no**")
        lines.append(f"| {goal.name} | {goal.goal} | {measured} | {ratio} | {verdict} | {commit} | "
                     f"{str(result.get('started_at', ''))[:10]} | `{stem}` |")
    return "\n".join(lines)


def load(folder: Path = RESULTS) -> list[tuple[str, Result]]:
    """Every result as (its name, its JSON): ``<stamp>-<name>.json`` files, and the JSON files in
    ``<stamp>-<name>/`` folders (named after the folder)."""
    out = []
    for path in sorted([*folder.glob("*.json"), *folder.glob("*/*.json")]):
        try:
            result = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(result, dict):
            out.append((path.stem if path.parent == folder else path.parent.name, result))
    return out


def replace_between_markers(text: str, body: str) -> str:
    if START not in text or END not in text:
        raise ValueError(f"no {START} ... {END} markers")
    return text[:text.index(START) + len(START)] + "\n" + body + "\n" + text[text.index(END):]


def write_readme(readme: Path = README, folder: Path = RESULTS) -> None:
    readme.write_text(replace_between_markers(readme.read_text(), table(load(folder))))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"refresh the table in {README.name}")
    args = parser.parse_args(argv)
    if args.write:
        write_readme()
        print(f"results table: {README}")
    else:
        print(table(load()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
