"""``AlertSink``: the alerts query's ``foreachBatch`` sink (``io.sink.MicroBatchSink``).

1. Delta, exactly once: the micro-batch's alerts are MERGEd into ``alerts.<p>`` on ``alert_id``,
   inserting only the ones not there yet. A micro-batch that Spark re-runs after a crash recomputes the
   same alerts from the same state and watermark, and inserts nothing twice.
   The MERGE reads only the files whose last event times reach the micro-batch's earliest (``recent``).
2. Kafka, at least once: then the rows of those alert ids, AS STORED (first emission's ``emitted_at``
   and ``batch_id``), go to ``<topic>.alerts`` with ``alert_id`` as the record key. A crash between the
   two steps re-sends them when the micro-batch re-runs: a duplicate is byte-for-byte the same record,
   the topic is compacted (``alerts.topic``), and a consumer keeps one record per key.
"""

from __future__ import annotations

from typing import Any

from lakehouse import contracts, naming
from lakehouse.config import TidewaterConfig
from lakehouse.pipeline import Pipeline
from spark_jobs.io.kafka_source import CLIENT_TIMEOUTS

PAYLOAD = ("alert_id", "pattern", "kind", "key", "event_ids", "event_times", "watermark", "emitted_at")


class AlertSink:
    """foreachBatch sink of the alerts query."""

    def __init__(self, spark: Any, cfg: TidewaterConfig, p: Pipeline) -> None:
        self.spark, self.bootstrap = spark, cfg.kafka.bootstrap
        self.table, self.topic = naming.table("alerts", p.name), naming.alerts_topic(p.topic)
        self.columns = contracts.alerts(p).column_names

    def __call__(self, df: Any, batch_id: int) -> None:
        from delta.tables import DeltaTable
        from pyspark.sql import functions as F

        alerts = (df.dropDuplicates(["alert_id"])
                  .withColumn("event_times", F.transform("event_times_ms", lambda t: F.timestamp_millis(t)))
                  .withColumn("first_event_time", F.col("event_times")[0])
                  .withColumn("last_event_time", F.element_at("event_times", -1))
                  .withColumn("watermark", F.timestamp_millis("watermark_ms"))
                  .withColumn("emitted_at", F.current_timestamp())
                  .withColumn("batch_id", F.lit(batch_id).cast("bigint"))
                  .select(*self.columns)).persist()
        try:
            if alerts.isEmpty():
                return
            since_ms = alerts.agg(F.min(F.unix_millis("last_event_time"))).first()[0]
            (DeltaTable.forName(self.spark, self.table).alias("t")
             .merge(alerts.alias("s"), (F.col("t.alert_id") == F.col("s.alert_id")) & recent("t.last_event_time", since_ms))
             .whenNotMatchedInsertAll().execute())
            stored = (self.spark.table(self.table).where(recent("last_event_time", since_ms))
                      .join(alerts.select("alert_id"), "alert_id", "left_semi"))
            (stored.select(F.col("alert_id").alias("key"), F.to_json(F.struct(*PAYLOAD)).alias("value"))
             .write.format("kafka").options(**CLIENT_TIMEOUTS).option("kafka.bootstrap.servers", self.bootstrap)
             .option("kafka.acks", "all").option("topic", self.topic).save())
        finally:
            alerts.unpersist()


def recent(column: str, since_ms: int | None) -> Any:
    """``column`` (an alert's last event time) at or after ``since_ms``, or null: an alert recomputed is the
    same row with the same last event time, so the MERGE and the read-back need only the table's files whose
    statistics reach the micro-batch's earliest last event time (Delta skips the others)."""
    from pyspark.sql import functions as F

    if since_ms is None:
        return F.lit(True)
    return (F.col(column) >= F.timestamp_millis(F.lit(since_ms))) | F.col(column).isNull()
