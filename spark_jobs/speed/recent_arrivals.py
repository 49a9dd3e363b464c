"""The dedup lookup's history, kept in Spark memory instead of scanned from bronze per micro-batch.

``partials.first_copies`` needs the arrival facts (event id, Kafka timestamp, partition, offset) of
every valid event whose ``event_time`` is at or after ``since`` (the micro-batch's earliest on-time
event minus the watermark delay). Reading them from ``bronze.<p>`` costs a scan of every small file
of that horizon in each micro-batch (seconds on 2 cores). ``RecentArrivals`` reads bronze ONCE per run
(and again only if a micro-batch ever needs an older horizon) and keeps what it read in memory when it is
about one horizon of events (``IN_MEMORY_MAX``: a restart). A query that starts far behind bronze's end (a
replay or a new lineage from the earliest offsets, when bronze may hold the whole topic) instead reads
bronze by event-time range in each lookup, from the micro-batch's horizon to its latest event plus one
watermark delay (copies of an event carry its time), until the watermark passes what bronze held: in
memory, every lookup would scan all of it (a 500,000-event replay micro-batch's speed step took 6-7 s
against under 1 s for the same records caught up live). It keeps each micro-batch's own valid
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

from infra.utc import as_utc, aware_in_utc
from lakehouse.pipeline import Pipeline
from spark_jobs.speed import micro_batch_values as batch_values
from spark_jobs.transforms.partials import ARRIVAL

MERGE_AT = 16  # chunks before the survivors are folded into one
IN_MEMORY_MAX = 2_000_000  # bronze events a (re)load keeps in memory: 3 minutes at 10,000 events/s


class RecentArrivals:
    def __init__(self, spark: Any, p: Pipeline) -> None:
        self.spark, self.p = spark, p
        self.columns = [p.event_id, *ARRIVAL, "event_time"]  # what a lookup reads
        # what a micro-batch's speed step reads from the same keyed frame (``keyed``)
        self.payload = list(dict.fromkeys([*p.keys, *(str(a.column) for a in p.aggregates if a.column)]))
        self.chunks: list[tuple[Any, datetime | None]] = []  # (frame, latest event time; None: unknown)
        self.since: datetime | None = None  # the chunks (and bronze, up to bronze_until) hold every event at or after this
        self.bronze_until: datetime | None = None  # read from bronze by range up to this event time (``load``)

    def history(self, since: datetime, until: datetime | None = None) -> Any:
        """Arrival facts of the valid events with ``since <= event_time <= until`` (no upper bound: None),
        hash-partitioned by event id."""
        from pyspark.sql import functions as F

        if self.since is None or since < self.since:
            self.load(since)
        frames = [frame.select(*self.columns) for frame, _ in self.chunks]  # a union of equally partitioned
        if (self.bronze_until is not None and since <= self.bronze_until) or not frames:
            upto = until if self.bronze_until is None else self.bronze_until if until is None else min(until, self.bronze_until)
            frames.insert(0, self._keyed(self._bronze(since, upto), checkpoint=False))
        union = reduce(lambda a, b: a.unionByName(b), frames)  # frames keeps it; in memory: no file skipping to lose
        in_range = F.col("event_time") >= batch_values.timestamp(self.spark, since)
        if until is not None:
            in_range = in_range & (F.col("event_time") <= batch_values.timestamp(self.spark, until))
        return union.where(in_range)

    def load(self, since: datetime) -> None:
        """The history becomes bronze's valid events at or after ``since``: kept in memory when they are
        few (a restart: about one watermark delay of events), else read from bronze by event-time range
        in each lookup that reaches them (a replay or a new lineage from the earliest offsets: bronze may
        hold the whole topic, which in memory every lookup would scan) until the watermark passes them."""
        from pyspark.sql import functions as F

        rows, newest = self._bronze(since, None).agg(F.count(F.lit(1)), F.max("event_time")).first()
        latest = as_utc(newest) if newest is not None else None
        if rows <= IN_MEMORY_MAX:
            self.start_from(self._bronze(since, None), since)
            self.chunks = [(frame, latest) for frame, _ in self.chunks]
        else:
            self.chunks, self.since, self.bronze_until = [], since, latest

    def _bronze(self, since: datetime, until: datetime | None) -> Any:
        """Bronze's valid events in ``[since, until]``, as plain literals so that the scan skips files and
        ``event_date`` partitions (``batch_values`` columns are never pushed into a scan). ``event_date``
        is the UTC date: the bounds' dates are taken in UTC, whatever zone an aware bound carries."""
        from pyspark.sql import functions as F

        since = aware_in_utc(since, "the dedup history")
        where = (F.col("event_time") >= F.lit(since)) & (F.col("event_date") >= F.lit(since.date()))
        if until is not None:
            until = aware_in_utc(until, "the dedup history")
            where = where & (F.col("event_time") <= F.lit(until)) & (F.col("event_date") <= F.lit(until.date()))
        return self.spark.table(self.p.tables.bronze).where(where).select(*self.columns)

    def start_from(self, arrivals: Any, since: datetime) -> None:
        """The history becomes ``arrivals`` (every valid event at or after ``since``; ``columns``)."""
        self.chunks, self.since, self.bronze_until = [(self._keyed(arrivals), None)], since, None

    def keyed(self, events: Any) -> Any:
        """A micro-batch's valid events as the speed step reads them and as a chunk keeps them: the
        lookup's columns and ``payload``, hash-partitioned by event id and sorted by id and arrival (one
        shuffle, which the first-copy window and the history's anti join then both use as it is)."""
        return self._keyed(events.select(*self.columns, *(c for c in self.payload if c not in self.columns)))

    def add(self, keyed: Any, keep_since: datetime, latest: datetime | None) -> None:
        """This micro-batch's valid events (``keyed``: from :meth:`keyed`; latest event time ``latest``)
        join the history; chunks whose events are all before ``keep_since`` leave it (a lookup filters
        on event time, so a chunk's own earlier events need not be cut out)."""
        from pyspark.sql import functions as F

        if self.since is None:
            return
        keep = max(keep_since, self.since)
        if self.bronze_until is not None and self.bronze_until < keep:
            self.bronze_until = None  # every later lookup starts after what was read from bronze
        self.chunks = [(f, hi) for f, hi in self.chunks if hi is None or hi >= keep]
        self.chunks.append((keyed, latest))
        self.since = keep
        if len(self.chunks) >= MERGE_AT:
            known = [hi for _, hi in self.chunks]
            frames = [frame.select(*self.columns) for frame, _ in self.chunks]  # the chunks alone, never bronze
            kept = reduce(lambda a, b: a.unionByName(b), frames).where(
                F.col("event_time") >= batch_values.timestamp(self.spark, keep))
            whole = self._keyed(kept, shuffle=False)  # already partitioned: no shuffle
            self.chunks = [(whole, None if None in known else max(h for h in known if h is not None))]

    def _keyed(self, frame: Any, shuffle: bool = True, checkpoint: bool = True) -> Any:
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
            keyed = keyed.sortWithinPartitions(self.p.event_id, *ARRIVAL)
            return keyed.localCheckpoint(eager=True) if checkpoint else keyed
        finally:
            session.conf.set("spark.sql.adaptive.enabled", adaptive)

