"""The dedup lookup's history, kept in Spark memory instead of scanned from bronze per micro-batch.

``partials.first_copies`` needs the arrival facts (event id, Kafka timestamp, partition, offset) of
every valid event whose ``event_time`` is at or after ``since`` (the micro-batch's earliest on-time
event minus the watermark delay). Reading them from ``bronze.<p>`` costs a scan of every small file
of that horizon in each micro-batch (seconds on 2 cores). ``RecentArrivals`` reads bronze ONCE per run
(and again only if a micro-batch ever needs an older horizon), then adds each micro-batch's own valid
events and drops those the watermark has put out of reach, as a local checkpoint (cut lineage,
executor memory/disk). The answer is the same as the bronze scan's: bronze holds what the stream has
seen (plus what other writers added before the load), and every future micro-batch's horizon starts at
or after ``watermark after this micro-batch - delay``, because its on-time events are not behind it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from lakehouse import naming
from lakehouse.pipeline import Pipeline


class RecentArrivals:
    def __init__(self, spark: Any, p: Pipeline) -> None:
        self.spark, self.p = spark, p
        self.columns = [p.event_id, "kafka_timestamp", "kafka_partition", "kafka_offset", "event_time"]
        self.frame: Any = None
        self.since: datetime | None = None  # the frame holds every bronze event at or after this

    def history(self, since: datetime) -> Any:
        """Arrival facts of the valid events with ``event_time >= since``."""
        from pyspark.sql import functions as F

        if self.frame is None or self.since is None or since < self.since:
            bronze = self.spark.table(naming.table("bronze", self.p.name)).where(
                (F.col("event_time") >= F.lit(since)) & (F.col("event_date") >= F.lit(since.date())))
            self._replace(bronze.select(*self.columns))
            self.since = since
        return self.frame.where(F.col("event_time") >= F.lit(since))

    def add(self, events: Any, keep_since: datetime) -> None:
        """This micro-batch's valid events join the history; events before ``keep_since`` leave it."""
        from pyspark.sql import functions as F

        if self.frame is None or self.since is None:
            return
        keep = max(keep_since, self.since)
        self._replace(self.frame.unionByName(events.select(*self.columns)).where(F.col("event_time") >= F.lit(keep)))
        self.since = keep

    def _replace(self, frame: Any) -> None:
        self.frame = frame.coalesce(2).localCheckpoint(eager=True)
