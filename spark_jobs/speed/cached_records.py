"""A micro-batch's records as the ``stream`` sink caches them, and the one job over that cache that
answers every count the sink needs (``counts``).

The cache is read a few times (bronze, quarantine, the speed partials, the dedup history) and then
dropped; ``CACHE_CONF`` is what the speed job sets on its session for it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from spark_jobs.io.lineage import floor_sql
from spark_jobs.speed import micro_batch_values as batch_values

# The micro-batch's cache is read a few times and then dropped: encoding its columns compactly costs
# more CPU than it saves. Building the cache of 500,000 parsed records took 2.85 s uncompressed against
# 3.88 s compressed (medians of 5 interleaved rounds; reads 0.57 s against 0.68 s).
CACHE_CONF = {"spark.sql.inMemoryColumnarStorage.compressed": "false"}
WATERMARK_COLUMN = "_watermark_time"  # event time of valid events only: what Spark's watermark tracks


def cached_form(records: Any, batch_time: datetime) -> Any:
    """A micro-batch's records as the sink caches them: without the watermark column, with the raw
    text only where quarantine needs it (a smaller cache for every later step), and ``ingest_time`` =
    ``batch_time`` (the micro-batch's time in its offset-log entry: the same in a re-run), as a column
    that Spark's generated code does not compile in (``speed.micro_batch_values``)."""
    from pyspark.sql import functions as F

    stamped = {"ingest_time": batch_values.timestamp(records.sparkSession, batch_time).alias("ingest_time"),
               "raw_value": F.when(F.col("reason_code").isNotNull(), F.col("raw_value")).alias("raw_value")}
    return records.select(*(stamped.get(c, F.col(c)) for c in records.columns if c != WATERMARK_COLUMN))


def counts(df: Any, floors: dict[str, dict[str, int] | None], late_if: Any) -> Any:
    """Per role (its floor applied): records, unusable records, late events (``late_if``: the
    ``behind`` condition; ``late_at``: the Kafka position of one), and the event-time range of valid events (``lo``: on-time only); one
    job, which fills the cache."""
    from pyspark.sql import functions as F

    ingest, quarantine, speed = (F.expr(floor_sql(floors.get(role))) for role in ("ingest", "quarantine", "speed"))
    valid = F.col("reason_code").isNull()
    unusable = ingest & quarantine & ~valid  # the ones quarantine does not hold yet
    late = F.col("_late")  # projected first: Spark keeps a non-deterministic value out of aggregates
    at = F.struct("kafka_partition", "kafka_offset")
    return df.withColumn("_late", late_if).agg(
        F.count_if(ingest).alias("n_ingest"), F.count_if(unusable).alias("bad"),
        F.first(F.when(ingest & valid, at), ignorenulls=True).alias("valid_at"),
        F.first(F.when(unusable, at), ignorenulls=True).alias("bad_at"),
        F.first(F.when(speed & valid & late, at), ignorenulls=True).alias("late_at"),
        F.count_if(speed).alias("n_speed"), F.count_if(speed & valid & late).alias("late"),
        F.min(F.when(speed & valid & ~late, F.col("event_time"))).alias("lo"),
        F.max(F.when(speed & valid, F.col("event_time"))).alias("hi")).collect()[0]


def behind(spark: Any, wm: datetime | None, *, at_watermark: bool = False) -> Any:
    """True for an event behind the watermark ``wm`` (a value outside the generated code:
    ``speed.micro_batch_values``): before it, the ``stream`` sink's rule; with ``at_watermark``, at or
    before it, the rule of Spark's stateful operators (``WatermarkSupport.watermarkExpression``:
    ``event_time <= watermark``), by which the session query's dedup drops late events."""
    from pyspark.sql import functions as F

    if wm is None:
        return F.lit(False)
    at = batch_values.timestamp(spark, wm)
    return F.col("event_time") <= at if at_watermark else F.col("event_time") < at
