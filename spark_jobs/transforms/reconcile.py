"""Speed vs batch, per finalized window and aggregate, with the causes of every difference.

``ledger_rows(p, batch_rows, speed_rows, raw_bronze, quarantine)`` returns one row per window and
aggregate (the ``ops.reconciliation`` contract minus run id / time):

* ``speed_value`` / ``batch_value`` (doubles), ``abs_error``, ``rel_error`` (abs / |batch|), ``exact``
  (both present and equal within 1e-9 relative; a window the speed layer never emitted is not exact);
* ``late_events``: events of the window that the speed count misses (batch count - speed count,
  never negative) - they arrived after the speed layer's watermark had passed the window;
* ``duplicates_removed``: bronze rows of the window minus distinct event ids;
* ``quarantined``: quarantined records whose key and timestamp are parseable and fall in the window.

``summarize(rows)`` is plain Python over ledger rows (latest run per window): share of windows where
the speed layer was exact; per aggregate the windows where it differs (a missing speed value or a
NaN is a difference) and its largest absolute and relative error; and cause totals.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from lakehouse.contracts import DOUBLE_TOLERANCE
from lakehouse.pipeline import Pipeline
from spark_jobs.transforms.windows import event_in_window, window_column

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

COUNTING = ("count", "approx_distinct")


def window_event_counts(p: Pipeline, events: DataFrame, windows: DataFrame, prefix: str) -> DataFrame:
    """Per window of ``windows``: ``<prefix>_rows`` and ``<prefix>_ids`` (distinct event ids)."""
    from pyspark.sql import functions as F

    grain = list(p.grain)
    if p.window.type == "session":
        w, e = windows.select(*grain).alias("w"), events.alias("e")
        placed = w.join(e, event_in_window(p, "w", "e")).select(*(F.col(f"w.{c}").alias(c) for c in grain), F.col(f"e.{p.event_id}").alias("_id"))
    else:
        placed = (events.select(*p.keys, window_column(p).alias("w"), F.col(p.event_id).alias("_id"))
                  .select(*p.keys, F.col("w.start").alias("window_start"), F.col("w.end").alias("window_end"), "_id")
                  .join(windows.select(*grain), grain, "left_semi"))
    return placed.groupBy(*grain).agg(F.count(F.lit(1)).alias(f"{prefix}_rows"),
                                      F.count_distinct("_id").alias(f"{prefix}_ids"))


def quarantined_events(p: Pipeline, quarantine: DataFrame) -> DataFrame:
    """Quarantined records whose keys and event time can still be read from the raw value."""
    from pyspark.sql import functions as F

    cols = [F.get_json_object("raw_value", f"$.{k}").alias(k) for k in p.keys]
    ts = F.get_json_object("raw_value", f"$.{p.event_time}").try_cast("bigint")
    out = quarantine.select(*cols, F.timestamp_millis(ts).alias("event_time"),
                            F.concat_ws(":", "kafka_partition", "kafka_offset").alias(p.event_id))
    usable = F.col("event_time").isNotNull()
    for k in p.keys:
        usable = usable & F.col(k).isNotNull()
    return out.where(usable)


def ledger_rows(p: Pipeline, batch_rows: DataFrame, speed_rows: DataFrame, raw_bronze: DataFrame,
                quarantine: DataFrame) -> DataFrame:
    from pyspark.sql import functions as F

    grain = list(p.grain)
    aggs = [a.name for a in p.aggregates]
    b = batch_rows.select(*grain, *(F.col(a).cast("double").alias(f"b_{a}") for a in aggs))
    s = speed_rows.select(*grain, *(F.col(a).cast("double").alias(f"s_{a}") for a in aggs))
    joined = (b.join(s, grain, "left")
              .join(window_event_counts(p, raw_bronze, b, "bronze"), grain, "left")
              .join(window_event_counts(p, quarantined_events(p, quarantine), b, "q"), grain, "left"))
    count_agg = next((a.name for a in p.aggregates if a.fn == "count"), None)
    late = (F.greatest(F.lit(0.0), F.col(f"b_{count_agg}") - F.coalesce(F.col(f"s_{count_agg}"), F.lit(0.0)))
            .cast("bigint") if count_agg else F.lit(None).cast("bigint"))
    per_agg = []
    for agg in p.aggregates:
        bv, sv = F.col(f"b_{agg.name}"), F.col(f"s_{agg.name}")
        sv_or_zero = F.coalesce(sv, F.lit(0.0)) if agg.fn in COUNTING else sv
        err = F.abs(bv - sv_or_zero)
        per_agg.append(F.struct(
            F.lit(agg.name).alias("aggregate"), sv.alias("speed_value"), bv.alias("batch_value"),
            err.alias("abs_error"),
            F.when(bv != 0, err / F.abs(bv)).alias("rel_error"),
            F.coalesce(sv.isNotNull() & (err <= F.lit(DOUBLE_TOLERANCE) * F.greatest(F.lit(1.0), F.abs(bv))),
                       F.lit(False)).alias("exact"),
        ))
    return joined.select(
        F.to_json(F.struct(*p.keys)).alias("window_key"), "window_start", "window_end",
        late.alias("late_events"),
        (F.coalesce(F.col("bronze_rows"), F.lit(0)) - F.coalesce(F.col("bronze_ids"), F.lit(0))).alias("duplicates_removed"),
        F.coalesce(F.col("q_rows"), F.lit(0)).cast("bigint").alias("quarantined"),
        F.explode(F.array(*per_agg)).alias("a"),
    ).select("window_key", "window_start", "window_end", "a.*", "late_events", "duplicates_removed", "quarantined")


def latest_per_window(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Keep, for every (window, aggregate), the row of the most recent run."""
    best: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row in rows:
        key = (row["window_key"], row["window_start"], row["window_end"], row["aggregate"])
        if key not in best or (row["recorded_at"], row["run_id"]) > (best[key]["recorded_at"], best[key]["run_id"]):
            best[key] = row
    return list(best.values())


def _worse(current: float, value: float | None) -> float:
    """The larger error; NaN (a NaN on either side) wins, a missing value (None) does not count."""
    if value is None or math.isnan(current):
        return current
    return value if math.isnan(value) or value > current else current


def summarize(rows: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Share of exact windows, and per aggregate: windows where it differs (``windows_differing``,
    of which ``missing_in_speed`` had no speed value) and the largest errors (over latest rows)."""
    latest = latest_per_window(rows)
    windows: dict[tuple[Any, ...], dict[str, Any]] = {}
    errors: dict[str, dict[str, Any]] = {}
    for row in latest:
        key = (row["window_key"], row["window_start"], row["window_end"])
        w = windows.setdefault(key, {"exact": True, "late": row["late_events"] or 0,
                                     "dups": row["duplicates_removed"] or 0, "quarantined": row["quarantined"] or 0})
        w["exact"] = w["exact"] and bool(row["exact"])
        e = errors.setdefault(row["aggregate"], {"windows_differing": 0, "missing_in_speed": 0,
                                                 "max_abs_error": 0.0, "max_rel_error": 0.0})
        if not row["exact"]:
            e["windows_differing"] += 1
            e["missing_in_speed"] += row["speed_value"] is None
        e["max_abs_error"] = _worse(e["max_abs_error"], row["abs_error"])
        e["max_rel_error"] = _worse(e["max_rel_error"], row["rel_error"])
    n = len(windows)
    causes = {name: {"events": sum(w[k] for w in windows.values()), "windows": sum(1 for w in windows.values() if w[k])}
              for name, k in (("late_events", "late"), ("duplicates_removed", "dups"), ("quarantined", "quarantined"))}
    return {"windows": n, "exact_windows": sum(1 for w in windows.values() if w["exact"]),
            "exact_share": (sum(1 for w in windows.values() if w["exact"]) / n) if n else None,
            "errors": errors, "causes": causes}


def format_summary(pipeline: str, s: dict[str, Any]) -> str:
    """Every aggregate gets a row: in how many windows it differs from batch, and by how much."""
    if not s["windows"]:
        return f"reconcile {pipeline}: no finalized windows yet (run 'tidewater batch {pipeline}' first)"
    lines = [f"reconcile {pipeline}: {s['windows']} finalized windows; speed layer exact in "
             f"{s['exact_windows']} ({100 * s['exact_share']:.1f}%)"]
    if not any(e["windows_differing"] for e in s["errors"].values()):
        lines.append(f"  all aggregates exact: {', '.join(s['errors'])}")
    else:
        lines.append(f"  {'aggregate':<20} {'windows differing':>17} {'max abs error':>14} {'max rel error':>14}")
        for agg, e in sorted(s["errors"].items(), key=lambda item: -item[1]["windows_differing"]):
            missing = f"  ({e['missing_in_speed']} missing in speed)" if e["missing_in_speed"] else ""
            lines.append(f"  {agg:<20} {e['windows_differing']:>17} {e['max_abs_error']:>14.6g} "
                         f"{100 * e['max_rel_error']:>13.3f}%{missing}")
    lines.append("  causes:")
    for cause, c in s["causes"].items():
        lines.append(f"    {cause:<20} {c['events']:>8} events in {c['windows']} windows")
    return "\n".join(lines)
