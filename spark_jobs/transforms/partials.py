"""The stateless speed computation, as pure DataFrame functions: first copies, partial aggregates
per window, and the SQL that folds a micro-batch's partials into the speed table.

A micro-batch's events become *partials* per (keys, window): counts, sums, minima, maxima, the sum
and count behind an ``avg`` and a HyperLogLog sketch behind an ``approx_distinct``. Partials of
disjoint event sets combine exactly (sketches by union), so the speed table is updated by one MERGE
that touches only the windows of the micro-batch: the cost follows the micro-batch, not the history.
The windows themselves come from the same ``window_column`` the batch layer uses.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from lakehouse.contracts import partial_columns
from lakehouse.pipeline import Pipeline
from spark_jobs.transforms.windows import window_column

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

ARRIVAL = ("kafka_timestamp", "kafka_partition", "kafka_offset")  # the order that decides the first copy


def first_copies(p: Pipeline, candidates: DataFrame, history: DataFrame) -> DataFrame:
    """``candidates`` without every event whose id has an EARLIER copy in ``history`` (which must
    contain the candidates themselves and the earlier events within the dedup horizon). Earlier =
    reached Kafka first, then lower partition, then lower offset: the batch layer's rule."""
    from pyspark.sql import functions as F

    c, h = candidates.alias("c"), history.select(p.event_id, *ARRIVAL).alias("h")
    earlier = (F.col("h.kafka_timestamp") < F.col("c.kafka_timestamp")) | (
        (F.col("h.kafka_timestamp") == F.col("c.kafka_timestamp"))
        & (F.struct("h.kafka_partition", "h.kafka_offset") < F.struct("c.kafka_partition", "c.kafka_offset")))
    return c.join(h, (F.col(f"h.{p.event_id}") == F.col(f"c.{p.event_id}")) & earlier, "left_anti")


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


def combined(p: Pipeline) -> dict[str, str]:
    """SET clause of the MERGE: target ``t`` + micro-batch partials ``s`` -> the window over both."""
    out: dict[str, str] = {}
    for a in p.aggregates:
        n = f"`{a.name}`"
        if a.fn in ("count", "sum"):
            out[n] = f"coalesce(t.{n}, 0) + coalesce(s.{n}, 0)" if a.fn == "count" else (
                f"CASE WHEN t.{n} IS NULL THEN s.{n} WHEN s.{n} IS NULL THEN t.{n} ELSE t.{n} + s.{n} END")
        elif a.fn in ("min", "max"):
            out[n] = f"{'least' if a.fn == 'min' else 'greatest'}(t.{n}, s.{n})"
        elif a.fn == "avg":
            sm, cn = f"`_sum_{a.name}`", f"`_n_{a.name}`"
            out[sm] = f"coalesce(t.{sm}, 0D) + coalesce(s.{sm}, 0D)"
            out[cn] = f"coalesce(t.{cn}, 0) + coalesce(s.{cn}, 0)"
            out[n] = f"({out[sm]}) / nullif({out[cn]}, 0)"
        else:  # approx_distinct
            hll = f"`_hll_{a.name}`"
            out[hll] = f"CASE WHEN t.{hll} IS NULL THEN s.{hll} WHEN s.{hll} IS NULL THEN t.{hll} ELSE hll_union(t.{hll}, s.{hll}) END"
            out[n] = f"CAST(hll_sketch_estimate({out[hll]}) AS BIGINT)"
    out["`max_event_time`"] = "greatest(t.`max_event_time`, s.`max_event_time`)"
    return out
