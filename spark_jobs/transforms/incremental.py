"""Which windows an incremental batch run must recompute, as pure DataFrame functions.

Inputs are bronze-shaped, deduplicated events: ``history`` (the ``needed_events`` of the bronze
snapshot) and ``new_events`` (rows added to bronze since the last
published run, late ones included). The cost follows the change, not the history: the job narrows
bronze to ``needed_events`` first (a broadcast join, no shuffle), and deduplicates only those, each
against the copies of its own id anywhere in bronze (``first_copies_among``).

* Tumbling / sliding windows: a window must be recomputed when a new event falls into it, or when
  it became complete since the last run (``old_cutoff < window_end <= new_cutoff``). Events are
  bucketed by the window slide (the size for tumbling windows); a window is exactly the union of
  ``size / slide`` buckets, so joining history on ``(keys, bucket)`` reads only what is needed.
* Session windows: a late event can extend a session or merge two, a displaced copy can split one.
  Per affected key (keys of new or displaced events, and keys with a session still open at the last
  cutoff) the sessions are recomputed over that key's history: those not published with the same
  values are upserted, and the key's published sessions not among them are deleted (``stale_sessions``).
* Tumbling/sliding windows: a published window whose only event a new copy displaced (an earlier
  copy of the same id, with another key or time) is deleted (``stale_published``).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from infra.utc import EPOCH, as_utc
from lakehouse.pipeline import Pipeline
from lakehouse.window_kinds import kind_of
from spark_jobs.transforms.incremental_fold import copies_of
from spark_jobs.transforms.windows import dedup_history, touched_windows, windowed_aggregate

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

BUCKET = "_bucket"


def bucket_seconds(p: Pipeline) -> int:
    """Width of the event buckets: the slide of a sliding window, else the window size."""
    return kind_of(p.window).bucket_seconds(p.window)


def window_ends_between(p: Pipeline, after: datetime, until: datetime) -> bool:
    """Whether a tumbling or sliding window of ``p`` can end in ``(after, until]``: windows start and end on
    whole buckets since the epoch (Spark's ``window``, no start offset), so only if a bucket ends there (pure)."""
    step = timedelta(seconds=bucket_seconds(p))
    return (as_utc(until) - EPOCH) // step > (as_utc(after) - EPOCH) // step


def bucket_of(p: Pipeline, ts: Column) -> Column:
    from pyspark.sql import functions as F

    return F.floor(F.unix_micros(ts) / F.lit(bucket_seconds(p) * 1_000_000)).cast("bigint")


def ts_literal(value: datetime) -> Column:
    from pyspark.sql import functions as F

    return F.lit(value).cast("timestamp")


def window_end(p: Pipeline, alias: str = "") -> Column:
    """End of each result window, as a column the optimizer cannot push below the aggregation.

    A filter on a session window's ``window_end`` is pushed below ``session_window`` and then
    drops the events of long sessions (measured on Spark 4.1: a 40-minute session was cut in
    two). A session ends ``gap`` after its last event, so ``max_event_time + gap`` is used."""
    return kind_of(p.window).end(p.window, f"{alias}." if alias else "")


def window_buckets(p: Pipeline, windows: DataFrame) -> DataFrame:
    """Every ``(keys, bucket)`` that the given windows cover (a window = size/slide buckets)."""
    from pyspark.sql import functions as F

    first = bucket_of(p, F.col("window_start"))
    last = bucket_of(p, F.col("window_end")) - F.lit(1)
    return windows.select(*p.keys, F.explode(F.sequence(first, last)).alias(BUCKET)).distinct()


def needed_events(p: Pipeline, events: DataFrame, new_events: DataFrame, old_cutoff: datetime) -> DataFrame:
    """The events that a run's touched or newly completed windows are computed from.

    Tumbling/sliding: events in a bucket of a touched window's key, or late enough to fall in a
    window ending after ``old_cutoff`` (a broadcast join: no shuffle of ``events``). Sessions: every
    event of a key that has a new event or had a session open at ``old_cutoff``."""
    from pyspark.sql import functions as F

    kind = kind_of(p.window)
    since = kind.open_at(p.window, ts_literal(old_cutoff))
    if kind.keeps_state:
        keys = new_events.select(*p.keys).union(events.where(since).select(*p.keys)).distinct()
        return events.join(F.broadcast(keys), list(p.keys), "left_semi")
    return in_windows(p, events, touched_windows(p, new_events), or_where=since)


def in_windows(p: Pipeline, events: DataFrame, windows: DataFrame, or_where: Column | None = None) -> DataFrame:
    """Tumbling/sliding: the events in a bucket of one of ``windows`` (``keys``, ``window_start``,
    ``window_end``) of the same key, or matching ``or_where``: a broadcast join, no shuffle of ``events``."""
    from pyspark.sql import functions as F

    needed = window_buckets(p, windows).withColumn("_needed", F.lit(True))
    keep = F.col("_needed").isNotNull() if or_where is None else F.col("_needed").isNotNull() | or_where
    return (events.withColumn(BUCKET, bucket_of(p, F.col("event_time")))
            .join(F.broadcast(needed), [*p.keys, BUCKET], "left").where(keep).drop(BUCKET, "_needed"))


def first_copies_among(p: Pipeline, rows: DataFrame, events: DataFrame) -> DataFrame:
    """The ``rows`` that are the first copy of their event id among ALL ``events`` (the batch rule,
    ``windows.dedup_history``), without deduplicating ``events``: only the copies of the ids in
    ``rows`` are looked up (a broadcast semi join) and ranked. ``rows`` should be cached."""
    position = ["kafka_partition", "kafka_offset"]
    firsts = copies_of(p, rows, events).transform(dedup_history(p)).select(*position)
    return rows.join(firsts, position, "left_semi")


def recompute_fixed_windows(p: Pipeline, history: DataFrame, new_events: DataFrame,
                            old_cutoff: datetime, new_cutoff: datetime) -> DataFrame:
    """Tumbling/sliding: exact rows of every touched or newly completed window (window_end <= cutoff).
    ``history``: the deduplicated ``needed_events`` (the caller narrows bronze once)."""
    from pyspark.sql import functions as F

    touched = touched_windows(p, new_events)
    rows = history.transform(windowed_aggregate(p, streaming=False))
    marked = rows.join(touched.withColumn("_touched", F.lit(True)), list(p.grain), "left")
    keep = (F.col("_touched").isNotNull() | (F.col("window_end") > ts_literal(old_cutoff))) & (
        F.col("window_end") <= ts_literal(new_cutoff))
    return marked.where(keep).drop("_touched")


def recompute_sessions(p: Pipeline, history: DataFrame, new_events: DataFrame,
                       old_cutoff: datetime, new_cutoff: datetime) -> DataFrame:
    """Sessions: every session of the affected keys that ends by the cutoff, recomputed over the keys'
    whole history (``needed_events``). Not only the sessions holding a new event: a displaced copy can
    split a session, and the half that no changed event falls into is new too. The caller leaves out
    those published unchanged (``changed_only``) and deletes the keys' others (``stale_sessions``).
    The cutoff filter compares ``max_event_time + gap``: one on ``window_end`` is pushed below the
    session aggregation (see ``window_end``)."""
    return history.transform(windowed_aggregate(p, streaming=False)).where(window_end(p) <= ts_literal(new_cutoff))


def stale_sessions(p: Pipeline, published: DataFrame, keys: DataFrame, sessions: DataFrame) -> DataFrame:
    """Published sessions (grain only) of ``keys`` that are not among ``sessions``, the keys' recomputed
    sessions (cache them: a join on a session aggregation's grouping columns is pushed below it). None of
    them is in a full run's result: a late event merged or extended them (into a recomputed session or
    into one still open at the cutoff), or a displaced copy took their only event or split them."""
    from pyspark.sql import functions as F

    pub = published.join(F.broadcast(keys), list(p.keys), "left_semi").select(*p.grain)
    return pub.join(sessions.select(*p.grain), list(p.grain), "left_anti")


def changed_only(rows: DataFrame, published: DataFrame) -> DataFrame:
    """``rows`` except those that ``published`` holds with the same values (not rewritten)."""
    same = [c for c in rows.columns if c in published.columns]
    return rows.join(published.select(*same), same, "left_anti")


def stale_published(p: Pipeline, published: DataFrame, changed: DataFrame, upserts: DataFrame) -> DataFrame:
    """Tumbling/sliding: published windows (grain only) that hold the event time of a changed event of
    their key (a new event, or an older copy a new one displaced) but that the run does not upsert: the
    displaced copy was their only event, so a full run has no such window."""
    from pyspark.sql import functions as F

    pub = published.select(*p.grain).alias("pub")
    times = F.broadcast(changed.select(*p.keys, "event_time").distinct()).alias("x")
    holds = [*(F.col(f"pub.{k}") == F.col(f"x.{k}") for k in p.keys),
             F.col("x.event_time") >= F.col("pub.window_start"), F.col("x.event_time") < F.col("pub.window_end")]
    return pub.join(times, holds, "left_semi").join(upserts.select(*p.grain), list(p.grain), "left_anti").distinct()


def recompute(p: Pipeline, history: DataFrame, new_events: DataFrame, old_cutoff: datetime,
              new_cutoff: datetime) -> DataFrame:
    """Rows to upsert in an incremental run, for any window type."""
    fn = recompute_sessions if kind_of(p.window).keeps_state else recompute_fixed_windows
    return fn(p, history, new_events, old_cutoff, new_cutoff)


def all_windows(p: Pipeline, history: DataFrame, cutoff: datetime) -> DataFrame:
    """Full run: every window of the history that ends at or before the cutoff."""

    return history.transform(windowed_aggregate(p, streaming=False)).where(window_end(p) <= ts_literal(cutoff))
