"""``tidewater whatif``: the speed layer's history replayed from bronze under candidate watermark delays.

Bronze keeps every valid record with its event time, its arrival (``kafka_timestamp``, the broker's
LogAppendTime) and the micro-batch that read it (``ingest_time``). ``analyse`` replays, per delay, what the
speed layer would have dropped, which windows it would have got wrong and how long after their end the
windows would have become final (``transforms.watermark_whatif`` states what is modelled), and returns the
report that the command prints, writes as JSON and charts (``whatif_chart``).

Micro-batches (``batches_model``): ``recorded`` takes the micro-batches the speed job really ran (bronze's
``ingest_time``; a session pipeline's speed query runs its own micro-batches beside the ingest query's, on
the same trigger); ``trigger`` models them from arrival time with ``spark.trigger_seconds``: a job that
always keeps up (no backlog, no catch-up after a stop), each micro-batch reading what arrived in the
trigger interval before it.
"""

from __future__ import annotations

from typing import Any

from lakehouse.errors import NothingToDo, TidewaterError
from lakehouse.pipeline import Pipeline
from spark_jobs.analysis.whatif_report import duration_text, suggested
from spark_jobs.transforms import watermark_whatif as ww

BATCH_MODELS = ("recorded", "trigger")


def analyse(spark: Any, p: Pipeline, delays: list[int], target: float, batches_model: str,
            trigger_seconds: int) -> dict[str, Any]:
    """The whatif report of ``p`` (JSON-ready): one row per delay in ``delays`` (seconds), the suggestion.
    ``trigger_seconds``: ``spark.trigger_seconds`` (the interval of ``--batches trigger``; for sessions, which
    micro-batches followed each other without an idle trigger between them)."""
    if batches_model == "trigger" and trigger_seconds <= 0:
        raise TidewaterError("whatif: spark.trigger_seconds is 0 (micro-batches back to back), so --batches trigger "
                             "has no interval to model; use --batches recorded or set spark.trigger_seconds")
    table = p.tables.bronze
    if not spark.catalog.tableExists(table):
        raise NothingToDo(f"whatif: {table} does not exist yet; start the speed job ('tidewater speed start "
                          f"{p.name}') and let it ingest events first")
    events = spark.table(table).select(p.event_id, *p.keys, "event_time", "kafka_timestamp", "kafka_partition",
                                       "kafka_offset", "ingest_time")
    events = (ww.recorded_batches(events) if batches_model == "recorded"
              else events.transform(ww.trigger_batches(trigger_seconds))).persist()
    try:
        delay_rows = spark.createDataFrame([(d * 1000,) for d in delays], "delay_ms bigint")
        rows = [_row(r.asDict()) for r in ww.summary(p, events, delay_rows, trigger_seconds).collect()]
    finally:
        events.unpersist()
    if not rows or rows[0]["events"] == 0:
        raise NothingToDo(f"whatif: {table} holds no events yet; produce some ('tidewater produce {p.name}') "
                          "and let the speed job ingest them")
    return {"pipeline": p.name, "window": p.window.type, "watermark_seconds": p.watermark_seconds,
            "batches_model": batches_model, "trigger_seconds": trigger_seconds,
            "target": target, "events": rows[0]["events"], "delays": rows,
            "suggested_delay_seconds": suggested(rows, target), "notes": _notes(p, delays)}


def _row(r: dict[str, Any]) -> dict[str, Any]:
    events, windows = r["events"], r["windows"]
    missed = r["dropped"] + r["quarantined"]
    return {"delay_seconds": r["delay_ms"] // 1000, "events": events,
            "dropped_events": r["dropped"], "dropped_share": r["dropped"] / events if events else 0.0,
            "quarantined_events": r["quarantined"], "missed_share": missed / events if events else 0.0,
            "windows": windows, "wrong_windows": r["wrong_windows"],
            "wrong_share": r["wrong_windows"] / windows if windows else 0.0,
            "final_windows": r["final_windows"], "open_windows": windows - r["final_windows"],
            "finality_p50_seconds": r["finality_p50_s"], "finality_p95_seconds": r["finality_p95_s"],
            "finality_max_seconds": r["finality_max_s"]}


def _notes(p: Pipeline, delays: list[int]) -> list[str]:
    """The pipeline rules a candidate delay would also change (``lakehouse.pipeline_checks``)."""
    out = []
    if p.allowed_lateness and any(d > p.lateness_seconds for d in delays):
        out.append(f"a delay above allowed_lateness ({p.allowed_lateness}) needs allowed_lateness raised to at "
                   "least that delay (allowed_lateness may not be below the watermark)")
    if any(d < p.future_skew_seconds for d in delays):
        out.append(f"below max_future_skew ({duration_text(p.future_skew_seconds)}) the skew must shrink with the "
                   "delay: events stamped further ahead of their arrival count as quarantined (FUTURE_TIMESTAMP)")
    return out
