"""Incremental runs that fold new events into the published windows instead of re-reading bronze.

A late event changes only the windows it falls into, and for aggregates that combine from their own
values (count, sum, min, max, and an ``avg`` whose window row count the pipeline also keeps) the new
value of such a window is the published row combined with the partials of the new events: the same
algebra the speed layer's partials use (``transforms.partials``). The run then reads the published
windows it touches and the copies of the new events' ids, not the events of those windows, so its
cost follows the change. Two conditions keep it exact, and a run that fails one recomputes from
bronze (``transforms.incremental``):

* the pipeline is ``foldable``: tumbling or sliding windows, no exact distinct count (a distinct
  count of a union is not a function of the two counts), and a ``count`` beside every ``avg``
  (the sum behind a published average is ``avg * count``: every field is required, so a window's
  row count is its average's value count);
* no new event ``displaces`` an older copy of its id: the first copy of an id stays first (the
  dedup rule in ``windows.dedup_history``), else the old copy's window would lose an event, which
  a fold cannot subtract.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lakehouse.pipeline import Pipeline
from lakehouse.window_kinds import kind_of
from spark_jobs.transforms.partials import ARRIVAL, partial_aggregate
from spark_jobs.transforms.windows import touched_windows

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame


def window_count(p: Pipeline) -> str | None:
    """The aggregate holding each window's row count, if the pipeline has one."""
    return next((a.name for a in p.aggregates if a.fn == "count"), None)


def foldable(p: Pipeline) -> bool:
    fns = {a.fn for a in p.aggregates}
    if kind_of(p.window).keeps_state or "approx_distinct" in fns:
        return False
    return "avg" not in fns or window_count(p) is not None


def copies_of(p: Pipeline, ids: DataFrame, events: DataFrame) -> DataFrame:
    """Every copy in ``events`` (id and arrival position) of the ids in ``ids``: a broadcast semi join."""
    from pyspark.sql import functions as F

    return events.select(p.event_id, *ARRIVAL).join(F.broadcast(ids.select(p.event_id).distinct()), p.event_id,
                                                     "left_semi")


def first_of_each_id(p: Pipeline, copies: DataFrame) -> DataFrame:
    """One row per id: the arrival position of its first copy and how many copies it has."""
    from pyspark.sql import functions as F

    first = F.min(F.struct(*ARRIVAL))
    return copies.groupBy(p.event_id).agg(first.alias("_first"), F.count(F.lit(1)).alias("_copies"))


def displacing(p: Pipeline, new_events: DataFrame, firsts: DataFrame) -> DataFrame:
    """Ids whose first copy is a new event although an older copy exists: the old copy's window
    would lose it, which a fold cannot express."""
    from pyspark.sql import functions as F

    new = new_events.groupBy(p.event_id).agg(F.count(F.lit(1)).alias("_new"),
                                             F.collect_set(F.struct(*ARRIVAL)).alias("_positions"))
    hit = firsts.join(new, p.event_id)
    return hit.where((F.col("_copies") > F.col("_new")) & F.array_contains("_positions", F.col("_first")))


def new_first_copies(p: Pipeline, new_events: DataFrame, firsts: DataFrame) -> DataFrame:
    """The new events that are the first copy of their id among all of bronze."""
    from pyspark.sql import functions as F

    return (new_events.join(firsts.select(p.event_id, "_first"), p.event_id)
            .where(F.struct(*ARRIVAL) == F.col("_first")).drop("_first"))


def as_partials(p: Pipeline, published: DataFrame) -> DataFrame:
    """Published windows (batch contract) in the shape of ``partial_aggregate``'s rows."""
    from pyspark.sql import functions as F

    count = window_count(p)
    cols: list[Column] = [F.col(c) for c in p.grain]
    for a in p.aggregates:
        cols.append(F.col(a.name))
        if a.fn == "avg":
            cols += [(F.col(a.name) * F.col(str(count))).alias(f"_sum_{a.name}"),
                     F.col(str(count)).cast("bigint").alias(f"_n_{a.name}")]
    return published.select(*cols, "max_event_time")


def combined(p: Pipeline, partials: DataFrame, *more: Column) -> DataFrame:
    """Partials of disjoint event sets -> one row per window, in ``windowed_aggregate``'s columns (and
    the aggregates ``more``)."""
    from pyspark.sql import functions as F

    aggs: list[Column] = []
    for a in p.aggregates:
        if a.fn in ("count", "sum"):
            aggs.append(F.sum(a.name).alias(a.name))
        elif a.fn == "avg":
            aggs.append((F.sum(f"_sum_{a.name}") / F.sum(f"_n_{a.name}")).alias(a.name))
        else:
            aggs.append(getattr(F, a.fn)(a.name).alias(a.name))
    return partials.groupBy(*p.grain).agg(*aggs, F.max("max_event_time").alias("max_event_time"), *more)


def folded_windows(p: Pipeline, published: DataFrame, new_events: DataFrame, firsts: DataFrame) -> DataFrame:
    """Every window a new event falls into (first copy or not), with its published value combined
    with the partials of the new first copies. A window that only repeated ids fall into keeps its
    published value (rewritten, as a recompute would). ``op``: ``update`` for a window read from
    ``published``, else ``upsert`` (``contracts.STAGED_OPS``)."""
    from pyspark.sql import functions as F


    added = new_first_copies(p, new_events, firsts).transform(partial_aggregate(p))
    touched = F.broadcast(touched_windows(p, new_events))
    old = as_partials(p, published.join(touched, list(p.grain), "left_semi"))
    read = F.lit(True).alias("_read")
    windows = combined(p, old.select("*", read).unionByName(added.select(*old.columns, (~read).alias("_read"))),
                       F.max("_read").alias("_read"))
    return windows.select("*", F.when(F.col("_read"), "update").otherwise("upsert").alias("op")).drop("_read")
