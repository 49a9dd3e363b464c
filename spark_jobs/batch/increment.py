"""The rows an incremental batch run stages: the windows bronze's new rows change, exactly.

Two ways, one answer (``tests/integration/test_batch_incremental.py`` proves both equal a full run):

* **fold** (``transforms.incremental_fold``, when the pipeline is foldable): the published windows
  that new events fall into, combined with the partials of the new first copies. Bronze is read
  only for the copies of the new ids, narrowed by the ids' range so that Delta's file statistics
  skip files that hold none of them, and, when the cutoff moved past a window's end, for the events of
  the windows that completed since the last run (an event-time range: partitions and file statistics skip the rest);
* **recompute** (``transforms.incremental``): the touched windows' events from bronze, deduplicated
  against their ids' copies. Session windows, exact distinct counts, and a run in which a new copy
  of an id would displace an older one (the fold cannot subtract it) take this way.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from lakehouse.pipeline import Pipeline
from lakehouse.window_kinds import kind_of
from spark_jobs.shared.step_timer import Steps
from spark_jobs.transforms import incremental
from spark_jobs.transforms import incremental_fold as fold
from spark_jobs.transforms.incremental import ts_literal
from spark_jobs.transforms.windows import windowed_aggregate

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


class Increment:
    """What ``incremental_rows`` produced: the upserts, the deletes (sessions, displaced copies), the way taken, and
    the frames it cached (the caller releases them once the staging rows are written)."""

    def __init__(self, way: str, upserts: DataFrame, deletes: DataFrame | None, cached: list[DataFrame]) -> None:
        self.way, self.upserts, self.deletes, self.cached = way, upserts, deletes, cached

    def release(self) -> None:
        for df in self.cached:
            df.unpersist()


def ids_in_range_of(p: Pipeline, events: DataFrame, rows: DataFrame) -> DataFrame:
    """``events`` narrowed to ids between the smallest and largest id of ``rows`` (one small job):
    literal bounds, so Delta skips the files whose id statistics lie outside them."""
    from pyspark.sql import functions as F

    lo, hi = rows.agg(F.min(p.event_id), F.max(p.event_id)).collect()[0]
    if lo is None:
        return events.limit(0)
    return events.where(F.col(p.event_id).between(F.lit(lo), F.lit(hi)))


def completed_since(p: Pipeline, snapshot: DataFrame, old_cutoff: datetime, new_cutoff: datetime,
                    cached: list[DataFrame]) -> DataFrame | None:
    """Windows ending after the last run's cutoff and by this one's, from the events of that time
    range (first copies among all of bronze); None when no window can end in between: the cutoff did not
    move, or not past a window's end (runs that come more often than the window slides; 7 of 8 rounds of
    scenario 3). Such a window holds events from ``old_cutoff - size`` until before ``new_cutoff``: the
    events after it (the allowed lateness, two thirds of them with a 1-minute window and 2 minutes of
    lateness) are not read."""
    from pyspark.sql import functions as F

    if not incremental.window_ends_between(p, old_cutoff, new_cutoff):
        return None
    since = incremental.ts_literal(old_cutoff - timedelta(seconds=p.window.size_seconds))
    until = incremental.ts_literal(new_cutoff)
    recent = snapshot.where((F.col("event_time") >= since) & (F.col("event_time") < until)).persist()
    cached.append(recent)
    firsts = incremental.first_copies_among(p, recent, ids_in_range_of(p, snapshot, recent))
    end = F.col("window_end")
    return (firsts.transform(windowed_aggregate(p, streaming=False))
            .where((end > incremental.ts_literal(old_cutoff)) & (end <= incremental.ts_literal(new_cutoff))))


def folded(p: Pipeline, published: DataFrame, snapshot: DataFrame, new_events: DataFrame, firsts: DataFrame,
           old_cutoff: datetime, new_cutoff: datetime, cached: list[DataFrame]) -> Increment:
    from pyspark.sql import functions as F

    upserts = (fold.folded_windows(p, published, new_events, firsts)
               .where(F.col("window_end") <= ts_literal(old_cutoff)))
    recent = completed_since(p, snapshot, old_cutoff, new_cutoff, cached)
    if recent is not None:  # windows that completed since: not read from batch
        upserts = upserts.unionByName(recent.withColumn("op", F.lit("upsert")))
    return Increment("fold", upserts, None, cached)


def recomputed(p: Pipeline, published: DataFrame, snapshot: DataFrame, changed: DataFrame,
               old_cutoff: datetime, new_cutoff: datetime, displaced: bool) -> Increment:
    """The recompute of the windows ``changed`` events touch, and the published windows it deletes:
    sessions (``incremental.stale_sessions``), or windows whose only event a new copy displaced."""
    needed = incremental.needed_events(p, snapshot, changed, old_cutoff).persist()
    history = incremental.first_copies_among(p, needed, ids_in_range_of(p, snapshot, needed))
    upserts = incremental.recompute(p, history, changed, old_cutoff, new_cutoff)
    cached, deletes = [needed], None
    keeps_state = kind_of(p.window).keeps_state
    if keeps_state or displaced:  # read twice: cached (for sessions, also a plan boundary)
        upserts = upserts.persist()
        cached.append(upserts)
    if keeps_state:
        deletes = incremental.stale_sessions(p, published, needed.select(*p.keys).distinct(), upserts)
        upserts = incremental.changed_only(upserts, published)
    elif displaced:
        deletes = incremental.stale_published(p, published, changed, upserts)
    return Increment("recompute", upserts, deletes, cached)


def incremental_rows(p: Pipeline, published: DataFrame, snapshot: DataFrame, new_events: DataFrame,
                     old_cutoff: datetime, new_cutoff: datetime, steps: Steps) -> Increment:
    """The fold when it applies and is exact for this run, else the recompute. ``published``: the
    ``batch.<p>`` rows; ``new_events`` cached. The recompute's changed events are the new ones and the
    older copies they displace (whose windows lose them)."""
    from pyspark.sql import functions as F

    narrowed = ids_in_range_of(p, snapshot, new_events)
    firsts = fold.first_of_each_id(p, fold.copies_of(p, new_events, narrowed)).persist()
    moved = fold.displacing(p, new_events, firsts).select(p.event_id).persist()
    cached = [firsts, moved]
    any_moved = not moved.isEmpty()
    steps.done("copies of new ids")
    if fold.foldable(p) and not any_moved:
        return folded(p, published, snapshot, new_events, firsts, old_cutoff, new_cutoff, cached)
    displaced = narrowed.join(F.broadcast(moved), p.event_id, "left_semi")
    done = recomputed(p, published, snapshot, new_events.unionByName(displaced), old_cutoff, new_cutoff, any_moved)
    done.cached += cached
    return done
