"""The one windowed aggregation that speed, batch and replay all run, built from a definition.

``windowed_aggregate(pipeline, streaming=...)`` returns a ``DataFrame -> DataFrame`` that takes
bronze-shaped events (schema fields + ``event_time``) and yields one row per grouping key and
window: ``<keys>, window_start, window_end, <aggregates...>, max_event_time``.

The code path is the same for streaming and batch input. The only difference is the distinct
count: a stream can only keep an HyperLogLog sketch (``approx_count_distinct``), while the batch
layer, which exists to be exact, counts distinct values exactly.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from lakehouse.pipeline import Aggregate, Pipeline
from lakehouse.window_kinds import kind_of

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame


def window_column(p: Pipeline) -> Column:
    """The window(s) each event belongs to (``lakehouse.window_kinds``)."""
    return kind_of(p.window).assign(p.window)


def aggregate_column(agg: Aggregate, exact_distinct: bool) -> Column:
    from pyspark.sql import functions as F

    if agg.fn == "count":
        return F.count(F.lit(1)).alias(agg.name)
    col = F.col(str(agg.column))
    if agg.fn == "approx_distinct":
        expr = F.count_distinct(col) if exact_distinct else F.approx_count_distinct(col)
        return expr.cast("bigint").alias(agg.name)
    if agg.fn == "avg":
        return F.avg(col).alias(agg.name)
    return getattr(F, agg.fn)(col).alias(agg.name)


def event_in_window(p: Pipeline, windows: str, events: str) -> list[Column]:
    """Join condition placing an event (alias ``events``) into a result window (alias ``windows``) of the
    same keys: ``window_start <= event_time < window_end`` (how session windows are assigned their events)."""
    from pyspark.sql import functions as F

    return [*(F.col(f"{windows}.{k}") == F.col(f"{events}.{k}") for k in p.keys),
            F.col(f"{events}.event_time") >= F.col(f"{windows}.window_start"),
            F.col(f"{events}.event_time") < F.col(f"{windows}.window_end")]


def windowed_aggregate(p: Pipeline, streaming: bool) -> Callable[[DataFrame], DataFrame]:
    """Group bronze-shaped events by keys and event-time window and compute the aggregates."""

    def _aggregate(df: DataFrame) -> DataFrame:
        from pyspark.sql import functions as F

        aggs = [aggregate_column(a, exact_distinct=not streaming) for a in p.aggregates]
        out = df.groupBy(*p.keys, window_column(p).alias("window")).agg(
            *aggs, F.max("event_time").alias("max_event_time")
        )
        return out.select(
            *p.keys,
            F.col("window.start").alias("window_start"),
            F.col("window.end").alias("window_end"),
            *(a.name for a in p.aggregates),
            "max_event_time",
        )

    return _aggregate


def with_watermark_dedup(p: Pipeline) -> Callable[[DataFrame], DataFrame]:
    """Streaming: event-time watermark, then drop repeated event ids within the watermark."""

    def _dedup(df: DataFrame) -> DataFrame:
        return df.withWatermark("event_time", p.watermark).dropDuplicatesWithinWatermark([p.event_id])

    return _dedup


def dedup_history(p: Pipeline) -> Callable[[DataFrame], DataFrame]:
    """Batch: keep one copy of every event id, by THE rule for duplicates (also for duplicates with
    different payloads): the copy that reached Kafka first (``kafka_timestamp``, the broker's
    LogAppendTime), then the lower partition, then the lower offset. A copy that arrives later never
    displaces one already published, so an incremental run equals a full one."""

    def _dedup(df: DataFrame) -> DataFrame:
        from pyspark.sql import Window as W
        from pyspark.sql import functions as F

        order = ([F.col(c) for c in ("kafka_timestamp", "kafka_partition", "kafka_offset") if c in df.columns]
                 or [F.col("event_time")])
        first = W.partitionBy(p.event_id).orderBy(*order)
        return df.withColumn("_rn", F.row_number().over(first)).where("_rn = 1").drop("_rn")

    return _dedup


def touched_windows(p: Pipeline, new_events: DataFrame) -> DataFrame:
    """Distinct ``(keys, window_start, window_end)`` that the new events fall into."""
    from pyspark.sql import functions as F

    return (new_events.select(*p.keys, window_column(p).alias("w"))
            .select(*p.keys, F.col("w.start").alias("window_start"), F.col("w.end").alias("window_end"))
            .distinct())
