"""The Spark Kafka source, configured from Tidewater config."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lakehouse.config import TidewaterConfig

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def read_stream(spark: SparkSession, cfg: TidewaterConfig, topic: str, starting_offsets: str | None = None) -> DataFrame:
    """Streaming read of ``topic``. ``failOnDataLoss`` stays on: if retention deleted records the
    query has not read yet, it stops loudly instead of skipping them."""
    return (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", cfg.kafka.bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", starting_offsets or cfg.kafka.starting_offsets)
        .option("maxOffsetsPerTrigger", cfg.spark.max_offsets_per_trigger)
        .option("failOnDataLoss", "true")
        .load()
    )
