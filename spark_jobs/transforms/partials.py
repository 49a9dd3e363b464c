"""The stateless speed computation, as pure DataFrame functions: first copies, partial aggregates
per window.

A micro-batch's events become *partials* per (keys, window): counts, sums, minima, maxima, the sum
and count behind an ``avg`` and a HyperLogLog sketch behind an ``approx_distinct``. Partials of
disjoint event sets combine exactly (sketches by union), so a micro-batch only APPENDS its partials
and the speed view folds them (``lakehouse.speed_fold``): the cost follows the micro-batch, not the history.
The windows themselves come from the same ``window_column`` the batch layer uses.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import reduce
from typing import TYPE_CHECKING

from lakehouse.contracts import partial_columns
from lakehouse.pipeline import Pipeline
from spark_jobs.transforms.windows import window_column

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

ARRIVAL = ("kafka_timestamp", "kafka_partition", "kafka_offset")  # the order that decides the first copy


def first_copies(p: Pipeline, candidates: DataFrame, *history: DataFrame) -> DataFrame:
    """``candidates`` without every event whose id has an EARLIER copy in ``history`` (pieces that
    together contain the candidates themselves and the earlier events within the dedup horizon).
    Earlier = reached Kafka first, then lower partition, then lower offset: the batch layer's rule.
    One anti join per piece: a piece already hash-partitioned by event id (as ``speed.recent_arrivals``
    keeps its chunks) joins without a shuffle of its rows."""
    from pyspark.sql import functions as F

    def keep_if_no_earlier_copy(c: DataFrame, piece: DataFrame) -> DataFrame:
        c, h = c.alias("c"), piece.select(p.event_id, *ARRIVAL).alias("h")
        earlier = (F.col("h.kafka_timestamp") < F.col("c.kafka_timestamp")) | (
            (F.col("h.kafka_timestamp") == F.col("c.kafka_timestamp"))
            & (F.struct("h.kafka_partition", "h.kafka_offset") < F.struct("c.kafka_partition", "c.kafka_offset")))
        return c.join(h, (F.col(f"h.{p.event_id}") == F.col(f"c.{p.event_id}")) & earlier, "left_anti")

    return reduce(keep_if_no_earlier_copy, history, candidates)


def earliest_copies(p: Pipeline) -> Callable[[DataFrame], DataFrame]:
    """Events -> the first copy of every event id among them, by the arrival rule of ``first_copies``.
    On events hash-partitioned by event id and sorted by id and ``ARRIVAL`` (``speed.recent_arrivals``
    keys a micro-batch so) the window needs neither a shuffle nor a sort."""

    def _earliest(df: DataFrame) -> DataFrame:
        from pyspark.sql import Window as W
        from pyspark.sql import functions as F

        first = W.partitionBy(p.event_id).orderBy(*ARRIVAL)
        return df.withColumn("_copy", F.row_number().over(first)).where("_copy = 1").drop("_copy")

    return _earliest


def _partials(p: Pipeline) -> list[Column]:
    from pyspark.sql import functions as F

    out = []
    for a in p.aggregates:
        col = F.col(str(a.column))
        if a.fn == "count":
            out.append(F.count(F.lit(1)).alias(a.name))
        elif a.fn == "avg":
            out += [F.avg(col).alias(a.name), F.sum(col).cast("double").alias(f"_sum_{a.name}"),
                    F.count(col).alias(f"_n_{a.name}")]
        elif a.fn == "approx_distinct":
            out += [F.hll_sketch_estimate(F.hll_sketch_agg(col)).cast("bigint").alias(a.name),
                    F.hll_sketch_agg(col).alias(f"_hll_{a.name}")]
        else:
            out.append(getattr(F, a.fn)(col).alias(a.name))
    return out


def partial_aggregate(p: Pipeline) -> Callable[[DataFrame], DataFrame]:
    """Events -> one row per (keys, window): the aggregates of these events alone, their partial
    columns (``contracts.partial_columns``) and ``max_event_time``."""

    def _aggregate(df: DataFrame) -> DataFrame:
        from pyspark.sql import functions as F

        out = df.groupBy(*p.keys, window_column(p).alias("window")).agg(*_partials(p), F.max("event_time").alias("max_event_time"))
        return out.select(*p.keys, F.col("window.start").alias("window_start"), F.col("window.end").alias("window_end"),
                          *(a.name for a in p.aggregates), *(c for c, _ in partial_columns(p)), "max_event_time")

    return _aggregate
