"""What the speed layer would have done with another watermark delay, replayed on bronze: pure
DataFrame -> DataFrame functions (``spark_jobs.analysis.whatif`` runs them; docs/whatif.md).

Input: bronze-shaped events (the definition's id and keys, ``event_time``, ``kafka_timestamp`` = the
broker's LogAppendTime, ``kafka_partition``, ``kafka_offset``) with ``batch_time``, the start of the
micro-batch that read each record (``recorded_batches``: bronze's ``ingest_time``, the micro-batch the
speed job really ran; ``trigger_batches``: the trigger boundary after the record's arrival, a model of a
job that keeps up). ``delays``: one column ``delay_ms``. What is modelled, per delay ``d``:

* **Watermark**, as Spark keeps it: a micro-batch runs with (max event time of every valid record read by
  EARLIER micro-batches) - ``d``, duplicates and late records included; none before the first micro-batch.
  After a micro-batch it is (max event time up to and including it) - ``d``: what the speed view records.
* **Quarantine**: a record stamped more than ``min(max_future_skew, d)`` after its arrival would be
  ``FUTURE_TIMESTAMP`` (the skew may not exceed the watermark); it moves no watermark. Records quarantined
  today are not in bronze and stay out.
* **Duplicates**: the copy that counts is the first by the batch layer's rule (``windows.dedup_history``);
  the speed layer counts it if it is on time (a later copy is never on time when the first is not).
* **Dropped**: tumbling and sliding (the stateless ``stream`` query, ``io.cached_records.behind``): event
  time < the micro-batch's watermark, and the event leaves all its windows. Sessions (Spark's stateful
  ``session_window``, measured on Spark 4.1.1, ``tests/spark/test_watermark_whatif.py``): event time <=
  the watermark of the micro-batch BEFORE it (a no-data micro-batch after an idle trigger included, see
  ``watermarks``), even when the event's own session, extended by the gap, would end after it.
* **Wrong window**: an exact window (all first copies) whose speed window of the same keys and bounds
  (over the counted events) is missing or has another count.
* **Finality**: a window is final from the first micro-batch whose watermark after it reaches the
  window's end (``speed_fold``'s ``is_final``; sessions: Spark emits them then); its finality delay is
  that micro-batch's ``batch_time`` - window end (plus the micro-batch's own run time, not modelled).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from lakehouse.pipeline import Pipeline
from lakehouse.window_kinds import kind_of
from spark_jobs.transforms.windows import dedup_history, window_column

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

COUNTED, DROPPED, QUARANTINED = "counted", "dropped", "quarantined"


def recorded_batches(events: DataFrame) -> DataFrame:
    """``batch_time`` = bronze's ``ingest_time``: the micro-batch that really read each record."""
    return events.withColumn("batch_time", events["ingest_time"])


def trigger_batches(trigger_seconds: int) -> Callable[[DataFrame], DataFrame]:
    """``batch_time`` = the first trigger boundary (a multiple of the interval since the epoch, as Spark's
    processing-time trigger schedules them) after the record's arrival: a job that always keeps up."""

    def _batches(events: DataFrame) -> DataFrame:
        from pyspark.sql import functions as F

        step = trigger_seconds * 1000
        slot = F.floor(F.unix_millis("kafka_timestamp") / F.lit(step)) + 1
        return events.withColumn("batch_time", F.timestamp_millis((slot * F.lit(step)).cast("bigint")))

    return _batches


def _ms(name: str) -> Column:
    from pyspark.sql import functions as F

    return F.unix_millis(F.col(name))


def _future_skew_exceeded(p: Pipeline) -> Column:
    """Per record and delay: stamped further ahead of its arrival than ``min(max_future_skew, delay)``."""
    from pyspark.sql import functions as F

    allowed = F.least(F.lit(p.future_skew_seconds * 1000).cast("bigint"), F.col("delay_ms"))
    return _ms("event_time") > _ms("kafka_timestamp") + allowed


def watermarks(p: Pipeline, events: DataFrame, delays: DataFrame, trigger_seconds: int) -> DataFrame:
    """Per delay and micro-batch: ``batch_ms``, ``wm_before_ms`` (the watermark it runs with; null for the
    first), ``wm_after_ms`` (after it), over every record not quarantined at that delay, and ``wm_late_ms``,
    the watermark its late events are judged by. Stateless: ``wm_before_ms``. Sessions: Spark's stateful
    operators judge them by the PREVIOUS micro-batch's watermark; a micro-batch more than one trigger
    interval after the previous one had an idle trigger between them, where Spark ran a no-data
    micro-batch with ``wm_before_ms``."""
    from pyspark.sql import Window as W
    from pyspark.sql import functions as F

    per_batch = (events.crossJoin(delays).where(~_future_skew_exceeded(p))
                 .groupBy("delay_ms", _ms("batch_time").alias("batch_ms"))
                 .agg(F.max(_ms("event_time")).alias("max_ms")))
    upto = W.partitionBy("delay_ms").orderBy("batch_ms")
    marks = per_batch.select(
        "delay_ms", "batch_ms",
        (F.max("max_ms").over(upto.rowsBetween(W.unboundedPreceding, -1)) - F.col("delay_ms")).alias("wm_before_ms"),
        (F.max("max_ms").over(upto.rowsBetween(W.unboundedPreceding, 0)) - F.col("delay_ms")).alias("wm_after_ms"))
    if not kind_of(p.window).keeps_state:  # a stateless stream judges by its own micro-batch's watermark
        return marks.withColumn("wm_late_ms", F.col("wm_before_ms"))
    adjacent = F.col("batch_ms") - F.lag("batch_ms").over(upto) <= F.lit(trigger_seconds * 1000)
    return marks.withColumn("wm_late_ms", F.when(adjacent, F.lag("wm_before_ms").over(upto))
                            .otherwise(F.col("wm_before_ms")))


def classify(p: Pipeline, events: DataFrame, delays: DataFrame, marks: DataFrame) -> DataFrame:
    """The first copy of every event, once per delay, with ``status``: ``counted``, ``dropped`` (behind
    the watermark of its micro-batch in ``marks``, from ``watermarks``) or ``quarantined``
    (``FUTURE_TIMESTAMP`` at that delay)."""
    from pyspark.sql import functions as F

    first = events.transform(dedup_history(p)).crossJoin(delays).withColumn("batch_ms", _ms("batch_time"))
    joined = first.join(marks, ["delay_ms", "batch_ms"], "left")
    et, wm = _ms("event_time"), F.col("wm_late_ms")
    behind = (et <= wm) if kind_of(p.window).keeps_state else (et < wm)
    status = (F.when(_future_skew_exceeded(p), F.lit(QUARANTINED))
              .when(wm.isNotNull() & behind, F.lit(DROPPED)).otherwise(F.lit(COUNTED)))
    return joined.withColumn("status", status).drop("wm_before_ms", "wm_after_ms", "wm_late_ms")


def window_counts(p: Pipeline, events: DataFrame, *by: str) -> DataFrame:
    """Events -> ``<by>, <keys>, window_start, window_end, n`` (their count), windows as the layers make them."""
    from pyspark.sql import functions as F

    out = events.groupBy(*by, *p.keys, window_column(p).alias("w")).agg(F.count(F.lit(1)).alias("n"))
    return out.select(*by, *p.keys, F.col("w.start").alias("window_start"), F.col("w.end").alias("window_end"), "n")


def window_errors(p: Pipeline, exact: DataFrame, classified: DataFrame, delays: DataFrame) -> DataFrame:
    """Per delay: ``windows`` (``exact``: ``window_counts`` of the first copies) and ``wrong_windows``
    (no speed window of the same keys and bounds over the counted events of ``classify``, or another count)."""
    from pyspark.sql import functions as F

    speed = window_counts(p, classified.where(F.col("status") == COUNTED), "delay_ms").withColumnRenamed("n", "speed_n")
    both = exact.crossJoin(delays).join(speed, ["delay_ms", *p.grain], "left")
    wrong = F.col("speed_n").isNull() | (F.col("speed_n") != F.col("n"))
    return both.groupBy("delay_ms").agg(F.count(F.lit(1)).alias("windows"), F.count_if(wrong).alias("wrong_windows"))


def finality(exact: DataFrame, marks: DataFrame, delays: DataFrame) -> DataFrame:
    """Per delay and exact window: ``final_ms``, the ``batch_ms`` of the first micro-batch whose watermark
    after it reaches the window's end (null: not final by the last micro-batch), and ``finality_s``."""
    from pyspark.sql import Window as W
    from pyspark.sql import functions as F

    ends = exact.crossJoin(delays).select("delay_ms", _ms("window_end").alias("v"), F.lit(0).alias("kind"),
                                          F.lit(None).cast("bigint").alias("batch_ms"))
    passes = marks.select("delay_ms", F.col("wm_after_ms").alias("v"), F.lit(1).alias("kind"), "batch_ms")
    # the watermark after a micro-batch never falls: the first one at or above a window's end is the
    # next "pass" row in (value, kind, batch) order, kind 0 (window) before 1 (micro-batch) at equal values
    later = W.partitionBy("delay_ms").orderBy("v", "kind", "batch_ms").rowsBetween(W.currentRow, W.unboundedFollowing)
    final_ms = F.first(F.when(F.col("kind") == 1, F.col("batch_ms")), ignorenulls=True).over(later)
    out = ends.unionByName(passes).withColumn("final_ms", final_ms).where(F.col("kind") == 0)
    return out.select("delay_ms", F.col("v").alias("window_end_ms"), "final_ms",
                      ((F.col("final_ms") - F.col("v")) / 1000.0).alias("finality_s"))


def summary(p: Pipeline, events: DataFrame, delays: DataFrame, trigger_seconds: int) -> DataFrame:
    """One row per delay: ``delay_ms``, ``events`` (distinct), ``dropped``, ``quarantined``, ``windows``,
    ``wrong_windows``, ``final_windows`` and the finality delay's ``finality_p50_s``, ``finality_p95_s``,
    ``finality_max_s`` (seconds from window end to the micro-batch that made it final). ``trigger_seconds``:
    the speed job's trigger interval (``watermarks``)."""
    from pyspark.sql import functions as F

    marks = watermarks(p, events, delays, trigger_seconds)
    exact = window_counts(p, events.transform(dedup_history(p)))
    classified = classify(p, events, delays, marks)
    status = F.col("status")
    counts = classified.groupBy("delay_ms").agg(
        F.count(F.lit(1)).alias("events"), F.count_if(status == DROPPED).alias("dropped"),
        F.count_if(status == QUARANTINED).alias("quarantined"))
    fin = finality(exact, marks, delays).groupBy("delay_ms").agg(
        F.count("final_ms").alias("final_windows"),
        F.percentile("finality_s", F.lit(0.5)).alias("finality_p50_s"),
        F.percentile("finality_s", F.lit(0.95)).alias("finality_p95_s"),
        F.max("finality_s").alias("finality_max_s"))
    errors = window_errors(p, exact, classified, delays)
    return counts.join(errors, "delay_ms").join(fin, "delay_ms").orderBy("delay_ms")
