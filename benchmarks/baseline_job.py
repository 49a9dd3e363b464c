"""Scenario 1b: the minimal hand-written PySpark job the Tidewater speed layer is measured against.

Kafka -> from_json -> watermark -> the same 1-minute tumbling aggregation per sensor -> Delta
append (update mode, via foreachBatch, each row tagged with its batch id). Same session factory,
trigger and maxOffsetsPerTrigger as the speed layer; no quarantine, bronze, dedup or MERGE.
It stops once its end offsets reach ``--target`` and writes every progress event to ``--progress``.

Run: ``python -m benchmarks.baseline_job --topic T --target '{"0": 25000, ...}' --out DIR --progress FILE``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from benchmarks.progress import run_until_reached
from infra.spark_session import get_spark
from lakehouse.config import load_config

SCHEMA = "event_id STRING, sensor_id STRING, timestamp BIGINT, temperature DOUBLE"


def aggregate(df: Any) -> Any:
    from pyspark.sql import functions as F

    events = (df.select(F.from_json(F.col("value").cast("string"), SCHEMA).alias("e")).select("e.*")
              .withColumn("event_time", F.timestamp_millis("timestamp")).withWatermark("event_time", "2 minutes"))
    out = events.groupBy("sensor_id", F.window("event_time", "1 minute")).agg(
        F.count(F.lit(1)).alias("event_count"), F.avg("temperature").alias("avg_temperature"),
        F.min("temperature").alias("min_temperature"), F.max("temperature").alias("max_temperature"),
        F.max("event_time").alias("max_event_time"))
    return out.select("sensor_id", F.col("window.start").alias("window_start"), F.col("window.end").alias("window_end"),
                      "event_count", "avg_temperature", "min_temperature", "max_temperature", "max_event_time")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.baseline_job")
    ap.add_argument("--topic", required=True)
    ap.add_argument("--target", required=True, help="JSON {partition: end offset}")
    ap.add_argument("--out", required=True)
    ap.add_argument("--progress", required=True)
    args = ap.parse_args(argv)
    target = {int(k): int(v) for k, v in json.loads(args.target).items()}

    from pyspark.sql import functions as F

    cfg = load_config()
    spark = get_spark(cfg, "bench-baseline")
    out = Path(args.out)

    def _append(df: Any, batch_id: int) -> None:
        df.withColumn("batch_id", F.lit(batch_id).cast("bigint")).write.format("delta").mode("append").save(
            str(out / "table"))

    src = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", cfg.kafka.bootstrap)
           .option("subscribe", args.topic).option("startingOffsets", "earliest")
           .option("maxOffsetsPerTrigger", cfg.spark.max_offsets_per_trigger).load())
    query = (aggregate(src).writeStream.queryName("baseline").outputMode("update").foreachBatch(_append)
             .option("checkpointLocation", str(out / "checkpoint"))
             .trigger(processingTime=f"{cfg.spark.trigger_seconds} seconds").start())
    run_until_reached(spark, query, args.topic, target, args.progress, "baseline")


if __name__ == "__main__":
    main()
