"""``AlertSink``: the alerts query's ``foreachBatch`` sink (``io.sink.MicroBatchSink``).

1. Delta, exactly once: the micro-batch's alerts are APPENDED to ``alerts.<p>`` (one commit), the way the
   speed layer's sinks append (``io.rerun``): Spark runs a micro-batch again only at a query start (the one
   its offset log holds and its commit log does not: ``lineage.uncommitted_batch``, read before the query
   starts), and a new lineage (a first start, or a checkpoint deleted) recomputes alerts from the earliest
   offsets. Only those micro-batches can meet alerts stored already: the re-run one, and a new lineage's
   until its alerts pass the last one the table held when it started. They are MERGEd on ``alert_id``
   instead, inserting only the alerts not there yet (the same alerts from the same state and watermark).
   The MERGE reads only the files whose last event times reach the micro-batch's earliest (``recent``).
2. Kafka, at least once: then the micro-batch's alerts, AS STORED (first emission's ``emitted_at`` and
   ``batch_id``: after a MERGE they are read back), go to ``<topic>.alerts`` with ``alert_id`` as the
   record key. A crash between the two steps re-sends them when the micro-batch re-runs: a duplicate is
   byte-for-byte the same record, the topic is compacted (``alerts.topic``), and a consumer keeps one
   record per key.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lakehouse import contracts, naming
from lakehouse.config import TidewaterConfig
from lakehouse.pipeline import Pipeline
from spark_jobs.io.kafka_source import CLIENT_TIMEOUTS
from spark_jobs.io.lineage import is_new, uncommitted_batch

PAYLOAD = ("alert_id", "pattern", "kind", "key", "event_ids", "event_times", "watermark", "emitted_at")


class AlertSink:
    """foreachBatch sink of the alerts query whose checkpoint is ``checkpoint`` (read before the query starts)."""

    def __init__(self, spark: Any, cfg: TidewaterConfig, p: Pipeline, checkpoint: Path) -> None:
        self.spark, self.bootstrap = spark, cfg.kafka.bootstrap
        self.table, self.topic = p.tables.alerts, naming.alerts_topic(p.topic)
        self.columns = contracts.alerts(p).column_names
        self.rerun_of = uncommitted_batch(checkpoint)
        self.stored_until_ms = self._last_stored_ms() if is_new(checkpoint) else None

    def _last_stored_ms(self) -> int | None:
        """The latest last event time of the alerts stored before a new lineage started (None: none)."""
        from pyspark.sql import functions as F

        return self.spark.table(self.table).agg(F.max(F.unix_millis("last_event_time"))).first()[0]

    def __call__(self, df: Any, batch_id: int) -> None:
        from pyspark.sql import functions as F

        emitted_at = datetime.now(UTC)  # one instant per micro-batch: Delta and Kafka get the same rows
        alerts = (df.dropDuplicates(["alert_id"])
                  .withColumn("event_times", F.transform("event_times_ms", lambda t: F.timestamp_millis(t)))
                  .withColumn("first_event_time", F.col("event_times")[0])
                  .withColumn("last_event_time", F.element_at("event_times", -1))
                  .withColumn("watermark", F.timestamp_millis("watermark_ms"))
                  .withColumn("emitted_at", F.lit(emitted_at))
                  .withColumn("batch_id", F.lit(batch_id).cast("bigint"))
                  .select(*self.columns)).persist()
        try:
            count, since_ms = alerts.agg(F.count(F.lit(1)), F.min(F.unix_millis("last_event_time"))).first()
            if not count:
                return
            if self._may_be_stored(batch_id, since_ms):
                self._merge(alerts, since_ms)
                sent = (self.spark.table(self.table).where(recent("last_event_time", since_ms))
                        .join(alerts.select("alert_id"), "alert_id", "left_semi"))
            else:
                alerts.write.format("delta").mode("append").saveAsTable(self.table)
                sent = alerts
            (sent.select(F.col("alert_id").alias("key"), F.to_json(F.struct(*PAYLOAD)).alias("value"))
             .write.format("kafka").options(**CLIENT_TIMEOUTS).option("kafka.bootstrap.servers", self.bootstrap)
             .option("kafka.acks", "all").option("topic", self.topic).save())
        finally:
            alerts.unpersist()

    def _may_be_stored(self, batch_id: int, since_ms: int) -> bool:
        """Whether the table may hold some of micro-batch ``batch_id``'s alerts (``since_ms``: its earliest
        last event time): the re-run micro-batch, or a new lineage's not yet past the alerts stored before it."""
        return batch_id == self.rerun_of or (self.stored_until_ms is not None and since_ms <= self.stored_until_ms)

    def _merge(self, alerts: Any, since_ms: int) -> None:
        from delta.tables import DeltaTable
        from pyspark.sql import functions as F

        (DeltaTable.forName(self.spark, self.table).alias("t")
         .merge(alerts.alias("s"), (F.col("t.alert_id") == F.col("s.alert_id")) & recent("t.last_event_time", since_ms))
         .whenNotMatchedInsertAll().execute())


def recent(column: str, since_ms: int | None) -> Any:
    """``column`` (an alert's last event time) at or after ``since_ms``, or null: an alert recomputed is the
    same row with the same last event time, so the MERGE and the read-back need only the table's files whose
    statistics reach the micro-batch's earliest last event time (Delta skips the others)."""
    from pyspark.sql import functions as F

    if since_ms is None:
        return F.lit(True)
    return (F.col(column) >= F.timestamp_millis(F.lit(since_ms))) | F.col(column).isNull()
