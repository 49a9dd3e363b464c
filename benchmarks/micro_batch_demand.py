"""Scenario 10's micro-batch figures: what each pipeline's queries spent in micro-batches over a window.

From the ``ops.stream_progress`` rows whose micro-batch started in the window. A tumbling or sliding
pipeline runs one ``stream`` query, which records a row per role (``ingest``, ``speed``) with the same
run and micro-batch: counted once. A session pipeline runs an ``ingest`` and a ``speed`` query, each
counted. ``batch_seconds_per_second`` is the time all of a mode's queries spent in micro-batches per
wall second: the number of micro-batches running at once, on average (a query that is never idle adds
1; with a 1 s trigger a query that keeps up adds its median duration at most).
"""

from __future__ import annotations

from datetime import datetime
from statistics import median
from typing import Any

from lakehouse.pipeline import Pipeline
from lakehouse.window_kinds import kind_of

COLUMNS = ["pipeline", "query", "run_id", "batch_id", "batch_time", "input_rows", "batch_duration_ms"]


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def query_batches(rows: list[dict[str, Any]], p: Pipeline, start: datetime, end: datetime) -> dict[str, list[tuple[float, int]]]:
    """query -> (duration s, input rows) of ``p``'s micro-batches that started in [start, end], each once."""
    seen: set[tuple[str, str, int]] = set()
    out: dict[str, list[tuple[float, int]]] = {}
    for r in rows:
        if r["pipeline"] != p.name or r["batch_duration_ms"] is None or r["batch_time"] is None:
            continue
        if not start <= r["batch_time"] <= end:
            continue
        query = r["query"] if kind_of(p.window).keeps_state else "stream"
        key = (query, str(r["run_id"]), int(r["batch_id"]))
        if key not in seen:
            seen.add(key)
            out.setdefault(query, []).append((r["batch_duration_ms"] / 1000.0, int(r["input_rows"] or 0)))
    return out


def pipeline_figures(rows: list[dict[str, Any]], p: Pipeline, start: datetime, end: datetime) -> dict[str, Any]:
    """Per query of ``p``: micro-batches, median and p90 duration, median input rows, and the share of
    the window it spent in micro-batches."""
    window = max((end - start).total_seconds(), 1e-3)
    out: dict[str, Any] = {}
    for query, batches in sorted(query_batches(rows, p, start, end).items()):
        durations = [d for d, _ in batches]
        out[query] = {"micro_batches": len(batches), "median_batch_s": round(median(durations), 2),
                      "p90_batch_s": round(percentile(durations, 0.9), 2),
                      "median_input_rows": int(median(n for _, n in batches)),
                      "busy_share": round(sum(durations) / window, 2)}
    return out


def mode_demand(per_pipeline: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """A mode's queries together: their micro-batch seconds per wall second, the median of the queries'
    median durations and input rows, and the worst query's p90 duration."""
    queries = [q for figures in per_pipeline.values() for q in figures.values()]
    if not queries:
        return {"queries": 0, "batch_seconds_per_second": None}
    return {"queries": len(queries), "batch_seconds_per_second": round(sum(q["busy_share"] for q in queries), 2),
            "median_batch_s": round(median(q["median_batch_s"] for q in queries), 2),
            "p90_batch_s": round(max(q["p90_batch_s"] for q in queries), 2),
            "median_input_rows": int(median(q["median_input_rows"] for q in queries))}


def reason_note(mode: str, load: dict[str, Any], demand: dict[str, Any], pipelines: int) -> str:
    """One line from the figures only: how busy the speed layer and the machine were, how long the
    micro-batches took for how many events, and how many ran at once against the cores."""
    text = (f"{mode}: speed layer busy {load['speed_layer_busy_cores']:.2f} of {load['cores']} cores "
            f"(machine {load['machine_busy_cores']:.2f}) over {load['window_s']:.0f} s")
    if demand.get("batch_seconds_per_second") is None:
        return text + "; no micro-batch recorded in the window"
    return (text + f"; micro-batches median {demand['median_batch_s']:.2f} s (worst query's p90 "
            f"{demand['p90_batch_s']:.2f} s) for {demand['median_input_rows']:,} events each; {pipelines} pipelines' "
            f"{demand['queries']} queries spent {demand['batch_seconds_per_second']:.2f} micro-batch seconds "
            "per second")

