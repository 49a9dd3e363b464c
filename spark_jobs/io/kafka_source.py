"""The Spark Kafka source, configured from Tidewater config."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from lakehouse.config import TidewaterConfig

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


# The driver asks for the latest offsets through a Kafka AdminClient. With a partition leader gone (a
# broker killed), that call waits for its dead node until ``default.api.timeout.ms`` (60 s by default)
# before Spark retries with a new client and finds the new leader: a 60 s stall of every micro-batch
# (measured, tests/integration/test_kafka_cluster.py: 67 s from the kill to the next micro-batch, 28 s
# with these). 12 attempts of 15 s keep the old tolerance of a whole cluster down (3 x 60 s) before the
# query fails.
CLIENT_TIMEOUTS = {"kafka.default.api.timeout.ms": "15000", "kafka.request.timeout.ms": "10000",
                   "fetchOffset.numRetries": "12"}


def read_stream(spark: SparkSession, cfg: TidewaterConfig, topic: str, starting_offsets: str | None = None) -> DataFrame:
    """Streaming read of ``topic``. ``failOnDataLoss`` stays on: if retention deleted records the
    query has not read yet, it stops loudly instead of skipping them."""
    return (
        spark.readStream.format("kafka")
        .options(**CLIENT_TIMEOUTS)
        .option("kafka.bootstrap.servers", cfg.kafka.bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", starting_offsets or cfg.kafka.starting_offsets)
        .option("maxOffsetsPerTrigger", cfg.spark.max_offsets_per_trigger)
        .option("failOnDataLoss", "true")
        .load()
    )


def read_range(spark: SparkSession, cfg: TidewaterConfig, topic: str, ranges: dict[int, tuple[int, int]]) -> DataFrame:
    """Batch read of ``topic``'s records in ``ranges`` (partition -> (first offset, end offset), the end
    excluded), with the stream's client settings."""
    return (
        spark.read.format("kafka")
        .options(**CLIENT_TIMEOUTS)
        .option("kafka.bootstrap.servers", cfg.kafka.bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", json.dumps({topic: {str(k): first for k, (first, _) in ranges.items()}}))
        .option("endingOffsets", json.dumps({topic: {str(k): end for k, (_, end) in ranges.items()}}))
        .load()
    )
