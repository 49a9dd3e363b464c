"""The dedup lookup's history, kept in Spark memory instead of scanned from bronze per micro-batch.

``partials.first_copies`` needs the arrival facts (event id, Kafka timestamp, partition, offset) of
every valid event whose ``event_time`` is at or after ``since`` (the micro-batch's earliest on-time
event minus the watermark delay). Reading them from ``bronze.<p>`` costs a scan of every small file
of that horizon in each micro-batch (seconds on 2 cores). ``RecentArrivals`` reads bronze ONCE per run
(and again only if a micro-batch ever needs an older horizon), then keeps each micro-batch's own valid
events as a chunk of its own (a local checkpoint: cut lineage, executor memory/disk), so adding a
micro-batch costs that micro-batch, not the horizon. A chunk leaves once the watermark has put all of
its events out of reach (its latest event time is known from the micro-batch's statistics); every
``MERGE_AT`` chunks the survivors are folded into one, so a lookup scans a bounded number of pieces.
Each chunk is hash-partitioned by event id like a shuffle (and sorted within its partitions by id,
then arrival), so the lookup's anti join shuffles no history: at 10,000 events/s the horizon holds
1.2M events, and shuffling them in every micro-batch cost about a second. A micro-batch's own valid
events are shuffled once (``keyed``): that one frame feeds the speed step's first-copy window and its
anti join without another shuffle or sort, and then becomes the micro-batch's chunk (one shuffle of the
micro-batch instead of three: a 500,000-event speed step 1.52 s instead of 2.15 s, docs/performance.md).
The answer is the same as the bronze scan's: bronze holds what the stream has seen (plus what other
writers added before the load), and every future micro-batch's horizon starts at or after
``watermark after this micro-batch - delay``, because its on-time events are not behind it.
"""

from __future__ import annotations

from datetime import datetime
from functools import reduce
from typing import Any

from lakehouse import naming
from lakehouse.pipeline import Pipeline
from spark_jobs.speed import micro_batch_values as batch_values
from spark_jobs.transforms.partials import ARRIVAL

MERGE_AT = 16  # chunks before the survivors are folded into one


class RecentArrivals:
    def __init__(self, spark: Any, p: Pipeline) -> None:
        self.spark, self.p = spark, p
        self.columns = [p.event_id, *ARRIVAL, "event_time"]  # what a lookup reads
        # what a micro-batch's speed step reads from the same keyed frame (``keyed``)
        self.payload = list(dict.fromkeys([*p.keys, *(str(a.column) for a in p.aggregates if a.column)]))
        self.chunks: list[tuple[Any, datetime | None]] = []  # (frame, latest event time; None: unknown)
        self.since: datetime | None = None  # the chunks hold every bronze event at or after this

    def history(self, since: datetime) -> Any:
        """Arrival facts of the valid events with ``event_time >= since``, hash-partitioned by event id."""
        from pyspark.sql import functions as F

        if not self.chunks or self.since is None or since < self.since:
            bronze = self.spark.table(naming.table("bronze", self.p.name)).where(
                (F.col("event_time") >= F.lit(since)) & (F.col("event_date") >= F.lit(since.date())))
            self.start_from(bronze.select(*self.columns), since)
        frames = [frame.select(*self.columns) for frame, _ in self.chunks]  # a union of equally partitioned
        union = reduce(lambda a, b: a.unionByName(b), frames)  # frames keeps it; in memory: no file skipping to lose
        return union.where(F.col("event_time") >= batch_values.timestamp(self.spark, since))

    def start_from(self, arrivals: Any, since: datetime) -> None:
        """The history becomes ``arrivals`` (every valid event at or after ``since``; ``columns``)."""
        self.chunks, self.since = [(self._keyed(arrivals), None)], since

    def keyed(self, events: Any) -> Any:
        """A micro-batch's valid events as the speed step reads them and as a chunk keeps them: the
        lookup's columns and ``payload``, hash-partitioned by event id and sorted by id and arrival (one
        shuffle, which the first-copy window and the history's anti join then both use as it is)."""
        return self._keyed(events.select(*self.columns, *(c for c in self.payload if c not in self.columns)))

    def add(self, keyed: Any, keep_since: datetime, latest: datetime | None) -> None:
        """This micro-batch's valid events (``keyed``: from :meth:`keyed`; latest event time ``latest``)
        join the history; chunks whose events are all before ``keep_since`` leave it (a lookup filters
        on event time, so a chunk's own earlier events need not be cut out)."""
        if not self.chunks or self.since is None:
            return
        keep = max(keep_since, self.since)
        self.chunks = [(f, hi) for f, hi in self.chunks if hi is None or hi >= keep]
        self.chunks.append((keyed, latest))
        self.since = keep
        if len(self.chunks) >= MERGE_AT:
            known = [hi for _, hi in self.chunks]
            whole = self._keyed(self.history(keep), shuffle=False)  # already partitioned: no shuffle
            self.chunks = [(whole, None if None in known else max(h for h in known if h is not None))]

    def _keyed(self, frame: Any, shuffle: bool = True) -> Any:
        """``frame`` cut from its lineage, hash-partitioned like a shuffle by event id and sorted by
        it, then by arrival. Planned without adaptive execution: only then does the checkpoint keep that partitioning
        for the joins that read it (a query planned at the same moment in the same session, such as
        the bronze append beside it, runs without adaptive execution too: slower at worst)."""
        session = frame.sparkSession
        partitions = int(session.conf.get("spark.sql.shuffle.partitions"))
        adaptive = session.conf.get("spark.sql.adaptive.enabled")
        session.conf.set("spark.sql.adaptive.enabled", "false")
        try:
            keyed = frame.repartition(partitions, self.p.event_id) if shuffle else frame
            return keyed.sortWithinPartitions(self.p.event_id, *ARRIVAL).localCheckpoint(eager=True)
        finally:
            session.conf.set("spark.sql.adaptive.enabled", adaptive)
