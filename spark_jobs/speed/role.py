"""The ``speed`` role of a ``stream`` micro-batch (``speed.stream_batch``): on-time first copies, as
per-window partials, APPENDED to the partials table behind the ``speed.<p>`` view (``lakehouse.speed_fold``).

The valid events are shuffled once by event id (``RecentArrivals.keyed``); events behind the watermark
are left out (bronze keeps them; the caller counts them); the first copy of every event id
(``partials.earliest_copies`` within the micro-batch, then ``partials.first_copies`` against the valid
events within the dedup horizon, kept in memory by ``speed.recent_arrivals`` instead of scanned from
bronze; the keyed micro-batch then joins that history) is aggregated into per-window partials and
appended with the watermark after the batch: no MERGE, no UPDATE, so the cost follows the
micro-batch, not the history. After each block of ``speed_fold.COMPACT_EVERY`` micro-batches, the
block's partials are compacted beside the next block (``speed.partials_table.compact``).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from infra.utc import as_utc
from lakehouse import naming
from lakehouse.pipeline import Pipeline
from lakehouse.speed_fold import COMPACT_EVERY, slot_of
from spark_jobs.shared.step_timer import Steps
from spark_jobs.speed import partials_table
from spark_jobs.speed.cached_records import behind
from spark_jobs.speed.partials_table import compact, compactions
from spark_jobs.speed.recent_arrivals import RecentArrivals
from spark_jobs.transforms.parse import valid_events
from spark_jobs.transforms.partials import earliest_copies, first_copies, partial_aggregate


class SpeedRole:
    def __init__(self, spark: Any, p: Pipeline, version: int) -> None:
        self.spark, self.p, self.version = spark, p, version
        self.arrivals = RecentArrivals(spark, p)  # the dedup lookup's history

    def late(self, wm: datetime | None) -> Any:
        """True for an event behind the watermark ``wm`` (``cached_records.behind``)."""
        return behind(self.spark, wm)

    def append(self, records: Any, wm: datetime | None, lo_seen: Any, hi_seen: Any, *, lineage: str,
               batch_id: int, write: bool, steps: Steps) -> None:
        """Append the micro-batch's on-time first copies, as per-window partials, to the partials table,
        tagged ``lineage``/``batch_id`` (``write`` False: a re-run found that append committed already;
        the dedup history still takes the micro-batch)."""
        lo: datetime | None = as_utc(lo_seen) if lo_seen is not None else None
        hi: datetime | None = as_utc(hi_seen) if hi_seen is not None else None
        delay = timedelta(seconds=self.p.watermark_seconds)
        if hi is None:  # no valid event
            return
        keyed = self.keyed_events(records)  # the micro-batch's one shuffle, by event id
        steps.done("keyed")
        wm_after = max(x for x in (wm, hi - delay) if x is not None)
        if lo is None:  # nothing on time: the watermark this batch could record was recorded before
            self.arrivals.add(keyed, wm_after - delay, hi)
            return
        partials = self.partials(keyed, wm, lo, hi)
        steps.done("plan")
        if write:
            partials_table.append(partials, self.p, self.version, lineage, batch_id, wm_after)
        steps.done("speed")
        self.arrivals.add(keyed, wm_after - delay, hi)

    def keyed_events(self, records: Any) -> Any:
        """The micro-batch's valid events, hash-partitioned by event id and sorted by id and arrival
        (``RecentArrivals.keyed``): what ``partials`` reads and the dedup history keeps."""
        return self.arrivals.keyed(valid_events(records))

    def partials(self, keyed: Any, wm: datetime | None, lo: datetime, hi: datetime) -> Any:
        """The per-window partials of the micro-batch's on-time first copies (``keyed``: from
        ``keyed_events``; ``lo``, ``hi``: its earliest on-time and latest valid event; the dedup history
        reaches one watermark delay before and after them: copies of an event carry its time). The first
        copy of each id within the micro-batch, then only those without an earlier copy in the history: no
        shuffle or sort of the micro-batch beyond ``keyed``."""
        on_time = keyed.where(~self.late(wm)).transform(earliest_copies(self.p))
        delay = timedelta(seconds=self.p.watermark_seconds)
        history = self.arrivals.history(lo - delay, hi + delay)
        return first_copies(self.p, on_time, history).transform(partial_aggregate(self.p))

    def compact(self, batch_id: int, steps: Steps) -> None:
        """At the end of each block of micro-batches, fold the block's partials (and whatever earlier
        runs left in its slot) on a thread of its own while the next block runs; a failed compaction
        fails a later micro-batch (fail closed). One still running at the next block's end makes that
        block wait for the compaction of its slot two blocks later."""
        table = naming.speed_partials_table(self.p.name, self.version)
        runs = compactions(table)
        if runs.busy():
            return
        if runs.runs:
            steps.seconds["compacted (beside)"] = runs.drain()
        if batch_id % COMPACT_EVERY == COMPACT_EVERY - 1:
            runs.start(compact, self.spark, self.p, table, slot_of(batch_id), batch_id)
