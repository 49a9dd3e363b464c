"""Synthetic sensor_readings at Spark speed: a topic filled by a Spark batch write to Kafka,
bronze filled by a Spark batch write of the bronze contract, and the expected window totals.

Event ``i`` (``0 <= i < n``): ``event_id`` = ``<prefix><i>``, ``sensor_id`` = ``s-<i mod sensors>``,
``timestamp`` = ``base_ms + i * step_ms`` (epoch ms), ``temperature`` = ``((i*7919) mod 1000)/20 - 10`` (-10 to 39.95 °C, inside the quality suites' physical range).
Kafka partition = ``i mod partitions`` and each partition holds its events in ``i`` order, so every
micro-batch covers the same event-time range in all partitions (no event falls behind the watermark).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from lakehouse.config import TidewaterConfig
from lakehouse.contracts import DOUBLE_TOLERANCE
from spark_jobs.io.kafka_admin import ensure_topic

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

TOTALS = ("windows", "events", "sum_min", "sum_max", "sum_temperature")


def base_ms(days_ago: int = 1) -> int:
    """A minute-aligned start time in the past (the parser rejects events > 1 day in the future)."""
    now = int(time.time() * 1000)
    return (now - days_ago * 86_400_000) // 60_000 * 60_000


def events(spark: SparkSession, n: int, sensors: int, start_ms: int, step_ms: int = 1, prefix: str = "e-",
           partitions: int = 4, first: int = 0) -> DataFrame:
    from pyspark.sql import functions as F

    i = F.col("id")
    return spark.range(first, first + n, numPartitions=max(4, n // 500_000)).select(
        i, F.concat(F.lit(prefix), i.cast("string")).alias("event_id"),
        F.concat(F.lit("s-"), F.lpad((i % sensors).cast("string"), 5, "0")).alias("sensor_id"),
        (F.lit(start_ms) + i * F.lit(step_ms)).cast("bigint").alias("timestamp"),
        (((i * 7919) % 1000) / F.lit(20.0) - F.lit(10.0)).alias("temperature"),
        (i % partitions).cast("int").alias("partition"),
    )


def fill_topic(cfg: TidewaterConfig, topic: str, df: DataFrame) -> dict[str, Any]:
    """Write ``events`` rows as JSON records (key = sensor_id) to ``topic``; returns count and seconds."""
    from pyspark.sql import functions as F

    ensure_topic(cfg, topic)
    started = time.monotonic()
    out = (df.repartition(cfg.kafka.partitions, "partition").sortWithinPartitions("id").select(
        F.col("sensor_id").alias("key"),
        F.to_json(F.struct("event_id", "sensor_id", "timestamp", "temperature")).alias("value"), "partition"))
    (out.write.format("kafka").option("kafka.bootstrap.servers", cfg.kafka.bootstrap).option("topic", topic)
     .option("kafka.linger.ms", "20").option("kafka.batch.size", str(512 * 1024)).save())
    return {"seconds": round(time.monotonic() - started, 2)}


def as_bronze(df: DataFrame, topic: str) -> DataFrame:
    """``events`` rows shaped like the bronze contract (Kafka coordinates synthesised from ``i``)."""
    from pyspark.sql import functions as F

    event_time = F.timestamp_millis("timestamp")
    return df.select(
        "event_id", "sensor_id", "timestamp", "temperature", event_time.alias("event_time"),
        F.lit(topic).alias("kafka_topic"), F.col("partition").alias("kafka_partition"),
        F.col("id").alias("kafka_offset"), event_time.alias("kafka_timestamp"),
        F.current_timestamp().alias("ingest_time"), F.to_date(event_time).alias("event_date"))


def expected_totals(df: DataFrame) -> dict[str, float]:
    """Totals over the 1-minute windows per sensor, computed straight from the generator rows."""
    from pyspark.sql import functions as F

    w = df.groupBy("sensor_id", F.window(F.timestamp_millis("timestamp"), "1 minute")).agg(
        F.count(F.lit(1)).alias("c"), F.min("temperature").alias("mn"), F.max("temperature").alias("mx"),
        F.sum("temperature").alias("st"))
    row = w.agg(F.count(F.lit(1)), F.sum("c"), F.sum("mn"), F.sum("mx"), F.sum("st")).collect()[0]
    return dict(zip(TOTALS, (float(v or 0) for v in row), strict=True))


def table_totals(spark: SparkSession, table_sql: str, where: str = "true") -> dict[str, float]:
    """The same totals over a windowed results table (grain sensor_id + window)."""
    row = spark.sql(
        f"SELECT count(*), sum(event_count), sum(min_temperature), sum(max_temperature), "
        f"sum(avg_temperature * event_count) FROM {table_sql} WHERE {where}").collect()[0]
    return dict(zip(TOTALS, (float(v or 0) for v in row), strict=True))


def compare_totals(expected: dict[str, float], actual: dict[str, float], label: str) -> list[dict[str, Any]]:
    """One check per total; floating sums compared with the ``DOUBLE_TOLERANCE`` relative tolerance."""
    checks = []
    for key in TOTALS:
        e, a = expected[key], actual[key]
        ok = abs(e - a) <= DOUBLE_TOLERANCE * max(1.0, abs(e)) if key.startswith("sum") else e == a
        checks.append({"name": f"{label}: {key}", "expected": e, "actual": a, "ok": bool(ok)})
    return checks
