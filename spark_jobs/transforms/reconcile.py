"""Speed vs batch, per finalized window and aggregate, with the causes of every difference.

``ledger_rows(p, batch_rows, speed_rows, raw_bronze, quarantine, late_records)`` returns one row per window and
aggregate (the ``ops.reconciliation`` contract minus run id / time):

* ``speed_value`` / ``batch_value`` (doubles), ``abs_error``, ``rel_error`` (abs / |batch|), ``exact``
  (both present and equal within 1e-9 relative; a window the speed layer never emitted is not exact);
* ``late_events``: events of the window that the speed count misses (batch count - speed count,
  never negative) - they arrived after the speed layer's watermark had passed the window;
* ``duplicates_removed``: bronze rows of the window minus distinct event ids;
* ``quarantined``: quarantined records whose key and timestamp are parseable and fall in the window;
* ``late_rows``: the window's rows in ``late.<p>`` (the records the speed layer left out of it as
  behind its watermark, duplicates included: ``late_events`` counts distinct events the speed value
  misses). A fixed window's late records are ``late.<p>`` joined on the keys (``window_key``),
  ``window_start`` and ``window_end``; a session's, those of its keys whose event time is in the session
  (a late row names the session its event would have opened, which the batch session holds).

``summarize(ledger)`` counts, in Spark, over the latest row per window and aggregate: the share of
windows where the speed layer was exact; per aggregate the windows where it differs (a missing speed
value or a NaN is a difference) and its largest absolute and relative error; and cause totals.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lakehouse.contracts import DOUBLE_TOLERANCE
from lakehouse.pipeline import Pipeline
from lakehouse.window_kinds import kind_of
from spark_jobs.transforms.windows import event_in_window, window_column

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

COUNTING = ("count", "approx_distinct")


def window_event_counts(p: Pipeline, events: DataFrame, windows: DataFrame, prefix: str) -> DataFrame:
    """Per window of ``windows``: ``<prefix>_rows`` and ``<prefix>_ids`` (distinct event ids)."""
    from pyspark.sql import functions as F

    grain = list(p.grain)
    if kind_of(p.window).keeps_state:
        w, e = windows.select(*grain).alias("w"), events.alias("e")
        placed = w.join(e, event_in_window(p, "w", "e")).select(*(F.col(f"w.{c}").alias(c) for c in grain), F.col(f"e.{p.event_id}").alias("_id"))
    else:
        placed = (events.select(*p.keys, window_column(p).alias("w"), F.col(p.event_id).alias("_id"))
                  .select(*p.keys, F.col("w.start").alias("window_start"), F.col("w.end").alias("window_end"), "_id")
                  .join(windows.select(*grain), grain, "left_semi"))
    return placed.groupBy(*grain).agg(F.count(F.lit(1)).alias(f"{prefix}_rows"),
                                      F.count_distinct("_id").alias(f"{prefix}_ids"))


def late_row_counts(p: Pipeline, late_records: DataFrame, windows: DataFrame) -> DataFrame:
    """Per window of ``windows``: ``late_rows``, its rows of ``late.<p>`` (``late_records``)."""
    from pyspark.sql import functions as F

    grain = list(p.grain)
    if kind_of(p.window).keeps_state:
        w, e = windows.select(*grain).alias("w"), late_records.alias("e")
        placed = w.join(e, event_in_window(p, "w", "e")).select(*(F.col(f"w.{c}").alias(c) for c in grain))
    else:
        placed = late_records.select(*grain)
    return placed.groupBy(*grain).agg(F.count(F.lit(1)).alias("late_rows"))


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
                quarantine: DataFrame, late_records: DataFrame) -> DataFrame:
    """``late_records``: the active speed version's rows of ``late.<p>``."""
    from pyspark.sql import functions as F

    grain = list(p.grain)
    aggs = [a.name for a in p.aggregates]
    b = batch_rows.select(*grain, *(F.col(a).cast("double").alias(f"b_{a}") for a in aggs))
    late_counts = late_row_counts(p, late_records, b)
    s = speed_rows.select(*grain, *(F.col(a).cast("double").alias(f"s_{a}") for a in aggs))
    joined = (b.join(s, grain, "left")
              .join(window_event_counts(p, raw_bronze, b, "bronze"), grain, "left")
              .join(window_event_counts(p, quarantined_events(p, quarantine), b, "q"), grain, "left")
              .join(late_counts, grain, "left"))
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
        F.coalesce(F.col("late_rows"), F.lit(0)).cast("bigint").alias("late_rows"),
        F.explode(F.array(*per_agg)).alias("a"),
    ).select("window_key", "window_start", "window_end", "a.*", "late_events", "duplicates_removed", "quarantined",
             "late_rows")


WINDOW = ("window_key", "window_start", "window_end")
CAUSES = (("late_events", "late_events"), ("duplicates_removed", "duplicates_removed"), ("quarantined", "quarantined"))


def latest_rows(ledger: DataFrame) -> DataFrame:
    """For every (window, aggregate), the row of the most recent run (``recorded_at``, then ``run_id``)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    latest = Window.partitionBy(*WINDOW, "aggregate").orderBy(F.col("recorded_at").desc(), F.col("run_id").desc())
    return ledger.withColumn("_rn", F.row_number().over(latest)).where("_rn = 1").drop("_rn")


def summarize(ledger: DataFrame) -> dict[str, Any]:
    """Share of exact windows, and per aggregate: windows where it differs (``windows_differing``, of
    which ``missing_in_speed`` had no speed value) and the largest errors, over the latest rows. Spark
    does the counting (a ledger grows by windows x aggregates per run); two small results come back.
    A NaN error is the largest (Spark orders NaN above every number); a missing error does not count."""
    from pyspark.sql import functions as F

    latest = latest_rows(ledger).persist()
    try:
        exact = F.coalesce(F.col("exact"), F.lit(False))
        per_agg = latest.groupBy("aggregate").agg(
            F.count_if(~exact).alias("windows_differing"),
            F.count_if(~exact & F.col("speed_value").isNull()).alias("missing_in_speed"),
            F.coalesce(F.max("abs_error"), F.lit(0.0)).alias("max_abs_error"),
            F.coalesce(F.max("rel_error"), F.lit(0.0)).alias("max_rel_error")).collect()
        windows = latest.groupBy(*WINDOW).agg(
            F.bool_and(exact).alias("exact"),
            *(F.coalesce(F.max(col), F.lit(0)).alias(name) for name, col in CAUSES))
        totals = windows.agg(
            F.count(F.lit(1)).alias("n"), F.count_if("exact").alias("exact_windows"),
            *(F.coalesce(F.sum(name), F.lit(0)).alias(f"{name}_events") for name, _ in CAUSES),
            *(F.count_if(F.col(name) != 0).alias(f"{name}_windows") for name, _ in CAUSES)).collect()[0]
    finally:
        latest.unpersist()
    n = int(totals["n"])
    return {"windows": n, "exact_windows": int(totals["exact_windows"]),
            "exact_share": (int(totals["exact_windows"]) / n) if n else None,
            "errors": {r["aggregate"]: {k: r[k] for k in ("windows_differing", "missing_in_speed", "max_abs_error",
                                                         "max_rel_error")} for r in per_agg},
            "causes": {name: {"events": int(totals[f"{name}_events"]), "windows": int(totals[f"{name}_windows"])}
                       for name, _ in CAUSES}}


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
