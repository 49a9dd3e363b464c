"""Scenario 1d: the SAME work as Tidewater's speed layer, hand-written as one plain PySpark script.

Tidewater's overhead is its ratio to this job. Per micro-batch it does what the ``stream`` query does
for ``sensor_readings``: parse the Kafka value with the same reason codes (first match wins), append
valid events to a bronze Delta table and unusable records to a quarantine table, drop events behind
the watermark, keep the first copy of every event id (earliest Kafka timestamp, then partition, then
offset) against bronze within the watermark horizon, aggregate 1-minute windows per sensor and fold
them into a windows table with ONE MERGE. Every write is idempotent (``txnAppId``/``txnVersion``).
Not done: ``ops.stream_progress`` rows, lineage floors, locks, the metastore (path-based tables).
Same session factory, trigger and ``maxOffsetsPerTrigger`` as the speed layer.

Run: ``python -m benchmarks.same_work_job --topic T --target '{"0": 25000, ...}' --out DIR --progress FILE``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from benchmarks.progress import run_until_reached
from infra.spark_session import get_spark
from lakehouse.config import load_config

SCHEMA = "event_id STRING, sensor_id STRING, timestamp STRING, temperature STRING"
DELAY_S, FUTURE_MS, MIN_MS = 120, 120_000, 946_684_800_000  # watermark 2 minutes, max_future_skew = the watermark


def classify(df: Any) -> Any:
    """Kafka rows -> typed columns + ``reason_code`` (null when usable), the pipeline's rules by hand."""
    from pyspark.sql import functions as F

    j = F.from_json(F.col("value").cast("string"), "map<string,string>")
    df = df.select(F.col("value").cast("string").alias("raw_value"), F.col("partition").alias("kafka_partition"),
                   F.col("offset").alias("kafka_offset"), F.col("timestamp").alias("kafka_timestamp"), j.alias("j"))
    ts, temp = F.col("j")["timestamp"].try_cast("bigint"), F.col("j")["temperature"].try_cast("double")
    checks = [(F.col("j").isNull(), "MALFORMED_JSON")]
    checks += [(~F.map_contains_key("j", k), "MISSING_FIELD") for k in ("event_id", "sensor_id", "timestamp", "temperature")]
    checks += [(F.col("j")["event_id"].isNull() | (F.trim(F.col("j")["event_id"]) == ""), "NULL_ID"),
               (F.col("j")["sensor_id"].isNull() | (F.trim(F.col("j")["sensor_id"]) == ""), "NULL_KEY"),
               (F.col("j")["timestamp"].isNull() | F.col("j")["temperature"].isNull(), "MISSING_FIELD"),
               (ts.isNull() | temp.isNull(), "WRONG_TYPE"), (ts < MIN_MS, "IMPOSSIBLE_TIMESTAMP"),
               (ts > F.unix_millis("kafka_timestamp") + FUTURE_MS, "FUTURE_TIMESTAMP")]
    code = F.lit(None).cast("string")
    for failed, c in reversed(checks):
        code = F.when(failed, c).otherwise(code)
    return df.select(F.col("j")["event_id"].alias("event_id"), F.col("j")["sensor_id"].alias("sensor_id"),
                     F.timestamp_millis(ts).alias("event_time"), temp.alias("temperature"), "raw_value",
                     "kafka_partition", "kafka_offset", "kafka_timestamp", code.alias("reason_code"))


class Batch:
    def __init__(self, spark: Any, out: Path) -> None:
        self.spark, self.out, self.wm_ms = spark, out, 0
        self.bronze, self.quarantine, self.windows = (str(out / t) for t in ("bronze", "quarantine", "windows"))

    def __call__(self, df: Any, batch_id: int) -> None:
        from pyspark.sql import functions as F

        df = df.persist()
        try:
            s = df.agg(F.count_if(F.col("reason_code").isNotNull()).alias("bad"),
                       F.max(F.when(F.col("reason_code").isNull(), F.col("event_time"))).alias("hi")).collect()[0]
            valid = df.where("reason_code IS NULL").drop("raw_value", "reason_code")
            valid.write.format("delta").mode("append").option("txnAppId", "bronze").option("txnVersion", batch_id).save(self.bronze)
            if s["bad"]:
                (df.where("reason_code IS NOT NULL").select("raw_value", "kafka_partition", "kafka_offset", "reason_code")
                 .write.format("delta").mode("append").option("txnAppId", "quarantine").option("txnVersion", batch_id)
                 .save(self.quarantine))
            on_time = valid.where(F.unix_millis("event_time") >= F.lit(self.wm_ms))
            self.merge(on_time, batch_id)
            if s["hi"] is not None:  # the next micro-batch's watermark
                self.wm_ms = max(self.wm_ms, int(s["hi"].timestamp() * 1000) - DELAY_S * 1000)
        finally:
            df.unpersist()

    def merge(self, on_time: Any, batch_id: int) -> None:
        from delta.tables import DeltaTable
        from pyspark.sql import functions as F

        horizon = F.unix_millis("event_time") >= F.lit(self.wm_ms - DELAY_S * 1000)
        history = self.spark.read.format("delta").load(self.bronze).where(horizon).select(
            "event_id", "kafka_timestamp", "kafka_partition", "kafka_offset").alias("h")
        c = on_time.alias("c")
        earlier = (F.col("h.kafka_timestamp") < F.col("c.kafka_timestamp")) | (
            (F.col("h.kafka_timestamp") == F.col("c.kafka_timestamp"))
            & (F.struct("h.kafka_partition", "h.kafka_offset") < F.struct("c.kafka_partition", "c.kafka_offset")))
        first = c.join(history, (F.col("h.event_id") == F.col("c.event_id")) & earlier, "left_anti")
        agg = first.groupBy("sensor_id", F.window("event_time", "1 minute").alias("w")).agg(
            F.count(F.lit(1)).alias("event_count"), F.sum("temperature").alias("sum_temperature"),
            F.min("temperature").alias("min_temperature"), F.max("temperature").alias("max_temperature"))
        src = agg.select("sensor_id", F.col("w.start").alias("window_start"), F.col("w.end").alias("window_end"),
                         "event_count", "sum_temperature", "min_temperature", "max_temperature",
                         (F.col("sum_temperature") / F.col("event_count")).alias("avg_temperature"))
        if not DeltaTable.isDeltaTable(self.spark, self.windows):
            src.limit(0).write.format("delta").save(self.windows)
        self.spark.conf.set("spark.databricks.delta.write.txnAppId", "windows")
        self.spark.conf.set("spark.databricks.delta.write.txnVersion", str(batch_id))
        n, s = "t.event_count + s.event_count", "t.sum_temperature + s.sum_temperature"
        try:
            (DeltaTable.forPath(self.spark, self.windows).alias("t")
             .merge(src.alias("s"), "t.sensor_id = s.sensor_id AND t.window_start = s.window_start")
             .whenMatchedUpdate(set={"event_count": n, "sum_temperature": s, "avg_temperature": f"({s}) / ({n})",
                                     "min_temperature": "least(t.min_temperature, s.min_temperature)",
                                     "max_temperature": "greatest(t.max_temperature, s.max_temperature)"})
             .whenNotMatchedInsertAll().execute())
        finally:
            for k in ("txnAppId", "txnVersion"):
                self.spark.conf.unset(f"spark.databricks.delta.write.{k}")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.same_work_job")
    for name in ("--topic", "--target", "--out", "--progress"):
        ap.add_argument(name, required=True)
    args = ap.parse_args(argv)
    target = {int(k): int(v) for k, v in json.loads(args.target).items()}

    cfg = load_config()
    spark = get_spark(cfg, "bench-same-work")
    src = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", cfg.kafka.bootstrap)
           .option("subscribe", args.topic).option("startingOffsets", "earliest")
           .option("maxOffsetsPerTrigger", cfg.spark.max_offsets_per_trigger).load())
    query = (classify(src).writeStream.queryName("same_work").foreachBatch(Batch(spark, Path(args.out)))
             .option("checkpointLocation", str(Path(args.out) / "checkpoint"))
             .trigger(processingTime=f"{cfg.spark.trigger_seconds} seconds").start())
    run_until_reached(spark, query, args.topic, target, args.progress, "same-work baseline")


if __name__ == "__main__":
    main()
